import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Entries

/// `healthgate define ...`: habits, triggers, saved meals, the body profile, units, goals. A
/// re-define is a new version of the same definition.
struct DefineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "define", abstract: "Define a habit, a vaping trigger, a saved meal, your body profile, units or a goal.",
        discussion: "Defining again what is defined stores a new version of it (synced like any record). `healthgate definitions` lists them.",
        subcommands: [DefineHabit.self, DefineTrigger.self, DefineMeal.self, DefineProfile.self, DefineUnits.self, DefineDayStart.self, DefineGoal.self])
}

/// Options every `define` command takes.
struct DefineOptions: ParsableArguments {
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    /// Stores a new version of the definition named `name` with `body` and prints it.
    func define(_ name: String, _ body: DefinitionBody, store: HealthStore? = nil) async throws {
        let store = if let store { store } else { try await database.open() }
        let stored: Definition
        do {
            stored = try await ManualEntries.define(Definition(name: name, time: Date(), body: body, source: Source(driver: EntryBuilder.driverID)),
                                                    into: store)
        } catch let error as EntryError {
            throw RuntimeFailure(error.description)
        }
        try await print(stored, store: store)
    }

    /// Prints a stored definition (`unchanged`: defined again with nothing new, no version written).
    func print(_ stored: Definition, unchanged: Bool = false, store: HealthStore) async throws {
        if output.json { return try Output.printJSON(DefinitionListing(stored)) }
        let listed = DefinitionListing(stored, units: try await Output.preferences(store))
        Swift.print("\(unchanged ? "unchanged" : "defined") \(listed.kind) \(listed.name) (version \(stored.version)): \(listed.details)")
    }
}

