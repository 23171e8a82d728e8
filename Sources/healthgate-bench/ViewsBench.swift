import Foundation
import HealthModel
import HealthReports
import HealthStore
import TestSupport

/// `healthgate today` and `healthgate stats --period week` over five years of daily entries
/// (about 20,000 habit events: drinks, vaping sessions, meals, two habits; 2,000 workouts),
/// each next to a plain SQL query of the same totals on the same database run by `sqlite3`
/// (local days through SQLite's `localtime`, the same TZ). Whole processes (start to exit) are
/// timed on both sides; the in-process time of the report alone is shown too.
func viewsBenchmarks(rounds: Int = 15) async throws {
    print("\n== today and stats over five years of entries ==")
    let path = tempPath("views")
    removeDatabase(path)
    defer { removeDatabase(path) }
    let zone = TimeZone(identifier: "Europe/Berlin")!
    let calendar = Calendar.gregorian(in: zone)
    let end = calendar.date(from: DateComponents(year: 2026, month: 4, day: 2, hour: 21))!
    let start = calendar.date(byAdding: .year, value: -5, to: end)!
    let source = Source(driver: "bench", device: "views")
    let store = try await HealthStore(path: path)
    var records: [HealthRecord] = [
        .definition(Definition(name: "hydration", time: start, body: .habit(HabitDefinition(valueKind: .numeric, unit: "ml",
                                                                                          target: HabitTarget(amount: 2000))),
                               source: source)),
        .definition(Definition(name: "vaping", time: start, body: .habit(HabitDefinition(valueKind: .numeric,
                                                                                       target: HabitTarget(amount: 3, direction: .atMost))),
                               source: source)),
        .definition(Definition(name: "stretch", time: start, body: .habit(HabitDefinition(valueKind: .yesNo)), source: source)),
        .definition(Definition(name: "reading", time: start, body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages",
                                                                                        target: HabitTarget(amount: 100, period: .week))),
                               source: source)),
    ]
    var habits = 0, workouts = 0
    var day = start
    var n = 0
    func habit(_ name: String, _ time: Date, _ value: Double, _ category: String? = nil) -> HealthRecord {
        n += 1
        habits += 1
        return .habit(HabitEvent(id: RecordID.derive("bench", "views", String(n)), habit: name, time: time, value: value,
                                 category: category, source: source))
    }
    var d = 0
    while day <= end {
        // Eleven entries a day: five drinks, two vaping sessions (one on even days), two meals,
        // stretching and reading; a workout a day, two every tenth day (about 2,000 in all).
        for h in [8, 10, 13, 16, 19] { records.append(habit("hydration", day.addingTimeInterval(Double(h) * 3600), 400)) }
        records.append(habit("vaping", day.addingTimeInterval(11 * 3600), 1, d % 3 == 0 ? "stress" : "boredom"))
        if d % 2 == 1 { records.append(habit("vaping", day.addingTimeInterval(23.5 * 3600), 1, "partying")) }
        records.append(habit("meal", day.addingTimeInterval(12.5 * 3600), 650))
        records.append(habit("meal", day.addingTimeInterval(19.5 * 3600), 800))
        if d % 9 != 0 { records.append(habit("stretch", day.addingTimeInterval(22 * 3600), 1)) }
        records.append(habit("reading", day.addingTimeInterval(21 * 3600), 20))
        for extra in 0..<(d % 10 == 3 ? 2 : 1) {
            workouts += 1
            let t = day.addingTimeInterval(Double(7 + 10 * extra) * 3600)
            records.append(.workout(Workout(id: RecordID.derive("bench", "views", "w", String(d), String(extra)), sport: "running",
                                            start: t, end: t.addingTimeInterval(2700), timerS: 2700, distanceM: 8000, energyKcal: 450,
                                            avgHeartRate: 150, source: source)))
        }
        d += 1
        day = calendar.date(byAdding: .day, value: 1, to: day)!
        if records.count > 5000 {
            try await store.write(records)
            records = []
        }
    }
    try await store.write(records)
    print("database: \(d) days, \(habits) habit events, \(workouts) workouts")

    // In process: the reports alone.
    var inProcess: [String: [Double]] = [:]
    for _ in 0..<rounds {
        var t0 = now()
        _ = try await Reports.today(store, days: .midnight(in: calendar.timeZone), now: end)
        inProcess["today", default: []].append(now() - t0)
        t0 = now()
        // As `healthgate stats` does: the habit history (streaks) once, shared with the stats.
        let history = try await Reports.habitHistory(store, days: .midnight(in: calendar.timeZone), now: end)
        _ = try await Reports.stats(store, period: .week, days: .midnight(in: zone), now: end, history: history)
        inProcess["stats", default: []].append(now() - t0)
    }

    // The same totals in plain SQL (local days and ISO-week Mondays by SQLite's localtime).
    let todaySQL = """
        SELECT total(value), count(*) FROM habit_events WHERE habit = 'hydration' AND deleted = 0
            AND date(time, 'localtime') = '2026-04-02';
        SELECT count(*), max(time) FROM habit_events WHERE habit = 'vaping' AND deleted = 0;
        SELECT total(value) FROM habit_events WHERE habit = 'meal' AND deleted = 0 AND date(time, 'localtime') = '2026-04-02';
        SELECT total(energy_kcal) FROM workouts WHERE deleted = 0 AND date(start_time, 'localtime') = '2026-04-02';
        SELECT habit, date(time, 'localtime') AS d, count(*), total(value) FROM habit_events
            WHERE deleted = 0 AND habit IN ('hydration', 'vaping', 'stretch') GROUP BY habit, d;
        SELECT date(time, 'localtime', '-6 days', 'weekday 1') AS w, total(value) FROM habit_events
            WHERE deleted = 0 AND habit = 'reading' GROUP BY w;
        """
    let statsSQL = """
        SELECT habit, date(time, 'localtime', '-6 days', 'weekday 1') AS w, count(*), total(value) FROM habit_events
            WHERE deleted = 0 GROUP BY habit, w;
        SELECT date(time, 'localtime', '-6 days', 'weekday 1') AS w, category, count(*) FROM habit_events
            WHERE deleted = 0 AND habit = 'vaping' GROUP BY w, category;
        SELECT date(start_time, 'localtime', '-6 days', 'weekday 1') AS w, count(*), total(coalesce(timer_s, elapsed_s)),
            total(distance_m), total(energy_kcal) FROM workouts WHERE deleted = 0 GROUP BY w;
        SELECT habit, date(time, 'localtime') AS d, count(*), total(value) FROM habit_events
            WHERE deleted = 0 AND habit IN ('hydration', 'vaping', 'stretch') GROUP BY habit, d;
        """
    let healthgate = Tool.path("healthgate")
    var processes: [String: [Double]] = [:]
    for _ in 0..<rounds {
        for (name, executable, arguments) in [
            ("today", "/usr/bin/env", ["TZ=Europe/Berlin", healthgate, "today", "--json", "--at", "2026-04-02T21:00", "--db", path]),
            ("stats", "/usr/bin/env", ["TZ=Europe/Berlin", healthgate, "stats", "--period", "week", "--json", "--at",
                                       "2026-04-02T21:00", "--db", path]),
            ("today-sql", "/usr/bin/env", ["TZ=Europe/Berlin", "sqlite3", "-readonly", path, todaySQL]),
            ("stats-sql", "/usr/bin/env", ["TZ=Europe/Berlin", "sqlite3", "-readonly", path, statsSQL]),
        ] {
            let t0 = now()
            let result = try await Tool.run(executable, arguments)
            processes[name, default: []].append(now() - t0)
            guard result.status == 0 else { throw PeerError("\(name) failed: \(result.stderr)") }
        }
    }
    func ms(_ values: [Double]?) -> String { String(format: "%7.1f ms", median(values ?? [.nan]) * 1000) }
    func p90(_ values: [Double]?) -> String { String(format: "%7.1f ms", percentile(values ?? [], 0.9) * 1000) }
    print("median (p90) of \(rounds) runs; target under 100 ms each")
    print("  today                  process \(ms(processes["today"])) (\(p90(processes["today"])))   in process \(ms(inProcess["today"]))")
    print("  sqlite3, same totals   process \(ms(processes["today-sql"])) (\(p90(processes["today-sql"])))")
    print("  stats --period week    process \(ms(processes["stats"])) (\(p90(processes["stats"])))   in process \(ms(inProcess["stats"]))")
    print("  sqlite3, same totals   process \(ms(processes["stats-sql"])) (\(p90(processes["stats-sql"])))")
}
