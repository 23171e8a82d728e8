import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// Through the built binary with a real database and `TZ=Europe/Berlin`: a habit defined again
/// (a new version, not a second definition), the new edit options (a goal, a meal's ingredients,
/// a workout's duration), `stats --json`'s streaks, and volumes and weights in the preferred units.
@Suite(.serialized) struct EditsAndUnitsCLITests {
    static let zone = TimeZone(identifier: "Europe/Berlin")!

    static func local(_ mo: Int, _ d: Int, _ h: Int = 12, _ mi: Int = 0) -> Date {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        return c.date(from: DateComponents(year: 2026, month: mo, day: d, hour: h, minute: mi))!
    }

    static func run(_ scratch: Scratch, _ arguments: [String]) async throws -> Tool.Result {
        try await Tool.run("/usr/bin/env", ["TZ=Europe/Berlin", CLI.executable] + arguments + ["--db", scratch.dbPath])
    }

    @discardableResult
    static func succeed(_ scratch: Scratch, _ arguments: [String]) async throws -> String {
        let result = try await run(scratch, arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result.stdout
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    static func habitBody(_ scratch: Scratch, _ name: String) async throws -> (Definition, HabitDefinition)? {
        guard let d = try await HealthStore(path: scratch.dbPath).definition(.habit, name: name), case .habit(let h) = d.body else { return nil }
        return (d, h)
    }

    /// `define habit NAME --target ...` on a habit that exists: a new version of the same record
    /// with the rest kept (before: `--kind` was required and the unit was dropped); its kind
    /// cannot change; deleted, it can be defined again (before: the new version 1 lost to the
    /// tombstone's 2 and nothing was stored).
    @Test func definingAHabitAgainIsANewVersion() async throws {
        let scratch = try Scratch()
        try await Self.succeed(scratch, ["define", "habit", "Reading", "--kind", "numeric", "--unit", "pages", "--target", "20"])
        let again = try await Self.succeed(scratch, ["define", "habit", "reading", "--target", "30", "--per", "week"])
        #expect(again.contains("defined habit Reading (version 2)") && again.contains("at least 30 pages per week"), "\(again)")
        let (definition, habit) = try #require(try await Self.habitBody(scratch, "reading"))
        #expect(definition.name == "Reading" && definition.version == 2)
        #expect(habit == HabitDefinition(valueKind: .numeric, unit: "pages", target: HabitTarget(amount: 30, period: .week)))
        #expect(try await HealthStore(path: scratch.dbPath).definitions(.habit).count == 1, "not a second definition")
        let history = try Self.json(try await Self.succeed(scratch, ["history", definition.id.description, "--json"])) as? [[String: Any]]
        #expect(history?.map { $0["version"] as? Int ?? 0 } == [2, 1])

        let atMost = try await Self.succeed(scratch, ["define", "habit", "Reading", "--at-most", "--json"])
        #expect((try Self.json(atMost) as? [String: Any])?["version"] as? Int == 3, "\(atMost)")
        let same = try await Self.succeed(scratch, ["define", "habit", "Reading", "--kind", "numeric"])
        #expect(same.contains("unchanged habit Reading (version 3)"), "\(same)")
        let kind = try await Self.run(scratch, ["define", "habit", "Reading", "--kind", "yes-no"])
        #expect(kind.status == 1 && kind.stderr.contains("'Reading' is a numeric habit: its kind cannot change"), "\(kind.stderr)")
        let new = try await Self.run(scratch, ["define", "habit", "Chess", "--target", "1"])
        #expect(new.status == 64 && new.stderr.contains("'Chess' is a new habit: give --kind"), "\(new.stderr)")

        try await Self.succeed(scratch, ["delete", definition.id.description])
        let back = try await Self.succeed(scratch, ["define", "habit", "Reading", "--kind", "yes-no"])
        #expect(back.contains("(version 5)"), "\(back)")
        #expect(try await Self.habitBody(scratch, "Reading")?.1.valueKind == .yesNo)
    }

    @Test func editingAGoalAMealAndAWorkout() async throws {
        let scratch = try Scratch()
        try await Self.succeed(scratch, ["define", "habit", "mood", "--kind", "categorical", "--category", "good", "--category", "bad"])
        let mood = try #require(try await Self.habitBody(scratch, "mood")).0.id.description
        let edited = try await Self.succeed(scratch, ["edit", mood, "--category", "good", "--category", "bad", "--category", "meh",
                                                      "--target", "1"])
        #expect(edited.contains("version 2"), "\(edited)")
        #expect(try await Self.habitBody(scratch, "mood")?.1 == HabitDefinition(valueKind: .categorical, categories: ["good", "bad", "meh"],
                                                                                target: HabitTarget(amount: 1)))
        try await Self.succeed(scratch, ["log", "habit", "mood", "meh"])

        try await Self.succeed(scratch, ["define", "meal", "porridge", "--ingredient", "oats=150", "--ingredient", "milk=100"])
        let meal = Definition.id(.meal, name: "porridge").description
        try await Self.succeed(scratch, ["edit", meal, "--ingredient", "honey=60", "--remove-ingredient", "milk"])
        let listed = try await Self.succeed(scratch, ["definitions"])
        #expect(listed.contains("210 kcal: oats 150, honey 60"), "\(listed)")
        let bad = try await Self.run(scratch, ["edit", meal, "--ingredient", "honey"])
        #expect(bad.status == 64 && bad.stderr.contains("--ingredient 'honey' is not NAME=KCAL"), "\(bad.stderr)")

        let logged = try Self.json(try await Self.succeed(scratch, ["log", "workout", "running", "--duration", "45m",
                                                                    "--at", "2026-03-02T07:00", "--json"])) as? [String: Any]
        let run = try #require(logged?["id"] as? String)
        let estimate = try #require(logged?["value"] as? Double)
        try await Self.succeed(scratch, ["edit", run, "--duration", "1h30m"])
        let workout = try #require(try await HealthStore(path: scratch.dbPath).workouts().first)
        #expect(workout.start == "2026-03-02T06:00:00Z" && workout.end == "2026-03-02T07:30:00Z" && workout.version == 2)
        #expect(workout.energyKcal == (estimate * 2 * 10).rounded() / 10 && workout.energySource == "estimated")
        let history = try await Self.succeed(scratch, ["history", run])
        #expect(history.contains("elapsed_s") && history.contains("end"), "\(history)")
        let badDuration = try await Self.run(scratch, ["edit", run, "--duration", "soon"])
        #expect(badDuration.status == 64 && badDuration.stderr.contains("--duration 'soon' is not a duration"), "\(badDuration.stderr)")
        let date = try await Self.run(scratch, ["edit", run, "--duration", "1h", "--at", "2026-03-02T08:00"])
        #expect(date.status == 1 && date.stderr.contains("the date of a record cannot change"), "\(date.stderr)")
        for word in ["--duration", "--target", "--per", "--at-most", "--no-target", "--ingredient", "--remove-ingredient"] {
            #expect(try await CLI.run(["edit", "--help"]).stdout.contains(word), "edit --help lacks \(word)")
        }
    }

