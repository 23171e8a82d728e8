import Foundation
import GRDB
import HealthModel

/// The SQLite database: owns the connection pool, the schema and every transaction.
///
/// One imported file is one transaction (records, their outbox rows and the ledger entry land
/// together or not at all). Opening runs the migrations.
public final class HealthStore: Sendable {
    /// The pool (WAL mode: readers never block the writer).
    public let pool: DatabasePool
    /// The database file's path.
    public let path: String

    /// Opens (creating if needed) the database at `path` and migrates it.
    public init(path: String) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            // WAL + NORMAL: durable across application crashes, one fsync per checkpoint.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        self.path = path
        pool = try DatabasePool(path: path, configuration: config)
        try Schema.migrator.migrate(pool)
    }

    /// Names of the migrations applied, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try Schema.migrator.appliedMigrations(db) }
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
}

extension HealthStore {
    /// Writes a batch of records (live streams, manual entries) in one transaction, each with
    /// its outbox row.
    @discardableResult
    public func write(_ records: [HealthRecord]) throws -> WriteResult {
        try pool.write { db in try RecordWriter(db: db).write(records, importHash: nil) }
    }
}