struct DefineHabit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "habit", abstract: "A habit: numeric (a number in a unit), categorical (one of its categories) or yes-no.",
        discussion: """
            A goal: --target N --per day|week (at least N; --at-most: at most N). Numeric habits count the sum of their \
            values, the others the number of entries. Defining a habit that exists (its name in any case) changes it: \
            a new version of the same definition (`healthgate history ID` lists them), with what is given replaced and \
            the rest kept (--kind may be left out; it cannot change, nor the name's spelling). --no-target drops the goal.

            A derived habit fills itself from what was recorded (docs/derived-habits.md): --from steps, active_minutes, \
            workouts, heart_rate_above, heart_rate_below, sleep, measurement, hydration or vaping, with --sport and \
            --min-minutes (workouts), --bpm (heart rate), --stage (sleep), --measurement KIND, and a goal (--target). \
            Its values are computed per day from the store, never typed; `healthgate habit explain NAME --day DATE` \
            lists what counted. Examples: `define habit steps10k --from steps --target 10000`, \
            `define habit cardio --from heart_rate_above --bpm 120 --target 20`, \
            `define habit runs --from workouts --sport running --target 3 --per week`.
            """)
    @OptionGroup var options: DefineOptions
    @Argument(help: "The habit's name.") var name: String
    @Option(help: "numeric, categorical or yes-no (required for a new habit).") var kind: String?
    @Option(help: "The unit of a numeric habit's values (pages, min ...).") var unit: String?
    @Option(name: .customLong("category"), help: "A category of a categorical habit (repeat the option for each).") var categories: [String] = []
    @Option(help: "The goal per period.") var target: Double?
    @Option(help: "day or week (with --target; default day).") var per: String?
    @Flag(help: "The goal is a most (e.g. at most 2 coffees), not a least.") var atMost = false
    @Flag(help: "The goal is a least (the default for a new goal).") var atLeast = false
    @Flag(help: "An existing habit: drop its goal.") var noTarget = false
    @Option(help: "A derived habit's source: steps, active_minutes, workouts, heart_rate_above, heart_rate_below, sleep, measurement, hydration, vaping.")
    var from: String?
    @Option(help: "Derived from workouts: of this sport only.") var sport: String?
    @Option(help: "Derived from workouts: those at least this many minutes long only.") var minMinutes: Double?
    @Option(help: "Derived from heart rate: the threshold in bpm.") var bpm: Int?
    @Option(help: "Derived from sleep: one stage only (light, deep, rem).") var stage: String?
    @Option(help: "Derived from a measurement: its kind (resting_heart_rate, weight, hrv ...).") var measurement: String?

    /// The derivation the options describe, nil without --from.
    func derivation() throws -> HabitDerivation? {
        guard let from else {
            if sport != nil || minMinutes != nil || bpm != nil || stage != nil || measurement != nil {
                throw ValidationError("--sport, --min-minutes, --bpm, --stage and --measurement describe a derived habit: give --from SOURCE")
            }
            return nil
        }
        guard let source = HabitDerivation.Source(rawValue: from.replacingOccurrences(of: "-", with: "_")) else {
            throw ValidationError("--from '\(from)' is not a source: one of " + HabitDerivation.Source.allCases.map(\.rawValue).joined(separator: ", "))
        }
        var stageValue: SleepStage?
        if let stage {
            guard let s = SleepStage(rawValue: stage) else { throw ValidationError("--stage must be light, deep or rem (not '\(stage)')") }
            stageValue = s
        }
        var kind: MeasurementKind?
        if let measurement {
            guard let k = MeasurementKind(rawValue: measurement.replacingOccurrences(of: "-", with: "_")) else {
                throw ValidationError("--measurement '\(measurement)' is not a measurement kind: one of "
                    + MeasurementKind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            kind = k
        }
        let derivation = HabitDerivation(source: source, sport: sport, minMinutes: minMinutes, bpm: bpm, stage: stageValue, kind: kind)
        if let problem = derivation.problem { throw ValidationError(problem) }
        return derivation
    }

    var valueKind: HabitDefinition.ValueKind? {
        kind.map { $0 == "numeric" ? .numeric : $0 == "categorical" ? .categorical : .yesNo }
    }

    func validate() throws {
        if let kind, !["numeric", "categorical", "yes-no", "yes_no", "yesno"].contains(kind) {
            throw ValidationError("--kind must be numeric, categorical or yes-no (not '\(kind)')")
        }
        if let per, HabitTarget.Period(rawValue: per) == nil { throw ValidationError("--per must be day or week (not '\(per)')") }
        if let target, !(target.isFinite && target > 0) { throw ValidationError("--target must be more than zero") }
        if atMost && atLeast { throw ValidationError("--at-most and --at-least exclude each other") }
        if noTarget, target != nil || per != nil || atMost || atLeast { throw ValidationError("--no-target goes without --target, --per, --at-most, --at-least") }
        if try derivation() != nil {
            if let valueKind, valueKind != .numeric { throw ValidationError("a derived habit is numeric: leave --kind out") }
            if unit != nil || !categories.isEmpty { throw ValidationError("a derived habit's unit is its source's: leave --unit and --category out") }
            if noTarget { throw ValidationError("a derived habit needs its goal: --no-target does not apply") }
        }
    }

    /// The rules of a new habit's options (an existing one's are the edit's).
    func validateNew(_ kind: HabitDefinition.ValueKind) throws {
        if kind == .categorical, categories.isEmpty { throw ValidationError("a categorical habit needs --category C (one or more)") }
        if kind != .categorical, !categories.isEmpty { throw ValidationError("--category is for categorical habits") }
        if kind != .numeric, unit != nil { throw ValidationError("--unit is for numeric habits") }
        if target == nil, per != nil || atMost || atLeast { throw ValidationError("--per, --at-most and --at-least go with --target N") }
        if noTarget { throw ValidationError("--no-target changes an existing habit; '\(name)' is not defined") }
    }

    func run() async throws {
        let store = try await options.database.open()
        let derivation = try derivation()
        if let existing = try await store.definition(.habit, name: name), case .habit(let habit) = existing.body {
            if habit.derivation != nil || derivation != nil { return try await redefine(existing, habit, derivation, store: store) }
            return try await change(existing, habit, store: store)
        }
        if let derivation {
            guard let target else { throw ValidationError("a derived habit needs its goal: --target N [--per day|week] [--at-most]") }
            let goal = HabitTarget(amount: target, period: per.flatMap(HabitTarget.Period.init(rawValue:)) ?? .day, direction: atMost ? .atMost : .atLeast)
            return try await options.define(name, .habit(HabitDefinition(valueKind: .numeric, unit: derivation.unit, target: goal,
                                                                         derivation: derivation)), store: store)
        }
        guard let valueKind else { throw ValidationError("'\(name)' is a new habit: give --kind numeric, categorical or yes-no") }
        try validateNew(valueKind)
        let goal = target.map {
            HabitTarget(amount: $0, period: per.flatMap(HabitTarget.Period.init(rawValue:)) ?? .day, direction: atMost ? .atMost : .atLeast)
        }
        try await options.define(name, .habit(HabitDefinition(valueKind: valueKind, unit: unit, categories: categories, target: goal)),
                                 store: store)
    }

    /// A derived habit defined again, or a habit turned derived: a new version with the source
    /// (and its conditions) given or kept, and the goal's parts given or kept. A logged habit
    /// does not turn into a derived one (its entries would stop counting).
    func redefine(_ existing: Definition, _ habit: HabitDefinition, _ derivation: HabitDerivation?, store: HealthStore) async throws {
        guard let kept = derivation ?? habit.derivation else { return }
        guard habit.derivation != nil else {
            throw RuntimeFailure("'\(existing.name)' is a habit you log: a derived habit needs a name of its own (its entries would stop counting)")
        }
        if noTarget { throw ValidationError("a derived habit needs its goal: --no-target does not apply") }
        var goal = habit.target ?? HabitTarget(amount: target ?? 1)
        if let target { goal.amount = target }
        if let period = per.flatMap(HabitTarget.Period.init(rawValue:)) { goal.period = period }
        if atMost { goal.direction = .atMost } else if atLeast { goal.direction = .atLeast }
        let body = HabitDefinition(valueKind: .numeric, unit: kept.unit, target: goal, derivation: kept)
        if body == habit { return try await options.print(existing, unchanged: true, store: store) }
        try await options.define(existing.name, .habit(body), store: store)
    }

    /// A habit defined again: an edit of its definition (a new version), what is given replaced.
    func change(_ existing: Definition, _ habit: HabitDefinition, store: HealthStore) async throws {
        if let valueKind, valueKind != habit.valueKind {
            throw RuntimeFailure("'\(existing.name)' is a \(habit.valueKind.rawValue) habit: its kind cannot change (its entries would "
                + "change meaning); delete it (`healthgate delete \(existing.id)`) and define it again")
        }
        if habit.valueKind != .numeric, unit != nil { throw ValidationError("--unit is for numeric habits") }
        let changes = RecordChanges(
            unit: unit, targetAmount: target, targetPeriod: per.flatMap(HabitTarget.Period.init(rawValue:)),
            targetDirection: atMost ? .atMost : atLeast ? .atLeast : nil, removeTarget: noTarget,
            categories: categories.isEmpty ? nil : categories)
        var stored = existing
        if changes != RecordChanges() {
            do {
                guard case .definition(let edited) = try await store.edit(id: existing.id.description, changes: changes) else { return }
                stored = edited
            } catch let error as EditError {
                throw RuntimeFailure(error.description)
            }
        }
        try await options.print(stored, unchanged: changes == RecordChanges(), store: store)
    }
}

struct DefineTrigger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "trigger", abstract: "A vaping trigger of your own (added to the defaults).")
    @OptionGroup var options: DefineOptions
    @Argument(help: "The trigger.") var name: String
    func run() async throws {
        if VapingTriggers.defaults.contains(Definition.key(name)) { throw RuntimeFailure("'\(name)' is a default trigger already") }
        try await options.define(name, .trigger)
    }
}

