import Foundation
import GRDB
public import HealthModel
import LinuxAdapters
import Timing

/// The SQLite database: owns its connections, the schema and every transaction.
///
/// One imported file is one transaction (records, their outbox rows and the ledger entry land
/// together or not at all). Opening runs the migrations.
///
/// Every operation is `async`: it runs on one of the store's two serial dispatch queues (writes,
/// reads) and the caller's task is suspended meanwhile, so no SQLite work ever runs on (or blocks)
/// a thread of Swift's cooperative pool. Opening, which creates files and runs the migrations,
/// happens on a dispatch queue of its own for the same reason. ``StatementThreadCheck`` proves it
/// in the tests. (GRDB's own `async` accesses were tried first: they throw `CancellationError` for
/// a cancelled caller, and their extra threads left the idle daemon 0.28 MB more private memory
/// where these queues leave 0.08 MB.)
public final class HealthStore: Sendable {
    /// The only way to the database: a pool (WAL mode: readers never block the writer) for a
    /// file, a queue for an in-memory database.
    private let writer: any DatabaseWriter
    /// The database file's path (`:memory:` for ``inMemory()``).
    public let path: String
    /// Where the store's work waits for SQLite: two serial queues of its own (their threads are not
    /// Swift's cooperative pool), one for writes and one for reads, so that reads go on during a
    /// write (WAL). GRDB's synchronous calls made there run on these queues' threads.
    private let writeQueue = DispatchQueue(label: "HealthStore.write")
    private let readQueue = DispatchQueue(label: "HealthStore.read")

    /// Frees the connections' page caches (after a large import or drain, in a long-running
    /// process): readers close once their current work is done; the writer frees its cache on its
    /// own queue before this returns.
    public func releaseMemory() async {
        (writer as? DatabasePool)?.releaseMemoryEventually()
        try? await writing { $0.releaseMemory() }
    }

    /// Opens (creating if needed) the database at `path` and migrates it.
    public init(path: String) async throws {
        let configuration = Self.configuration(path: path)
        writer = try await Self.offPool {
            // A new database (and any folder made for it) is its owner's alone: it holds their health.
            try PrivateFiles.createFile(path)
            // Opening turns a new database to WAL, which takes an exclusive lock: a process
            // opening it at the same moment can be told SQLITE_BUSY without its busy timeout
            // applying (seen in ConcurrentOpenTests), and tries again.
            let pool = try Self.retryingOpeningRaces(when: { ($0 as? DatabaseError)?.resultCode == .SQLITE_BUSY }) {
                try DatabasePool(path: path, configuration: configuration)
            }
            // Two processes opening a database at once (the daemon and a command) could both
            // decide a migration is due: GRDB reads the applied ones once and runs each in a
            // transaction of its own. So migrations run under a lock on the database's folder, one
            // process after the other; the second then finds them applied.
            if try !pool.read({ try Schema.migrator.hasCompletedMigrations($0) }) {
                try FolderLock.exclusively((path as NSString).deletingLastPathComponent) { try Schema.migrator.migrate(pool) }
            }
            return pool
        }
        self.path = path
    }

    private init(writer: any DatabaseWriter, path: String) {
        self.writer = writer
        self.path = path
    }

    /// A new, empty database in memory, migrated (for unit tests): gone when the store is.
    public static func inMemory() async throws -> HealthStore {
        let configuration = Self.configuration(path: ":memory:")
        let queue = try await offPool {
            let queue = try DatabaseQueue(configuration: configuration)
            try Schema.migrator.migrate(queue)
            return queue
        }
        return HealthStore(writer: queue, path: ":memory:")
    }

    /// The connections' settings: busy timeout and pragmas (and the statement check when on).
    private static func configuration(path: String) -> Configuration {
        var config = Configuration()
        config.label = "HealthStore"
        config.busyMode = .timeout(10)
        let check = StatementThreadCheck.isEnabled
        config.prepareDatabase { db in
            if check { StatementThreadCheck.install(on: db, path: path) }
            // WAL + NORMAL: durable across application crashes, one fsync per checkpoint.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Up to 16 MB of pages per connection (SQLite's default is 2 MB): a large backlog's
            // indexes stay in memory instead of being read again for every record. Only pages
            // actually used take memory; ``releaseMemory()`` gives them back.
            try db.execute(sql: "PRAGMA cache_size = -16384")
            // Checkpoint every 8,192 WAL pages (32 MB) rather than 1,000: the outbox's and the
            // records' indexes are keyed by random ids, so a batch of writes touches pages all
            // over them, and a page changed by many batches between checkpoints is copied once.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 8192")
            // Deleted and replaced records leave no readable bytes behind (Debian's SQLite is
            // built with this on; other builds are not).
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return config
    }

    /// Runs blocking work (opening files, migrating) on a serial dispatch queue of its own, never
    /// on a thread of Swift's cooperative pool, and suspends the caller until it is done. A queue
    /// per call: stores opened at once open at once.
    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await OffPool.run(on: DispatchQueue(label: "HealthStore.open"), work)
    }

