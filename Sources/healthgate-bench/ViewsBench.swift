import AsyncHTTPClient
import Foundation
import GRDBSQLite
import Gzip
import HealthModel
import HealthReports
import HealthStore
import TestSupport

/// `healthgate today` and `healthgate stats --period week` over five years of daily entries
/// (about 20,000 habit events: drinks, vaping sessions, meals, two habits; 2,000 workouts with
/// a sample every 5 s, about a million samples; 1,800 nights; a weight each morning),
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
    var habits = 0, workouts = 0, samples = 0
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
            // A 45-minute run around a 2 km loop, a sample every 5 s: heart rate, cadence,
            // power, speed, distance, position and altitude, as a watch records them.
            var series: [Sample] = []
            for i in 0..<540 {
                let s = Double(i * 5), phase = s / 2700 * 2 * .pi * 4
                series.append(Sample(time: t.addingTimeInterval(s), heartRate: 120 + Int(40 * s / 2700) + (i % 7), cadence: 170 + Double(i % 5),
                                     powerW: 250 + 30 * sin(phase * 3), speedMps: 2.96 + 0.3 * sin(phase), distanceM: s * 2.96,
                                     latitude: 52.52 + 0.003 * sin(phase), longitude: 13.40 + 0.005 * cos(phase), altitudeM: 40 + 8 * sin(phase * 2)))
            }
            samples += series.count
            records.append(.workout(Workout(id: RecordID.derive("bench", "views", "w", String(d), String(extra)), sport: "running",
                                            start: t, end: t.addingTimeInterval(2700), timerS: 2700, distanceM: 8000, energyKcal: 450,
                                            avgHeartRate: 150, samples: series, source: source)))
        }
        // A weight each morning, drifting down and back with a day's noise.
        records.append(.measurement(HealthModel.Measurement(id: RecordID.derive("bench", "views", "kg", String(d)), kind: .weight,
                                                            time: day.addingTimeInterval(6.75 * 3600),
                                                            value: 80 - 4 * sin(Double(d) / 300) + Double(d * 7919 % 11 - 5) / 10, source: source)))
        d += 1
        day = calendar.date(byAdding: .day, value: 1, to: day)!
        if records.count > 2000 {
            try await store.write(records)
            records = []
        }
    }
    try await store.write(records)
    print("database: \(d) days, \(habits) habit events, \(workouts) workouts with \(samples) samples, \(d) nights, \(d) weights")

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
    let workout = RecordID.derive("bench", "views", "w", String(d - 2), "0").description
    // The plain SQL behind each page (what it reads, in the same zone), timed beside it.
    let pages: [(path: String, sql: String)] = [
        ("/", todaySQL),
        ("/water?days=365", """
            SELECT date(time, 'localtime') AS d, count(*), total(value) FROM habit_events
                WHERE habit = 'hydration' AND deleted = 0 AND time >= '2025-04-02' GROUP BY d;
            """),
        ("/vaping?days=365", """
            SELECT date(time, 'localtime') AS d, category, strftime('%H', time, 'localtime'), count(*) FROM habit_events
                WHERE habit = 'vaping' AND deleted = 0 AND time >= '2025-04-02' GROUP BY 1, 2, 3;
            """),
        ("/habits", statsSQL),
        ("/habit?name=stretch", """
            SELECT date(time, 'localtime') AS d, count(*) FROM habit_events WHERE habit = 'stretch' AND deleted = 0 GROUP BY d;
            """),
        ("/workouts?days=365", """
            SELECT id, sport, start_time, timer_s, distance_m, energy_kcal, avg_hr FROM workouts
                WHERE deleted = 0 AND start_time >= '2025-04-02' ORDER BY start_time DESC;
            """),
        ("/workout?id=\(workout)", """
            SELECT * FROM workouts WHERE id = '\(workout)';
            SELECT time, heart_rate, cadence, power_w, speed_mps, distance_m, latitude, longitude, altitude_m FROM samples
                WHERE workout_id = '\(workout)' ORDER BY seq;
            SELECT max(max_hr) FROM workouts WHERE deleted = 0 AND start_time >= '2025-04-02';
            """),
        ("/sleep?nights=90", """
            SELECT start_time, end_time, total_sleep_s FROM sleep_sessions WHERE deleted = 0 AND end_time >= '2026-01-01' ORDER BY end_time;
            """),
        ("/body?days=365", """
            SELECT kind, time, value FROM measurements WHERE deleted = 0 AND time >= '2025-04-02' ORDER BY kind, time;
            """),
        ("/stats?period=month", statsSQL.replacingOccurrences(of: "'-6 days', 'weekday 1'", with: "'start of month'")),
        ("/timeline?day=2026-04-01&days=7", """
            SELECT habit, time, value FROM habit_events WHERE deleted = 0 AND time >= '2026-03-25' AND time < '2026-04-03';
            SELECT start_time, end_time FROM workouts WHERE deleted = 0 AND start_time >= '2026-03-25' AND start_time < '2026-04-03';
            SELECT start_time, end_time FROM sleep_sessions WHERE deleted = 0 AND end_time >= '2026-03-25' AND start_time < '2026-04-03';
            """),
        ("/entries?day=2026-04-01", """
            SELECT * FROM habit_events WHERE deleted = 0 AND time >= '2026-03-31T22:00' AND time < '2026-04-01T22:00';
            SELECT * FROM workouts WHERE deleted = 0 AND start_time >= '2026-03-31T22:00' AND start_time < '2026-04-01T22:00';
            """),
    ]
    try await dashboardPages(path: path, rounds: max(rounds, 40), pages: pages)
}

