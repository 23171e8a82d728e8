import Crypto
import DriverKit
import Foundation
import HealthModel
import HealthStore

/// Options of one `healthgate import` run.
public struct ImportOptions: Sendable {
    /// Only records starting within this range are stored (Zot: import a chosen date range).
    public var range: DateRange
    /// Decode and report, write nothing.
    public var dryRun: Bool
    /// Body weight for estimated energy.
    public var bodyWeightKg: Double

    public init(range: DateRange = DateRange(), dryRun: Bool = false, bodyWeightKg: Double = 70) {
        self.range = range
        self.dryRun = dryRun
        self.bodyWeightKg = bodyWeightKg
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
/// records, outbox rows and ledger entry are committed in one transaction.
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

    /// The importer for a file, or nil.
    public func importer(for probe: FileProbe) -> (any FileImporter)? {
        importers.first { type(of: $0).canImport(probe) }
    }

    /// Imports a file a driver found (``FileSink``): one the user named, as far as an unknown
    /// type goes (a failure).
    public func importFile(_ path: String) async -> FileReport {
        await importFile(path, explicit: true)
    }

    /// Imports one file. `explicit` says the user named it (so an unknown type is a failure
    /// rather than a skipped file in a folder). Never throws: every outcome is a report.
    public func importFile(_ path: String, explicit: Bool) async -> FileReport {
        let source: ImportSource
        do {
            source = try ImportSource(contentsOf: path)
        } catch {
            return FileReport(path: path, status: .failed, error: "\(path): cannot read: \(Self.describe(error))")
        }
        guard let importer = importer(for: source.probe) else {
            return FileReport(path: path, status: explicit ? .failed : .skipped,
                              error: explicit ? "\(path): no driver reads this kind of file" : nil)
        }
        let driverID = type(of: importer).id
        let hash = Hex.lowercase(SHA256.hash(data: source.data))

        do {
            if let store, let entry = try await store.ledgerEntry(contentHash: hash), entry.isComplete {
                return FileReport(path: path, status: .alreadyImported, driver: driverID,
                                  error: entry.path == path ? nil : "same content as \(entry.path)")
            }
        } catch {
            return FileReport(path: path, status: .failed, driver: driverID, error: "database: \(Self.describe(error))")
        }

        // Decode: records emitted before a DecodeError make the file partial.
        let sink = CollectingSink()
        var decodeError: String?
        do {
            try await importer.importFile(source, into: sink)
        } catch let error as DecodeError {
            decodeError = error.inFile(path).description
        } catch {
            decodeError = "\(path): \(Self.describe(error))"
        }
        let decoded = sink.records

        let normalizer = Normalizer(energy: EnergyEstimator(bodyWeightKg: options.bodyWeightKg),
                                    since: options.range.since, until: options.range.until)
        let outcome = normalizer.normalize(decoded)
        var report = FileReport(path: path, status: .imported, driver: driverID, outOfRange: outcome.outOfRange,
                                rejected: outcome.rejected.map(\.description), error: decodeError)
        if decoded.isEmpty, decodeError != nil {
            report.status = .failed
        } else if decodeError != nil || !outcome.rejected.isEmpty {
            report.status = outcome.accepted.isEmpty && outcome.outOfRange == 0 ? .failed : .partial
            if report.error == nil { report.error = "\(outcome.rejected.count) record(s) rejected" }
        }

        if options.dryRun {
            if report.status == .imported { report.status = .wouldImport }
            report.records = outcome.accepted.count
            return report
        }
        guard let store else {
            report.status = .failed
            report.error = "no database"
            return report
        }
        // A file imported with a date range stays open: importing it again stores the rest.
        let ledgerStatus: ImportStatus =
            report.status == .failed ? .failed
            : outcome.outOfRange > 0 ? .filtered
            : report.status == .partial ? .partial : .imported
        let file = FileImport(contentHash: hash, path: path, sizeBytes: source.data.count, driver: driverID,
                              records: report.status == .failed ? [] : outcome.accepted, status: ledgerStatus,
                              error: report.error)
        do {
            switch try await store.commit(file) {
            case .alreadyImported:
                report.status = .alreadyImported
                report.error = nil
            case .committed(let result):
                report.records = result.stored
                report.unchanged = result.unchanged
            }
        } catch {
            report.status = .failed
            report.records = 0
            report.error = "\(path): database: \(Self.describe(error)); nothing stored for this file"
        }
        return report
    }

    /// Imports every file under `paths`, calling `progress` before each file and `done` after.
    public func run(_ paths: [String],
                    progress: (_ index: Int, _ total: Int, _ path: String, _ bytesDone: Int, _ bytesTotal: Int) -> Void = { _, _, _, _, _ in },
                    done: (FileReport) -> Void = { _ in }) async throws -> ImportTotals {
        let files = try Self.discover(paths)
        let sizes = files.map { (try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int) ?? 0 }
        let bytesTotal = sizes.reduce(0, +)
        var totals = ImportTotals()
        var bytesDone = 0
        for (index, file) in files.enumerated() {
            progress(index, files.count, file.path, bytesDone, bytesTotal)
            let report = await importFile(file.path, explicit: file.explicit)
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
