import Foundation
import HealthModel
import HealthReports
import HealthStore
import Testing
import TestSupport

/// Derived habits end to end (docs/derived-habits.md): records of two devices written into a real
/// database, habits defined with `healthgate define habit --from`, every day's value read back
/// with `habit explain --json` and checked against an independent computation in Python over the
/// same SQLite rows, in a zone with a DST change (Berlin, 04:00 day start) and one with a
/// half-hour offset (Kolkata). Then `today` and `stats` use them, a late backlog and an edited
/// definition change them, and bad definitions are refused with nothing stored.
@Suite(.serialized) struct DerivedHabitTests {
    static let watch = Source(driver: "fit", device: "watch")
    static let strap = Source(driver: "ble", device: "strap")
    static let phone = Source(driver: "apple_health", device: "phone")

    /// Four days of both devices from 2026-03-27 (Berlin's clocks change on the 29th).
    static func records(_ zone: TimeZone) -> [HealthRecord] {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        func at(_ d: Int, _ h: Int, _ m: Int = 0) -> Date { c.date(from: DateComponents(year: 2026, month: 3, day: d, hour: h, minute: m))! }
        var out: [HealthRecord] = [
            .definition(Definition(name: "preferences", time: at(20, 8), body: .preferences(Preferences(dayStartMinutes: 240)),
                                   source: Source(driver: "manual"))),
        ]
        var n = 0
        func id() -> RecordID {
            n += 1
            return RecordID.derive("derived", zone.identifier, String(n))
        }
        for d in 27...30 {
            // Steps: the watch a reading a minute 07:00-09:00, the phone every 5 minutes 08:00-10:00
            // (both worn 08:00-09:00), and a watch reading at 02:30 (the day before's, by the day start).
            for m in 0..<120 {
                out.append(.measurement(Measurement(id: id(), kind: .steps, time: at(d, 7, 0).addingTimeInterval(Double(m) * 60),
                                                    end: at(d, 7, 0).addingTimeInterval(Double(m + 1) * 60), value: Double(40 + (m * 7 + d) % 60),
                                                    source: watch)))
            }
            for m in stride(from: 0, to: 120, by: 5) {
                out.append(.measurement(Measurement(id: id(), kind: .steps, time: at(d, 8, 0).addingTimeInterval(Double(m) * 60),
                                                    value: Double(150 + (m * 13 + d) % 200), source: phone)))
            }
            out.append(.measurement(Measurement(id: id(), kind: .steps, time: at(d, 2, 30), value: 500, source: watch)))
            // A run recorded by the strap (samples every 10 s) and the watch (heart-rate readings
            // every 30 s), overlapping by 15 minutes; a ride later alone; on the 30th, the run
            // crosses the day start (03:40 to 04:25).
            let run = d == 30 ? at(d, 3, 40) : at(d, 18, 0)
            var samples: [Sample] = []
            for s in stride(from: 0, to: 45 * 60, by: 10) {
                samples.append(Sample(time: run.addingTimeInterval(Double(s)), heartRate: 95 + (s / 60) * 2 + (s % 3)))
            }
            out.append(.workout(Workout(id: id(), sport: "running", start: run, end: run.addingTimeInterval(45 * 60), samples: samples, source: strap)))
            out.append(.workout(Workout(id: id(), sport: "Running", start: run.addingTimeInterval(30 * 60), end: run.addingTimeInterval(60 * 60),
                                        source: watch)))
            for s in stride(from: 30 * 60, to: 60 * 60, by: 30) {
                out.append(.measurement(Measurement(id: id(), kind: .heartRate, time: run.addingTimeInterval(Double(s)),
                                                    value: Double(118 + (s / 60) % 9), source: watch)))
            }
            if d != 28 {
                let ride = at(d, 12, 15)
                out.append(.workout(Workout(id: id(), sport: "cycling", start: ride, end: ride.addingTimeInterval(Double(10 + d) * 60), source: phone)))
            }
            // The night ending on the day, from both devices (the watch saw more sleep), and a nap.
            let bed = c.date(byAdding: .day, value: -1, to: at(d, 23, 10))!, wake = at(d, 6, 40)
            out.append(.sleep(SleepSession(id: id(), start: bed, end: wake, stages: [
                SleepStageSpan(start: bed, end: bed.addingTimeInterval(3600), stage: .light),
                SleepStageSpan(start: bed.addingTimeInterval(3600), end: bed.addingTimeInterval(7200), stage: .deep),
                SleepStageSpan(start: bed.addingTimeInterval(7200), end: wake, stage: .light),
            ], source: watch)))
            out.append(.sleep(SleepSession(id: id(), start: bed.addingTimeInterval(1800), end: wake.addingTimeInterval(-1200), source: phone)))
            out.append(.sleep(SleepSession(id: id(), start: at(d, 14, 0), end: at(d, 14, 25 + d), source: phone)))
            // Drinks from the phone's app and typed; a vaping session; weights and resting heart rate.
            out.append(.habit(HabitEvent(id: id(), habit: "hydration", time: at(d, 9), value: 330, unit: "ml", source: phone)))
            out.append(.habit(HabitEvent(id: id(), habit: "Hydration", time: at(d, 15), value: 250 + Double(d), unit: "ml",
                                         source: Source(driver: "manual"))))
            out.append(.habit(HabitEvent(id: id(), habit: "vaping", time: at(d, 3, 50), value: 1, source: Source(driver: "manual"))))
            out.append(.measurement(Measurement(id: id(), kind: .restingHeartRate, time: at(d, 7), value: Double(50 + d % 4), source: watch)))
            out.append(.measurement(Measurement(id: id(), kind: .restingHeartRate, time: at(d, 7, 5), value: Double(53 + d % 3), source: strap)))
        }
        return out
    }