/// The dashboard's pages on the same five years: `healthgate dashboard` running (as a user runs
/// it), each page fetched `rounds` times over loopback; the time to serve it (p50, p99) and its
/// size (plain and gzip), next to the plain SQL behind it run in this process through SQLite's C
/// API on the same file; then each page's first contentful paint in Chromium, read from the
/// DevTools protocol's lifecycle events. Targets: under 100 ms p99, 200 KB gzip, 500 ms paint.
func dashboardPages(path: String, rounds: Int, pages: [(path: String, sql: String)]) async throws {
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

    print("dashboard pages, \(rounds) fetches each (server running), next to the plain SQL behind each (in process)")
    print("  page                             serve p50    p99     SQL p50    p99    plain KB  gzip KB   targets 100 ms p99, 200 KB gzip")
    for page in pages {
        var times: [Double] = [], sqlTimes: [Double] = []
        var body = Data()
        for _ in 0..<rounds {
            let t0 = now()
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + page.path), timeout: .seconds(60))
            let bytes = try await response.body.collect(upTo: 16 << 20)
            times.append(now() - t0)
            guard response.status == .ok else { throw PeerError("\(page.path): \(response.status)") }
            body = Data(bytes.readableBytesView)
            let t1 = now()
            guard sqlite3_exec(db, page.sql, nil, nil, nil) == SQLITE_OK else {
                throw PeerError("the SQL of \(page.path) failed: \(String(cString: sqlite3_errmsg(db)))")
            }
            sqlTimes.append(now() - t1)
        }
        print(String(format: "  %@ %7.1f ms %7.1f   %7.1f ms %7.1f   %7.1f  %7.1f", page.path.padding(toLength: 32, withPad: " ", startingAt: 0),
                     median(times) * 1000, percentile(times, 0.99) * 1000, median(sqlTimes) * 1000, percentile(sqlTimes, 0.99) * 1000,
                     Double(body.count) / 1024, Double(Gzip.compress(body).count) / 1024))
    }

    // First contentful paint in Chromium (Tests/browser/paint.py), from the DevTools protocol.
    let script = PackagePaths.root + "/Tests/browser/paint.py"
    let paint = try await Tool.run("/usr/bin/env", ["python3", script, base, "10"] + pages.map(\.path))
    guard paint.status == 0 else { throw PeerError("first paint not measured (python3, selenium, chromium and chromedriver, as .ci/setup installs them): \(paint.stderr)") }
    print("first contentful paint, 10 loads each in headless Chromium (p50 / p99); target under 500 ms")
    print(paint.stdout, terminator: "")
}
