import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HealthModel
import HealthStore
import Testing
import TestSupport

/// A day that starts at 04:00 (`define day-start`), across Berlin's spring DST change (02:00 ->
/// 03:00 on 2026-03-29): `today` and `stats` put each entry and night on the same day, by
/// ``DayBoundary``'s one rule; the tracking server's summaries of the same records, synced, too.
@Suite struct DayStartCLITests {
    typealias V = ViewsCLITests

    static func records() -> [HealthRecord] {
        [
            V.definition("hydration", .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 2000)))),
            V.definition("preferences", .preferences(Preferences(dayStartMinutes: 240))),
            // 01:30 on the 29th: before the day start, the 28th's.
            V.habit("hydration", V.local(3, 29, 1, 30), value: 500, category: "bottle", unit: "ml"),
            V.habit("hydration", V.local(3, 29, 5, 0), value: 250, category: "glass", unit: "ml"),
            // 02:00 on the 30th: still the 29th.
            V.habit("vaping", V.local(3, 30, 2, 0), value: 1, category: "stress"),
            // Two nights ending in the 29th's day: at 06:40 on the 29th, and at 03:00 on the 30th.
            .sleep(SleepSession(id: RecordID.derive("day-start", "night1"), start: V.local(3, 28, 23, 10), end: V.local(3, 29, 6, 40),
                                source: V.source)),
            .sleep(SleepSession(id: RecordID.derive("day-start", "night2"), start: V.local(3, 29, 23, 0), end: V.local(3, 30, 3, 0),
                                source: V.source)),
        ]
    }

    @Test func todayAndStatsAgreeOnEveryDay() async throws {
        let scratch = try Scratch()
        try await scratch.store().write(Self.records())

        // At 03:30 on the 30th it is still the 29th: the 05:00 glass, the 02:00 session, and
        // last night, the longer of the day's two (which ended at 06:40 on the 29th).
        let late = try #require(try V.json(try await V.run(scratch, ["today", "--json", "--at", "2026-03-30T03:30"]).stdout) as? [String: Any])
        #expect(late["date"] as? String == "2026-03-29")
        #expect((late["water"] as? [String: Any])?["ml"] as? Double == 250)
        #expect((late["vaping"] as? [String: Any])?["sessions"] as? Int == 1)
        #expect((late["sleep"] as? [String: Any])?["end"] as? String == "2026-03-29T04:40:00Z")
        // At 04:00 the 30th has begun, with nothing in it yet.
        let next = try #require(try V.json(try await V.run(scratch, ["today", "--json", "--at", "2026-03-30T04:00"]).stdout) as? [String: Any])
        #expect(next["date"] as? String == "2026-03-30")
        #expect((next["water"] as? [String: Any])?["ml"] as? Double == 0)
        // At 03:59 on the 29th: the 28th, with the 01:30 bottle.
        let early = try #require(try V.json(try await V.run(scratch, ["today", "--json", "--at", "2026-03-29T03:59"]).stdout) as? [String: Any])
        #expect(early["date"] as? String == "2026-03-28")
        #expect((early["water"] as? [String: Any])?["ml"] as? Double == 500)

        let stats = try #require((try V.json(try await V.run(scratch, ["stats", "--period", "day", "--json", "--at", "2026-03-30T12:00"]).stdout)
                                  as? [String: Any])?["periods"] as? [[String: Any]])
        let byDay = Dictionary(uniqueKeysWithValues: stats.map { ($0["period"] as? String ?? "?", $0) })
        // The 28th starts at 04:00 CET, the 29th at 04:00 CEST: 23 hours later.
        #expect(byDay["2026-03-28"]?["start"] as? String == "2026-03-28T03:00:00Z")
        #expect(byDay["2026-03-29"]?["start"] as? String == "2026-03-29T02:00:00Z")
        #expect(byDay["2026-03-28"]?["habit_events"] as? Int == 1 && byDay["2026-03-28"]?["sleep_sessions"] as? Int == 0,
                "\(byDay["2026-03-28"] ?? [:])")
        #expect(byDay["2026-03-29"]?["habit_events"] as? Int == 2 && byDay["2026-03-29"]?["sleep_sessions"] as? Int == 2,
                "\(byDay["2026-03-29"] ?? [:])")
        #expect(byDay["2026-03-30"] == nil, "\(stats)")
    }

    /// The records synced to a real server: its summaries in the user's zone count every day,
    /// week and month as `stats` does (the day start coming from the synced preferences), and
    /// differently from UTC days, so the comparison can fail.
    @Test func theServerSummariesCountTheSameDays() async throws {
        let scratch = try Scratch()
        // A workout at 01:00 on the 29th (the 28th's) and one at 04:30 (the 29th's) besides.
        let workouts: [HealthRecord] = [(3, 29, 1, 0), (3, 29, 4, 30)].map { (mo, d, h, mi) in
            .workout(Workout(id: RecordID.derive("day-start", "w", String(h)), sport: "running", start: V.local(mo, d, h, mi),
                             end: V.local(mo, d, h, mi).addingTimeInterval(1800), timerS: 1800, distanceM: 5000, energyKcal: 300,
                             source: V.source))
        }
        try await scratch.store().write(Self.records() + workouts)
        let server = try await ServerProcess.start()
        let url = server.url.absoluteString
        let email = "days@example.org", password = "a long passphrase"
        #expect(try await CLI.run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: password).status == 0)
        let login = try await CLI.run(["login", "--server", url, "--email", email, "--password-stdin", "--db", scratch.dbPath], stdin: password)
        #expect(login.status == 0, "\(login.stderr)")
        let sync = try await CLI.run(["sync", "--db", scratch.dbPath])
        #expect(sync.status == 0, "\(sync.stderr)")

        // A second device of the account reads the summaries.
        let reader = try await SummaryReader(server: server.url, email: email, password: password)
        func summaries(_ query: String) async throws -> [String: Any] { try await reader.get(query) }

        for period in ["day", "week", "month"] {
            let stats = try #require((try V.json(try await V.run(scratch, ["stats", "--period", period, "--json", "--at", "2026-03-30T12:00"]).stdout)
                                      as? [String: Any])?["periods"] as? [[String: Any]])
            let summary = try await summaries("period=\(period)&tz=Europe/Berlin")
            #expect(summary["time_zone"] as? String == "Europe/Berlin" && summary["day_start"] as? String == "04:00", "\(summary)")
            let buckets = try #require(summary["buckets"] as? [[String: Any]])
            let counted = stats.filter { ($0["habit_events"] as? Int ?? 0) + ($0["sleep_sessions"] as? Int ?? 0) + ($0["workouts"] as? Int ?? 0) > 0 }
            var expected: [String: [Double]] = [:]
            for s in counted {
                // The stats' start is the instant the period starts: its local first day.
                let start = try #require(ISO8601DateFormatter().date(from: s["start"] as? String ?? ""))
                let day = DayBoundary(timeZone: V.zone, startMinutes: 240).day(of: start).description
                let sleep = (s["avg_sleep_s"] as? Double ?? 0) * Double(s["sleep_sessions"] as? Int ?? 0)
                expected[day] = [Double(s["habit_events"] as? Int ?? 0), Double(s["workouts"] as? Int ?? 0), s["active_s"] as? Double ?? 0,
                                 sleep, s["drinks_ml"] as? Double ?? 0]
            }
            var got: [String: [Double]] = [:]
            for b in buckets {
                let water = (b["habits"] as? [[String: Any]] ?? []).first { $0["habit"] as? String == "hydration" }?["value"] as? Double ?? 0
                got[b["start"] as? String ?? "?"] = [Double(b["habit_events"] as? Int ?? 0), Double(b["workouts"] as? Int ?? 0),
                                                     b["active_s"] as? Double ?? 0, b["sleep_s"] as? Double ?? 0, water]
            }
            #expect(got == expected, "\(period): server \(got), stats \(expected)")
            #expect(!got.isEmpty)
        }
        // By UTC days from midnight the same records fall elsewhere: the 28th's bottle (00:30 UTC)
        // and workout (00:00 UTC) on the 29th, the 02:00 session and the second night on the 30th.
        let utc = try #require(try await summaries("period=day&day_start=00:00")["buckets"] as? [[String: Any]])
        #expect(utc.map { $0["start"] as? String ?? "" } == ["2026-03-29", "2026-03-30"], "\(utc)")
        #expect(utc.first?["workouts"] as? Int == 2 && utc.first?["habit_events"] as? Int == 2, "\(utc)")
        // Refused: a zone that is not a name, a day start past noon, a day that does not exist.
        for query in ["period=day&tz=Mars/Olympus", "period=day&tz=%2B02:00", "period=day&day_start=13:00", "period=day&since=2026-02-30"] {
            #expect(try await reader.answer(query).status == 400, "\(query)")
        }
    }
}