struct DefineMeal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "meal", abstract: "A saved meal: `log meal NAME` uses its energy.")
    @OptionGroup var options: DefineOptions
    @Argument(help: "The meal's name.") var name: String
    @Option(help: "Its energy in kcal (0 to 10,000); without it, the sum of the ingredients.") var kcal: Double?
    @Option(name: .customLong("ingredient"), help: ArgumentHelp("An ingredient and its energy (repeat for each).", valueName: "NAME=KCAL"))
    var ingredients: [String] = []

    func run() async throws {
        let parsed = try ingredients.map(Self.ingredient)
        try await options.define(name, .meal(SavedMeal(kcal: kcal ?? parsed.reduce(0) { $0 + $1.kcal }, ingredients: parsed)))
    }

    func validate() throws {
        guard kcal != nil || !ingredients.isEmpty else { throw ValidationError("give --kcal N, or the ingredients (--ingredient NAME=KCAL)") }
        for text in ingredients { _ = try Self.ingredient(text) }
    }

    /// `oats=150` as an ingredient.
    static func ingredient(_ text: String) throws -> SavedMeal.Ingredient {
        let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, !parts[0].isEmpty, let kcal = Double(parts[1]), kcal.isFinite else {
            throw ValidationError("--ingredient '\(text)' is not NAME=KCAL (oats=150)")
        }
        return SavedMeal.Ingredient(name: parts[0], kcal: kcal)
    }
}

