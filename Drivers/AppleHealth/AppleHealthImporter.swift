public import DriverKit
import Foundation
public import HealthModel
import GPXDriver
import XMLStream
import ZipStream

/// Imports Apple Health exports: the `export.zip` the Health app writes (read in place with
/// ZipStream: the data XML, whatever its localized name, and the workout routes it references)
/// or a bare `export.xml`. The XML is read in chunks through ``AppleHealthParser``; records go to
/// the sink every ``batchSize`` records, so memory stays bounded whatever the export's size.
/// See Drivers/AppleHealth/README.md.
public struct AppleHealthImporter: FileImporter {
    public static let id = "apple-health"
    /// Records handed to the sink at a time.
    public static let batchSize = 5_000
    /// The largest workout route (GPX) read from an archive.
    public static let maxRouteBytes = 64 << 20

    private let context: DriverContext

    /// Takes no keys of its own (`[importers.apple-health]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("apple-health")) {
        self.context = context
    }

    /// An Apple Health `export.xml` (its head shows the `HealthData` DOCTYPE or root), or a zip
    /// whose first entry is in the `apple_health_export/` folder.
    public static func canImport(_ probe: FileProbe) -> Bool {
        if probe.head.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            return ZipEntry.firstName(head: probe.head)?.hasPrefix("apple_health_export/") == true
        }
        let head = probe.textHead
        return head.contains("<!DOCTYPE HealthData") || head.contains("<HealthData")
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        var parser = AppleHealthParser(path: file.path)
        var illegal = 0
        if file.probe.head.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            let archive = try await ZipArchive.open(file)
            let (entry, folder) = try await Self.dataEntry(in: archive)
            try await read(archive.contents(of: entry), into: &parser, illegal: &illegal, path: file.path + ":" + entry.name,
                           routes: { try await Self.route($0, folder: folder, in: archive) }, sink: sink)
        } else {
            try await read(file.chunks(), into: &parser, illegal: &illegal, path: file.path, routes: nil, sink: sink)
        }
        if illegal > 0 {
            context.logger.warning("\(file.path): \(illegal) character(s) not allowed in XML (such as vertical tabs in source names) read as spaces")
        }
        let skipped = parser.skipped.filter { $0.key.hasPrefix("unreadable ") }.values.reduce(0, +)
        if skipped > 0 { context.logger.warning("\(file.path): \(skipped) sample(s) with an unreadable date, value or unit skipped") }
    }

    /// Decodes a whole `export.xml` (no routes: they live in the zip). Pure: no I/O; what the
    /// fuzz target and the tests call. Throws ``DecodeError`` for malformed XML.
    public static func decode(_ bytes: [UInt8], path: String = "") throws -> (records: [HealthRecord], parser: AppleHealthParser) {
        var parser = AppleHealthParser(path: path)
        var bytes = bytes
        _ = replaceIllegalCharacters(&bytes)
        let reader = XMLReader(bytes: bytes, skipsWhitespaceText: true)
        try reading(path) { _ = try reader.read(into: &parser) }
        parser.finish()
        return (parser.takeRecords(), parser)
    }

    /// Feeds `chunks` to the parser and hands the records over in batches, routes attached.
    private func read<Chunks: AsyncSequence>(_ chunks: Chunks, into parser: inout AppleHealthParser, illegal: inout Int, path: String,
                                             routes: ((String) async throws -> [Sample]?)?, sink: some RecordSink) async throws
    where Chunks.Element == [UInt8] {
        let reader = XMLReader(skipsWhitespaceText: true)
        var pending: [HealthRecord] = []
        func flush(_ force: Bool) async throws {
            pending += parser.takeRecords()
            let paths = parser.takeRoutes()
            if !paths.isEmpty {
                for (index, record) in pending.enumerated() {
                    guard case .workout(var workout) = record, let routePath = paths[workout.id] else { continue }
                    if let routes, let samples = try await routes(routePath) {
                        workout.samples = samples
                        pending[index] = .workout(workout)
                    }
                }
            }
            if pending.count >= Self.batchSize || (force && !pending.isEmpty) {
                try await sink.emit(pending)
                pending = []
            }
        }
        do {
            for try await var chunk in chunks {
                illegal += Self.replaceIllegalCharacters(&chunk)
                reader.append(chunk)
                try Self.reading(path) { _ = try reader.read(into: &parser) }
                try await flush(false)
            }
            reader.finishInput()
            try Self.reading(path) { _ = try reader.read(into: &parser) }
            parser.finish()
            try await flush(true)
        } catch let error as DecodeError {
            // What was finished before the damage is stored (the file is partial).
            try await flush(true)
            throw error
        }
    }

    /// Characters XML 1.0 does not allow (C0 controls other than tab, line feed and carriage
    /// return), which real exports contain: replaced by spaces, counted. They are single bytes
    /// in UTF-8, never part of another character.
    static func replaceIllegalCharacters(_ chunk: inout [UInt8]) -> Int {
        var count = 0
        for index in chunk.indices where chunk[index] < 0x20 && chunk[index] != 0x09 && chunk[index] != 0x0A && chunk[index] != 0x0D {
            chunk[index] = 0x20
            count += 1
        }
        return count
    }

    /// Runs `work`, turning an ``XMLError`` into a ``DecodeError`` naming the file and position.
    private static func reading(_ path: String, _ work: () throws -> Void) throws {
        do { try work() } catch let error as XMLError {
            throw DecodeError(file: path, at: .line(error.line, column: error.column), error.reason)
        }
    }

    // MARK: The archive

    /// The entry holding the export's data, and the folder it is in: `export.xml` (or its
    /// localized name: `exportar.xml`, `eksport.xml`, `vienti.xml` ...) at the top or one folder
    /// deep, never `export_cda.xml` (clinical documents), never macOS's `__MACOSX/` or `._` files;
    /// the one whose head shows `HealthData`.
    static func dataEntry(in archive: ZipArchive) async throws -> (ZipEntry, String) {
        var candidates: [ZipEntry] = []
        for entry in archive.entries {
            guard let path = entry.safePath, !entry.isDirectory, path.lowercased().hasSuffix(".xml") else { continue }
            let parts = path.split(separator: "/")
            let name = parts.last.map(String.init) ?? ""
            guard parts.count <= 2, parts.first != "__MACOSX", !name.hasPrefix("._"), name.lowercased() != "export_cda.xml" else { continue }
            candidates.append(entry)
        }
        // export.xml first, then the others in archive order.
        candidates.sort { ($0.name.hasSuffix("/export.xml") || $0.name == "export.xml") && !($1.name.hasSuffix("/export.xml") || $1.name == "export.xml") }
        for entry in candidates {
            var head: [UInt8] = []
            for try await chunk in archive.contents(of: entry) {
                head += chunk
                if head.count >= 4096 { break }
            }
            let text = String(decoding: head.prefix(4096), as: UTF8.self)
            if text.contains("<!DOCTYPE HealthData") || text.contains("<HealthData") {
                let path = entry.safePath ?? entry.name
                let folder = path.split(separator: "/").dropLast().joined(separator: "/")
                return (entry, folder)
            }
        }
        throw DecodeError(file: archive.source.path, at: .file,
                          "no Apple Health data in this zip: no export.xml (or localized name) with a HealthData root at its top or one folder deep")
    }

    /// The samples of the route a workout's `FileReference` names (`/workout-routes/x.gpx`,
    /// relative to the export folder), read with the GPX driver's parser; nil when the archive
    /// has no such entry or the path would escape the archive.
    static func route(_ reference: String, folder: String, in archive: ZipArchive) async throws -> [Sample]? {
        let relative = reference.hasPrefix("/") ? String(reference.dropFirst()) : reference
        guard let safe = ZipEntry.safePath(relative) else { return nil }
        guard let entry = archive.entry(atPath: folder.isEmpty ? safe : folder + "/" + safe) ?? archive.entry(atPath: safe) else { return nil }
        guard entry.uncompressedSize <= maxRouteBytes else {
            throw DecodeError(file: archive.source.path, at: .byte(entry.localHeaderOffset),
                              "the workout route '\(entry.name)' holds \(entry.uncompressedSize) bytes, more than the \(maxRouteBytes) read")
        }
        var bytes: [UInt8] = []
        for try await chunk in archive.contents(of: entry) { bytes += chunk }
        let workouts = try GPXImporter.decode(bytes, path: archive.source.path + ":" + entry.name)
        return workouts.flatMap(\.samples)
    }
}

extension AppleHealthImporter {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.importer(
        AppleHealthImporter.self,
        summary: "Apple Health export.zip or export.xml: measurements, drinks, meals, sleep, workouts with routes, mindful minutes",
        sample: PackageResources.sample_toml)
}
