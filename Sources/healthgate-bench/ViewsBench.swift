import AsyncHTTPClient
import Foundation
import GRDBSQLite
import Gzip
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
        // A night a day (about 1,800), ending in the morning.
        records.append(.sleep(SleepSession(id: RecordID.derive("bench", "views", "night", String(d)), start: day.addingTimeInterval(-3000),
                                           end: day.addingTimeInterval(6.5 * 3600), source: source)))
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
    try await dashboardPages(path: path, rounds: max(rounds, 40), baselines: [("today", todaySQL), ("stats", statsSQL)])
}

/// The dashboard's pages on the same five years: `healthgate dashboard` running (as a user runs
/// it), each page fetched `rounds` times over loopback; the time to serve it (p50, p99) and its
/// size (plain and gzip), next to the plain SQL behind today and stats run in this process
/// through SQLite's C API on the same file. Targets: under 100 ms p99 and 200 KB gzip per page.
func dashboardPages(path: String, rounds: Int, baselines: [(String, String)]) async throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["TZ=Europe/Berlin", Tool.path("healthgate"), "dashboard", "--db", path, "--at", "2026-04-02T21:00",
                         "--listen", "127.0.0.1:0"]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    defer {
        process.terminate()
        process.waitUntilExit()
    }
    var line = Data()
    while let byte = try out.fileHandleForReading.read(upToCount: 1), let b = byte.first, b != 0x0A { line.append(b) }
    let text = String(decoding: line, as: UTF8.self)
    guard let range = text.range(of: "http://") else { throw PeerError("healthgate dashboard did not start: \(text)") }
    let base = String(text[range.lowerBound...]).trimmingCharacters(in: CharacterSet(charactersIn: "/\n "))
    print("dashboard pages, \(rounds) fetches each (server running; p50 / p99; size plain / gzip); targets 100 ms p99, 200 KB gzip")
    for page in ["/", "/water?days=365", "/vaping?days=365", "/habits", "/habit?name=stretch"] {
        var times: [Double] = []
        var body = Data()
        for _ in 0..<rounds {
            let t0 = now()
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + page), timeout: .seconds(60))
            let bytes = try await response.body.collect(upTo: 16 << 20)
            times.append(now() - t0)
            guard response.status == .ok else { throw PeerError("\(page): \(response.status)") }
            body = Data(bytes.readableBytesView)
        }
        print(String(format: "  %@ %7.1f ms %7.1f ms   %7.1f KB %6.1f KB", page.padding(toLength: 22, withPad: " ", startingAt: 0), median(times) * 1000,
                     percentile(times, 0.99) * 1000, Double(body.count) / 1024, Double(Gzip.compress(body).count) / 1024))
    }
    // The plain SQL, in this process, local days by SQLite's localtime in the same zone.
    let zone = ProcessInfo.processInfo.environment["TZ"]
    setenv("TZ", "Europe/Berlin", 1)
    tzset()
    defer {
        if let zone { setenv("TZ", zone, 1) } else { unsetenv("TZ") }
        tzset()
    }
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw PeerError("cannot open \(path)") }
    defer { sqlite3_close(db) }
    for (name, sql) in baselines {
        var times: [Double] = []
        for _ in 0..<rounds {
            let t0 = now()
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw PeerError("\(name) SQL failed") }
            times.append(now() - t0)
        }
        print(String(format: "  %@ %7.1f ms %7.1f ms   (in process)", ("plain SQL of " + name).padding(toLength: 22, withPad: " ", startingAt: 0), median(times) * 1000,
                     percentile(times, 0.99) * 1000))
    }
}
