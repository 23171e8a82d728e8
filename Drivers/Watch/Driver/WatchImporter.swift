public import DriverKit
public import Foundation
import HealthModel
import LinuxAdapters
import Synchronization
public import WatchLayout

/// Fetches a watch's new FIT files and imports them: the one way a watch's backlog comes in, for
/// `watch import` and the daemon's `watch` driver. It lists the watch down ``GarminLayout``, asks
/// ``WatchFetchPlanner`` about each file (what the checkpoint says was fetched, `since`, files
/// still being written), copies each file to fetch into `folder/SERIAL/PATH` (a temporary file
/// renamed when whole: an unplugged watch leaves no half file), and hands it to the file sink
/// with the watch's checkpoint, so "imported" and "fetched" land in one transaction. A file still
/// being written is looked at again after `settle`, up to `looks` times. Never writes to the watch.
public struct WatchImporter: Sendable {
    public struct Configuration: Sendable {
        /// Where the copies are kept (the state directory's `watch/`).
        public var folder: String
        public var planner = WatchFetchPlanner()
        /// Looks at a watch whose files are still being written.
        public var looks = 3
        public var onEvent: (@Sendable (Event) -> Void)?

        public init(folder: String, since: Date? = nil) {
            self.folder = folder
            planner.since = since
        }
    }

    public enum Event: Sendable {
        /// A look is done: the files on the watch, and how many were new (fetched or failed).
        case listed(AttachedWatch, files: Int, toFetch: Int)
        case copying(path: String, size: UInt64)
        case progress(path: String, bytes: UInt64, total: UInt64)
        case imported(FileReport)
        case fileFailed(path: String, reason: String)
        case refused(path: String, reason: String)
        case stillWriting(count: Int)
    }

    /// What one look did.
    public struct Summary: Sendable, Encodable {
        public var watch: AttachedWatch
        public var filesOnWatch = 0
        public var alreadyFetched = 0
        public var outOfRange = 0
        public var stillWriting: [String] = []
        public var refused: [String] = []
        public var fetched: [String] = []
        public var imported: [FileReport] = []
        public var failed: [String] = []
        /// Bytes copied, the seconds spent copying and the seconds spent importing.
        public var bytes: UInt64 = 0
        public var copySeconds = 0.0
        public var importSeconds = 0.0

        public init(watch: AttachedWatch) { self.watch = watch }

        /// Records stored from the files imported.
        public var records: Int { imported.reduce(0) { $0 + $1.records } }

        enum CodingKeys: String, CodingKey {
            case watch, filesOnWatch = "files_on_watch", alreadyFetched = "already_fetched", outOfRange = "out_of_range",
                 stillWriting = "still_writing", refused, fetched, imported, failed, bytes, copySeconds = "copy_s", importSeconds = "import_s", records
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(watch, forKey: .watch)
            try c.encode(filesOnWatch, forKey: .filesOnWatch)
            try c.encode(alreadyFetched, forKey: .alreadyFetched)
            try c.encode(outOfRange, forKey: .outOfRange)
            try c.encode(stillWriting, forKey: .stillWriting)
            try c.encode(refused, forKey: .refused)
            try c.encode(fetched, forKey: .fetched)
            try c.encode(imported, forKey: .imported)
            try c.encode(failed, forKey: .failed)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(copySeconds, forKey: .copySeconds)
            try c.encode(importSeconds, forKey: .importSeconds)
            try c.encode(records, forKey: .records)
        }
    }

    /// What would be fetched now, file by file (for `watch list`).
    public struct Plan: Sendable {
        public var files: [(file: WatchFile, ref: WatchRef, decision: WatchFetchPlanner.Decision)]
    }

    public let configuration: Configuration

    public init(configuration: Configuration) { self.configuration = configuration }

    /// The listing and the planner's decision for each file, with nothing copied.
    public func plan(_ connection: any WatchConnection, sink: some RecordSink, now: Date = Date()) async throws -> Plan {
        let fetched = try await sink.checkpoint(WatchFetched.self, device: WatchFetched.device(serial: connection.watch.serial)) ?? WatchFetched()
        let listing = try await connection.listing()
        return Plan(files: listing.map { ($0.file, $0.ref, configuration.planner.decide($0.file, fetched: fetched, previous: nil, now: now)) })
    }

