import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// The dashboard's pages of recorded data (workouts, sleep, body, stats) end to end: the built
/// binary serving a real database, fetched over HTTP; each figure checked against Python's
/// sqlite3 reading the same rows, and a workout's against fitdecode reading the FIT file itself.
@Suite struct DashboardDataPagesTests {
    typealias D = DashboardCLITests

    static func python(_ script: String, _ arguments: [String]) async throws -> [String: Any] {
        let result = try await Tool.run("/usr/bin/env", ["python3", "-c", script] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// `attribute="value"` of every element of a page that has `anchor`, in order.
    static func values(_ html: String, _ pattern: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: html, range: NSRange(html.startIndex..., in: html)).map { m in
            (1..<m.numberOfRanges).map { m.range(at: $0).location == NSNotFound ? "" : String(html[Range(m.range(at: $0), in: html)!]) }
        }
    }

    static func close(_ a: String?, _ b: Any?) -> Bool {
        guard let a, let x = Double(a), let y = (b as? Double) ?? (b as? Int).map(Double.init) else { return false }
        return abs(x - y) < 1e-6 * max(1, abs(y))
    }

    @Test func aWorkoutsPageShowsEverySampleOfTheFile() async throws {
        let scratch = try Scratch()
        let file = PackagePaths.fixtures + "/fit/garmin-edge530-cycling-hrv-power.fit"
        let imported = try await CLI.run(["import", "--db", scratch.dbPath, file])
        #expect(imported.status == 0, "\(imported.stderr)")
        let dashboard = try D.Dashboard(scratch, at: "2020-11-09T12:00")
        let expected = try await Self.python("""
            import json, sqlite3, sys, fitdecode
            db = sqlite3.connect(sys.argv[1])
            (wid, start, max_hr), = db.execute("SELECT id, start_time, max_hr FROM workouts WHERE deleted = 0")
            rows = db.execute("SELECT time, heart_rate, speed_mps, power_w, cadence, altitude_m, latitude FROM samples "
                              "WHERE workout_id = ? ORDER BY time", (wid,)).fetchall()
            out = {"id": wid, "samples": len(rows), "laps": db.execute("SELECT count(*) FROM laps WHERE workout_id = ?", (wid,)).fetchone()[0]}
            for key, col, scale in [("heart_rate", 1, 1), ("speed", 2, 3.6), ("power", 3, 1), ("cadence", 4, 1), ("altitude", 5, 1)]:
                vals = [r[col] * scale for r in rows if r[col] is not None]
                if vals: out[key] = [len(vals), min(vals), max(vals)]
            out["positions"] = sum(1 for r in rows if r[6] is not None)
            times = [r[0] for r in rows]
            steps = sorted(b - a for a, b in zip(times, times[1:]))
            gap = max(15, 6 * steps[len(steps) // 2])
            zones = [0.0] * 6
            rated = [r for r in rows if r[1] is not None]
            for a, b in zip(rated, rated[1:]):
                dt = b[0] - a[0]
                if 0 < dt <= gap:
                    share = a[1] / max_hr
                    zones[max([0] + [i + 1 for i, low in enumerate([0.5, 0.6, 0.7, 0.8, 0.9]) if share >= low])] += dt
            out["zones"] = [round(z) for z in zones]
            # The file itself, read by fitdecode: the highest heart rate of its records.
            with fitdecode.FitReader(sys.argv[2]) as fit:
                out["fit_max_hr"] = max(f.get_value("heart_rate") for f in fit if isinstance(f, fitdecode.FitDataMessage)
                                        and f.name == "record" and f.has_field("heart_rate") and f.get_value("heart_rate") is not None)
            print(json.dumps(out))
            """, [scratch.dbPath, file])
        let id = try #require(expected["id"] as? String)

        let list = try await D.get(dashboard.url, "/workouts?days=7")
        #expect(list.status == 200 && list.body.contains("data-workout=\"\(id)\"") && list.body.contains("<option value=\"cycling\">"))
        let none = try await D.get(dashboard.url, "/workouts?days=7&sport=running")
        #expect(none.status == 200 && none.body.contains("No workouts in the period.") && !none.body.contains("data-workout="))
        let listCSV = try await D.get(dashboard.url, "/workouts.csv?days=7")
        #expect(listCSV.body.split(separator: "\n").count == 2 && listCSV.body.contains(id + ","))

        let page = try await D.get(dashboard.url, "/workout?id=\(id)")
        #expect(page.status == 200, "\(page.body)")
        let series = Self.values(page.body, #"data-series="([a-z_]+)" data-samples="([0-9]+)" data-low="([-0-9.]+)" data-high="([-0-9.]+)""#)
        #expect(series.map { $0[0] } == ["heart_rate", "speed", "power", "cadence", "altitude"])
        for s in series {
            let want = try #require(expected[s[0]] as? [Any], "\(s[0])")
            #expect(Int(s[1]) == want[0] as? Int && Self.close(s[2], want[1]) && Self.close(s[3], want[2]), "\(s) vs \(want)")
        }
        #expect(series.first?[3] == "\(expected["fit_max_hr"] as? Int ?? -1)")
        // Each chart is reduced to at most two points per pixel column and keeps the peak.
        for points in Self.values(page.body, #"<polyline class="series" data-points="([0-9]+)""#) {
            #expect((Int(points[0]) ?? 0) <= 2 * 572)
        }
        let zones = Self.values(page.body, #"data-zone="([0-9])" data-seconds="([0-9.]+)""#)
        #expect(zones.map { Int($0[0])! } == [5, 4, 3, 2, 1, 0])
        #expect(zones.reversed().map { Double($0[1])! } == (expected["zones"] as? [Int] ?? []).map(Double.init), "\(zones) vs \(expected["zones"] ?? "")")
        #expect(page.body.contains("id=\"route\"") && page.body.contains("\(expected["positions"] as? Int ?? -1) recorded positions"))
        #expect(page.body.contains("<caption>\(expected["laps"] as? Int ?? -1) laps</caption>"))
        #expect(page.body.contains("<script src=\"/static/crosshair.js\" defer></script>"))
        let script = try await D.get(dashboard.url, "/static/crosshair.js")
        #expect(script.status == 200 && script.headers["content-type"] == "text/javascript; charset=utf-8")

        let csv = try await D.get(dashboard.url, "/workout.csv?id=\(id)")
        #expect(csv.status == 200 && csv.body.split(separator: "\n").count == (expected["samples"] as? Int ?? -2) + 1)

        // Recoloured by power; anything else falls back, nothing is echoed.
        let power = try await D.get(dashboard.url, "/workout?id=\(id)&colour=power")
        #expect(power.body.contains("Route, coloured by power"))
        let hostile = try await D.get(dashboard.url, "/workout?id=\(id)&colour=%3Cscript%3Ealert(1)%3C/script%3E")
        #expect(hostile.status == 200 && !hostile.body.contains("alert(1)"))
        #expect(try await D.get(dashboard.url, "/workout?id=nope").status == 400)
        #expect(try await D.get(dashboard.url, "/workout?id=%25").status == 400)
        #expect(try await D.get(dashboard.url, "/workout?id=00000000-0000-0000-0000-000000000000").status == 404)
        let sport = try await D.get(dashboard.url, "/workouts?sport=%3Cscript%3Ealert(1)%3C/script%3E")
        #expect(sport.status == 200 && !sport.body.contains("<script>alert"))
        #expect(try await D.get(dashboard.url, "/workouts?days=3").status == 400)
    }

    static let zone = TimeZone(identifier: "Europe/Berlin")!
    static let watch = Source(driver: "fit", device: "watch"), ring = Source(driver: "gadgetbridge", device: "ring")

    static func local(_ mo: Int, _ d: Int, _ h: Int = 12, _ mi: Int = 0) -> Date { ViewsCLITests.local(mo, d, h, mi) }

    /// Nights across Berlin's DST change, a night recorded by two devices, a nap, a week
    /// without any; weighings with a gap; resting heart rate.
    static func records() -> [HealthRecord] {
        var records: [HealthRecord] = []
        for day in 10...31 where !(18...24).contains(day) {
            let bed = local(3, day - 1, 23, 10), wake = local(3, day, 6, 40 + day % 7)
            records.append(.sleep(SleepSession(
                id: RecordID.derive("night", "\(day)"), start: bed, end: wake,
                stages: [SleepStageSpan(start: bed, end: bed.addingTimeInterval(1200), stage: .awake),
                         SleepStageSpan(start: bed.addingTimeInterval(1200), end: bed.addingTimeInterval(6000), stage: .deep),
                         SleepStageSpan(start: bed.addingTimeInterval(6000), end: wake.addingTimeInterval(-3600), stage: .light),
                         SleepStageSpan(start: wake.addingTimeInterval(-3600), end: wake, stage: .rem)],
                source: watch)))
        }
        // The ring saw the night to March 27 too, with less sleep: it does not count twice.
        records.append(.sleep(SleepSession(id: RecordID.derive("ring", "27"), start: local(3, 26, 23, 30), end: local(3, 27, 6),
                                           source: ring)))
        // A nap on March 30 is added to that day's night.
        records.append(.sleep(SleepSession(id: RecordID.derive("nap", "30"), start: local(3, 30, 14), end: local(3, 30, 14, 30),
                                           source: ring)))
        for (i, day) in [1, 2, 3, 5, 6, 22, 23, 24, 25, 28, 30, 31].enumerated() {
            records.append(.measurement(Measurement(id: RecordID.derive("weight", "\(day)"), kind: .weight, time: local(3, day, 7),
                                                    value: 80 - Double(i) * 0.2 + (i % 2 == 0 ? 0.4 : -0.3), source: watch)))
            records.append(.measurement(Measurement(id: RecordID.derive("rhr", "\(day)"), kind: .restingHeartRate, time: local(3, day, 8),
                                                    value: 60 - Double(i % 3), source: watch)))
        }
        records.append(.workout(Workout(id: RecordID.derive("run", "1"), sport: "running", start: local(3, 16, 7), end: local(3, 16, 7, 45),
                                        distanceM: 8000, energyKcal: 300, source: watch)))
        records.append(.workout(Workout(id: RecordID.derive("run", "2"), sport: "running", start: local(3, 30, 7), end: local(3, 30, 8),
                                        distanceM: 10000, energyKcal: 400, source: watch)))
        records.append(.measurement(Measurement(id: RecordID.derive("steps", "1"), kind: .steps, time: local(3, 30, 18), end: local(3, 30, 19),
                                                value: 9000, source: watch)))
        return records
    }

    @Test func theSleepPageCountsEachNightOnceOnTheDayItEnds() async throws {
        let scratch = try Scratch()
        try await scratch.store().write(Self.records())
        let dashboard = try D.Dashboard(scratch, at: "2026-04-01T12:00")
        let page = try await D.get(dashboard.url, "/sleep?nights=30")
        #expect(page.status == 200)
        // Python: per Berlin day of the end, the session with the most sleep among overlapping
        // ones, plus those overlapping none; asleep = every stage but awake, or the whole span.
        let expected = try await Self.python("""
            import json, sqlite3, sys
            from collections import defaultdict
            from datetime import datetime, date, timedelta
            from zoneinfo import ZoneInfo
            z = ZoneInfo("Europe/Berlin")
            t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
            db = sqlite3.connect(sys.argv[1])
            sessions = []
            for sid, start, end in db.execute("SELECT id, start_time, end_time FROM sleep_sessions WHERE deleted = 0"):
                stages = db.execute("SELECT start_time, end_time, stage FROM sleep_stages WHERE session_id = ?", (sid,)).fetchall()
                span = (t(end) - t(start)).total_seconds()
                asleep = sum((t(e) - t(s)).total_seconds() for s, e, st in stages if st != "awake") if stages else span
                staged = sum((t(e) - t(s)).total_seconds() for s, e, st in stages) if stages else span
                sessions.append((t(start), t(end), asleep, staged))
            by_day = defaultdict(list)
            for s in sessions: by_day[s[1].astimezone(z).date()].append(s)
            out = {}
            for i in range(30):
                d = date(2026, 4, 1) - timedelta(days=i)
                kept = []
                for s in sorted(by_day[d], key=lambda s: (-s[2], s[0])):
                    if not any(k[0] < s[1] and s[0] < k[1] for k in kept): kept.append(s)
                out[d.isoformat()] = [sum(k[2] for k in kept), sum(k[3] for k in kept)] if kept else None
            print(json.dumps(out))
            """, [scratch.dbPath])
        let stacks = Self.values(page.body, #"<g class="stack" data-day="([0-9-]+)" data-value="([0-9.]+)""#)
        let gaps = Self.values(page.body, #"<rect class="gap" data-day="([0-9-]+)""#).map { $0[0] }
        #expect(stacks.count + gaps.count == 30)
        // A bar is the night's whole staged time (awake included), in hours to a tenth.
        for (day, hours) in stacks.map({ ($0[0], Double($0[1])!) }) {
            let seconds = try #require((expected[day] as? [Double])?.last, "\(day) drawn, Python has none")
            #expect(abs(hours - (seconds / 360).rounded() / 10) < 1e-9, "\(day): \(hours) h vs \(seconds) s")
        }
        for day in gaps { #expect(expected[day] is NSNull, "\(day) hatched, Python has \(expected[day] ?? "")") }
        // The table, row by row, in seconds.
        let rows = Self.values(page.body, #"<tr data-day="([0-9-]+)" data-asleep-s="([0-9.]+)""#)
        #expect(rows.count == stacks.count)
        for row in rows { #expect(Self.close(row[1], (expected[row[0]] as? [Double])?.first), "\(row)") }
        // March 27: the watch's night, not the ring's as well; March 30: night and nap.
        #expect(page.body.contains("<td>fit (watch)</td></tr>") && page.body.contains("fit (watch), gadgetbridge (ring)"))
        #expect(gaps.contains("2026-03-20") && !gaps.contains("2026-03-29"))
        let csv = try await D.get(dashboard.url, "/sleep.csv?nights=30")
        #expect(csv.status == 200 && csv.body.split(separator: "\n").count == 31)
        #expect(try await D.get(dashboard.url, "/sleep?nights=7").status == 400)
    }

    @Test func theBodyPageDrawsEveryReadingAndItsTrend() async throws {
        let scratch = try Scratch()
        try await scratch.store().write(Self.records())
        let dashboard = try D.Dashboard(scratch, at: "2026-04-01T12:00")
        let page = try await D.get(dashboard.url, "/body?days=30")
        #expect(page.status == 200)
        // Python: the readings of the last 30 Berlin days and the trend (10% a day).
        let expected = try await Self.python("""
            import json, sqlite3, sys
            from datetime import datetime
            from zoneinfo import ZoneInfo
            since = datetime(2026, 3, 3, tzinfo=ZoneInfo("Europe/Berlin"))
            t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
            db = sqlite3.connect(sys.argv[1])
            rows = [(t(a), v) for a, v in db.execute("SELECT time, value FROM measurements WHERE kind = 'weight' AND deleted = 0 ORDER BY time")]
            rows = [r for r in rows if r[0] >= since]
            trend = None; last = None; trends = []
            for time, v in rows:
                if trend is None: trend = v
                else: trend += (1 - 0.9 ** max((time - last).total_seconds() / 86400, 1 / 24)) * (v - trend)
                last = time
                trends.append((time, trend))
            # The weekly change: a least-squares line through the trend of the last 28 days.
            recent = [(-(last - a).total_seconds() / 86400, b) for a, b in trends if (last - a).total_seconds() <= 28 * 86400]
            mx = sum(x for x, _ in recent) / len(recent); my = sum(y for _, y in recent) / len(recent)
            weekly = sum((x - mx) * (y - my) for x, y in recent) / sum((x - mx) ** 2 for x, _ in recent) * 7
            rhr = db.execute("SELECT count(*) FROM measurements WHERE kind = 'resting_heart_rate' AND time >= ?",
                             (since.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%SZ"),)).fetchone()[0]
            print(json.dumps({"readings": len(rows), "trend": round(trend, 2), "rawtrend": trend, "weekly": weekly,
                              "last": last.timestamp(), "rhr": rhr}))
            """, [scratch.dbPath])
        let fields = D.fields(page.body)
        #expect(Self.close(fields["weight-trend"].map { "\($0)" }, expected["trend"]))
        let readings = Self.values(page.body, #"<figure data-kind="([a-z_]+)" data-readings="([0-9]+)""#)
        #expect(readings.first.map { $0 == ["weight", "\(expected["readings"] as? Int ?? -1)"] } == true, "\(readings)")
        #expect(readings.contains(["resting_heart_rate", "\(expected["rhr"] as? Int ?? -1)"]))
        // Every reading is a dot; the trend breaks where readings are more than 14 days apart (March 6 to 22).
        let dots = Self.values(page.body, #"<g class="raw" data-points="([0-9]+)""#)
        #expect(dots.first?[0] == "\(expected["readings"] as? Int ?? -1)")
        let weightSVG = try #require(page.body.components(separatedBy: "id=\"weight\"").last?.components(separatedBy: "</svg>").first)
        #expect(weightSVG.components(separatedBy: "<polyline class=\"trend\"").count - 1 == 2)
        let csv = try await D.get(dashboard.url, "/body.csv?days=30")
        #expect(csv.body.split(separator: "\n").filter { $0.contains(",weight,") }.count == expected["readings"] as? Int)
        #expect(!page.body.contains("data-field=\"goal\""))

        // A goal weight four weeks ahead at the trend's weekly change (Python's): the chart's goal
        // line, and the day the trend reaches it, projected from the last reading.
        let weekly = try #require(expected["weekly"] as? Double), trend = try #require(expected["rawtrend"] as? Double)
        #expect(abs(weekly) > 0.05, "the fixture's weight moves: \(weekly)")
        let goal = ((trend + 4 * weekly) * 10).rounded() / 10
        let defined = try await CLI.run(["define", "profile", "--weight", "80kg", "--goal-weight", "\(goal)kg", "--db", scratch.dbPath])
        #expect(defined.status == 0, "\(defined.stderr)")
        let withGoal = try await D.get(dashboard.url, "/body?days=30")
        let lastReading = Date(timeIntervalSince1970: try #require(expected["last"] as? Double))
        let reaches = lastReading.addingTimeInterval((goal - trend) / weekly * 7 * 86400)
        let day = DayBoundary.midnight(in: TimeZone(identifier: "Europe/Berlin")!).day(of: reaches)
        #expect(withGoal.body.contains("data-outlook=\"reaches\" data-value=\"\(day)\""), "\(day): \(withGoal.body)")
        let goalLine = try #require(withGoal.body.components(separatedBy: "id=\"weight\"").last?.components(separatedBy: "</svg>").first)
        #expect(goalLine.contains("<line class=\"goal\" data-value=\"\(NumberText.plain(goal))\""))
        // A goal the trend moves away from is said to be out of reach, not given a date.
        let away = try await CLI.run(["define", "profile", "--goal-weight", "\(((trend - 20 * weekly) * 10).rounded() / 10)kg", "--db", scratch.dbPath])
        #expect(away.status == 0, "\(away.stderr)")
        #expect(try await D.get(dashboard.url, "/body?days=30").body.contains("data-outlook=\"not-on-course\""))
        // A goal out of this world is refused, and nothing is changed.
        let silly = try await CLI.run(["define", "profile", "--goal-weight", "4000kg", "--db", scratch.dbPath])
        #expect(silly.status != 0 && silly.stderr.contains("goal weight"), "\(silly.stderr)")
        #expect(try await D.get(dashboard.url, "/body?days=30").body.contains("data-outlook=\"not-on-course\""))
    }

    @Test func theStatsPageAgreesWithTheCommand() async throws {
        let scratch = try Scratch()
        try await scratch.store().write(Self.records())
        let dashboard = try D.Dashboard(scratch, at: "2026-04-01T12:00")
        let page = try await D.get(dashboard.url, "/stats?period=week")
        #expect(page.status == 200)
        let stats = try await ViewsCLITests.run(scratch, ["stats", "--json", "--period", "week", "--at", "2026-04-01T12:00"])
        let periods = try #require((try ViewsCLITests.json(stats.stdout) as? [String: Any])?["periods"] as? [[String: Any]])
        let rows = Self.values(page.body, #"<tr data-period="([0-9W-]+)" data-active-s="([0-9.]+)" data-workouts="([0-9]+)" data-steps="([0-9.]+)""#)
        for p in periods {
            guard let label = p["period"] as? String, let row = rows.first(where: { $0[0] == label }) else { continue }
            #expect(Self.close(row[1], p["active_s"]) && Int(row[2]) == p["workouts"] as? Int && Self.close(row[3], p["steps"]), "\(row) vs \(p)")
        }
        #expect(rows.contains { $0[0] == "2026-W14" && $0[2] == "1" && $0[3] == "9000" })
        #expect(rows.contains { $0[0] == "2026-W12" && $0[2] == "1" })
        #expect(page.body.contains("<tr data-period=\"2025-W50\"><td>2025-W50</td><td colspan=\"8\">no records</td></tr>"))
        for period in ["day", "month", "year"] {
            #expect(try await D.get(dashboard.url, "/stats?period=\(period)").status == 200)
        }
        #expect(try await D.get(dashboard.url, "/stats?period=decade").status == 400)
        let csv = try await D.get(dashboard.url, "/stats.csv?period=week")
        #expect(csv.status == 200 && csv.body.hasPrefix("period,start,days,workouts,active_s"))
    }

    /// The entries page: a day's records, each changed or deleted through the store's edit and
    /// delete (new versions, tombstones, in the outbox), only with the token and only from the
    /// version the page showed.
    @Test func entriesAreEditedAndDeletedFromThePage() async throws {
        let scratch = try await ViewsCLITests.database()
        let dashboard = try D.Dashboard(scratch, at: "2026-04-02T21:00")
        let origin = ["Origin": dashboard.url.replacingOccurrences(of: "/$", with: "", options: .regularExpression)]
        let page = try await D.get(dashboard.url, "/entries")
        #expect(page.status == 200)
        let token = try D.token(page.body)
        // April 2 (Berlin): the 00:01 glass, the meal, the run, the night ending that morning, the energy is no entry.
        let listed = Self.values(page.body, #"<tr data-entry="([0-9a-f-]+)" data-version="([0-9]+)">"#)
        let store = try await scratch.store()
        let day = DateRange(since: ViewsCLITests.local(4, 2, 0), until: ViewsCLITests.local(4, 3, 0))
        let expected = try await store.habitEvents(in: day).map(\.id.description) + (try await store.workouts(in: day)).map(\.id)
            + (try await store.sleepSessions(endingIn: day)).map(\.id.description)
        #expect(Set(listed.map { $0[0] }) == Set(expected) && listed.count == 4, "\(listed)")
        let glass = try #require(try await store.habitEvents(in: day).first { $0.habit == "hydration" })

        // Water changed to 330 ml with a note: version 2, the store's edit, in the outbox.
        let outboxBefore = try await store.outboxDepth()
        let edited = try await D.post(dashboard.url, "/edit", form: [("csrf", token), ("id", glass.id.description), ("version", "1"),
                                                                    ("day", "2026-04-02"), ("value", "330ml"), ("note", "<b>cold</b>")],
                                      headers: origin)
        #expect(edited.status == 303, "\(edited.body)")
        let after = try await D.get(dashboard.url, try #require(edited.headers["location"]))
        #expect(after.body.contains("Changed water of 00:01: version 2") && after.body.contains("&lt;b&gt;cold&lt;/b&gt;"))
        let history = try await store.history(id: glass.id.description)
        #expect(history.first?.version == 2 && history.first?.changed.sorted() == ["note", "value"])
        guard case .habit(let changed)? = history.first?.record else { Issue.record("not a habit event"); return }
        #expect(changed.value == 330 && changed.note == "<b>cold</b>")
        #expect(try await store.outboxDepth() == outboxBefore + 1)

        // The page showed version 1: a second edit from it is refused (409), nothing changed.
        let stale = try await D.post(dashboard.url, "/edit", form: [("csrf", token), ("id", glass.id.description), ("version", "1"),
                                                                   ("value", "1l")], headers: origin)
        #expect(stale.status == 409 && stale.body.contains("changed since the page was made"), "\(stale.status)")
        // Refused with the reason, nothing changed: a volume that is none, a 50-litre drink, no token, another site.
        for (form, status, text) in [
            ([("csrf", token), ("id", glass.id.description), ("version", "2"), ("value", "lots")], 422, "lots"),
            ([("csrf", token), ("id", glass.id.description), ("version", "2"), ("value", "50l")], 422, "Nothing was changed: "),
            ([("id", glass.id.description), ("version", "2"), ("value", "1l")], 400, "not a form"),
            ([("csrf", token), ("id", "%"), ("version", "2"), ("value", "1l")], 400, "not a form"),
        ] as [([(String, String)], Int, String)] {
            let refused = try await D.post(dashboard.url, "/edit", form: form, headers: origin)
            #expect(refused.status == status && refused.body.contains(text), "\(form): \(refused.status) \(refused.body.suffix(300))")
        }
        let crossSite = try await D.post(dashboard.url, "/edit", form: [("csrf", token), ("id", glass.id.description), ("version", "2"),
                                                                       ("value", "1l")], headers: ["Sec-Fetch-Site": "cross-site"])
        #expect(crossSite.status == 403)
        #expect(try await store.history(id: glass.id.description).first?.version == 2)

        // The run: 50 minutes, 9 km; then deleted: a tombstone, gone from the page.
        let run = RecordID.derive("views", "run").description
        let runEdit = try await D.post(dashboard.url, "/edit", form: [("csrf", token), ("id", run), ("version", "1"), ("duration", "50m"),
                                                                     ("distance", "9km")], headers: origin)
        #expect(runEdit.status == 303)
        let workout = try #require(try await store.workout(id: run))
        #expect(workout.distanceM == 9000 && workout.elapsedS == 3000 && workout.version == 2)
        let deleted = try await D.post(dashboard.url, "/delete", form: [("csrf", token), ("id", run), ("version", "2"), ("day", "2026-04-02")],
                                       headers: origin)
        #expect(deleted.status == 303)
        #expect(try await store.workout(id: run) == nil)
        let gone = try await D.get(dashboard.url, "/entries?day=2026-04-02")
        #expect(!gone.body.contains("data-entry=\"\(run)\"") && gone.body.contains("data-entry=\"\(glass.id)\""))
        let again = try await D.post(dashboard.url, "/delete", form: [("csrf", token), ("id", run), ("version", "3")], headers: origin)
        #expect(again.status == 409 && again.body.contains("deleted since the page was made"))
        #expect(try await D.get(dashboard.url, "/entries?day=2026-13-01").status == 400)
        #expect(try await D.get(dashboard.url, "/entries?day=2026-03-01").body.contains("stretch"))
    }

    /// The timeline: per lane, the spans and marks of the day against Python's count of the rows
    /// overlapping the Berlin day; spans cut at the day's bounds.
    @Test func theTimelineHasEveryRecordOfTheDayInItsLane() async throws {
        let scratch = try await ViewsCLITests.database()
        let dashboard = try D.Dashboard(scratch, at: "2026-04-02T21:00")
        let expected = try await Self.python("""
            import json, sqlite3, sys
            from datetime import datetime, timedelta
            from zoneinfo import ZoneInfo
            z = ZoneInfo("Europe/Berlin"); t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
            db = sqlite3.connect(sys.argv[1])
            out = {}
            for day in ["2026-04-01", "2026-04-02"]:
                start = datetime.fromisoformat(day).replace(tzinfo=z); end = start + timedelta(days=1)
                inside = lambda a, b: t(a) < end and t(b) > start
                lanes = {"sleep": 0, "workouts": 0, "water": 0, "vaping": 0, "meals": 0, "habits": 0}
                for sid, a, b in db.execute("SELECT id, start_time, end_time FROM sleep_sessions WHERE deleted = 0"):
                    stages = db.execute("SELECT start_time, end_time FROM sleep_stages WHERE session_id = ?", (sid,)).fetchall() or [(a, b)]
                    lanes["sleep"] += sum(1 for x, y in stages if inside(x, y))
                lanes["workouts"] = sum(1 for a, b in db.execute("SELECT start_time, end_time FROM workouts WHERE deleted = 0") if inside(a, b))
                lane = {"hydration": "water", "vaping": "vaping", "meal": "meals"}
                for h, when in db.execute("SELECT habit, time FROM habit_events WHERE deleted = 0 AND (label IS NULL OR label NOT IN ('skipped', 'unknown', 'not_done'))"):
                    if start <= t(when) < end: lanes[lane.get(h, "habits")] += 1
                out[day] = lanes
            print(json.dumps(out))
            """, [scratch.dbPath])
        let page = try await D.get(dashboard.url, "/timeline?days=7")
        #expect(page.status == 200)
        for day in ["2026-04-01", "2026-04-02"] {
            let svg = try #require(page.body.components(separatedBy: "id=\"timeline-\(day)\"").dropFirst().first?.components(separatedBy: "</svg>").first)
            let lanes = Dictionary(uniqueKeysWithValues: Self.values(svg, #"data-lane="([a-z]+)" data-count="([0-9]+)""#).map { ($0[0], Int($0[1])!) })
            #expect(lanes == (expected[day] as? [String: Int]), "\(day): \(lanes) vs \(expected[day] ?? "")")
        }
        // The night to April 2 began on April 1 (23:10): on April 2 its light sleep starts at the day's start.
        let day2 = try #require(page.body.components(separatedBy: "id=\"timeline-2026-04-02\"").last)
        #expect(day2.contains("<rect class=\"stage-light\" x=\"80\""))
        #expect(page.body.components(separatedBy: "<figure data-day=").count - 1 == 7)
        #expect(try await D.get(dashboard.url, "/timeline?days=3").status == 400)
        #expect(try await D.get(dashboard.url, "/timeline?day=yesterday").status == 400)
    }
}
