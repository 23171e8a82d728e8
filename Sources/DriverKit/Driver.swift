public import Foundation
public import HealthModel
public import Timing

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
    /// An SQLite file's table names, upper-cased, as the pipeline read them (nil: not an SQLite
    /// file, or not read): importers of SQLite files choose by them, not by names or versions.
    public var sqliteTables: Set<String>?

    /// Whether the file starts as an SQLite 3 database does.
    public var isSQLite: Bool { head.starts(with: Array("SQLite format 3\0".utf8)) }

    public init(fileExtension: String, head: [UInt8], sqliteTables: Set<String>? = nil) {
        self.fileExtension = fileExtension
        self.head = head
        self.sqliteTables = sqliteTables
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

/// A driver that reads exported files (FIT, TCX, GPX, Apple Health ...).
///
/// **Reading.** An importer reads its file through ``ImportSource``: ``ImportSource/chunks(of:)``
/// hands the bytes over in chunks read off Swift's cooperative pool, so that a file of any size
/// is read in bounded memory (XML, CSV, archives); ``ImportSource/mapped()`` maps a file whole for
/// formats that need random access and stay small (FIT).
///
/// **Emitting.** Records go to the sink as they are finished, in batches (an activity, a few
/// thousand measurements), not all at the end: the sink may store them before the importer reads
/// on, which is what keeps memory bounded. A file damaged part-way emits what it finished before
/// the damage and then throws the ``DecodeError`` (file, position, reason); the pipeline stores
/// those and reports the file as partial.
///
/// **Committing, and the rule an importer must keep.** The pipeline commits a small file's records,
/// their outbox rows and its ledger entry in one transaction: all or nothing. A large file (more
/// than ``ImportLimits/transactionWeight`` records and samples) is committed in several
/// transactions, each also writing to the ledger how many records the importer had handed over
/// so far. If the process dies between two, the next import of the same content reads the file
/// again from the start and skips that many records. Hence the rule: **the same bytes give the
/// same records in the same order, with the same ids** (ids derive from the file's content, never
/// from the clock or a counter kept elsewhere). A record that still arrives twice is found
/// unchanged by its id and version and is neither stored nor forwarded again.
public protocol FileImporter: Driver {
    static func canImport(_ probe: FileProbe) -> Bool
    func importFile(_ file: ImportSource, into sink: some RecordSink) async throws
}

/// How the pipeline cuts a large file's import into transactions (see ``FileImporter``).
public enum ImportLimits {
    /// A file whose records weigh more than this (one per record, plus a workout's samples) is
    /// committed in several transactions of about this weight each.
    public static let transactionWeight = 50_000

    /// A part also ends at this many records, whatever their weight: a record (ids, provenance
    /// strings, extras) takes far more memory than a workout's sample, and a part waits in memory
    /// until it is committed. 10,000 keeps an Apple Health import's parts at a few megabytes.
    public static let transactionRecords = 10_000

    /// What a record weighs against ``transactionWeight``.
    public static func weight(of record: HealthRecord) -> Int {
        if case .workout(let workout) = record { return 1 + workout.samples.count + workout.laps.count }
        return 1
    }
}

/// A driver that talks to live devices or programs, or finds files (BLE, exec, watch folder,
/// mass storage ...).
///
/// Records go to the sink given to ``run(into:)``; files found go to ``DriverContext/files``;
/// what users and the status API should know (a device connected, a line skipped) goes to
/// ``DriverContext/report(_:)`` in order.
public protocol DeviceDriver: Driver {
    /// Runs until cancelled (graceful shutdown: store what is held, then return), a fatal error,
    /// or its work ends (a program that exits). The daemon's supervisor runs it again after a
    /// delay when it ends or fails (``restartPolicy``); a driver never restarts itself.
    func run(into sink: some RecordSink) async throws
    /// Whether it reports ``DriverEvent/ready`` once set up (a watched folder): the daemon waits
    /// for that before READY. False by default.
    static var announcesReady: Bool { get }
    /// The delays before the supervisor runs it again, when its settings choose them (the exec
    /// driver's `restart_delay_s`); nil, the default: the supervisor's own.
    var restartPolicy: RestartPolicy? { get }
}

extension DeviceDriver {
    public static var announcesReady: Bool { false }
    public var restartPolicy: RestartPolicy? { nil }
}

/// How the supervisor runs a driver again after it ended or failed: after `backoff`'s delay for
/// the attempt, the attempts counted from 1 again after a run of at least `healthyAfter`.
public struct RestartPolicy: Sendable, Equatable {
    public var backoff: Backoff
    public var healthyAfter: Duration

    public init(backoff: Backoff, healthyAfter: Duration = .seconds(60)) {
        self.backoff = backoff
        self.healthyAfter = healthyAfter
    }
}

/// The only way out of a driver.
public protocol RecordSink: Sendable {
    /// Finished records (a file's contents, manual entries).
    func emit(_ batch: [HealthRecord]) async throws
    /// What a live driver recorded since its previous batch: finished records and pieces of
    /// workouts still in progress (see ``WorkoutProgress``). Live drivers emit often (every
    /// fraction of a second) so that readings are stored soon after they arrive.
    func emit(_ batch: LiveBatch) async throws
    /// The stored checkpoint (JSON text) under `key`, written with an earlier batch or file
    /// (``DriverCheckpoint``; drivers read theirs with ``checkpoint(_:device:)``); nil when none.
    func checkpoint(_ key: CheckpointKey) async throws -> String?
}

extension RecordSink {
    /// A sink that keeps no checkpoints knows none.
    public func checkpoint(_ key: CheckpointKey) async throws -> String? { nil }
}