    /// Fetches and imports what is new on the watch of `connection`.
    public func run(_ connection: any WatchConnection, sink: some RecordSink, files: any FileSink) async throws -> Summary {
        let watch = connection.watch
        let device = WatchFetched.device(serial: watch.serial)
        var fetched = try await sink.checkpoint(WatchFetched.self, device: device) ?? WatchFetched()
        var summary = Summary(watch: watch)
        // The first look fetches each data folder's new files as soon as it is listed (activities
        // first); a file still being written is looked at again, with the whole listing, after
        // `settle`.
        var waiting: [WatchFile] = []
        try await connection.listing { batch in
            for (file, ref) in batch {
                summary.filesOnWatch += 1
                switch configuration.planner.decide(file, fetched: fetched, previous: nil, now: Date()) {
                case .fetch:
                    try Task.checkCancellation()
                    if let next = try await fetch(file, ref, from: connection, fetched: fetched, files: files, summary: &summary) { fetched = next }
                case .alreadyFetched: summary.alreadyFetched += 1
                case .outOfRange: summary.outOfRange += 1
                case .stillWriting: waiting.append(file)
                case .refused(let reason):
                    summary.refused.append(reason)
                    report(.refused(path: DisplayText.safe(file.path, limit: 200), reason: reason))
                }
            }
        }
        report(.listed(watch, files: summary.filesOnWatch, toFetch: summary.fetched.count + summary.failed.count))
        var look = 1
        while !waiting.isEmpty, look < configuration.looks {
            look += 1
            report(.stillWriting(count: waiting.count))
            try await Task.sleep(for: .seconds(configuration.planner.settle))
            let previous = Dictionary(waiting.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
            waiting = []
            for (file, ref) in try await connection.listing() where previous[file.path] != nil {
                switch configuration.planner.decide(file, fetched: fetched, previous: previous[file.path], now: Date()) {
                case .fetch:
                    try Task.checkCancellation()
                    if let next = try await fetch(file, ref, from: connection, fetched: fetched, files: files, summary: &summary) { fetched = next }
                case .stillWriting: waiting.append(file)
                default: break
                }
            }
        }
        summary.stillWriting = waiting.map(\.path)
        return summary
    }

    /// Copies one file and imports it with the checkpoint that marks it fetched; returns that
    /// checkpoint when it was stored.
    private func fetch(_ file: WatchFile, _ ref: WatchRef, from connection: any WatchConnection, fetched: WatchFetched, files: any FileSink,
                       summary: inout Summary) async throws -> WatchFetched? {
        let destination = configuration.folder + "/" + connection.watch.serial + "/" + file.path
        report(.copying(path: file.path, size: file.size))
        let started = ContinuousClock.now
        let copied = Atomic<UInt64>(0)
        do {
            try await PrivateFiles.write(to: destination) { fd in
                try await connection.copy(ref, to: fd) { bytes in
                    copied.store(bytes, ordering: .relaxed)
                    report(.progress(path: file.path, bytes: bytes, total: file.size))
                }
                var info = stat()
                guard fstat(fd, &info) == 0, UInt64(info.st_size) == file.size else {
                    throw CopyFailure(description: "the watch gave \(info.st_size) bytes of the \(file.size) it listed (the file changed or the transfer was cut)")
                }
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let reason = "\(error)"
            summary.failed.append("\(file.path): \(reason)")
            report(.fileFailed(path: file.path, reason: reason))
            return nil
        }
        summary.bytes += copied.load(ordering: .relaxed)
        summary.copySeconds += (ContinuousClock.now - started).inSeconds
        summary.fetched.append(file.path)
        let next = fetched.adding(file)
        let importStarted = ContinuousClock.now
        let outcome = await files.importFile(destination, checkpoint: next, device: WatchFetched.device(serial: connection.watch.serial))
        summary.importSeconds += (ContinuousClock.now - importStarted).inSeconds
        summary.imported.append(outcome)
        report(.imported(outcome))
        if outcome.notStored {
            summary.failed.append("\(file.path): not stored: \(outcome.error ?? "the database could not be written")")
            return nil
        }
        return next
    }

    private func report(_ event: Event) { configuration.onEvent?(event) }

    struct CopyFailure: Error, CustomStringConvertible {
        var description: String
    }
}

