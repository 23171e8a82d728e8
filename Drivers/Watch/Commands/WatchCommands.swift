public import ArgumentParser
import CommandSupport
import DriverKit
import DriverRegistry
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import WatchDriver
import WatchLayout
import WatchMTP

/// `healthgate watch`: the watch family's commands, mounted by the executable.
public struct WatchRootCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Garmin watches plugged in over USB (MTP or mass storage): list them, fetch and import their new files.",
        discussion: """
            A watch attaches over MTP (most models since about 2020, read through libmtp) or as \
            USB mass storage (older models, a mounted GARMIN folder). Either way its GARMIN/Activity, \
            Monitor, Sleep, HRVStatus, Metrics and Weight folders are read, each FIT file is \
            fetched once (by the watch's serial, the file's path, size and time), kept under \
            watch/SERIAL/ next to the database, and imported. Nothing on the watch is changed or \
            deleted. On a desktop the file manager may hold an MTP watch: see the watch family's \
            README ("The desktop").
            """,
        subcommands: [WatchListCommand.self, WatchImportCommand.self])

    public init() {}
}

/// The options both commands share.
struct WatchOptions: ParsableArguments {
    @OptionGroup var database: DatabaseOptions
    /// The database file (`--db`, or the one in `--state-dir`).
    var db: String { database.db }
    @Option(name: .customLong("root"), help: ArgumentHelp("Where watches that are mass storage are mounted (repeatable; default /media and /run/media).",
                                                          valueName: "DIR"))
    var roots: [String] = []
    @Option(help: ArgumentHelp("Only files modified from this date or time on (local unless it says Z).", valueName: "DATE"))
    var since: String?

    func validate() throws {
        if let since, CommandDates.localDate(since) == nil {
            throw ValidationError("--since '\(since)' is not a date (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)")
        }
        if let root = roots.first(where: { !$0.hasPrefix("/") }) { throw ValidationError("--root '\(root)' must be an absolute folder") }
    }

    var folder: String {
        let parent = (db as NSString).deletingLastPathComponent
        return (parent.isEmpty ? "." : parent) + "/watch"
    }

    func importerConfiguration() -> WatchImporter.Configuration {
        WatchImporter.Configuration(folder: folder, since: since.flatMap { CommandDates.localDate($0) })
    }

    /// The attached watches, opened (MTP sessions), and the ones that could not be opened.
    func attached(serial: String? = nil) async -> (connections: [any WatchConnection], problems: [String]) {
        var connections: [any WatchConnection] = await WatchDiscovery.mounted(roots: roots.isEmpty ? ["/media", "/run/media"] : roots)
        var problems: [String] = []
        switch await WatchDiscovery.mtpDevices() {
        case .success(let devices):
            for raw in devices {
                do { connections.append(try await MTPWatchConnection.open(raw)) } catch { problems.append("\(error)") }
            }
        case .failure(let error):
            problems.append("MTP: \(error)")
        }
        if let serial {
            for connection in connections where connection.watch.serial != serial { await connection.close() }
            connections = connections.filter { $0.watch.serial == serial }
        }
        return (connections, problems)
    }
}

/// A sink for commands that store nothing and know no checkpoints (no database yet).
private struct EmptySink: RecordSink {
    func emit(_ batch: [HealthRecord]) async throws {}
    func emit(_ batch: LiveBatch) async throws {}
}

struct WatchListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Show the watches plugged in, how they attach, and what `watch import` would fetch.",
        discussion: "Reads the watches' folder listings only; nothing is copied or stored.")

    @OptionGroup var options: WatchOptions
    @OptionGroup var output: OutputOptions

    struct Listed: Encodable {
        var watch: AttachedWatch
        var filesOnWatch: Int
        var toFetch: [String]
        var alreadyFetched: Int
        var stillWriting: [String]
        var outOfRange: Int
        var refused: [String]
        var error: String?

        enum CodingKeys: String, CodingKey {
            case watch, filesOnWatch = "files_on_watch", toFetch = "to_fetch", alreadyFetched = "already_fetched", stillWriting = "still_writing",
                 outOfRange = "out_of_range", refused, error
        }
    }

    struct Listing: Encodable {
        var watches: [Listed]
        var problems: [String]
    }

    func run() async throws {
        let (connections, problems) = await options.attached()
        let store: HealthStore? = try? await options.database.openIfExists()
        let importer = WatchImporter(configuration: options.importerConfiguration())
        var listed: [Listed] = []
        for connection in connections {
            var entry = Listed(watch: connection.watch, filesOnWatch: 0, toFetch: [], alreadyFetched: 0, stillWriting: [], outOfRange: 0, refused: [])
            do {
                let plan = if let store { try await importer.plan(connection, sink: StoreSink(store: store)) } else {
                    try await importer.plan(connection, sink: EmptySink())
                }
                entry.filesOnWatch = plan.files.count
                for (file, _, decision) in plan.files {
                    switch decision {
                    case .fetch: entry.toFetch.append(file.path)
                    case .alreadyFetched: entry.alreadyFetched += 1
                    case .stillWriting: entry.stillWriting.append(file.path)
                    case .outOfRange: entry.outOfRange += 1
                    case .refused(let reason): entry.refused.append(reason)
                    }
                }
            } catch {
                entry.error = "\(error)"
            }
            await connection.close()
            listed.append(entry)
        }
        if output.json { return try CommandOutput.printJSON(Listing(watches: listed, problems: problems)) }
        for problem in problems { CommandOutput.stderr("healthgate: \(DisplayText.safe(problem, limit: 500))\n") }
        guard !listed.isEmpty else {
            print("no watch plugged in" + (problems.isEmpty ? "" : " that could be read"))
            return
        }
        CommandOutput.printTable(["SERIAL", "WATCH", "ATTACHED", "WHERE", "FILES", "TO FETCH", "FETCHED BEFORE"], listed.map {
            [DisplayText.safe($0.watch.serial, limit: 64), DisplayText.safe($0.watch.name, limit: 60), $0.watch.attachment.rawValue,
             DisplayText.safe($0.watch.place, limit: 80), $0.error == nil ? "\($0.filesOnWatch)" : "-", "\($0.toFetch.count)", "\($0.alreadyFetched)"]
        })
        for entry in listed {
            if let error = entry.error { print("\(entry.watch.serial): \(DisplayText.safe(error, limit: 500))") }
            for path in entry.toFetch.prefix(20) { print("  \(entry.watch.serial) would fetch \(DisplayText.safe(path, limit: 200))") }
            if entry.toFetch.count > 20 { print("  ... and \(entry.toFetch.count - 20) more") }
            for reason in entry.refused { print("  \(entry.watch.serial) refuses \(DisplayText.safe(reason, limit: 300))") }
        }
    }
}

