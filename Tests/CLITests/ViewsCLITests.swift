import Foundation
import HealthModel
import HealthStore
import SyncProtocol
import Testing
import TestSupport

/// `today`, `stats`, `achievements` and `export` end to end: records written with the store into
/// a real database, the built binary run with `TZ=Europe/Berlin` and a fixed `--at`.
@Suite(.serialized) struct ViewsCLITests {
    static let zone = TimeZone(identifier: "Europe/Berlin")!
    static let source = Source(driver: "manual", device: "views-test")

    static func local(_ mo: Int, _ d: Int, _ h: Int = 12, _ mi: Int = 0) -> Date {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        return c.date(from: DateComponents(year: 2026, month: mo, day: d, hour: h, minute: mi))!
    }

    static func habit(_ habit: String, _ time: Date, value: Double? = nil, category: String? = nil, unit: String? = nil,
                      label: String? = nil, note: String? = nil) -> HealthRecord {
        .habit(HabitEvent(id: RecordID.derive("views", habit, ISO8601.string(time)), habit: habit, time: time, value: value,
                          category: category, unit: unit, label: label, note: note, source: source))
    }

    static func definition(_ name: String, _ body: DefinitionBody) -> HealthRecord {
        .definition(Definition(name: name, time: local(3, 1, 8), body: body, source: source))
    }

