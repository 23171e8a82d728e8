import Foundation
import HealthModel
import HealthReports
import HealthStore
import Testing
import TestSupport

/// A phone and a watch both count steps and energy for the hours the watch is worn: `today` and
/// `stats` count those hours once (the source that measured more in each hour), and hours only
/// one source measured add in full. One source alone gives the plain sum.
@Suite struct OverlappingSourcesTests {
    static let zone = TimeZone(identifier: "Europe/Berlin")!
    static let calendar = Calendar.gregorian(in: zone)

    static func steps(_ device: String, _ time: Date, _ value: Double, kind: MeasurementKind = .steps) -> HealthRecord {
        .measurement(HealthModel.Measurement(id: RecordID.derive("overlap", device, kind.rawValue, ISO8601.string(time)), kind: kind,
                                             time: time, end: time.addingTimeInterval(600), value: value,
                                             source: Source(driver: "apple_health", device: device)))
    }

    @Test func overlappingHoursCountOnce() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let c = Self.calendar
        func at(_ h: Int, _ m: Int) -> Date { c.date(from: DateComponents(year: 2026, month: 6, day: 3, hour: h, minute: m))! }
        try await store.write([
            // 08:00-09:00: the phone only (watch charging): 1,200.
            Self.steps("iPhone", at(8, 10), 700), Self.steps("iPhone", at(8, 40), 500),
            // 09:00-10:00: both; the phone 900, the watch 1,000: 1,000.
            Self.steps("iPhone", at(9, 5), 400), Self.steps("iPhone", at(9, 35), 500),
            Self.steps("Apple Watch", at(9, 0), 300), Self.steps("Apple Watch", at(9, 20), 300), Self.steps("Apple Watch", at(9, 50), 400),
            // 10:00-11:00: both; the phone 2,000 (the watch missed a sample), the watch 1,500: 2,000.
            Self.steps("iPhone", at(10, 15), 2000), Self.steps("Apple Watch", at(10, 30), 1500),
            // Energy: both measured 12:00-13:00 (the watch 90 kcal, the phone 60).
            Self.steps("iPhone", at(12, 10), 60, kind: .energy), Self.steps("Apple Watch", at(12, 30), 90, kind: .energy),
        ])
        let today = try await Reports.today(store, days: .midnight(in: c.timeZone), now: at(20, 0))
        #expect(today.steps == 1200 + 1000 + 2000)
        #expect(today.energy.burnedKcal == 90)

        let week = try await Reports.stats(store, period: .week, days: .midnight(in: Self.zone), now: at(20, 0))
        #expect(week.map(\.steps) == [4200])

        // A deleted record no longer counts, and its hour falls back to the other source.
        let phone10 = RecordID.derive("overlap", "iPhone", "steps", ISO8601.string(at(10, 15)))
        _ = try await store.delete(id: phone10.description)
        #expect(try await Reports.today(store, days: .midnight(in: c.timeZone), now: at(20, 0)).steps == 1200 + 1000 + 1500)
    }

    @Test func oneSourceIsThePlainSum() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let c = Self.calendar
        func at(_ h: Int, _ m: Int) -> Date { c.date(from: DateComponents(year: 2026, month: 6, day: 3, hour: h, minute: m))! }
        try await store.write((0..<48).map { Self.steps("band", at($0 / 4 + 6, ($0 % 4) * 15), Double(100 + $0)) })
        #expect(try await Reports.today(store, days: .midnight(in: c.timeZone), now: at(20, 0)).steps == Double((0..<48).reduce(0) { $0 + 100 + $1 }))
    }
}