struct WatchImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Fetch the new FIT files of the watches plugged in (or of one, by serial) and import them.",
        discussion: """
            Each file not fetched before is copied to watch/SERIAL/ next to the database (a \
            temporary file renamed when whole) and imported with the mark that it was fetched, in \
            one transaction: an unplugged watch or a stopped import leaves nothing half-stored, \
            and the next run fetches what is missing. Exits 1 when a file failed, 2 when no watch \
            was found.
            """)

    @Argument(help: ArgumentHelp("Only the watch with this serial (see `watch list`).", valueName: "SERIAL"))
    var serial: String?
    @OptionGroup var options: WatchOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let (connections, problems) = await options.attached(serial: serial)
        for problem in problems where !output.json { CommandOutput.stderr("healthgate: \(DisplayText.safe(problem, limit: 500))\n") }
        guard !connections.isEmpty else {
            if output.json { try CommandOutput.printJSON(["problems": problems]) }
            CommandOutput.stderr("healthgate: " + (serial.map { "no watch with serial \(DisplayText.safe($0, limit: 64)) plugged in" } ?? "no watch plugged in") + "\n")
            throw ExitCode(2)
        }
        let store = try await options.database.open()
        var configuration = options.importerConfiguration()
        let quiet = output.json
        configuration.onEvent = { event in
            guard !quiet else { return }
            let line: String? = switch event {
            case .listed(let watch, let files, let toFetch): "\(watch.name) \(watch.serial) (\(watch.attachment.rawValue)): \(files) file(s) on the watch, \(toFetch) new"
            case .copying(let path, let size): "fetching \(path) (\(size) bytes)"
            case .progress: nil
            case .imported(let report): "\(report.path): \(report.status.rawValue)" + (report.records > 0 ? ", \(report.records) record(s)" : "")
                + (report.error.map { ": \($0)" } ?? "")
            case .fileFailed(let path, let reason): "\(path): \(reason)"
            case .refused(let path, let reason): "\(path): not fetched: \(reason)"
            case .stillWriting(let count): "\(count) file(s) still being written; looking again"
            }
            if let line { CommandOutput.stderr(DisplayText.safe(line, limit: 500) + "\n") }
        }
        let importer = WatchImporter(configuration: configuration)
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        var summaries: [WatchImporter.Summary] = []
        var failures: [String] = []
        for connection in connections {
            do { summaries.append(try await importer.run(connection, sink: StoreSink(store: store), files: pipeline)) } catch {
                failures.append("\(connection.watch.serial): \(error)")
            }
            await connection.close()
        }
        if output.json {
            struct Output: Encodable { var watches: [WatchImporter.Summary]; var failed: [String]; var problems: [String] }
            try CommandOutput.printJSON(Output(watches: summaries, failed: failures, problems: problems))
        } else {
            for summary in summaries {
                print("\(summary.watch.name) \(summary.watch.serial): \(summary.filesOnWatch) file(s), \(summary.fetched.count) fetched"
                      + (summary.bytes > 0 ? String(format: " (%llu bytes in %.1f s)", summary.bytes, summary.copySeconds) : "")
                      + ", \(summary.imported.filter { $0.status == .imported }.count) imported, \(summary.records) record(s)"
                      + (summary.alreadyFetched > 0 ? ", \(summary.alreadyFetched) fetched before" : "")
                      + (summary.stillWriting.isEmpty ? "" : ", \(summary.stillWriting.count) still being written")
                      + (summary.failed.isEmpty ? "" : ", \(summary.failed.count) failed: " + summary.failed.joined(separator: "; ")))
            }
            for failure in failures { CommandOutput.stderr("healthgate: \(DisplayText.safe(failure, limit: 500))\n") }
        }
        if !failures.isEmpty || summaries.contains(where: { !$0.failed.isEmpty }) { throw ExitCode(1) }
    }
}
