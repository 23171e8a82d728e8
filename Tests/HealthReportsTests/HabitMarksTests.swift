import Foundation
import HealthModel
import HealthReports
import HealthStore
import Testing
import TestSupport

/// Events that mark a day a habit was not done (a habit tracker's skipped or unknown day, a day
/// marked not done) are kept, but totals, streaks and `today` do not count them as check-ins; a
/// skipped day is passed over by a streak.
@Suite struct HabitMarksTests {
    static let zone = TimeZone(identifier: "America/New_York")!
    static let calendar = Calendar.gregorian(in: zone)

    @Test func marksAreNotCheckIns() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let c = Self.calendar
        func noon(_ day: Int) -> Date { c.date(from: DateComponents(year: 2026, month: 5, day: day, hour: 12))! }
        func event(_ day: Int, value: Double?, label: String? = nil) -> HealthRecord {
            .habit(HabitEvent(id: RecordID.derive("marks", String(day)), habit: "Meditate", time: noon(day), value: value,
                              label: label, source: Source(driver: "loop")))
        }
        let meditate = Definition(name: "Meditate", time: noon(1),
                                  body: .habit(HabitDefinition(valueKind: .yesNo, target: HabitTarget(amount: 1, period: .day,
                                                                                                      direction: .atLeast))),
                                  source: Source(driver: "loop"))
        try await store.write([
            .definition(meditate),
            event(1, value: 1), event(2, value: 1), event(3, value: nil, label: HabitEvent.Mark.skipped),
            event(4, value: nil, label: HabitEvent.Mark.unknown), event(5, value: 0, label: HabitEvent.Mark.notDone),
            event(6, value: 1),
        ])
        #expect(try await store.habitEvents().count == 6, "marks are kept")
        let days = (1...7).map { c.date(from: DateComponents(year: 2026, month: 5, day: $0))! }
        let totals = try await store.habitTotals("Meditate", bounds: days)
        #expect(totals.map(\.bucket) == [0, 1, 5] && totals.map(\.count) == [1, 1, 1])

        // Today on day 4 (marked unknown): not done today, which can still be; the skipped day 3
        // is passed over (docs/days.md), so the streak of days 1 and 2 stands.
        let today = try await Reports.today(store, days: .midnight(in: c.timeZone), now: c.date(from: DateComponents(year: 2026, month: 5, day: 4, hour: 20))!)
        let row = try #require(today.habits.first { $0.name == "Meditate" })
        #expect(row.entries == 0 && row.met == false)
        #expect(row.currentStreak == 2 && row.longestStreak == 2)
        // On day 5 the unknown day 4 is a day missed like any other: the streak is over.
        let later = try await Reports.today(store, days: .midnight(in: c.timeZone), now: c.date(from: DateComponents(year: 2026, month: 5, day: 5, hour: 20))!)
        #expect(later.habits.first { $0.name == "Meditate" }?.currentStreak == 0)
    }
}
