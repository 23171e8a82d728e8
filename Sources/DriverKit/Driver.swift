public import Foundation
public import HealthModel

/// A pluggable source of health records. Each driver module also offers a
/// ``DriverDescriptor`` (its `descriptor`), which the registry lists.
public protocol Driver: Sendable {
    /// The driver's table of the configuration file, typed: decoded by ``ConfigDecoder``, so an
    /// unknown key, a value of the wrong kind or out of range is a ``ConfigError`` naming the
    /// key path. ``NoSettings`` for a driver without keys.
    associatedtype Settings: Decodable & Sendable
    /// Stored in the database with every record: never renamed.
    static var id: String { get }
    /// Checks what decoding could not (a path that must be absolute, a controller address) and
    /// makes the driver. Opens nothing: `healthgate daemon --check` makes every driver.
    init(settings: Settings, context: DriverContext) throws(ConfigError)
}

/// What the import pipeline knows of a file before choosing a driver for it.
public struct FileProbe: Sendable {
    /// The file name's extension, lower-cased, without the dot (`fit`, `tcx`, `gpx`).
    public var fileExtension: String
    /// The first bytes of the file (up to 512).
    public var head: [UInt8]

    public init(fileExtension: String, head: [UInt8]) {
        self.fileExtension = fileExtension
        self.head = head
    }

    public init(path: String, data: Data) {
        fileExtension = (path as NSString).pathExtension.lowercased()
        head = Array(data.prefix(512))
    }

    /// The head as text without a byte-order mark and leading white space, for XML sniffing.
    public var textHead: Substring {
        var bytes = head[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        return Substring(decoding: bytes, as: UTF8.self).drop(while: { $0.isWhitespace })
    }
}

/// One file handed to a ``FileImporter``: its path (for messages and provenance) and contents.
public struct ImportSource: Sendable {
    public var path: String
    public var data: Data

    public init(path: String, data: Data) {
        self.path = path
        self.data = data
    }

    /// Reads (memory-maps) the file at `path`.
    public init(contentsOf path: String) throws {
        self.path = path
        self.data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
    }

    public var probe: FileProbe { FileProbe(path: path, data: data) }
}

/// A driver that reads exported files (FIT, TCX, GPX ...).
///
/// A file that is damaged part-way emits the records decoded before the damage and then throws
/// the ``DecodeError``; the pipeline stores those and reports the file as partial.
public protocol FileImporter: Driver {
    static func canImport(_ probe: FileProbe) -> Bool
    func importFile(_ file: ImportSource, into sink: some RecordSink) async throws
}

/// A driver that talks to live devices or programs, or finds files (BLE, exec, watch folder,
/// mass storage ...).
///
/// Records go to the sink given to ``run(into:)``; files found go to ``DriverContext/files``;
/// what users and the status API should know (a device connected, a line skipped) goes to
/// ``DriverContext/report(_:)`` in order.
public protocol DeviceDriver: Driver {
    /// Runs until cancelled (graceful shutdown: store what is held, then return) or a fatal error.
    func run(into sink: some RecordSink) async throws
}

/// The only way out of a driver.
public protocol RecordSink: Sendable {
    /// Finished records (a file's contents, manual entries).
    func emit(_ batch: [HealthRecord]) async throws
    /// What a live driver recorded since its previous batch: finished records and pieces of
    /// workouts still in progress (see ``WorkoutProgress``). Live drivers emit often (every
    /// fraction of a second) so that readings are stored soon after they arrive.
    func emit(_ batch: LiveBatch) async throws
}
