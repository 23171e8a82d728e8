import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// A day that starts at 04:00 (`define day-start`), across Berlin's spring DST change (02:00 ->
/// 03:00 on 2026-03-29): `today` and `stats` put each entry and night on the same day, by
/// ``DayBoundary``'s one rule.
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
}
