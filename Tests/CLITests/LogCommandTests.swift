import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate log`, `define` and `definitions` end to end: the built binary, a real database
/// file, Berlin's time zone (`TZ` of the child) and fixed `--at` times.
@Suite(.serialized) struct LogCommandTests {
    static let zone = "Europe/Berlin"

    static func healthgate(_ scratch: Scratch, _ arguments: [String]) async throws -> Tool.Result {
        try await Tool.run("/usr/bin/env", ["TZ=" + zone, CLI.executable] + arguments + ["--db", scratch.dbPath])
    }

    static func logJSON(_ scratch: Scratch, _ arguments: [String]) async throws -> [String: Any] {
        let result = try await healthgate(scratch, ["log"] + arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    }

    /// Every kind logged once; the JSON says what was stored and the database holds it, each with its outbox row.
    @Test func everyKindIsStored() async throws {
        #expect(FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/" + Self.zone))
        let scratch = try Scratch()
        // 08:30 in Berlin on 2025-06-01 (summer time) is 06:30 UTC.
        let water = try await Self.logJSON(scratch, ["water", "330ml", "--at", "2025-06-01T08:30"])
        #expect(water["what"] as? String == "water" && water["value"] as? Double == 330 && water["unit"] as? String == "ml")
        #expect(water["time"] as? String == "2025-06-01T06:30:00Z" && water["local_time"] as? String == "2025-06-01 08:30")
        let glass = try await Self.logJSON(scratch, ["glass", "--at", "2025-06-01T09:00"])
        #expect(glass["value"] as? Double == 236.6 && glass["category"] as? String == "glass")
        _ = try await Self.logJSON(scratch, ["drink", "--at", "2025-06-01T09:05"])
        _ = try await Self.logJSON(scratch, ["bottle", "--at", "2025-06-01T09:10"])
        let oz = try await Self.logJSON(scratch, ["water", "12 fl oz", "--at", "2025-06-01T09:20"])
        #expect(oz["value"] as? Double == 354.9)
        let vape = try await Self.logJSON(scratch, ["vape", "--trigger", "stress", "--thoughts", "deadline", "--pod-finished",
                                                    "--at", "2025-06-01T10:00"])
        #expect(vape["what"] as? String == "vape" && vape["category"] as? String == "stress" && vape["label"] as? String == "pod_finished")
        let meal = try await Self.logJSON(scratch, ["meal", "kebab", "--kcal", "700", "--at", "2025-06-01T12:30"])
        #expect(meal["value"] as? Double == 700 && meal["unit"] as? String == "kcal" && meal["label"] as? String == "kebab")
        let run = try await Self.logJSON(scratch, ["workout", "running", "--duration", "45m", "--distance", "8km", "--at", "2025-06-01T07:00"])
        // No profile: 9.8 MET x 70 kg x 0.75 h = 514.5 kcal, estimated, and said so.
        #expect(run["value"] as? Double == 514.5 && run["energy_source"] as? String == "estimated")
        #expect(run["time"] as? String == "2025-06-01T05:00:00Z" && run["end"] as? String == "2025-06-01T05:45:00Z")
        #expect((run["notes"] as? [String])?.first?.contains("70 kg") == true)
        let sleep = try await Self.logJSON(scratch, ["sleep", "--from", "23:10", "--to", "06:40", "--at", "2025-06-01"])
        #expect(sleep["time"] as? String == "2025-05-31T21:10:00Z" && sleep["end"] as? String == "2025-06-01T04:40:00Z")
        let weight = try await Self.logJSON(scratch, ["weight", "160lb", "--at", "2025-06-01T07:30"])
        #expect(weight["value"] as? Double == 72.575 && weight["unit"] as? String == "kg")

        let store = try await scratch.store()
        let events = try await store.habitEvents()
        #expect(events.map(\.habit) == ["hydration", "hydration", "hydration", "hydration", "hydration", "vaping", "meal"])
        #expect(events.allSatisfy { $0.source.driver == "manual" })
        #expect(events.first?.id.description == water["id"] as? String)
        #expect(try await store.workouts().count == 1)
        #expect(try await store.sleepSessions().count == 1)
        #expect(try await store.measurements(kind: .weight).map(\.value) == [72.575])
        #expect(try await store.outboxDepth() == 10)

        // The line for people: the id, what, the value with its unit, the local time.
        let line = try await Self.healthgate(scratch, ["log", "water", "0.5l", "--at", "2025-06-01T13:00"])
        #expect(line.status == 0, "\(line.stderr)")
        #expect(line.stdout.hasPrefix("stored ") && line.stdout.contains(" water 500 ml [custom] at 2025-06-01 13:00"), "\(line.stdout)")
    }

    /// Bad input exits 1 with the reason and stores nothing.
    @Test func badInputStoresNothing() async throws {
        let scratch = try Scratch()
        let cases: [([String], String)] = [
            (["water", "50l"], "50l is not a drink: 1 ml to 5 l"),
            (["water", "lots"], "'lots' is not a volume"),
            (["habit", "chess", "1"], "unknown habit 'chess': define it first"),
            (["vape", "--trigger", "rain"], "unknown trigger 'rain'; known triggers: time of day"),
            (["vape", "--trigger", ""], "the trigger is empty"),
            (["meal", "kebab"], "`healthgate define meal kebab --kcal N`"),
            (["meal", "kebab", "--kcal=-5"], "-5 kcal is not a meal"),
            (["workout", "quidditch", "--duration", "1h"], "'quidditch' is not a sport"),
            (["glass", "--at", "2999-01-01T10:00"], "2999-01-01 10:00 is in the future"),
            (["weight", "7000kg"], "7000kg is not a body weight"),
        ]
        for (arguments, message) in cases {
            let result = try await Self.healthgate(scratch, ["log"] + arguments)
            #expect(result.status == 1, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("healthgate: ") && result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let store = try await scratch.store()
        let counts = try await store.tableCounts()
        #expect(counts["habit_events"] == 0 && counts["workouts"] == 0 && counts["measurements"] == 0, "\(counts)")
        #expect(try await store.outboxDepth() == 0)
    }

    /// Define a habit, log it, re-define it (a new version), list the definitions.
    @Test func defineAndLogRoundTrip() async throws {
        let scratch = try Scratch()
        let defined = try await Self.healthgate(scratch, ["define", "habit", "reading", "--kind", "numeric", "--unit", "pages",
                                                          "--target", "20", "--per", "day"])
        #expect(defined.status == 0, "\(defined.stderr)")
        #expect(defined.stdout.contains("defined habit reading (version 1): numeric (pages); goal at least 20 pages per day"), "\(defined.stdout)")
        let logged = try await Self.logJSON(scratch, ["habit", "reading", "30", "--at", "2025-06-01T21:00"])
        #expect(logged["what"] as? String == "reading" && logged["value"] as? Double == 30 && logged["unit"] as? String == "pages")
        let wrong = try await Self.healthgate(scratch, ["log", "habit", "reading", "--done"])
        #expect(wrong.status == 1 && wrong.stderr.contains("'reading' takes a number (pages), not --done"), "\(wrong.stderr)")

        #expect(try await Self.healthgate(scratch, ["define", "habit", "stretch", "--kind", "yes-no"]).status == 0)
        let yesNo = try await Self.healthgate(scratch, ["log", "habit", "stretch", "3"])
        #expect(yesNo.status == 1 && yesNo.stderr.contains("'stretch' is a yes/no habit: log it with --done"), "\(yesNo.stderr)")
        #expect(try await Self.healthgate(scratch, ["log", "habit", "stretch", "--done", "--at", "-1h"]).status == 0)
        #expect(try await Self.healthgate(scratch, ["define", "habit", "mood", "--kind", "categorical", "--category", "calm",
                                                    "--category", "anxious"]).status == 0)
        let mood = try await Self.healthgate(scratch, ["log", "habit", "mood", "angry"])
        #expect(mood.status == 1 && mood.stderr.contains("'angry' is not a category of 'mood': one of calm, anxious"))

        let again = try await Self.healthgate(scratch, ["define", "habit", "reading", "--kind", "numeric", "--unit", "pages",
                                                        "--target", "150", "--per", "week"])
        #expect(again.stdout.contains("(version 2)"), "\(again.stdout)")
        #expect(try await Self.healthgate(scratch, ["define", "trigger", "after coffee"]).status == 0)
        #expect(try await Self.logJSON(scratch, ["vape", "--trigger", "After Coffee"])["category"] as? String == "after coffee")
        #expect(try await Self.healthgate(scratch, ["define", "meal", "porridge", "--kcal", "420", "--ingredient", "oats=300",
                                                    "--ingredient", "milk=120"]).status == 0)
        #expect(try await Self.logJSON(scratch, ["meal", "Porridge"])["value"] as? Double == 420)
        #expect(try await Self.healthgate(scratch, ["define", "profile", "--weight", "80kg"]).status == 0)
        // 80 kg now: walking 3.5 MET x 80 kg x 2 h = 560 kcal, no note.
        let walk = try await Self.logJSON(scratch, ["workout", "walking", "--duration", "2h", "--at", "2025-06-01T14:00"])
        #expect(walk["value"] as? Double == 560 && (walk["notes"] as? [String])?.isEmpty == true)
        #expect(try await Self.healthgate(scratch, ["define", "units", "--volume", "fl-oz"]).status == 0)
        // The day start goes into the same preferences, keeping the units; a bad one is refused.
        #expect(try await Self.healthgate(scratch, ["define", "day-start", "4:30"]).status == 0)
        let late = try await Self.healthgate(scratch, ["define", "day-start", "13:00"])
        #expect(late.status != 0 && late.stderr.contains("the day start must be HH:MM from 00:00 to 11:59, not 13:00"), "\(late.stderr)")
        #expect(try await Self.logJSON(scratch, ["water", "8"])["value"] as? Double == 236.6)
        #expect(try await Self.healthgate(scratch, ["define", "goal", "water", "2l"]).status == 0)

        let list = try await Self.healthgate(scratch, ["definitions", "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let all = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        func find(_ kind: String, _ name: String) -> [String: Any]? { all.first { $0["kind"] as? String == kind && $0["name"] as? String == name } }
        #expect(find("habit", "reading")?["version"] as? Int == 2)
        #expect((find("habit", "reading")?["details"] as? String)?.contains("at least 150 pages per week") == true)
        #expect((find("habit", "hydration")?["details"] as? String)?.contains("at least 2000 ml per day") == true)
        #expect(find("trigger", "stress")?["default"] as? Bool == true)
        #expect(find("trigger", "after coffee")?["default"] as? Bool == false)
        #expect(find("meal", "porridge")?["details"] as? String == "420 kcal: oats 300, milk 120")
        #expect(find("profile", "profile")?["details"] as? String == "weight 80 kg")
        #expect(find("preferences", "preferences")?["details"] as? String == "volume fl_oz, mass kg, day start 04:30")

        let store = try await scratch.store()
        #expect(try await store.definition(.habit, name: "READING")?.version == 2)
        #expect(try await store.habitEvents().map(\.habit).sorted() == ["hydration", "meal", "reading", "stretch", "vaping"])
    }
}