struct DefineProfile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile", abstract: "Your body profile: the weight energy estimates use, and a goal weight.",
        discussion: """
            The goal weight is drawn on the dashboard's body page, which tells when the weight's \
            trend reaches it at its current rate. Either option keeps the other's value.
            """)
    @OptionGroup var options: DefineOptions
    @Option(help: "71.5kg, 160lb; a bare number in the unit of `define units --mass`.") var weight: String?
    @Option(help: "The weight you aim for, as --weight.") var goalWeight: String?
    @Flag(help: "Remove the goal weight.") var noGoalWeight = false

    func validate() throws {
        guard weight != nil || goalWeight != nil || noGoalWeight else { throw ValidationError("give --weight, --goal-weight or --no-goal-weight") }
        guard !(goalWeight != nil && noGoalWeight) else { throw ValidationError("--goal-weight and --no-goal-weight contradict each other") }
    }

    func run() async throws {
        let store = try await options.database.open()
        let builder = try await ManualEntries.builder(store: store)
        func kg(_ text: String) throws -> Double {
            do { return (try builder.massKg(text) * 1000).rounded() / 1000 } catch { throw RuntimeFailure(error.description) }
        }
        var profile: BodyProfile?
        if case .profile(let current)? = try await store.definition(.profile, name: "profile")?.body { profile = current }
        guard let weightKg = try weight.map(kg) ?? profile?.weightKg else {
            throw RuntimeFailure("no weight in the profile yet: give --weight too")
        }
        let goal = noGoalWeight ? nil : try goalWeight.map(kg) ?? profile?.goalWeightKg
        try await options.define("profile", .profile(BodyProfile(weightKg: weightKg, goalWeightKg: goal)), store: store)
    }
}

struct DefineUnits: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "units", abstract: "The units you type and read: volume ml|fl-oz, mass kg|lb.")
    @OptionGroup var options: DefineOptions
    @Option(help: "ml or fl-oz.") var volume: String?
    @Option(help: "kg or lb.") var mass: String?

    func validate() throws {
        guard volume != nil || mass != nil else { throw ValidationError("give --volume ml|fl-oz and/or --mass kg|lb") }
        if let volume, !["ml", "fl-oz", "fl_oz"].contains(volume) { throw ValidationError("--volume must be ml or fl-oz") }
        if let mass, Preferences.MassUnit(rawValue: mass) == nil { throw ValidationError("--mass must be kg or lb") }
    }

    func run() async throws {
        let store = try await options.database.open()
        var preferences = try await Output.preferences(store)
        if let volume { preferences.volume = volume == "ml" ? .ml : .flOz }
        if let mass, let unit = Preferences.MassUnit(rawValue: mass) { preferences.mass = unit }
        try await options.define("preferences", .preferences(preferences), store: store)
    }
}

struct DefineDayStart: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "day-start",
        abstract: "When your day starts (00:00 to 11:59; default midnight).",
        discussion: """
            Entries before it count for the day before: with 04:00, a drink at 01:30 is yesterday's. \
            today, stats, achievements and the dashboard use it, and it syncs with your other \
            installs (docs/days.md).
            """)
    @OptionGroup var options: DefineOptions
    @Argument(help: ArgumentHelp("The local time your day starts at: 04:00.", valueName: "HH:MM")) var time: String

    func validate() throws {
        guard DayBoundary.minutes(time) != nil else { throw ValidationError("the day start must be HH:MM from 00:00 to 11:59, not \(time)") }
    }

    func run() async throws {
        let store = try await options.database.open()
        var preferences = try await Output.preferences(store)
        preferences.dayStartMinutes = DayBoundary.minutes(time)!
        try await options.define("preferences", .preferences(preferences), store: store)
    }
}

