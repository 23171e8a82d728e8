import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthReports
import HealthStore
import LinuxAdapters
import SyncProtocol

/// `--at`: the time a view is computed for (which day is today, how long ago, streaks so far).
struct AsOfOptions: ParsableArguments {
    @Option(name: .customLong("at"),
            help: ArgumentHelp("Compute as of this time instead of now (local unless it says Z or an offset).", valueName: "TIME"))
    var at: String?

    func validate() throws { _ = try now() }

    func now() throws -> Date {
        guard let at else { return Date() }
        guard let date = RangeOptions.localDate(at, timeZone: .current) else {
            throw ValidationError("--at '\(at)' is not a time (use YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ)")
        }
        return date
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Totals and averages per day, week, month or year.",
        discussion: """
            Periods follow the local time zone (TZ); weeks are ISO weeks (Monday first). Volumes and weights are shown \
            in the units of `define units`. --json: {"periods": [...], "habits": [...]}: the periods' totals (ml, kg) \
            and each counted habit's current and longest streak and completion rate (docs/cli.md).
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    @OptionGroup var asOf: AsOfOptions

    @Option(help: "day, week, month or year.")
    var period: String = "week"

    func validate() throws {
        guard StatsPeriod(rawValue: period) != nil else { throw ValidationError("--period must be day, week, month or year") }
    }

    func run() async throws {
        let store = try await database.open()
        let now = try asOf.now()
        let days = try await Output.days(store)
        let history = try await Reports.habitHistory(store, days: days, now: now)
        let stats = try await Reports.stats(store, period: StatsPeriod(rawValue: period)!, range: try range.range(), days: days, now: now,
                                            history: history)
        let progress = history.progress
        if output.json { return try Output.printJSON(StatsJSON(periods: stats, habits: progress)) }
        guard !stats.isEmpty else { return print("No records.") }
        // Volumes and masses in the preferred units (JSON keeps ml and kg).
        let units = try await Output.preferences(store)
        let waterDecimals = units.volume == .ml ? 0 : 1
        Output.printTable(["PERIOD", "WORKOUTS", "ACTIVE", "DIST km", "kcal", "AVG HR", "SLEEP avg", "STEPS", "WEIGHT \(units.mass.symbol)",
                           "WATER \(units.volume.symbol)", "VAPES", "MEAL kcal"],
                          stats.map { s in
            [s.period, String(s.workouts), Output.duration(s.activeS), Output.number(s.distanceM, decimals: 1, scale: 0.001),
             Output.number(s.energyKcal, decimals: 0), Output.number(s.avgHR, decimals: 0),
             s.avgSleepS.map { Output.duration($0) } ?? "-", Output.number(s.steps, decimals: 0),
             Output.number(s.avgWeightKg.map { Quantities.mass($0, in: units.mass) }, decimals: 1),
             Output.number(Quantities.volume(s.drinksMl, in: units.volume), decimals: waterDecimals), String(s.vapingSessions),
             Output.number(s.mealKcal, decimals: 0)]
        })
        let habitRows = stats.flatMap { s in
            s.habits.map { h in
                // Drinks are summed in ml: shown in the preferred volume unit, named.
                let drinks = h.habit == BuiltInHabit.hydration
                let scale = drinks ? Quantities.volume(1, in: units.volume) : 1
                return [s.period, drinks ? "\(h.habit) (\(units.volume.symbol))" : h.habit, String(h.entries),
                        Output.number(h.total * scale, decimals: 1), Output.number(h.perDay * scale, decimals: 1),
                        h.daysMet.map { "\($0)" } ?? "-", h.completionRate.map { Output.number($0 * 100, decimals: 0) + "%" } ?? "-"]
            }
        }
        if !habitRows.isEmpty {
            print("")
            Output.printTable(["PERIOD", "HABIT", "ENTRIES", "TOTAL", "PER DAY", "DAYS MET", "RATE"], habitRows)
        }
        let triggers = stats.flatMap { s in s.vapingByTrigger.sorted { $0.key < $1.key }.map { [s.period, $0.key, String($0.value)] } }
        if !triggers.isEmpty {
            print("")
            Output.printTable(["PERIOD", "TRIGGER", "SESSIONS"], triggers)
        }
        if !progress.isEmpty {
            print("")
            Output.printTable(["HABIT", "STREAK", "LONGEST", "MET", "RATE", "SINCE"], progress.map { p in
                ["\(p.habit)", Output.count(p.currentStreak, p.unit), Output.count(p.longestStreak, p.unit), "\(p.met)/\(p.counted)",
                 p.completionRate.map { Output.number($0 * 100, decimals: 0) + "%" } ?? "-", p.since ?? "-"]
            })
        }
    }
}

/// `stats --json`: the periods, and each counted habit's streaks and completion rate up to now.
struct StatsJSON: Encodable {
    var periods: [PeriodStats]
    var habits: [HabitProgress]
}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export every entry as a spreadsheet-friendly file, or as JSON lines.",
        discussion: """
            CSV columns: \(Reports.csvHeader.joined(separator: ", ")). One row per workout, sleep session, measurement, \
            habit event (drinks, vaping sessions, meals, habits) and definition (habits with their goals, triggers, saved \
            meals, profile, preferences); docs/cli.md describes what each column holds per type. Text a spreadsheet would \
            run as a formula gets a leading apostrophe.
            JSON: one object per line per record, as the sync protocol sends it ({"id", "version", "type", "data"}): \
            nothing is left out (samples, laps, stages, extras).
            Both end with each derived habit's value per day with one, through today (--at): computed, not records \
            (CSV type `derived`; JSON {"type": "derived", "habit", "id", "version", "day", "start", "end", "value", "unit"}).
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var asOf: AsOfOptions

    @Option(help: "Output format: csv or json (one record per line, the sync protocol's shape).")
    var format: String = "csv"

    @Option(name: [.short, .long], help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE"))
    var output: String?

    func validate() throws {
        guard format == "csv" || format == "json" else { throw ValidationError("--format must be csv or json") }
    }

    func run() async throws {
        let store = try await database.open()
        var text = ""
        let emit: (String) -> Void = { line in
            if output == nil { print(line) } else { text += line + (format == "csv" ? "\r\n" : "\n") }
        }
        let days = try await Output.days(store), now = try asOf.now()
        if format == "csv" {
            try await Reports.csv(store, range: try range.range(), days: days, now: now, write: emit)
        } else {
            let encoder = SyncJSONEncoder()
            for type in RecordType.allCases {
                var after: (start: String, id: String)?
                while true {
                    let page = try await store.records(type, in: try range.range(), after: after)
                    for (_, record) in page { emit(String(decoding: try encoder.encode(WireRecord(record)), as: UTF8.self)) }
                    guard let last = page.last, page.count == 500 else { break }
                    after = (last.start, last.record.id.description)
                }
            }
            for v in try await Reports.derivedDays(store, boundary: days, range: try range.range(), now: now) {
                emit(String(decoding: try encoder.encode(DerivedLine(v)), as: UTF8.self))
            }
        }
        if let output {
            do {
                try PrivateFiles.write(Data(text.utf8), to: output)
            } catch {
                throw RuntimeFailure("cannot write \(output): \(error.localizedDescription)")
            }
        }
    }
}

/// A derived habit's value on one day, as `export --format json` writes it after the records.
struct DerivedLine: Encodable {
    var type = "derived"
    var habit: String
    var id: String
    var version: Int
    var day: String
    var start: Date
    var end: Date
    var value: Double
    var unit: String

    init(_ v: Reports.DerivedDay) {
        habit = v.definition.name
        id = v.definition.id.description
        version = v.definition.version
        day = v.day.description
        start = v.start
        end = v.end
        value = v.value
        unit = v.derivation.unit
    }
}

struct TodayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "today", abstract: "Today so far: water, vaping, habits and streaks, energy, sleep, steps.",
        discussion: """
            Today is the local day of the time zone (TZ). Water is compared with the `hydration` habit's daily target \
            and shown in the preferred volume unit; vaping with the `vaping` habit's at-most target; each defined habit \
            shows today's amount and its current streak (days, or ISO weeks for a weekly target). Energy eaten is the \
            meals' kcal; burned is the workouts' energy plus `energy` measurements. Last night is the longest sleep \
            session ending today.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var asOf: AsOfOptions

    func run() async throws {
        let store = try await database.open()
        let report = try await Reports.today(store, days: try await Output.days(store), now: try asOf.now())
        if output.json { return try Output.printJSON(report) }
        print("Today \(report.date) (\(report.timeZone))")
        let unit = Preferences.VolumeUnit(rawValue: report.water.unit) ?? .ml
        var rows: [[String]] = []
        var water = Quantities.text(millilitres: report.water.ml, in: unit)
        if let goal = report.water.goalMl, let progress = report.water.progress {
            water += " of \(Quantities.text(millilitres: goal, in: unit)) (\(Output.number(progress * 100, decimals: 0))%)"
        }
        water += ", " + Output.count(report.water.drinks, "drink")
        if let streak = report.habits.first(where: { $0.name == BuiltInHabit.hydration })?.currentStreak {
            water += ", goal streak " + Output.count(streak, "day")
        }
        rows.append(["Water", water])
        var vaping = Output.count(report.vaping.sessions, "session")
        if let goal = report.vaping.goalAtMost { vaping += " (at most \(Output.number(goal, decimals: 0)))" }
        vaping += report.vaping.sinceLastS.map { $0 < 60 ? ", last just now" : ", last \(Durations.short($0)) ago" } ?? ", none yet"
        rows.append(["Vaping", vaping])
        // The apps' own habits have their rows above (water, vaping) and below (energy eaten).
        for h in report.habits
        where h.name != BuiltInHabit.hydration && h.name != BuiltInHabit.meal && (h.name != BuiltInHabit.vaping || h.target != nil) {
            var text: String
            if h.kind == "yes_no" && h.target == nil {
                text = h.entries > 0 ? "done" : "not done yet"
            } else {
                text = Output.number(h.amount, decimals: h.amount == h.amount.rounded() ? 0 : 1)
                if let unit = h.unit, h.kind != "yes_no" { text += " \(unit)" }
                if let target = h.target {
                    let direction = h.direction == "at_most" ? "at most" : "at least"
                    text += " (\(direction) \(Output.number(target, decimals: target == target.rounded() ? 0 : 1))/\(h.targetPeriod ?? "day"))"
                }
                if let met = h.met { text += met ? ", met" : ", not yet" }
            }
            if let streak = h.currentStreak { text += ", streak " + Output.count(streak, h.streakUnit ?? "day") }
            rows.append(["Habit " + h.name, text])
        }
        rows.append(["Energy", "\(Output.number(report.energy.eatenKcal, decimals: 0)) kcal eaten (\(Output.count(report.energy.meals, "meal"))), "
                     + "\(Output.number(report.energy.burnedKcal, decimals: 0)) kcal burned (\(Output.count(report.energy.workouts, "workout")))"])
        rows.append(["Sleep", report.sleep.map { s in
            "\(Output.duration(s.asleepS)) asleep, \(Self.clock(s.start))-\(Self.clock(s.end))"
        } ?? "-"])
        rows.append(["Steps", Output.number(report.steps, decimals: 0)])
        Output.printTable(["WHAT", "TODAY"], rows)
    }

    /// Local `HH:MM`.
    static func clock(_ date: Date) -> String {
        let c = Calendar.gregorian(in: .current).dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", c.hour ?? 0, c.minute ?? 0)
    }
}

struct AchievementsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "achievements", abstract: "Achievements reached, derived from the data.",
        discussion: """
            First vape-free day (a full local day without a vaping session after one with), 7-day water streak (the \
            `hydration` daily goal met 7 days running), and a 30-day streak of any habit with a daily goal; each with \
            the local day (TZ) it was reached. Nothing is stored: edits and deletes change the list.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var asOf: AsOfOptions

    func run() async throws {
        let store = try await database.open()
        let list = try await Reports.achievements(store, days: try await Output.days(store), now: try asOf.now())
        if output.json { return try Output.printJSON(list) }
        guard !list.isEmpty else { return print("No achievements yet.") }
        Output.printTable(["EARNED", "ACHIEVEMENT", "HABIT"], list.map { [$0.earned, $0.title, $0.habit] })
    }
}
