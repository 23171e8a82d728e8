import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthReports
import HealthStore

/// `healthgate habit ...`: about one habit.
struct HabitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "habit", abstract: "About one habit: what made a derived habit's value on a day.",
        subcommands: [HabitExplainCommand.self])
}

/// `healthgate habit explain NAME --day DATE`: every workout, night, run of minutes or quarter
/// hour of steps that counted toward a derived habit on a day, with its source.
struct HabitExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain", abstract: "What counted toward a derived habit on one day, and from which device.",
        discussion: """
            Lists the day's contributions oldest first: what it was, its time, the sources (driver and device) \
            and what it added; then the day's value against the goal. Where two devices recorded the same \
            minutes, the minute is listed once with both (docs/derived-habits.md). --json: {"habit", "day", \
            "value", "unit", "target", "contributions": [{"start", "end", "what", "sources", "amount"}]}.
            """)
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The derived habit's name.") var name: String
    @Option(help: ArgumentHelp("The local day (its day start and zone as every view counts them).", valueName: "YYYY-MM-DD")) var day: String

    func validate() throws {
        guard LocalDay(day) != nil else { throw ValidationError("--day must be a date YYYY-MM-DD (not '\(day)')") }
    }

    struct Explained: Encodable {
        struct Part: Encodable {
            var start: String, end: String, what: String, sources: [String], amount: Double
        }
        var habit: String, day: String, value: Double, unit: String, target: Double?, direction: String?, period: String?
        var contributions: [Part]
    }

    func run() async throws {
        let store = try await database.open()
        guard let definition = try await store.definition(.habit, name: name), case .habit(let habit) = definition.body else {
            throw RuntimeFailure("no habit '\(name)' (`healthgate definitions` lists them)")
        }
        guard let derivation = habit.derivation else {
            throw RuntimeFailure("'\(definition.name)' is a habit you log, not a derived one: its value is its entries")
        }
        let boundary = try await Output.days(store)
        let local = LocalDay(day)!
        let (value, parts) = try await Reports.explain(store, derivation, boundary: boundary, day: local)
        let explained = Explained(
            habit: definition.name, day: day, value: value ?? 0, unit: derivation.unit, target: habit.target?.amount,
            direction: habit.target?.direction.rawValue, period: habit.target?.period.rawValue,
            contributions: parts.map { .init(start: ISO8601.string($0.start), end: ISO8601.string($0.end), what: $0.what, sources: $0.sources,
                                             amount: ($0.amount * 1000).rounded() / 1000) })
        if output.json { return try Output.printJSON(explained) }
        print("\(definition.name) on \(day): \(derivation.text)")
        if parts.isEmpty { print("  nothing counted") }
        let clock = DateFormatter()
        clock.dateFormat = "HH:mm"
        clock.timeZone = boundary.timeZone
        for p in parts {
            let when = p.start == p.end ? clock.string(from: p.start) : "\(clock.string(from: p.start))-\(clock.string(from: p.end))"
            print("  \(when)  \(p.what)  +\(NumberText.plain((p.amount * 10).rounded() / 10))  [\(p.sources.joined(separator: ", "))]")
        }
        let total = NumberText.plain(((value ?? 0) * 10).rounded() / 10)
        var line = "  = \(total) \(derivation.unit)"
        if let target = habit.target {
            let met = target.period == .day ? (target.isMet(by: value ?? 0) ? ", met" : ", not met") : " (the goal is weekly)"
            line += " against \(target.direction == .atMost ? "at most" : "at least") \(NumberText.plain(target.amount))/\(target.period.rawValue)\(met)"
        }
        if derivation.source == .measurement { line += " (the mean of the day's readings)" }
        print(line)
    }
}
