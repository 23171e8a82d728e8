import ArgumentParser
import Foundation
import HealthReports
import HealthStore
import LinuxAdapters

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Totals and averages per day, week, month or year.",
        discussion: "Periods follow the local time zone (TZ); weeks are ISO weeks (Monday first).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "day, week, month or year.")
    var period: String = "week"

    func validate() throws {
        guard StatsPeriod(rawValue: period) != nil else { throw ValidationError("--period must be day, week, month or year") }
    }

    func run() async throws {
        let stats = try await Reports.stats(database.open(), period: StatsPeriod(rawValue: period)!, range: try range.range())
        if output.json { return try Output.printJSON(stats) }
        guard !stats.isEmpty else { return print("No records.") }
        Output.printTable(["PERIOD", "WORKOUTS", "ACTIVE", "DIST km", "kcal", "AVG HR", "SLEEP avg", "STEPS", "WEIGHT kg"],
                          stats.map { s in
            [s.period, String(s.workouts), Output.duration(s.activeS), Output.number(s.distanceM, decimals: 1, scale: 0.001),
             Output.number(s.energyKcal, decimals: 0), Output.number(s.avgHR, decimals: 0),
             s.avgSleepS.map { Output.duration($0) } ?? "-", Output.number(s.steps, decimals: 0),
             Output.number(s.avgWeightKg, decimals: 1)]
        })
    }
}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export every entry as a spreadsheet-friendly file.",
        discussion: "CSV columns: \(Reports.csvHeader.joined(separator: ", ")). One row per workout, sleep session, measurement and habit event.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions

    @Option(help: "Output format (csv).")
    var format: String = "csv"

    @Option(name: [.short, .long], help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE"))
    var output: String?

    func validate() throws {
        guard format == "csv" else { throw ValidationError("--format: only csv is supported") }
    }

    func run() async throws {
        let store = try await database.open()
        var text = ""
        try await Reports.csv(store, range: try range.range()) { line in
            if output == nil { print(line) } else { text += line + "\r\n" }
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
