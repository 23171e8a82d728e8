import ArgumentParser
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import ManualDriver

/// `healthgate define ...`: habits, triggers, saved meals, the body profile, units, goals. A
/// re-define is a new version of the same definition.
struct DefineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "define", abstract: "Define a habit, a vaping trigger, a saved meal, your body profile, units or a goal.",
        discussion: "Defining again what is defined stores a new version of it (synced like any record). `healthgate definitions` lists them.",
        subcommands: [DefineHabit.self, DefineTrigger.self, DefineMeal.self, DefineProfile.self, DefineUnits.self, DefineGoal.self])
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
        let listed = DefinitionListing(stored)
        if output.json { return try Output.printJSON(listed) }
        print("defined \(listed.kind) \(listed.name) (version \(stored.version)): \(listed.details)")
    }
}

struct DefineHabit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "habit", abstract: "A habit: numeric (a number in a unit), categorical (one of its categories) or yes-no.",
        discussion: "A goal: --target N --per day|week (at least N; --at-most: at most N). Numeric habits count the sum of their values, the others the number of entries.")
    @OptionGroup var options: DefineOptions
    @Argument(help: "The habit's name.") var name: String
    @Option(help: "numeric, categorical or yes-no.") var kind: String
    @Option(help: "The unit of a numeric habit's values (pages, min ...).") var unit: String?
    @Option(name: .customLong("category"), help: "A category of a categorical habit (repeat the option for each).") var categories: [String] = []
    @Option(help: "The goal per period.") var target: Double?
    @Option(help: "day or week (with --target; default day).") var per: String?
    @Flag(help: "The goal is a most (e.g. at most 2 coffees), not a least.") var atMost = false

    func validate() throws {
        guard ["numeric", "categorical", "yes-no", "yes_no", "yesno"].contains(kind) else {
            throw ValidationError("--kind must be numeric, categorical or yes-no (not '\(kind)')")
        }
        if kind == "categorical", categories.isEmpty { throw ValidationError("a categorical habit needs --category C (one or more)") }
        if kind != "categorical", !categories.isEmpty { throw ValidationError("--category is for categorical habits") }
        if kind != "numeric", unit != nil { throw ValidationError("--unit is for numeric habits") }
        if let per, HabitTarget.Period(rawValue: per) == nil { throw ValidationError("--per must be day or week (not '\(per)')") }
        if target == nil, per != nil || atMost { throw ValidationError("--per and --at-most go with --target N") }
        if let target, !(target.isFinite && target > 0) { throw ValidationError("--target must be more than zero") }
    }

    func run() async throws {
        let valueKind: HabitDefinition.ValueKind = kind == "numeric" ? .numeric : kind == "categorical" ? .categorical : .yesNo
        let goal = target.map {
            HabitTarget(amount: $0, period: per.flatMap(HabitTarget.Period.init(rawValue:)) ?? .day, direction: atMost ? .atMost : .atLeast)
        }
        try await options.define(name, .habit(HabitDefinition(valueKind: valueKind, unit: unit, categories: categories, target: goal)))
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
    @Option(help: "Its energy in kcal (0 to 10,000).") var kcal: Double
    @Option(name: .customLong("ingredient"), help: ArgumentHelp("An ingredient and its energy (repeat for each).", valueName: "NAME=KCAL"))
    var ingredients: [String] = []

    func run() async throws {
        let parsed = try ingredients.map { text -> SavedMeal.Ingredient in
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let kcal = Double(parts[1]) else {
                throw ValidationError("--ingredient '\(text)' is not NAME=KCAL")
            }
            return SavedMeal.Ingredient(name: parts[0], kcal: kcal)
        }
        try await options.define(name, .meal(SavedMeal(kcal: kcal, ingredients: parsed)))
    }
}

struct DefineProfile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile", abstract: "Your body profile: the weight energy estimates use.")
    @OptionGroup var options: DefineOptions
    @Option(help: "71.5kg, 160lb; a bare number in the unit of `define units --mass`.") var weight: String
    func run() async throws {
        let store = try await options.database.open()
        let kg: Double
        do { kg = try await ManualEntries.builder(store: store).massKg(weight) } catch let error as EntryError {
            throw RuntimeFailure(error.description)
        }
        try await options.define("profile", .profile(BodyProfile(weightKg: (kg * 1000).rounded() / 1000)), store: store)
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
        var preferences = Preferences()
        if case .preferences(let current)? = try await store.definition(.preferences, name: "preferences")?.body { preferences = current }
        if let volume { preferences.volume = volume == "ml" ? .ml : .flOz }
        if let mass, let unit = Preferences.MassUnit(rawValue: mass) { preferences.mass = unit }
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
        let stored = try await database.open().definitions()
        let defaults = VapingTriggers.defaults.map {
            DefinitionListing(kind: "trigger", name: $0, version: nil, isDefault: true, details: "default")
        }
        let own = stored.map(DefinitionListing.init)
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

    init(_ definition: Definition) {
        kind = definition.kind.rawValue
        name = definition.name
        version = definition.version
        isDefault = false
        switch definition.body {
        case .habit(let habit):
            var text = habit.valueKind.rawValue
            if let unit = habit.unit { text += " (\(unit))" }
            if !habit.categories.isEmpty { text += ": " + habit.categories.joined(separator: ", ") }
            if let target = habit.target {
                text += "; goal \(target.direction == .atLeast ? "at least" : "at most") \(LoggedEntryNumber.show(target.amount))\(habit.unit.map { " \($0)" } ?? "") per \(target.period.rawValue)"
            }
            details = text
        case .trigger: details = "own"
        case .meal(let meal):
            details = "\(LoggedEntryNumber.show(meal.kcal)) kcal" + (meal.ingredients.isEmpty ? "" : ": " + meal.ingredients.map { "\($0.name) \(LoggedEntryNumber.show($0.kcal))" }.joined(separator: ", "))
        case .profile(let profile): details = "weight \(LoggedEntryNumber.show(profile.weightKg)) kg"
        case .preferences(let p): details = "volume \(p.volume.rawValue), mass \(p.mass.rawValue)"
        }
    }
}

enum LoggedEntryNumber {
    static func show(_ value: Double) -> String { NumberText.plain(value) }
}