    /// A month of a person's data around Berlin's spring DST change (2026-03-29).
    static func records() -> [HealthRecord] {
        var records: [HealthRecord] = [
            definition("hydration", .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 2000)))),
            definition("vaping", .habit(HabitDefinition(valueKind: .numeric, target: HabitTarget(amount: 3, direction: .atMost)))),
            definition("stretch", .habit(HabitDefinition(valueKind: .yesNo))),
            definition("stress", .trigger),
            definition("pasta", .meal(SavedMeal(kcal: 650, ingredients: [.init(name: "tomato", kcal: 50)]))),
            definition("profile", .profile(BodyProfile(weightKg: 71.5))),
            definition("preferences", .preferences(Preferences(volume: .ml, mass: .kg))),
        ]
        // Stretching every evening at 23:30, March 1 to April 1 (32 days, across the DST change).
        for day in 1...32 {
            records.append(habit("stretch", local(3, 1, 23, 30).addingTimeInterval(0).advanced(byDays: day - 1)))
        }
        // Two litres a day March 20-26: seven days of the water goal.
        for day in 20...26 { records.append(habit("hydration", local(3, day, 10), value: 2000, category: "custom", unit: "ml")) }
        // Water at the midnight around April 2: 23:59 counts for April 1, 00:01 for April 2.
        records.append(habit("hydration", local(4, 1, 23, 59), value: 500, category: "bottle", unit: "ml"))
        records.append(habit("hydration", local(4, 2, 0, 1), value: 250, category: "glass", unit: "ml"))
        // Vaping on March 27 and at 23:30 on March 28; none on the 23-hour March 29.
        records.append(habit("vaping", local(3, 27, 9), value: 1, category: "stress"))
        records.append(habit("vaping", local(3, 28, 23, 30), value: 1, category: "boredom", label: "pod_finished", note: "=1+1"))
        records.append(habit("meal", local(4, 2, 12), value: 650, unit: "kcal", label: "pasta"))
        records.append(.workout(Workout(id: RecordID.derive("views", "run"), sport: "running", start: local(4, 2, 7),
                                        end: local(4, 2, 7, 45), timerS: 2700, distanceM: 8000, energyKcal: 300, avgHeartRate: 150,
                                        samples: [Sample(time: local(4, 2, 7), heartRate: 140)], source: source)))
        records.append(.measurement(Measurement(id: RecordID.derive("views", "energy"), kind: .energy, time: local(4, 2, 8),
                                                value: 100, source: source)))
        records.append(.measurement(Measurement(id: RecordID.derive("views", "steps1"), kind: .steps, time: local(4, 1, 18),
                                                end: local(4, 1, 19), value: 5000, source: source)))
        records.append(.measurement(Measurement(id: RecordID.derive("views", "steps2"), kind: .steps, time: local(4, 2, 18),
                                                end: local(4, 2, 19), value: 8000, source: source)))
        records.append(.sleep(SleepSession(id: RecordID.derive("views", "night"), start: local(4, 1, 23, 10), end: local(4, 2, 6, 40),
                                           stages: [SleepStageSpan(start: local(4, 1, 23, 10), end: local(4, 1, 23, 30), stage: .awake),
                                                    SleepStageSpan(start: local(4, 1, 23, 30), end: local(4, 2, 6, 40), stage: .light)],
                                           source: source)))
        return records
    }

    static func database() async throws -> Scratch {
        let scratch = try Scratch()
        try await scratch.store().write(records())
        return scratch
    }

    static func run(_ scratch: Scratch, _ arguments: [String]) async throws -> Tool.Result {
        let result = try await Tool.run("/usr/bin/env", ["TZ=Europe/Berlin", CLI.executable] + arguments + ["--db", scratch.dbPath])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    /// `log habit --skip`: a day set aside on purpose; the streak goes on across it in `today`,
    /// on the dashboard's habit page, and the day is not counted as missed.
    @Test func aSkippedDayKeepsTheStreak() async throws {
        let scratch = try await Self.database()
        func streak() async throws -> Int? {
            let report = try #require(try Self.json(try await Self.run(scratch, ["today", "--json", "--at", "2026-04-03T21:00"]).stdout) as? [String: Any])
            return (report["habits"] as? [[String: Any]])?.first { $0["name"] as? String == "stretch" }?["current_streak"] as? Int
        }
        // April 2 was missed: the streak is broken.
        #expect(try await streak() == 0)
        let refused = try await Tool.run("/usr/bin/env", ["TZ=Europe/Berlin", CLI.executable, "log", "habit", "stretch", "--skip", "--done",
                                                          "--at", "2026-04-02T12:00", "--db", scratch.dbPath])
        #expect(refused.status != 0 && refused.stderr.contains("takes no value and no --done"), "\(refused.stderr)")
        let logged = try await Self.run(scratch, ["log", "habit", "stretch", "--skip", "--at", "2026-04-02T12:00"])
        #expect(logged.stdout.contains("\"skipped\""), "\(logged.stdout)")
        // Skipped on purpose: passed over, the 32 days before it still count.
        #expect(try await streak() == 32)
        let events = try await scratch.store().habitEvents(in: DateRange()).filter { $0.habit == "stretch" && $0.label == HabitEvent.Mark.skipped }
        #expect(events.count == 1 && events.first?.value == nil)
        // The habit's calendar shows the day as skipped, and its streak as today's.
        let dashboard = try DashboardCLITests.Dashboard(scratch, at: "2026-04-03T21:00")
        let page = try await DashboardCLITests.get(dashboard.url, "/habit?name=stretch")
        #expect(page.body.contains("<rect class=\"day skipped\" data-day=\"2026-04-02\""))
        #expect(DashboardCLITests.fields(page.body)["current-streak"] == 32)
    }

    @Test func today() async throws {
        let scratch = try await Self.database()
        let run = try await Self.run(scratch, ["today", "--json", "--at", "2026-04-02T21:00"])
        let report = try #require(try Self.json(run.stdout) as? [String: Any])
        #expect(report["date"] as? String == "2026-04-02")
        #expect(report["time_zone"] as? String == "Europe/Berlin")
        let water = try #require(report["water"] as? [String: Any])
        #expect(water["ml"] as? Double == 250 && water["goal_ml"] as? Double == 2000 && water["met"] as? Bool == false)
        #expect(water["drinks"] as? Int == 1 && water["unit"] as? String == "ml")
        let vaping = try #require(report["vaping"] as? [String: Any])
        #expect(vaping["sessions"] as? Int == 0 && vaping["goal_at_most"] as? Double == 3)
        #expect(vaping["last_session"] as? String == "2026-03-28T22:30:00Z")
        // 2026-03-28 22:30 UTC to 2026-04-02 19:00 UTC.
        #expect(vaping["since_last_s"] as? Double == 4 * 86_400 + 20.5 * 3600)
        let habits = try #require(report["habits"] as? [[String: Any]])
        let stretch = try #require(habits.first { $0["name"] as? String == "stretch" })
        // Not yet done today (23:30 comes later); March 1 to April 1 is 32 days.
        #expect(stretch["met"] as? Bool == false && stretch["current_streak"] as? Int == 32 && stretch["streak_unit"] as? String == "day")
        let hydration = try #require(habits.first { $0["name"] as? String == "hydration" })
        #expect(hydration["current_streak"] as? Int == 0 && hydration["longest_streak"] as? Int == 7)
        let energy = try #require(report["energy"] as? [String: Any])
        #expect(energy["eaten_kcal"] as? Double == 650 && energy["burned_kcal"] as? Double == 400)
        #expect(energy["meals"] as? Int == 1 && energy["workouts"] as? Int == 1)
        let sleep = try #require(report["sleep"] as? [String: Any])
        #expect(sleep["asleep_s"] as? Double == 7 * 3600 + 10 * 60 && sleep["end"] as? String == "2026-04-02T04:40:00Z")
        #expect(report["steps"] as? Double == 8000)

        // One minute before midnight of April 1: the 23:59 bottle is that day's.
        let before = try #require(try Self.json(try await Self.run(scratch, ["today", "--json", "--at", "2026-04-01T23:59"]).stdout)
                                  as? [String: Any])
        #expect((before["water"] as? [String: Any])?["ml"] as? Double == 500)

        let text = try await Self.run(scratch, ["today", "--at", "2026-04-02T21:00"]).stdout
        #expect(text.contains("Today 2026-04-02 (Europe/Berlin)"), "\(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines == [
            "Today 2026-04-02 (Europe/Berlin)",
            "WHAT           TODAY",
            "Water          250 ml of 2000 ml (12%), 1 drink, goal streak 0 days",
            "Vaping         0 sessions (at most 3), last 4d 20h ago",
            "Habit stretch  not done yet, streak 32 days",
            "Habit vaping   0 (at most 3/day), met, streak 33 days",
            "Energy         650 kcal eaten (1 meal), 400 kcal burned (1 workout)",
            "Sleep          7:10:00 asleep, 23:10-06:40",
            "Steps          8000",
        ], "\(text)")
    }

    @Test func achievements() async throws {
        let scratch = try await Self.database()
        let run = try await Self.run(scratch, ["achievements", "--json", "--at", "2026-04-02T21:00"])
        let list = try #require(try Self.json(run.stdout) as? [[String: Any]])
        // Vaping at most three times a day since the definition on March 1 is a 30-day streak too.
        #expect(list.map { $0["kind"] as? String ?? "?" } == ["water_streak_7", "first_vape_free_day", "habit_streak_30", "habit_streak_30"])
        #expect(list.map { $0["earned"] as? String ?? "?" } == ["2026-03-26", "2026-03-29", "2026-03-30", "2026-03-30"])
        #expect(list.map { $0["habit"] as? String ?? "?" } == ["hydration", "vaping", "stretch", "vaping"])
        // At 23:59 on the DST day the vape-free day is not over yet.
        let early = try #require(try Self.json(try await Self.run(scratch, ["achievements", "--json", "--at", "2026-03-29T23:59"]).stdout)
                                 as? [[String: Any]])
        #expect(early.map { $0["kind"] as? String ?? "?" } == ["water_streak_7"])
        let text = try await Self.run(scratch, ["achievements", "--at", "2026-04-02T21:00"]).stdout
        #expect(text == """
            EARNED      ACHIEVEMENT             HABIT
            2026-03-26  7-day water streak      hydration
            2026-03-29  First vape-free day     vaping
            2026-03-30  30-day streak: stretch  stretch
            2026-03-30  30-day streak: vaping   vaping

            """, "\(text)")
    }

    @Test func statsOfTheAppsData() async throws {
        let scratch = try await Self.database()
        let run = try await Self.run(scratch, ["stats", "--period", "week", "--json", "--at", "2026-04-02T21:00"])
        let weeks = try #require((try Self.json(run.stdout) as? [String: Any])?["periods"] as? [[String: Any]])
        #expect(weeks.map { $0["period"] as? String ?? "?" } == ["2026-W09", "2026-W10", "2026-W11", "2026-W12", "2026-W13", "2026-W14"])
        let w13 = try #require(weeks.first { $0["period"] as? String == "2026-W13" })
        // Monday March 23 to Sunday March 29 (the 23-hour day included).
        #expect(w13["start"] as? String == "2026-03-22T23:00:00Z")
        #expect(w13["vaping_sessions"] as? Int == 2 && w13["vaping_by_trigger"] as? [String: Int] == ["stress": 1, "boredom": 1])
        #expect(w13["drinks"] as? Int == 4 && w13["drinks_ml"] as? Double == 8000 && w13["days"] as? Int == 7)
        #expect(w13["drinks_ml_per_day"] as? Double == 8000 / 7.0)
        let habits = try #require(w13["habits"] as? [[String: Any]])
        let stretch = try #require(habits.first { $0["habit"] as? String == "stretch" })
        #expect(stretch["entries"] as? Int == 7 && stretch["days_met"] as? Int == 7 && stretch["completion_rate"] as? Double == 1)
        let water = try #require(habits.first { $0["habit"] as? String == "hydration" })
        #expect(water["days_met"] as? Int == 4 && water["completion_rate"] as? Double == 4 / 7.0)
        let vaping = try #require(habits.first { $0["habit"] as? String == "vaping" })
        #expect(vaping["days_met"] as? Int == 7)
        // The week of April 2: Monday to Thursday so far, today not done yet.
        let w14 = try #require(weeks.last)
        #expect(w14["days"] as? Int == 4 && w14["meal_kcal"] as? Double == 650 && w14["workouts"] as? Int == 1)
        let stretch14 = try #require((w14["habits"] as? [[String: Any]])?.first { $0["habit"] as? String == "stretch" })
        #expect(stretch14["days_met"] as? Int == 3 && stretch14["completion_rate"] as? Double == 1)

        let days = try #require((try Self.json(try await Self.run(scratch, ["stats", "--period", "day", "--json",
                                                                            "--since", "2026-03-28", "--until", "2026-03-29",
                                                                            "--at", "2026-04-02T21:00"]).stdout) as? [String: Any])?["periods"] as? [[String: Any]])
        #expect(days.map { $0["period"] as? String ?? "?" } == ["2026-03-28", "2026-03-29"])
        #expect(days.map { $0["vaping_sessions"] as? Int ?? -1 } == [1, 0])

        let text = try await Self.run(scratch, ["stats", "--period", "month", "--at", "2026-04-02T21:00"]).stdout
        #expect(text.contains("""
            PERIOD   HABIT           ENTRIES  TOTAL    PER DAY  DAYS MET  RATE
            2026-03  hydration (ml)  7        14000.0  451.6    7         23%
            2026-03  stretch         31       0.0      0.0      31        100%
            2026-03  vaping          2        2.0      0.1      31        100%
            2026-04  hydration (ml)  2        750.0    375.0    0         0%
            2026-04  meal            1        650.0    325.0    -         -
            2026-04  stretch         1        0.0      0.0      1         100%

            PERIOD   TRIGGER  SESSIONS
            2026-03  boredom  1
            2026-03  stress   1

            HABIT      STREAK   LONGEST  MET    RATE  SINCE
            hydration  0 days   7 days   7/32   22%   2026-03-01
            stretch    32 days  32 days  32/32  100%  2026-03-01
            vaping     33 days  33 days  33/33  100%  2026-03-01
            """), "\(text)")
        #expect(text.hasPrefix("PERIOD   WORKOUTS  ACTIVE  DIST km  kcal  AVG HR  SLEEP avg  STEPS  WEIGHT kg  WATER ml  VAPES  MEAL kcal\n"))
    }

    @Test func exportCarriesEveryRecord() async throws {
        let scratch = try await Self.database()
        let records = Self.records()
        let csv = try await Self.run(scratch, ["export"]).stdout
        let lines = csv.split(separator: "\n").map(String.init)
        #expect(lines.count == records.count + 1)
        for type in ["workout", "sleep", "measurement", "habit", "definition"] {
            #expect(lines.contains { $0.hasPrefix(type + ",") }, "\(type)")
        }
        #expect(lines.contains { $0.hasPrefix("definition,") && $0.contains(",hydration,2000,ml,") && $0.contains("target=at_least 2000/day") },
                "\(csv)")
        #expect(lines.contains { $0.hasPrefix("definition,") && $0.contains(",pasta,650,kcal,") && $0.contains("ingredients=tomato=50kcal") })
        // The vaping note `=1+1` stays text.
        #expect(lines.contains { $0.hasPrefix("habit,") && $0.contains(",'=1+1,") }, "\(csv)")

        let json = try await Self.run(scratch, ["export", "--format", "json"]).stdout
        let decoded = try json.split(separator: "\n").map { line in
            try SyncJSONDecoder().decode(WireRecord.self, from: Data(line.utf8))
        }
        let exported = decoded.compactMap(\.data)
        #expect(exported.count == records.count)
        #expect(Set(exported) == Set(records), "nothing is lost: samples, stages, definitions")
        #expect(decoded.allSatisfy { $0.type == $0.data?.type.rawValue && $0.version == 1 })

        // Into a file, and a range.
        let file = scratch.folder + "/out.jsonl"
        _ = try await Self.run(scratch, ["export", "--format", "json", "--since", "2026-04-02", "-o", file])
        let written = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(written.count == records.filter { $0.start >= Self.local(4, 2, 0) }.count)

        let bad = try await Tool.run(CLI.executable, ["export", "--format", "xml", "--db", scratch.dbPath])
        #expect(bad.status == 64 && bad.stderr.contains("--format must be csv or json"), "\(bad.stderr)")
    }
}

extension Date {
    fileprivate func advanced(byDays days: Int) -> Date {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = ViewsCLITests.zone
        return c.date(byAdding: .day, value: days, to: self)!
    }
}