struct DefineGoal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "goal", abstract: "A daily goal: `goal water 2l` sets the hydration habit's daily target.")
    @OptionGroup var options: DefineOptions
    @Argument(help: "water (the only shorthand so far).") var what: String
    @Argument(help: "The amount per day, e.g. 2l, 64oz.") var amount: String

    func validate() throws {
        guard what == "water" else { throw ValidationError("goal: only `water` is known (other habits: define habit NAME --target N)") }
    }

    func run() async throws {
        let store = try await options.database.open()
        let ml: Double
        do { ml = try await ManualEntries.builder(store: store).volumeMl(amount) } catch let error as EntryError {
            throw RuntimeFailure(error.description)
        }
        guard ml <= 20_000 else { throw RuntimeFailure("\(amount) a day is not a drinking goal (at most 20 l)") }
        var habit = HabitDefinition(valueKind: .numeric, unit: "ml")
        if case .habit(let current)? = try await store.definition(.habit, name: BuiltInHabit.hydration)?.body { habit = current }
        habit.target = HabitTarget(amount: (ml * 10).rounded() / 10, period: .day, direction: .atLeast)
        try await options.define(BuiltInHabit.hydration, .habit(habit), store: store)
    }
}

/// `healthgate definitions`: every definition, the default triggers marked.
struct DefinitionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "definitions", abstract: "List habits, triggers (the defaults marked), saved meals, the profile and units.")
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let store = try await database.open()
        let stored = try await store.definitions()
        let defaults = VapingTriggers.defaults.map {
            DefinitionListing(kind: "trigger", name: $0, version: nil, isDefault: true, details: "default")
        }
        let units = output.json ? Preferences() : try await Output.preferences(store)
        let own = stored.map { DefinitionListing($0, units: units) }
        let all = (own.filter { $0.kind == "habit" }) + defaults + own.filter { $0.kind != "habit" }
        if output.json { return try Output.printJSON(all) }
        Output.printTable(["KIND", "NAME", "VERSION", "DETAILS"], all.map { [$0.kind, $0.name, $0.version.map(String.init) ?? "-", $0.details] })
    }
}

/// One definition as `definitions` and `define` print it.
struct DefinitionListing: Encodable {
    var kind: String
    var name: String
    var version: Int?
    var isDefault: Bool
    var details: String

    enum CodingKeys: String, CodingKey {
        case kind, name, version, details
        case isDefault = "default"
    }

    init(kind: String, name: String, version: Int?, isDefault: Bool, details: String) {
        self.kind = kind
        self.name = name
        self.version = version
        self.isDefault = isDefault
        self.details = details
    }

    /// `units`: the preferred units the details show volumes and masses in (JSON: the stored ml and kg).
    init(_ definition: Definition, units: Preferences = Preferences()) {
        kind = definition.kind.rawValue
        name = definition.name
        version = definition.version
        isDefault = false
        switch definition.body {
        case .habit(let habit):
            var text = habit.derivation.map { "derived from \($0.text)" } ?? habit.valueKind.rawValue
            if let unit = habit.unit { text += " (\(unit))" }
            if !habit.categories.isEmpty { text += ": " + habit.categories.joined(separator: ", ") }
            if let target = habit.target {
                text += "; goal \(target.direction == .atLeast ? "at least" : "at most") "
                    + "\(Quantities.text(target.amount, unit: habit.unit, preferences: units)) per \(target.period.rawValue)"
            }
            details = text
        case .trigger: details = "own"
        case .meal(let meal):
            details = "\(LoggedEntryNumber.show(meal.kcal)) kcal" + (meal.ingredients.isEmpty ? "" : ": " + meal.ingredients.map { "\($0.name) \(LoggedEntryNumber.show($0.kcal))" }.joined(separator: ", "))
        case .profile(let profile):
            details = "weight \(Quantities.text(kilograms: profile.weightKg, in: units.mass))"
                + (profile.goalWeightKg.map { ", goal \(Quantities.text(kilograms: $0, in: units.mass))" } ?? "")
        case .preferences(let p): details = "volume \(p.volume.rawValue), mass \(p.mass.rawValue), day start \(DayBoundary.text(minutes: p.dayStartMinutes))"
        }
    }
}

enum LoggedEntryNumber {
    static func show(_ value: Double) -> String { NumberText.plain(value) }
}