    /// `stats --json`: `{"periods": [...], "habits": [...]}`, the habits with their streaks and
    /// completion rates, the figures of the text output's last table.
    @Test func statsJSONCarriesStreaksAndCompletionRates() async throws {
        let scratch = try Scratch()
        let source = Source(driver: "manual")
        var records: [HealthRecord] = [
            .definition(Definition(name: "stretch", time: Self.local(3, 1, 8), body: .habit(HabitDefinition(valueKind: .yesNo)), source: source)),
        ]
        for day in [1, 2, 4, 5, 6] {
            records.append(.habit(HabitEvent(id: RecordID(UUID()), habit: "stretch", time: Self.local(3, day, 21), value: 1, source: source)))
        }
        try await HealthStore(path: scratch.dbPath).write(records)
        let stats = try #require(try Self.json(try await Self.succeed(scratch, ["stats", "--period", "week", "--json",
                                                                                "--at", "2026-03-06T22:00"])) as? [String: Any])
        #expect(Set(stats.keys) == ["periods", "habits"])
        let stretch = try #require((stats["habits"] as? [[String: Any]])?.first)
        #expect(stretch["habit"] as? String == "stretch" && stretch["unit"] as? String == "day")
        #expect(stretch["current_streak"] as? Int == 3 && stretch["longest_streak"] as? Int == 3)
        #expect(stretch["met"] as? Int == 5 && stretch["counted"] as? Int == 6 && stretch["completion_rate"] as? Double == 5 / 6.0)
        #expect(stretch["since"] as? String == "2026-03-01")
        let text = try await Self.succeed(scratch, ["stats", "--period", "week", "--at", "2026-03-06T22:00"])
        #expect(text.contains("stretch  3 days  3 days   5/6  83%   2026-03-01"), "\(text)")
    }

    /// Volumes and weights a person reads follow `define units`; JSON keeps ml and kg and says so.
    @Test func humanOutputUsesThePreferredUnits() async throws {
        let scratch = try Scratch()
        try await Self.succeed(scratch, ["define", "units", "--volume", "fl-oz", "--mass", "lb"])
        #expect(try await Self.succeed(scratch, ["log", "glass", "--at", "2026-03-02T08:00"]).contains("water 8 fl oz [glass]"))
        #expect(try await Self.succeed(scratch, ["log", "water", "500ml", "--at", "2026-03-02T09:00"]).contains("water 16.9 fl oz [custom]"))
        #expect(try await Self.succeed(scratch, ["log", "weight", "70kg", "--at", "2026-03-02T07:00"]).contains("weight 154.3 lb"))
        let json = try Self.json(try await Self.succeed(scratch, ["log", "water", "12oz", "--at", "2026-03-02T10:00", "--json"])) as? [String: Any]
        #expect(json?["value"] as? Double == 354.9 && json?["unit"] as? String == "ml")

        let goal = try await Self.succeed(scratch, ["define", "goal", "water", "2l"])
        #expect(goal.contains("goal at least 67.6 fl oz per day"), "\(goal)")
        let profile = try await Self.succeed(scratch, ["define", "profile", "--weight", "70kg"])
        #expect(profile.contains("weight 154.3 lb"), "\(profile)")
        let definitions = try await Self.succeed(scratch, ["definitions"])
        #expect(definitions.contains("67.6 fl oz per day") && definitions.contains("weight 154.3 lb"), "\(definitions)")
        let listedJSON = try await Self.succeed(scratch, ["definitions", "--json"])
        #expect(listedJSON.contains("weight 70 kg"), "JSON keeps kg: \(listedJSON)")

        let stats = try await Self.succeed(scratch, ["stats", "--period", "day", "--at", "2026-03-02T22:00"])
        let lines = stats.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("WEIGHT lb") == true && lines.first?.contains("WATER fl oz") == true, "\(stats)")
        // 236.6 + 500 + 354.9 ml = 36.9 fl oz; 70 kg = 154.3 lb.
        #expect(lines.count > 1 && lines[1].contains("154.3") && lines[1].contains("36.9"), "\(stats)")
        #expect(stats.contains("hydration (fl oz)  3        36.9"), "\(stats)")
        let statsJSON = try #require(try Self.json(try await Self.succeed(scratch, ["stats", "--period", "day", "--json",
                                                                                    "--at", "2026-03-02T22:00"])) as? [String: Any])
        let day = try #require((statsJSON["periods"] as? [[String: Any]])?.first)
        #expect(day["drinks_ml"] as? Double == 1091.5 && day["avg_weight_kg"] as? Double == 70)

        let measurements = try await Self.succeed(scratch, ["measurements"])
        #expect(measurements.contains("154.32") && measurements.contains("lb"), "\(measurements)")
        let today = try await Self.succeed(scratch, ["today", "--at", "2026-03-02T22:00"])
        #expect(today.contains("36.9 fl oz of 67.6 fl oz (55%), 3 drinks"), "\(today)")

        // Back to ml and kg.
        try await Self.succeed(scratch, ["define", "units", "--volume", "ml", "--mass", "kg"])
        #expect(try await Self.succeed(scratch, ["log", "glass", "--at", "2026-03-02T11:00"]).contains("water 236.6 ml [glass]"))
        let metric = try await Self.succeed(scratch, ["stats", "--period", "day", "--at", "2026-03-02T22:00"])
        #expect(metric.contains("WEIGHT kg") && metric.contains("WATER ml") && metric.contains("70.0"), "\(metric)")
    }
}
