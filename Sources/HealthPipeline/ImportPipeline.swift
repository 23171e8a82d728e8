import Crypto
public import DriverKit
import ForeignSQLite
import Foundation
public import HealthModel
public import HealthStore
import Entries

/// Options of one `healthgate import` run.
public struct ImportOptions: Sendable {
    /// Only records starting within this range are stored (Zot: import a chosen date range).
    public var range: DateRange
    /// Decode and report, write nothing.
    public var dryRun: Bool
    /// Body weight for estimated energy: nil for the body profile's (or 70 kg), see ``BodyWeight``.
    public var bodyWeightKg: Double?
    /// A file whose records weigh more than this is committed in several transactions
    /// (``ImportLimits/transactionWeight``; smaller in tests).
    public var transactionWeight: Int
    /// A dry run: how many of each file's first records its report shows (``FileReport/preview``).
    public var previewCount: Int

    public init(range: DateRange = DateRange(), dryRun: Bool = false, bodyWeightKg: Double? = nil,
                transactionWeight: Int = ImportLimits.transactionWeight, previewCount: Int = 5) {
        self.range = range
        self.dryRun = dryRun
        self.previewCount = previewCount
        self.bodyWeightKg = bodyWeightKg
        self.transactionWeight = transactionWeight
    }
}

/// Totals of one run.
public struct ImportTotals: Sendable, Encodable, Equatable {
    public var files = 0
    public var imported = 0
    public var partial = 0
    public var alreadyImported = 0
    public var failed = 0
    public var skipped = 0
    public var records = 0
    public var bytes = 0

    enum CodingKeys: String, CodingKey {
        case files, imported, partial, alreadyImported = "already_imported", failed, skipped, records, bytes
    }

    mutating func add(_ report: FileReport, bytes size: Int) {
        files += 1
        bytes += size
        records += report.records
        switch report.status {
        case .imported, .wouldImport: imported += 1
        case .partial: partial += 1
        case .alreadyImported: alreadyImported += 1
        case .failed: failed += 1
        case .skipped: skipped += 1
        }
    }
}

/// Runs files through drivers, the normalizer and the store: the import half of the data flow.
///
/// Each file is hashed first; content the ledger already holds is not decoded again. A file's
/// records, outbox rows and ledger entry are committed in one transaction, a large file's in
/// several (see DriverKit's ``FileImporter``).
public struct ImportPipeline: FileSink {
    public let store: HealthStore?
    /// The file importers, in the order they are asked whether they read a file.
    public let importers: [any FileImporter]
    public let options: ImportOptions

    /// `store` may be nil only for dry runs against no database. `importers`: the registry's
    /// (``DriverCatalog/makeFileImporters(settings:disabled:context:)``).
    public init(store: HealthStore?, importers: [any FileImporter], options: ImportOptions = ImportOptions()) {
        self.store = store
        self.importers = importers
        self.options = options
    }