    /// name: the `define habit` arguments after the name.
    static let habits: [(String, [String])] = [
        ("walk", ["--from", "steps", "--target", "8000"]),
        ("cardio", ["--from", "heart_rate_above", "--bpm", "120", "--target", "20"]),
        ("calm", ["--from", "heart_rate_below", "--bpm", "100", "--target", "1"]),
        ("moving", ["--from", "active_minutes", "--target", "60"]),
        ("runs", ["--from", "workouts", "--sport", "running", "--target", "3", "--per", "week"]),
        ("long-rides", ["--from", "workouts", "--sport", "cycling", "--min-minutes", "38", "--target", "1"]),
        ("sleep7", ["--from", "sleep", "--target", "420"]),
        ("deep", ["--from", "sleep", "--stage", "deep", "--target", "60"]),
        ("rhr", ["--from", "measurement", "--measurement", "resting_heart_rate", "--target", "55", "--at-most"]),
        ("water2l", ["--from", "hydration", "--target", "2000"]),
        ("vapes", ["--from", "vaping", "--target", "5", "--at-most"]),
    ]

    /// The same rules, written again in Python over the database's rows (docs/derived-habits.md):
    /// each habit's value per local day.
    static let python = """
        import json, sqlite3, sys
        from datetime import datetime, timedelta, timezone
        from zoneinfo import ZoneInfo
        db = sqlite3.connect(sys.argv[1]); zone = ZoneInfo(sys.argv[2])
        def t(s): return datetime.fromisoformat(s.replace("Z", "+00:00"))
        def day(x):
            local = x.astimezone(zone)
            d = local.date()
            return (d - timedelta(days=1) if (local.hour, local.minute) < (4, 0) else d).isoformat()
        def start(d):
            return datetime.fromisoformat(d).replace(hour=4, tzinfo=zone).astimezone(timezone.utc)
        out = {}
        def add(habit, d, v): out.setdefault(habit, {}); out[habit][d] = out[habit].get(d, 0) + v
        # steps: per quarter hour of a day, the source that counted most
        slots = {}
        for time, value, drv, dev in db.execute("SELECT time, value, source_driver, source_device FROM measurements WHERE kind='steps' AND deleted=0"):
            x = t(time); k = (day(x), int(x.timestamp() // 900))
            slots.setdefault(k, {}); slots[k][(drv, dev)] = slots[k].get((drv, dev), 0) + value
        for (d, _), by in slots.items(): add("walk", d, max(by.values()))
        # heart rate: per clock minute the highest (above) or lowest (below) reading of any source
        hi, lo = {}, {}
        rows = list(db.execute("SELECT s.time, s.heart_rate FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.deleted=0 AND s.heart_rate > 0"))
        rows += [(t(a).timestamp(), v) for a, v in db.execute("SELECT time, value FROM measurements WHERE kind='heart_rate' AND deleted=0")]
        for time, hr in rows:
            m = int(time // 60); hi[m] = max(hi.get(m, 0), hr); lo[m] = min(lo.get(m, 999), hr)
        for m, v in hi.items():
            if v > 120: add("cardio", day(datetime.fromtimestamp(m * 60, timezone.utc)), 1)
        for m, v in lo.items():
            if v < 100: add("calm", day(datetime.fromtimestamp(m * 60, timezone.utc)), 1)
        # workouts: active minutes (union, cut at day starts) and overlapping ones counted once
        ws = sorted((t(a), t(b), s.lower()) for a, b, s in db.execute("SELECT start_time, end_time, sport FROM workouts WHERE deleted=0"))
        covered = None
        for a, b, s in ws:
            a = max(a, covered) if covered else a
            covered = max(covered, b) if covered else b
            while a < b:
                d = day(a); e = min(b, start((datetime.fromisoformat(d) + timedelta(days=1)).date().isoformat()))
                add("moving", d, (e - a).total_seconds() / 60); a = e
        for habit, sport, least in [("runs", "running", 0), ("long-rides", "cycling", 38)]:
            end = None
            for a, b, s in ws:
                if s != sport or (b - a).total_seconds() < least * 60: continue
                if end is None or a >= end: add(habit, day(a), 1)
                end = max(end, b) if end else b
        # sleep: per day of the end, most sleep first, each kept unless it overlaps one kept
        nights = {}
        for sid, a, b, total in db.execute("SELECT id, start_time, end_time, total_sleep_s FROM sleep_sessions WHERE deleted=0"):
            nights.setdefault(day(t(b)), []).append((sid, t(a), t(b), total))
        for d, ss in nights.items():
            kept = []
            for s in sorted(ss, key=lambda s: (-s[3], s[1])):
                if not any(k[1] < s[2] and s[1] < k[2] for k in kept): kept.append(s)
            for sid, a, b, total in kept:
                add("sleep7", d, total / 60)
                deep = sum((t(y) - t(x)).total_seconds() for x, y in db.execute(
                    "SELECT start_time, end_time FROM sleep_stages WHERE session_id=? AND stage='deep'", (sid,)))
                add("deep", d, deep / 60)
        # a measurement: the day's mean
        means = {}
        for time, v in db.execute("SELECT time, value FROM measurements WHERE kind='resting_heart_rate' AND deleted=0"):
            means.setdefault(day(t(time)), []).append(v)
        for d, vs in means.items(): add("rhr", d, sum(vs) / len(vs))
        # hydration (any spelling, any source) and vaping
        for h, time, v in db.execute("SELECT habit, time, value FROM habit_events WHERE deleted=0 AND lower(habit) IN ('hydration', 'vaping')"):
            add("water2l" if h.lower() == "hydration" else "vapes", day(t(time)), v if h.lower() == "hydration" else 1)
        print(json.dumps(out))
        """