    /// Runs `work`, and again (up to 5 tries, 50 to 200 ms apart) while it fails with an error
    /// `retrying` accepts: what another process opening the same new database at the same moment
    /// causes. Runs on the opening queue.
    private static func retryingOpeningRaces<T>(when retrying: (any Error) -> Bool, _ work: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try work()
            } catch {
                attempt += 1
                guard attempt < 5, retrying(error) else { throw error }
                usleep(useconds_t(50_000 * attempt))
            }
        }
    }

    /// Runs `work` in a read transaction on the read queue; the caller is suspended meanwhile.
    func reading<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await OffPool.run(on: readQueue) { [writer] in try writer.read(work) }
    }

    /// Runs `work` in a write transaction on the write queue; the caller is suspended meanwhile.
    /// A write that was asked for is done even when the caller's task is cancelled meanwhile: a
    /// driver told to stop (SIGTERM, Ctrl-C) is cancelled just when it stores what it holds, and
    /// its file or last batch must still be stored, never cut short. (GRDB's `async` `write` would throw
    /// `CancellationError` instead, or interrupt the statement running.)
    func writing<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await OffPool.run(on: writeQueue) { [writer] in try writer.write(work) }
    }

    /// Names of the migrations applied, in order.
    public func appliedMigrations() async throws -> [String] {
        try await reading { db in try Schema.migrator.appliedMigrations(db) }
    }
}

/// What a write did with each record it was given.
public struct WriteResult: Sendable, Equatable {
    /// New records (first version stored).
    public var inserted = 0
    /// Records replaced by a newer version.
    public var updated = 0
    /// Records already stored at this version or a newer one: nothing written.
    public var unchanged = 0

    public init(inserted: Int = 0, updated: Int = 0, unchanged: Int = 0) {
        self.inserted = inserted
        self.updated = updated
        self.unchanged = unchanged
    }

    /// Records that reached the database (and the outbox).
    public var stored: Int { inserted + updated }

    /// Adds another write's counts (the parts of one file).
    public mutating func add(_ other: WriteResult) {
        inserted += other.inserted
        updated += other.updated
        unchanged += other.unchanged
    }
}

extension HealthStore {
    /// Writes a batch of records (live streams, manual entries) in one transaction, each with
    /// its outbox row.
    @discardableResult
    public func write(_ records: [HealthRecord]) async throws -> WriteResult {
        try await writing { db in try RecordWriter(db: db).write(records, importHash: nil) }
    }

    /// Writes what a live driver emitted in one transaction: finished records, workout pieces
    /// (summary updated, samples appended; queued for forwarding with the final piece), and the
    /// driver checkpoints that cover them (`driver_checkpoints`).
    @discardableResult
    public func write(_ batch: LiveBatch) async throws -> WriteResult {
        try await writing { db in
            let writer = RecordWriter(db: db)
            let records = try writer.write(batch.records, importHash: nil)
            let workouts = try writer.write(batch.workouts)
            try writer.writeCheckpoints(batch.checkpoints)
            return WriteResult(inserted: records.inserted + workouts.inserted, updated: records.updated + workouts.updated,
                               unchanged: records.unchanged + workouts.unchanged)
        }
    }

    /// Completes live workouts left in progress by a recording that ended without closing them
    /// (a crash or power loss): they keep the samples stored so far and the summary written with
    /// the last of them (each piece lands in one transaction), and are queued for forwarding.
    /// Returns their ids. Run before live recording starts.
    @discardableResult
    public func completeInterruptedWorkouts() async throws -> [RecordID] {
        try await writing { db in
            let ids = try String.fetchAll(db, sql: "SELECT id FROM workouts WHERE in_progress = 1 ORDER BY start_time")
            let writer = RecordWriter(db: db)
            for id in ids {
                try db.execute(sql: "UPDATE workouts SET in_progress = 0, updated_at = ? WHERE id = ?",
                               arguments: [writer.now, id])
                let version = try Int.fetchOne(db, sql: "SELECT version FROM workouts WHERE id = ?", arguments: [id]) ?? 1
                try db.execute(sql: """
                    INSERT INTO outbox (record_type, record_id, version, enqueued_at) VALUES ('workout', ?, ?, ?)
                    """, arguments: [id, version, writer.now])
            }
            return ids.compactMap(RecordID.init(string:))
        }
    }
}