    /// The files under `paths`: files as given, folders walked recursively (hidden entries
    /// skipped), in a stable order. Throws for a path that does not exist.
    public static func discover(_ paths: [String]) throws -> [(path: String, explicit: Bool)] {
        var found: [(String, Bool)] = []
        let fm = FileManager.default
        for path in paths {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ImportError.notFound(path)
            }
            guard isDirectory.boolValue else {
                found.append((path, true))
                continue
            }
            var inFolder: [String] = []
            guard let walker = fm.enumerator(atPath: path) else { throw ImportError.unreadable(path) }
            while let relative = walker.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                if name.hasPrefix(".") {
                    walker.skipDescendants()
                    continue
                }
                let full = (path as NSString).appendingPathComponent(relative)
                var childIsDirectory: ObjCBool = false
                if fm.fileExists(atPath: full, isDirectory: &childIsDirectory), !childIsDirectory.boolValue {
                    inFolder.append(full)
                }
            }
            found.append(contentsOf: inFolder.sorted().map { ($0, false) })
        }
        return found
    }

    /// How this run's records enter the store (``Intake``): its date range and body weight.
    public var intake: Intake { Intake(store: store, range: options.range, bodyWeightKg: options.bodyWeightKg) }

    /// The body weight for energy estimates now: the option, the profile stored now, or 70 kg.
    /// Read for each file, so that a daemon's imports follow a profile changed while it runs.
    public func bodyWeight() async throws -> BodyWeight { try await intake.bodyWeight() }

    /// The importer for a file, or nil.
    public func importer(for probe: FileProbe) -> (any FileImporter)? {
        importers.first { type(of: $0).canImport(probe) }
    }

    /// Why no importer takes a file: for an SQLite database, whose databases are read and by
    /// which tables, with the tables it has.
    static func unread(_ probe: FileProbe) -> String {
        guard probe.isSQLite else { return "no driver reads this kind of file" }
        guard let tables = probe.sqliteTables else { return "an SQLite file that cannot be read as a database" }
        let names = tables.sorted()
        let shown = names.isEmpty ? "none" : names.prefix(8).joined(separator: ", ") + (names.count > 8 ? ", ..." : "")
        return "an SQLite database no driver reads (Gadgetbridge's has a DEVICE table, a Loop Habit Tracker backup "
            + "Habits and Repetitions; its tables: \(shown))"
    }

    /// Imports a file a driver found (``FileSink``): one the user named, as far as an unknown
    /// type goes (a failure).
    public func importFile(_ path: String, checkpoints: [CheckpointKey: String]) async -> FileReport {
        await importFile(path, explicit: true, checkpoints: checkpoints)
    }

    /// Imports one file. `explicit` says the user named it (so an unknown type is a failure
    /// rather than a skipped file in a folder). Never throws: every outcome is a report.
    ///
    /// The file is read twice, in chunks and off the cooperative pool: once for its content hash
    /// (content the ledger holds is not decoded again), once by its importer. A small file is
    /// committed in one transaction; a large one in parts, and an interrupted import of it resumes
    /// after the records its committed parts cover (see DriverKit's ``FileImporter``).
    ///
    /// `within` is told, after each batch the importer hands over, the bytes of the file read so
    /// far (by the importer, after the hash) and the records handed over so far.
    ///
    /// `checkpoints` are stored with the file's ledger entry, or on their own when the ledger
    /// holds the content already (``FileSink/importFile(_:checkpoints:)``).
    public func importFile(_ path: String, explicit: Bool, checkpoints: [CheckpointKey: String] = [:],
                           within: (@Sendable (_ bytesRead: Int, _ records: Int) -> Void)? = nil) async -> FileReport {
        var report = await importFile(path, explicit: explicit, lastCommit: checkpoints, within: within)
        // Content the ledger held already: its records are stored, so the checkpoints hold now.
        if report.status == .alreadyImported, !checkpoints.isEmpty, !options.dryRun, let store {
            do { try await store.write(checkpoints: checkpoints) } catch {
                report.status = .failed
                report.notStored = true
                report.error = "\(path): database: \(Self.describe(error))"
            }
        }
        return report
    }

    /// One file: opened and its importer chosen, hashed, looked up in the ledger, decoded into
    /// the committer (parts committed as they come), judged (``FileVerdict``), and its last part
    /// committed with its ledger entry. Each step is a small function; the decisions are pure.
    private func importFile(_ path: String, explicit: Bool, lastCommit checkpoints: [CheckpointKey: String],
                            within: (@Sendable (_ bytesRead: Int, _ records: Int) -> Void)?) async -> FileReport {
        var source: ImportSource
        let importer: any FileImporter
        switch await open(path, explicit: explicit) {
        case .done(let report): return report
        case .opened(let opened, let chosen): (source, importer) = (opened, chosen)
        }
        let driverID = type(of: importer).id
        func failed(_ error: String, notStored: Bool = false) -> FileReport {
            var report = FileReport(path: path, status: .failed, driver: driverID, error: error)
            report.notStored = notStored
            return report
        }
        let hash: String
        do { hash = try await Self.contentHash(source) } catch { return failed("\(error)") }
        let resumeAfter: Int
        switch await ledgerState(hash, path: path, driver: driverID) {
        case .done(let report): return report
        case .resumeAfter(let count): resumeAfter = count
        }
        let normalizer: Normalizer
        do { normalizer = try await intake.normalizer() } catch { return failed("database: \(Self.describe(error))", notStored: true) }

        let header = FileImport(contentHash: hash, path: path, sizeBytes: source.size, driver: driverID, records: [], status: .imported)
        let filtered = options.range.since != nil || options.range.until != nil
        let counter = ReadCounter()
        source.bytesRead = counter
        var onProgress: (@Sendable (Int) -> Void)?
        if let within {
            let size = source.size
            onProgress = { records in within(min(counter.value, size), records) }
        }
        let committer = FileCommitter(header: header, intake: intake, normalizer: normalizer, dryRun: options.dryRun,
                                      skip: filtered ? 0 : resumeAfter, recordsProgress: !filtered,
                                      transactionWeight: options.transactionWeight, previewCount: options.dryRun ? options.previewCount : 0,
                                      onProgress: onProgress)
        let outcome: DecodeOutcome
        switch await decode(source, with: importer, into: committer, path: path, explicit: explicit) {
        case .done(let report): return report
        case .decoded(let decoded): outcome = decoded
        }
        let verdict = FileVerdict.decide(path: path, driver: driverID, outcome, resumeAfter: resumeAfter, dryRun: options.dryRun)
        var report = verdict.report
        let ledgerStatus = verdict.ledger
        if options.dryRun { report.preview = await committer.preview }
        guard let ledgerStatus else { return report }
        guard let store else {
            report.status = .failed
            report.error = "no database"
            return report
        }
        var last = header
        last.records = ledgerStatus == .failed ? [] : await committer.takePending()
        last.status = ledgerStatus
        last.error = report.error
        last.checkpoints = checkpoints
        var stored = outcome.stored
        do {
            switch try await store.commit(last) {
            case .alreadyImported:
                report.status = .alreadyImported
                report.error = nil
            case .committed(let result):
                stored.add(result)
                report.records = stored.stored
                report.unchanged = stored.unchanged
            }
        } catch {
            report.status = .failed
            report.notStored = true
            report.records = stored.stored
            report.error = "\(path): database: \(Self.describe(error)); " + FileVerdict.whatStays(parts: outcome.parts, stored: stored.stored)
        }
        return report
    }

    enum Opened {
        case done(FileReport)
        case opened(ImportSource, any FileImporter)
    }

    /// Opens `path` and chooses its importer (an SQLite file by its tables); a file no importer
    /// reads is skipped, or failed when named explicitly.
    private func open(_ path: String, explicit: Bool) async -> Opened {
        var source: ImportSource
        do { source = try await ImportSource.open(path) } catch { return .done(FileReport(path: path, status: .failed, error: error.description)) }
        // An SQLite file is another program's database: its tables say whose.
        if source.probe.isSQLite { source.probe.sqliteTables = await ForeignSQLite.tables(path) }
        guard let importer = importer(for: source.probe) else {
            return .done(FileReport(path: path, status: explicit ? .failed : .skipped, error: explicit ? "\(path): " + Self.unread(source.probe) : nil))
        }
        return .opened(source, importer)
    }

    /// SHA-256 of the file's bytes, hex.
    private static func contentHash(_ source: ImportSource) async throws -> String {
        var hasher = SHA256()
        for try await chunk in source.chunks() { hasher.update(data: chunk) }
        return Hex.lowercase(hasher.finalize())
    }

    enum LedgerState {
        case done(FileReport)
        /// Records an interrupted import of the same content already stored.
        case resumeAfter(Int)
    }

    /// What the ledger knows of `hash`: imported already (done), or how far an interrupted import got.
    private func ledgerState(_ hash: String, path: String, driver: String) async -> LedgerState {
        guard let store else { return .resumeAfter(0) }
        do {
            guard let entry = try await store.ledgerEntry(contentHash: hash) else { return .resumeAfter(0) }
            if entry.isComplete {
                return .done(FileReport(path: path, status: .alreadyImported, driver: driver,
                                        error: entry.path == path ? nil : "same content as \(entry.path)"))
            }
            return .resumeAfter(entry.status == .inProgress ? entry.handedOver : 0)
        } catch {
            var report = FileReport(path: path, status: .failed, driver: driver, error: "database: \(Self.describe(error))")
            report.notStored = true
            return .done(report)
        }
    }

    enum Decoded {
        case done(FileReport)
        case decoded(DecodeOutcome)
    }

    /// Runs the importer into the committer and waits for its last part: what it handed over
    /// and what went wrong, decoding (records before a ``DecodeError`` make the file partial) or
    /// storing. Done early when another import of the same content finished meanwhile, or when
    /// the importer does not recognize the file before handing anything over.
    private func decode(_ source: ImportSource, with importer: any FileImporter, into committer: FileCommitter, path: String,
                        explicit: Bool) async -> Decoded {
        let driverID = type(of: importer).id
        func alreadyImported(_ done: FileCommitter.AlreadyImported) -> Decoded {
            .done(FileReport(path: path, status: .alreadyImported, driver: driverID,
                             error: done.entry.path == path ? nil : "same content as \(done.entry.path)"))
        }
        var decodeError: String?, storeError: String?
        do {
            try await importer.importFile(source, into: committer)
        } catch let done as FileCommitter.AlreadyImported {
            return alreadyImported(done)
        } catch is CancellationError {
            storeError = "\(path): interrupted"
        } catch let failure as FileCommitter.StoreFailure {
            storeError = "\(path): database: \(Self.describe(failure.error))"
        } catch let unrecognized as UnrecognizedFile {
            if await committer.handedOver == 0 {
                return .done(FileReport(path: path, status: explicit ? .failed : .skipped, driver: driverID,
                                        error: explicit ? "\(path): \(unrecognized.reason)" : nil))
            }
            decodeError = "\(path): \(unrecognized.reason)"
        } catch let error as DecodeError {
            decodeError = error.inFile(path).description
        } catch let error as FileReadError {
            decodeError = error.description
        } catch {
            decodeError = "\(path): \(Self.describe(error))"
        }
        // The last part the committer started may still be committing, whatever the importer did.
        do {
            try await committer.settle()
        } catch let done as FileCommitter.AlreadyImported {
            return alreadyImported(done)
        } catch let failure as FileCommitter.StoreFailure {
            storeError = storeError ?? "\(path): database: \(Self.describe(failure.error))"
        } catch {
            storeError = storeError ?? "\(path): database: \(Self.describe(error))"
        }
        return .decoded(DecodeOutcome(handedOver: await committer.handedOver, accepted: await committer.accepted,
                                      outOfRange: await committer.outOfRange, rejected: await committer.rejected,
                                      parts: await committer.parts, stored: await committer.stored,
                                      decodeError: decodeError, storeError: storeError))
    }

    /// Imports every file under `paths`, calling `progress` before each file and `done` after;
    /// `within` is told how far the current file is (bytes read of it, records read from it)
    /// after each batch its importer hands over.
    public func run(_ paths: [String],
                    progress: (_ index: Int, _ total: Int, _ path: String, _ bytesDone: Int, _ bytesTotal: Int) -> Void = { _, _, _, _, _ in },
                    within: (@Sendable (_ bytesRead: Int, _ records: Int) -> Void)? = nil,
                    done: (FileReport) -> Void = { _ in }) async throws -> ImportTotals {
        let files = try Self.discover(paths)
        let sizes = files.map { (try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int) ?? 0 }
        let bytesTotal = sizes.reduce(0, +)
        var totals = ImportTotals()
        var bytesDone = 0
        for (index, file) in files.enumerated() {
            progress(index, files.count, file.path, bytesDone, bytesTotal)
            let report = await importFile(file.path, explicit: file.explicit, within: within)
            bytesDone += sizes[index]
            totals.add(report, bytes: sizes[index])
            done(report)
        }
        progress(files.count, files.count, "", bytesDone, bytesTotal)
        return totals
    }

    static func describe(_ error: any Error) -> String {
        String(describing: error)
    }
}

/// Errors about the paths given to an import.
public enum ImportError: Error, CustomStringConvertible, Equatable {
    case notFound(String)
    case unreadable(String)

    public var description: String {
        switch self {
        case .notFound(let path): "\(path): no such file or folder"
        case .unreadable(let path): "\(path): cannot read folder"
        }
    }
}
