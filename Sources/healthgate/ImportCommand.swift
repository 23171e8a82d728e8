import ArgumentParser
import CommandSupport
import DriverKit
import DriverRegistry
import Foundation
import HealthGateDaemon
import HealthModel
import HealthPipeline
import HealthStore
import SyncProtocol

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import exported files, or folders of them (e.g. a watch's backlog).",
        discussion: """
            The file importers (`healthgate drivers`): \(Registry.catalog.fileImporters.map(\.id).joined(separator: ", ")). Folders are walked recursively; files no driver reads are skipped there. Each file is \
            one transaction: it lands whole (or, when damaged part-way, with what precedes the \
            damage, reported as partial) or not at all. Files are remembered by content hash, so \
            importing them again adds nothing. Exit status 1 when any file failed.
            """
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Decode, validate and show each file's first records as they would be stored; write nothing (no records, no ledger).")
    var dryRun = false

    @Option(help: ArgumentHelp("A mapping for CSV files no other importer recognizes (TOML: record, time_column, date_format, time_zone, value_column, unit or unit_column, name or name_column, note_column, delimiter; see `healthgate drivers csv`).",
                               valueName: "FILE"))
    var mapping: String?

    @Option(help: ArgumentHelp("Body weight for estimated energy when a file has none (default: the body profile's, else 70).",
                               valueName: "KG"))
    var bodyWeight: Double?

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "PATH"))
    var paths: [String]

    func validate() throws {
        if let bodyWeight, !(bodyWeight > 0 && bodyWeight < 500) { throw ValidationError("--body-weight must be in kg, 1-500") }
    }

    func run() async throws {
        let importers = try Self.importers(mapping: mapping)
        let store = dryRun ? try await database.openIfExists() : try await database.open()
        let pipeline = ImportPipeline(store: store, importers: importers, options: ImportOptions(range: try range.range(), dryRun: dryRun,
                                                                          bodyWeightKg: bodyWeight))
        let weight: BodyWeight
        do { weight = try await pipeline.bodyWeight() } catch { throw RuntimeFailure("cannot read the body profile: \(error)") }
        let bar = SharedProgressBar(enabled: !output.json && Output.stderrIsTerminal)
        var reports: [FileReport] = []
        let totals: ImportTotals
        do {
            totals = try await pipeline.run(paths, progress: { index, total, path, done, all in
                bar.file(index: index, total: total, path: path, bytesDone: done, bytesTotal: all)
            }, within: { bytesRead, records in
                bar.within(bytesRead: bytesRead, records: records)
            }, done: { report in
                reports.append(report)
                guard !output.json else { return }
                bar.finish()
                print(Self.line(report))
                for record in report.preview { print("                 " + DisplayText.safe(Self.preview(record))) }
            })
        } catch {
            bar.finish()
            throw RuntimeFailure("\(error)")
        }
        bar.finish()
        if output.json {
            struct Preview: Encodable { var path: String; var records: [WireRecord] }
            struct Result: Encodable {
                var files: [FileReport]; var totals: ImportTotals; var dry_run: Bool; var body_weight: BodyWeight; var preview: [Preview]?
            }
            try Output.printJSON(Result(files: reports, totals: totals, dry_run: dryRun, body_weight: weight,
                                        preview: dryRun ? reports.filter { !$0.preview.isEmpty }.map { Preview(path: $0.path, records: $0.preview.map { WireRecord($0) }) } : nil))
        } else {
            var parts = ["\(totals.files) files", "\(totals.imported) \(dryRun ? "would import" : "imported")"]
            if totals.partial > 0 { parts.append("\(totals.partial) partial") }
            parts.append("\(totals.alreadyImported) already imported")
            parts.append("\(totals.failed) failed")
            if totals.skipped > 0 { parts.append("\(totals.skipped) skipped") }
            print("\(parts.joined(separator: ", ")); \(totals.records) records \(dryRun ? "would be " : "")stored")
            print("energy estimates (workouts without energy) use \(weight.text)")
        }
        if totals.failed > 0 { throw ExitCode(1) }
    }

    /// The file importers, the generic CSV one with the mapping in `path` (a TOML file of the
    /// `[importers.csv]` keys).
    static func importers(mapping path: String?) throws -> [any FileImporter] {
        guard let path else { return Registry.fileImporters() }
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ValidationError("--mapping \(path): cannot read: \((error as NSError).localizedDescription)")
        }
        do {
            return try Registry.fileImporters(settings: ["csv": try TOMLConfig.parse(text)])
        } catch {
            var located = error
            located.file = path
            throw ValidationError("--mapping \(located)")
        }
    }

    /// One record of a dry run's preview, on one line.
    static func preview(_ record: HealthRecord) -> String {
        func number(_ value: Double?) -> String { value.map { NumberText.plain($0) } ?? "-" }
        switch record {
        case .habit(let h):
            var parts = ["habit", ISO8601.string(h.time), h.habit, number(h.value) + (h.unit.map { " \($0)" } ?? "")]
            if let category = h.category { parts.append("category \(category)") }
            if let label = h.label { parts.append("label \(label)") }
            if let note = h.note { parts.append("note \"\(note)\"") }
            return parts.joined(separator: "  ")
        case .measurement(let m):
            return ["measurement", ISO8601.string(m.time), m.kind.rawValue, "\(number(m.value)) \(m.unit)"].joined(separator: "  ")
        case .definition(let d):
            var text = "definition  \(d.kind.rawValue)  \(d.name)"
            if case .habit(let habit) = d.body {
                text += "  \(habit.valueKind.rawValue)" + (habit.unit.map { " (\($0))" } ?? "")
                if let target = habit.target {
                    text += "  goal \(target.direction == .atLeast ? "at least" : "at most") \(number(target.amount)) per \(target.period.rawValue)"
                }
            }
            return text
        case .workout(let w):
            return "workout  \(ISO8601.string(w.start))  \(w.sport)  \(NumberText.plain(w.elapsedS)) s"
        case .sleep(let s):
            return "sleep  \(ISO8601.string(s.start)) - \(ISO8601.string(s.end))"
        }
    }

    static func line(_ r: FileReport) -> String {
        var details: [String] = []
        if r.records > 0 || r.status == .imported || r.status == .wouldImport || r.status == .partial {
            details.append("\(r.records) records")
        }
        if r.unchanged > 0 { details.append("\(r.unchanged) already stored") }
        if r.outOfRange > 0 { details.append("\(r.outOfRange) outside the date range") }
        let counts = details.isEmpty ? "" : " (" + details.joined(separator: ", ") + ")"
        let status: String = switch r.status {
        case .imported: "imported"
        case .partial: "partial"
        case .alreadyImported: "already imported"
        case .failed: "FAILED"
        case .wouldImport: "would import"
        case .skipped: "skipped"
        }
        // A file's name and what its content made the decoder say are outside text.
        var text = "\(status.padding(toLength: 16, withPad: " ", startingAt: 0)) \(DisplayText.safe(r.path))\(counts)"
        if let error = r.error { text += "\n                 \(DisplayText.safe(error))" }
        for reason in r.rejected.prefix(5) { text += "\n                 rejected: \(DisplayText.safe(reason))" }
        if r.rejectedCount > 5 { text += "\n                 ... and \(r.rejectedCount - 5) more rejected" }
        return text
    }
}