    func run(_ arguments: [String], _ scratch: Scratch, zone: String) async throws -> Tool.Result {
        try await Tool.run(CLI.executable, arguments + ["--db", scratch.dbPath], environment: ["TZ": zone])
    }

    /// Each habit's value on each day, from `habit explain --json`.
    func explained(_ scratch: Scratch, zone: String, days: [String]) async throws -> [String: [String: Double]] {
        var values: [String: [String: Double]] = [:]
        for (name, _) in Self.habits {
            for day in days {
                let result = try await run(["habit", "explain", name, "--day", day, "--json"], scratch, zone: zone)
                #expect(result.status == 0, "\(name) \(day): \(result.stderr)")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                let parts = json["contributions"] as? [[String: Any]] ?? []
                if !parts.isEmpty { values[name, default: [:]][day] = json["value"] as? Double }
            }
        }
        return values
    }

    @Test(arguments: ["Europe/Berlin", "Asia/Kolkata"])
    func everyDerivedValueEqualsAnIndependentComputation(zone: String) async throws {
        let scratch = try Scratch()
        try await scratch.store().write(Self.records(TimeZone(identifier: zone)!))
        for (name, arguments) in Self.habits {
            let defined = try await run(["define", "habit", name] + arguments, scratch, zone: zone)
            #expect(defined.status == 0, "\(name): \(defined.stderr)")
        }
        let days = ["2026-03-26", "2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"]
        let got = try await explained(scratch, zone: zone, days: days)
        let python = try await Tool.run("/usr/bin/env", ["python3", "-c", Self.python, scratch.dbPath, zone])
        #expect(python.status == 0, "\(python.stderr)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [String: [String: Double]])
        for (name, _) in Self.habits {
            let want = (expected[name] ?? [:]).filter { days.contains($0.key) }
            let have = got[name] ?? [:]
            #expect(Set(have.keys) == Set(want.keys), "\(zone) \(name): \(have) vs \(want)")
            for (day, value) in want { #expect(abs((have[day] ?? -1) - value) < 1e-6, "\(zone) \(name) \(day): \(have[day] ?? -1) vs \(value)") }
            #expect(!want.isEmpty, "\(name) has values to compare")
        }
        // `today` (from the cache of daily values, filled by the first run) shows the same values.
        for round in 0..<2 {
            let today = try await run(["today", "--json", "--at", "2026-03-30T21:00"], scratch, zone: zone)
            let rows = (try JSONSerialization.jsonObject(with: Data(today.stdout.utf8)) as? [String: Any])?["habits"] as? [[String: Any]] ?? []
            for (name, _) in Self.habits {
                let amount = rows.first { $0["name"] as? String == name }?["amount"] as? Double
                #expect(abs((amount ?? -1) - (expected[name]?["2026-03-30"] ?? 0)) < 1e-6, "\(zone) round \(round) \(name): \(amount ?? -1)")
            }
        }
        // The export (CSV and JSON lines) ends with every day's value, as computed values.
        let csv = try await run(["export", "--format", "csv", "--at", "2026-03-30T21:00"], scratch, zone: zone)
        let json = try await run(["export", "--format", "json", "--at", "2026-03-30T21:00"], scratch, zone: zone)
        #expect(csv.status == 0 && json.status == 0, "\(csv.stderr) \(json.stderr)")
        var fromCSV: [String: [String: Double]] = [:], fromJSON: [String: [String: Double]] = [:]
        for line in csv.stdout.split(whereSeparator: \.isNewline) where line.hasPrefix("derived,") {
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            fromCSV[cells[5], default: [:]][String(cells[13].dropFirst(4))] = Double(cells[6])
        }
        for line in json.stdout.split(whereSeparator: \.isNewline) {
            guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], o["type"] as? String == "derived" else { continue }
            fromJSON[o["habit"] as? String ?? "?", default: [:]][o["day"] as? String ?? "?"] = o["value"] as? Double
        }
        for (name, _) in Self.habits {
            let want = (expected[name] ?? [:]).filter { days.contains($0.key) }
            for (label, got) in [("csv", fromCSV[name] ?? [:]), ("json", fromJSON[name] ?? [:])] {
                #expect(Set(got.keys) == Set(want.keys), "\(zone) \(label) \(name): \(got) vs \(want)")
                for (day, value) in want { #expect(abs((got[day] ?? -1) - value) < 1e-6, "\(zone) \(label) \(name) \(day)") }
            }
        }
        #expect(csv.stdout.contains("from=heart_rate_above bpm=120"), "the definition's row names its source")
        // The dashboard's habit calendars (the cached values, read reduced in SQL) hold every day's value too.
        let dashboard = try DashboardCLITests.Dashboard(scratch, at: "2026-03-30T21:00", zone: zone)
        for (name, _) in Self.habits where name != "runs" {
            let page = try await DashboardCLITests.get(dashboard.url, "/habit?name=\(name)")
            for day in days {
                let pattern = "data-day=\"\(day)\" data-value=\"([-0-9.]+)\""
                let shown = page.body.range(of: pattern, options: .regularExpression).map { String(page.body[$0]) }
                let value = shown.flatMap { $0.split(separator: "\"").last }.flatMap { Double($0) }
                #expect(value.map { abs($0 - (expected[name]?[day] ?? 0)) < 0.01 } == true, "\(zone) \(name) \(day): \(shown ?? "none")")
            }
        }
        // Both devices' minutes are counted once: the strap's and the watch's overlap is not doubled.
        let cardio = try await run(["habit", "explain", "cardio", "--day", "2026-03-28", "--json"], scratch, zone: zone)
        let parts = (try JSONSerialization.jsonObject(with: Data(cardio.stdout.utf8)) as? [String: Any])?["contributions"] as? [[String: Any]] ?? []
        #expect(parts.contains { $0["sources"] as? [String] == ["ble (strap)", "fit (watch)"] }, "\(cardio.stdout)")
    }

    /// `today` and `stats` show a derived habit's value and streak; a backlog imported late and an
    /// edited definition change past days and the streak, once; deleting a record takes it out.
    @Test func lateDataAndAnEditedDefinitionChangeTheStreak() async throws {
        let zone = "Europe/Berlin"
        let scratch = try Scratch()
        let all = Self.records(TimeZone(identifier: zone)!)
        // The steps of the 28th arrive late.
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: zone)!
        let (d28, d29) = (c.date(from: DateComponents(year: 2026, month: 3, day: 28, hour: 4))!, c.date(from: DateComponents(year: 2026, month: 3, day: 29, hour: 4))!)
        func late(_ r: HealthRecord) -> Bool {
            if case .measurement(let m) = r, m.kind == .steps, m.time >= d28, m.time < d29 { return true }
            return false
        }
        try await scratch.store().write(all.filter { !late($0) })
        #expect(try await run(["define", "habit", "walk", "--from", "steps", "--target", "4000"], scratch, zone: zone).status == 0)
        func today() async throws -> [String: Any] {
            let result = try await run(["today", "--json", "--at", "2026-03-30T21:00"], scratch, zone: zone)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
            return try #require((json["habits"] as? [[String: Any]])?.first { $0["name"] as? String == "walk" })
        }
        // Without the 28th's steps the run is the 29th and 30th; the value is today's steps.
        let before = try await today()
        #expect(before["current_streak"] as? Int == 2, "\(before)")
        let explain = try await run(["habit", "explain", "walk", "--day", "2026-03-30", "--json"], scratch, zone: zone)
        let value = (try JSONSerialization.jsonObject(with: Data(explain.stdout.utf8)) as? [String: Any])?["value"] as? Double
        #expect(before["amount"] as? Double == value && (value ?? 0) > 4000, "\(before) \(explain.stdout)")
        // The backlog: the 28th met, the streak four days (the 27th too).
        try await scratch.store().write(all.filter(late))
        #expect(try await today()["current_streak"] as? Int == 4)
        // The dashboard's habit page draws the same days: the 28th met, with explain's value.
        let dashboard = try DashboardCLITests.Dashboard(scratch, at: "2026-03-30T21:00")
        let page = try await DashboardCLITests.get(dashboard.url, "/habit?name=walk")
        let explain28 = try await run(["habit", "explain", "walk", "--day", "2026-03-28", "--json"], scratch, zone: zone)
        let value28 = try #require((try JSONSerialization.jsonObject(with: Data(explain28.stdout.utf8)) as? [String: Any])?["value"] as? Double)
        #expect(page.body.contains("<rect class=\"day met\" data-day=\"2026-03-28\" data-value=\"\(NumberText.plain(value28))\""), "\(page.body)")
        // Imported again: nothing twice.
        try await scratch.store().write(all.filter(late))
        #expect(try await today()["current_streak"] as? Int == 4)
        // An edited goal (a new version) recomputes the history: no day reaches 20,000.
        let edited = try await run(["define", "habit", "walk", "--target", "20000"], scratch, zone: zone)
        #expect(edited.status == 0 && edited.stdout.contains("version 2"), "\(edited.stdout) \(edited.stderr)")
        let after = try await today()
        #expect(after["current_streak"] as? Int == 0 && after["longest_streak"] as? Int == 0, "\(after)")
        // Deleted records take their steps out of today's value (a tombstone is a write like any).
        let store = try await scratch.store()
        let todaySteps = all.compactMap { r -> HealthModel.Measurement? in
            if case .measurement(let m) = r, m.kind == .steps, m.source == Self.phone, m.time > d29.addingTimeInterval(86_400) { return m }
            return nil
        }
        let removed = todaySteps.reduce(0) { $0 + $1.value }
        let valueBefore = after["amount"] as? Double ?? 0
        for m in todaySteps { _ = try await store.delete(id: m.id.description) }
        let valueAfter = try await today()["amount"] as? Double ?? -1
        #expect(valueAfter < valueBefore && valueAfter > 0, "\(valueBefore) -> \(valueAfter), \(removed) of the phone's steps deleted")
        let stats = try await run(["stats", "--period", "day", "--json", "--at", "2026-03-30T21:00"], scratch, zone: zone)
        let progress = (try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])?["habits"] as? [[String: Any]]
        #expect(progress?.first { $0["habit"] as? String == "walk" }?["met"] as? Int == 0, "\(stats.stdout)")
    }

    /// A ten-day ultra event written after its days were computed changes every day it spans,
    /// the middle ones too (the store notes a record's span of days, not its ends alone).
    @Test func aLongWorkoutWrittenLateChangesEveryDayItSpans() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        #expect(try await run(["define", "habit", "moving", "--from", "active_minutes", "--target", "30"], scratch, zone: "UTC").status == 0)
        let days = DayBoundary.midnight(in: TimeZone(identifier: "UTC")!)
        let first = days.start(of: LocalDay(year: 2026, month: 3, day: 1))
        let now = first.addingTimeInterval(19 * 86_400 + 12 * 3600)
        func workout(_ id: String, from start: Date, hours: Double) -> HealthRecord {
            .workout(Workout(id: RecordID.derive("ultra", id), sport: "hiking", start: start, end: start.addingTimeInterval(hours * 3600),
                             source: Source(driver: "fit", device: "watch")))
        }
        try await store.write([workout("short", from: first.addingTimeInterval(8 * 3600), hours: 0.5)])
        let before = try await Reports.daily(store, habit: "moving", days: days, count: 20, now: now)
        #expect(before.map(\.sum) == [30] + Array(repeating: 0, count: 19), "\(before)")
        // From the 3rd at noon to the 13th at noon.
        try await store.write([workout("ultra", from: first.addingTimeInterval(2 * 86_400 + 12 * 3600), hours: 240)])
        let after = try await Reports.daily(store, habit: "moving", days: days, count: 20, now: now)
        #expect(after.map(\.sum) == [30, 0, 720] + Array(repeating: 1440, count: 9) + [720] + Array(repeating: 0, count: 7), "\(after)")
    }

    /// The store notes which days records were written on only while a derived habit is defined
    /// (the trigger costs nothing otherwise), and a view forgets them once it has recomputed.
    @Test func changesAreNotedOnlyWhileADerivedHabitIsDefined() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        func changes() async throws -> Int {
            let result = try await Tool.run("/usr/bin/env", ["sqlite3", scratch.dbPath, "SELECT count(*) FROM derived_changes"])
            return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let drink = { (id: String, day: Int) in
            HealthRecord.habit(HabitEvent(id: RecordID.derive("changes", id), habit: "hydration", time: Date(timeIntervalSince1970: 1_774_000_000 + Double(day) * 86400),
                                          value: 250, unit: "ml", source: Source(driver: "manual")))
        }
        try await store.write([drink("a", 0)])
        #expect(try await changes() == 0)
        #expect(try await run(["define", "habit", "water", "--from", "hydration", "--target", "1000"], scratch, zone: "UTC").status == 0)
        try await store.write([drink("b", 0), drink("c", 3)])
        #expect(try await changes() == 2)
        #expect(try await run(["today", "--json"], scratch, zone: "UTC").status == 0)
        #expect(try await changes() == 0)
        // The days computed are kept: one row per day from the first drink through today.
        let kept = try await Tool.run("/usr/bin/env", ["sqlite3", scratch.dbPath, "SELECT count(*), count(value), total(value) FROM derived_days"])
        let first = LocalDay(String(ISO8601.string(Date(timeIntervalSince1970: 1_774_000_000)).prefix(10)))!
        let today = LocalDay(String(ISO8601.string(Date()).prefix(10)))!
        #expect(kept.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(first.days(to: today) + 1)|2|750.0", "\(kept.stdout)")
    }

    /// Bad definitions: a clear error, nothing stored.
    @Test func badDefinitionsAreRefusedAndNothingIsStored() async throws {
        let scratch = try Scratch()
        try await scratch.store().write([])
        let cases: [([String], String)] = [
            (["nope", "--from", "elevation", "--target", "1"], "--from 'elevation' is not a source"),
            (["hot", "--from", "heart_rate_above", "--bpm", "400", "--target", "1"], "outside 30...250"),
            (["hot", "--from", "heart_rate_above", "--target", "1"], "needs its threshold in bpm"),
            (["hydration", "--from", "hydration", "--target", "2000"], "cannot derive from its own entries"),
            (["walk", "--from", "steps"], "needs its goal"),
            (["walk", "--from", "steps", "--bpm", "120", "--target", "1"], "applies to heart_rate_above and heart_rate_below only"),
            (["rhr", "--from", "measurement", "--target", "60"], "needs its kind"),
            (["rhr", "--from", "measurement", "--measurement", "steps", "--target", "60"], "not a daily reading"),
            (["naps", "--from", "sleep", "--stage", "awake", "--target", "60"], "awake is not sleep"),
            (["walk", "--from", "steps", "--kind", "yes-no", "--target", "1"], "a derived habit is numeric"),
        ]
        for (arguments, message) in cases {
            let result = try await run(["define", "habit"] + arguments, scratch, zone: "UTC")
            #expect(result.status != 0 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        // A logged habit does not turn derived.
        #expect(try await run(["define", "habit", "reading", "--kind", "numeric", "--unit", "pages"], scratch, zone: "UTC").status == 0)
        let turned = try await run(["define", "habit", "reading", "--from", "steps", "--target", "1"], scratch, zone: "UTC")
        #expect(turned.status != 0 && turned.stderr.contains("a derived habit needs a name of its own"), "\(turned.stderr)")
        let definitions = try await scratch.store().definitions(.habit)
        #expect(definitions.map(\.name) == ["reading"], "\(definitions)")
        // Not derived, or not there.
        let logged = try await run(["habit", "explain", "reading", "--day", "2026-03-28"], scratch, zone: "UTC")
        #expect(logged.status != 0 && logged.stderr.contains("is a habit you log"))
        let missing = try await run(["habit", "explain", "ghost", "--day", "2026-03-28"], scratch, zone: "UTC")
        #expect(missing.status != 0 && missing.stderr.contains("no habit 'ghost'"))
    }
}
