public import HealthModel
public import Logging

/// What a driver gets from the runtime that runs it: its instance name, a logger, where to hand
/// files it finds, and one ordered stream of events for status and metrics.
public struct DriverContext: Sendable {
    /// The instance's name (`[drivers.NAME]`; the driver's id for file importers and the CLI).
    public let instance: String
    /// Log lines carry the instance's name.
    public let logger: Logger
    /// Where a driver that finds files (watch folder, mass storage) hands them: the import
    /// pipeline, in the daemon.
    public let files: any FileSink
    /// The daemon's state directory, where a driver may keep files of its own in a folder named
    /// after it (the `watch` driver's copies of a watch's files); nil outside the daemon.
    public let stateDirectory: String?
    private let events: @Sendable (DriverEvent) -> Void

    /// `events` is called in the order the driver reports (the daemon feeds one stream with it).
    public init(instance: String, logger: Logger, files: any FileSink = NoFileSink(), stateDirectory: String? = nil,
                events: @escaping @Sendable (DriverEvent) -> Void = { _ in }) {
        self.instance = instance
        var logger = logger
        logger[metadataKey: "driver"] = "\(instance)"
        self.logger = logger
        self.files = files
        self.stateDirectory = stateDirectory
        self.events = events
    }

    /// A context for tools and tests: a logger that drops everything, no file sink, no events.
    public static func standalone(_ instance: String) -> DriverContext {
        DriverContext(instance: instance, logger: Logger(label: "healthgate", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Tells the runtime about `event`. Events reach it in the order they were reported.
    public func report(_ event: DriverEvent) { events(event) }
}

/// What a driver tells the runtime besides records: for the status API and metrics.
public enum DriverEvent: Sendable, Equatable, CustomStringConvertible {
    /// A device is connected (`device`: its address or serial; `name` as it calls itself).
    case connected(device: String, name: String?)
    case disconnected(device: String)
    /// Something that does not stop the driver went wrong (a malformed packet, a line that is
    /// not a record): counted by `kind` in the metrics.
    case problem(kind: String, message: String)
    /// The driver cannot do its work for now and waits for something outside it (its
    /// controller, bluetoothd, the system bus): `reason` says what; nil says it works again.
    /// `healthgate status` and the systemd status line show it.
    case waiting(reason: String?)
    /// Set up and watching (its folder watched, its sockets open): what it is given from now on
    /// is seen. Reported once by a driver that ``DeviceDriver/announcesReady``; the daemon tells
    /// systemd READY once every such driver has.
    case ready

    public var description: String {
        switch self {
        case .connected(let device, let name): "connected \(device)" + (name.map { " (\($0))" } ?? "")
        case .disconnected(let device): "disconnected \(device)"
        case .problem(let kind, let message): "\(kind): \(message)"
        case .waiting(let reason): reason.map { "waiting: \($0)" } ?? "working again"
        case .ready: "ready"
        }
    }
}

/// Where drivers that find files hand them; the import pipeline implements it.
public protocol FileSink: Sendable {
    /// Imports the complete file at `path` (one transaction; content the ledger knows is not
    /// imported again) and says what became of it. Never throws: every outcome is a report.
    ///
    /// `checkpoints` (driver checkpoints as JSON text, ``DriverCheckpoint``) are stored in the
    /// transaction that records the file in the import ledger, whether its content was new, known
    /// already, or unreadable (the file is then reported as failed, and kept by the driver):
    /// a driver that fetched the file from a device marks it fetched exactly when its records
    /// are stored. Nothing is stored when the database could not be written.
    func importFile(_ path: String, checkpoints: [CheckpointKey: String]) async -> FileReport
}

extension FileSink {
    /// Imports the file at `path` with no checkpoint.
    public func importFile(_ path: String) async -> FileReport { await importFile(path, checkpoints: [:]) }

    /// Imports the file at `path` and stores `checkpoint` for `device` with it.
    public func importFile<C: DriverCheckpoint>(_ path: String, checkpoint: C, device: String) async -> FileReport {
        await importFile(path, checkpoints: [C.key(device: device): checkpoint.encodedText()])
    }
}

/// A file sink for contexts without one: every file fails.
public struct NoFileSink: FileSink {
    public init() {}

    public func importFile(_ path: String, checkpoints: [CheckpointKey: String]) async -> FileReport {
        FileReport(path: path, status: .failed, error: "\(path): nothing here imports files")
    }
}
