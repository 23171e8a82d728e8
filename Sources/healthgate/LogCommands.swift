import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Entries

/// `healthgate log ...`: entries typed by hand, built by the entry builder (Sources/Entries) and taken in through the intake.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Log a drink, a vaping session, a habit, a meal, a workout, a night's sleep or a weight.",
        discussion: """
            Prints what it stored: the id, what, the value with its unit and the local time (--json: \
            the shape in docs/cli.md). Bad input (an unknown habit, a value of the wrong kind, a \
            50-litre drink, a time in the future) stores nothing and exits 1 with the reason.

            --at TIME: ISO 8601 (2025-06-01T08:30, local unless it says Z or an offset), HH:MM \
            (today) or -2h / -90m (ago); default now.
            """,
        subcommands: [
            LogDrink.self, LogGlass.self, LogBottle.self, LogWater.self, LogVape.self, LogHabit.self, LogMeal.self,
            LogWorkout.self, LogSleep.self, LogWeight.self,
        ])
}

/// Options every `log` command takes.
struct LogOptions: ParsableArguments {
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    // Unconditional: `--at -2h` is a value, not an option.
    @Option(parsing: .unconditional, help: ArgumentHelp("When: ISO 8601, HH:MM (today) or -2h (ago); default now.", valueName: "TIME"))
    var at: String?

    /// Builds and stores `request` (with `--at`), then prints what was stored.
    func log(_ request: EntryRequest) async throws {
        var request = request
        request.at = at
        let store = try await database.open()
        let logged: [LoggedEntry]
        do {
            logged = try await ManualEntries.log(request, into: store)
        } catch let error as EntryError {
            throw RuntimeFailure(error.description)
        } catch {
            throw RuntimeFailure("cannot store the entry in \(database.db): \(error)")
        }
        if output.json { return try Output.printJSON(logged.count == 1 ? logged[0] : nil, or: logged) }
        let preferences = try await Output.preferences(store)
        for item in logged {
            print(item.line(in: preferences))
            for note in item.notes { print("  note: \(note)") }
        }
    }
}

extension Output {
    /// One object when there is one, else the array.
    static func printJSON<T: Encodable>(_ one: T?, or all: [T]) throws {
        if let one { try printJSON(one) } else { try printJSON(all) }
    }
}

struct LogDrink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drink", abstract: "A drink: 4 fl oz (118 ml).")
    @OptionGroup var options: LogOptions
    func run() async throws { try await options.log(EntryRequest(kind: .drink)) }
}

struct LogGlass: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "glass", abstract: "A glass: 8 fl oz (237 ml).")
    @OptionGroup var options: LogOptions
    func run() async throws { try await options.log(EntryRequest(kind: .glass)) }
}

struct LogBottle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bottle", abstract: "A bottle: 16 fl oz (473 ml).")
    @OptionGroup var options: LogOptions
    func run() async throws { try await options.log(EntryRequest(kind: .bottle)) }
}

struct LogWater: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "water", abstract: "Water (any drink) of a given volume.",
        discussion: "VOLUME: 330ml, 0.5l, 33cl, 12oz, 12floz or '12 fl oz' (US fluid ounces); a bare number is in the unit of `define units --volume` (ml by default). 1 ml to 5 l.")
    @OptionGroup var options: LogOptions
    @Argument(help: "The volume, e.g. 250ml.") var volume: String
    func run() async throws { try await options.log(EntryRequest(kind: .water, value: volume)) }
}

struct LogVape: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vape", abstract: "A vaping session, with its trigger and thoughts.",
        discussion: "The trigger is one of the defaults (`healthgate definitions` lists them) or one added with `healthgate define trigger NAME`.")
    @OptionGroup var options: LogOptions
    @Option(help: "What set it off (a known trigger).") var trigger: String?
    @Option(help: "What you were thinking.") var thoughts: String?
    @Flag(help: "The pod ran out in this session.") var podFinished = false
    func run() async throws {
        try await options.log(EntryRequest(kind: .vape, trigger: trigger, thoughts: thoughts, podFinished: podFinished))
    }
}

struct LogHabit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "habit", abstract: "A check-in of a habit defined with `healthgate define habit`.",
        discussion: """
            A numeric habit takes a number (`habit reading 30`), a categorical one a category (`habit mood calm`), a yes/no \
            habit --done. --skip marks a day the habit was set aside on purpose (ill, travelling): a daily streak passes \
            over it, neither broken nor extended, and the completion leaves it out.
            """)
    @OptionGroup var options: LogOptions
    @Argument(help: "The habit's name.") var name: String
    @Argument(help: "A number or a category.") var value: String?
    @Flag(help: "A yes/no habit done.") var done = false
    @Flag(help: "Skipped on purpose: the streak goes on across the day.") var skip = false
    func run() async throws {
        try await options.log(EntryRequest(kind: .habit, name: name, value: value, done: done ? true : nil, skip: skip ? true : nil))
    }
}

struct LogMeal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meal", abstract: "A meal: a saved one by name, or any with --kcal.",
        discussion: "A meal saved with `healthgate define meal` uses its energy unless --kcal overrides it.")
    @OptionGroup var options: LogOptions
    @Argument(help: "The meal's name.") var name: String
    @Option(help: "Its energy in kcal (0 to 10,000).") var kcal: Double?
    func run() async throws { try await options.log(EntryRequest(kind: .meal, name: name, kcal: kcal)) }
}

struct LogWorkout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workout", abstract: "A workout without a device.",
        discussion: """
            --at is when it started (default: it ends now). Without --kcal the energy is estimated: \
            the sport's MET (2011 Compendium of Physical Activities) x the body weight of `define \
            profile` (70 kg if none) x hours, marked estimated.
            """)
    @OptionGroup var options: LogOptions
    @Argument(help: "The sport: running, cycling, swimming, walking, hiking, rowing, paddling, skiing, strength ...") var sport: String
    @Option(help: ArgumentHelp("How long: \(DurationArgument.forms).", valueName: "DURATION")) var duration: String
    @Option(help: ArgumentHelp("How far: 5km, 3mi, 800m.", valueName: "DISTANCE")) var distance: String?
    @Option(help: "Its energy in kcal (instead of the estimate).") var kcal: Double?
    func run() async throws {
        try await options.log(EntryRequest(kind: .workout, name: sport, kcal: kcal, duration: duration, distance: distance))
    }
}

struct LogSleep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sleep", abstract: "A night's sleep: the night ending today (or on --at's day).")
    @OptionGroup var options: LogOptions
    @Option(help: ArgumentHelp("Bedtime.", valueName: "HH:MM")) var from: String
    @Option(help: ArgumentHelp("Wake-up time.", valueName: "HH:MM")) var to: String
    func run() async throws { try await options.log(EntryRequest(kind: .sleep, from: from, to: to)) }
}

struct LogWeight: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "weight", abstract: "A body weight: 71.5kg, 160lb; a bare number in the unit of `define units --mass`.")
    @OptionGroup var options: LogOptions
    @Argument(help: "The weight, e.g. 71.5kg.") var weight: String
    func run() async throws { try await options.log(EntryRequest(kind: .weight, value: weight)) }
}
