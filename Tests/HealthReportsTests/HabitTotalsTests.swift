import Foundation
import HealthModel
import HealthReports
import HealthStore
import Testing

/// The one-pass reads the views use (every habit's totals and spans at once, the habit history
/// shared by `stats`) give what the per-habit reads give: spellings of one name merged, marks
/// (skipped, unknown) not counted, deleted events left out, local days across DST changes.
@Suite struct HabitTotalsTests {
    static let source = Source(driver: "manual")

    static func event(_ habit: String, _ time: Date, value: Double? = 1, label: String? = nil) -> HealthRecord {
        .habit(HabitEvent(id: RecordID.derive("test", habit, ISO8601.string(time), label ?? ""), habit: habit, time: time, value: value,
                          label: label, source: source))
    }

    /// Five weeks around Berlin's change to summer time: a daily water goal, a weekly reading
    /// goal spelled two ways, a yes/no habit with skipped and unknown days, vaping, a meal, one
    /// deleted event; `now` mid-afternoon of the last day.
    static func fill(_ store: HealthStore, _ c: Calendar) async throws -> Date {
        func local(_ d: Int, _ h: Int, _ mi: Int = 0) -> Date {
            c.date(from: DateComponents(year: 2026, month: 3, day: d, hour: h, minute: mi))!
        }
        let start = local(10, 8)
        var records: [HealthRecord] = [
            .definition(Definition(name: "hydration", time: start,
                                   body: .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 1500))),
                                   source: source)),
            .definition(Definition(name: "Reading", time: start,
                                   body: .habit(HabitDefinition(valueKind: .numeric, target: HabitTarget(amount: 60, period: .week))),
                                   source: source)),
            .definition(Definition(name: "stretch", time: start, body: .habit(HabitDefinition(valueKind: .yesNo)), source: source)),
        ]
        for d in 10...40 {
            let day = c.date(byAdding: .day, value: d - 10, to: local(10, 0))!
            let at = { (h: Int, mi: Int) in day.addingTimeInterval(Double(h * 3600 + mi * 60)) }
            for h in stride(from: 7, through: 7 + (d % 4) * 3, by: 3) { records.append(Self.event("hydration", at(h, 0), value: 400)) }
            records.append(Self.event(d % 2 == 0 ? "Reading" : "reading", at(21, 30), value: Double(5 + d % 9)))
            switch d % 5 {
            case 0: records.append(Self.event("stretch", at(22, 0), value: nil, label: HabitEvent.Mark.skipped))
            case 1: records.append(Self.event("stretch", at(22, 0), value: nil, label: HabitEvent.Mark.unknown))
            default: records.append(Self.event("stretch", at(22, 0)))
            }
            if d % 3 == 0 { records.append(Self.event(BuiltInHabit.vaping, at(23, 45))) }
            records.append(Self.event(BuiltInHabit.meal, at(0, 0), value: 600))  // right at local midnight
        }
        try await store.write(records)
        let deleted = Self.event("hydration", local(20, 7), value: 400)
        _ = try await store.delete(id: deleted.id.description)
        return c.date(byAdding: .day, value: 30, to: local(10, 15))!
    }

    @Test(arguments: ["Europe/Berlin", "America/New_York"])
    func everyHabitTotalsEqualEachHabitsTotals(zone: String) async throws {
        let c = Calendar.gregorian(in: TimeZone(identifier: zone)!)
        let store = try await HealthStore.inMemory()
        let now = try await Self.fill(store, c)
        for unit in [StatsPeriod.day, .week, .month] {
            let periods = Periods(unit, calendar: c, from: c.date(byAdding: .day, value: -31, to: now)!, through: now)
            let every = try await store.everyHabitTotals(bounds: periods.bounds)
            #expect(Set(every.keys) == ["hydration", "reading", "stretch", "vaping", "meal"])
            for (name, key) in [("hydration", "hydration"), ("Reading", "reading"), ("stretch", "stretch"), ("vaping", "vaping"),
                                ("meal", "meal")] {
                let one = try await store.habitTotals(name, bounds: periods.bounds)
                #expect(every[key] == one, "\(name) per \(unit)")
            }
            // Skipped and unknown days are not entries; the deleted drink is gone.
            let stretch = every["stretch"]!.reduce(0) { $0 + $1.count }
            #expect(stretch == (10...40).filter { $0 % 5 > 1 }.count)
        }
        // Daily totals regrouped into weeks and months equal those read per week and month.
        let days = Periods(.day, calendar: c, from: c.date(byAdding: .day, value: -31, to: now)!, through: now)
        let daily = try await store.everyHabitTotals(bounds: days.bounds)
        for unit in [StatsPeriod.week, .month] {
            let periods = Periods(unit, calendar: c, from: days.bounds[0], through: now)
            let read = try await store.everyHabitTotals(bounds: periods.bounds)
            #expect(daily.mapValues { periods.regroup($0, from: days) } == read, "\(unit)")
        }
        let spans = try await store.everyHabitSpan()
        for (name, key) in [("hydration", "hydration"), ("Reading", "reading"), ("stretch", "stretch"), ("vaping", "vaping")] {
            let one = try await store.habitSpan(name)
            #expect(spans[key]?.first == one?.first && spans[key]?.last == one?.last, "\(name)")
        }
    }

    /// `stats` given the history (as `healthgate stats` does) equals `stats` reading its own
    /// daily totals: every period, with a range that cuts a day in two and without.
    @Test(arguments: [StatsPeriod.week, .month, .day])
    func statsWithTheHistoryEqualStatsWithout(period: StatsPeriod) async throws {
        let zone = TimeZone(identifier: "Europe/Berlin")!
        let c = Calendar.gregorian(in: zone)
        let store = try await HealthStore.inMemory()
        let now = try await Self.fill(store, c)
        let history = try await Reports.habitHistory(store, days: .midnight(in: c.timeZone), now: now)
        #expect(history.days != nil && !history.daily.isEmpty)
        let cut = c.date(from: DateComponents(year: 2026, month: 3, day: 17, hour: 13))!
        for range in [DateRange(), DateRange(since: cut), DateRange(since: cut, until: c.date(byAdding: .day, value: 9, to: cut)!)] {
            let without = try await Reports.stats(store, period: period, range: range, days: .midnight(in: zone), now: now)
            let with = try await Reports.stats(store, period: period, range: range, days: .midnight(in: zone), now: now, history: history)
            #expect(!without.isEmpty)
            #expect(with == without)
            #expect(without.contains { $0.habits.contains { $0.daysMet != nil } })
        }
    }
}
