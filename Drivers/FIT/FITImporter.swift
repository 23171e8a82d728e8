public import DriverKit
public import Foundation
public import HealthModel

/// Imports FIT files: activities (single and multisport, pool swims), monitoring, sleep and
/// weight-scale files. Settings and other files yield no records.
///
/// A file damaged part-way (truncated, bad CRC, corrupt chained file) emits the records decoded
/// before the damage, then throws the ``DecodeError``.
public struct FITImporter: FileImporter {
    public static let id = "fit"

    /// Takes no keys of its own (`[importers.fit]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("fit")) {}

    /// `.fit` files, or any file with the ".FIT" signature at bytes 8-11.
    public static func canImport(_ probe: FileProbe) -> Bool {
        if probe.fileExtension == "fit" { return true }
        return probe.head.count >= 12 && Array(probe.head[8..<12]) == [0x2E, 0x46, 0x49, 0x54]
    }

    /// Maps the file whole (FIT needs random access: definitions, chained files, the CRC at the
    /// end; FIT files stay small) and emits its records in one batch.
    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        let (records, error) = Self.decode(try await file.mapped(), path: file.path)
        if !records.isEmpty { try await sink.emit(records) }
        if let error { throw error }
    }

    /// Decodes and normalizes `data`: the records (everything usable before any damage) and the
    /// error that stopped decoding, if any. Pure.
    public static func decode(_ data: Data, path: String) -> (records: [HealthRecord], error: DecodeError?) {
        var collector = FITCollector()
        var failure: DecodeError?
        do {
            try FITDecoder.decode(data, into: &collector)
        } catch let error as DecodeError {
            failure = error.inFile(path)
        } catch {
            failure = DecodeError(file: path, at: .file, "\(error)")
        }
        // Chained copies of one activity yield the same identities: emit each record once.
        var seen = Set<RecordID>()
        let records = FITNormalizer.records(from: collector.content, file: path).filter { seen.insert($0.id).inserted }
        return (records, failure)
    }
}

extension FITImporter {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.importer(
        FITImporter.self, summary: "FIT files from watches and bike computers: activities, multisport, pool swims, monitoring, sleep, weight", sample: PackageResources.sample_toml)
}
