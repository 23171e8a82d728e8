import Foundation
import GRDB
import HealthModel
import Logging
import SyncProtocol

/// When ``SQLiteServerStore`` copies its write-ahead log back into the database file.
public struct CheckpointPolicy: Sendable, Equatable {
    /// How often a passive checkpoint runs.
    public var interval: Duration = .milliseconds(500)
    /// Past this size of the `-wal` file, the checkpoint waits for readers and truncates the log
    /// (and a log reset by a writer is cut back to this size).
    public var walLimitBytes: Int64 = 64 << 20

    public init() {}
}

/// The default ``ServerStore``: one SQLite file (WAL), opened through a GRDB pool that owns every
/// connection; opening runs the migrations.
public final class SQLiteServerStore: ServerStore {
    /// The pool (WAL mode: readers never block the writer).
    let pool: DatabasePool
    /// The database file's path.
    public let path: String
    /// Copies the write-ahead log back into the database file, off the writers' path.
    private let checkpointer: Task<Void, Never>

    /// Opens (creating if needed, with its folder) the database at `path` and migrates it.
    public init(path: String, checkpoints: CheckpointPolicy = CheckpointPolicy(),
                logger: Logger = Logger(label: "healthgate-server.store")) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            // WAL + NORMAL: durable across crashes of the server, one fsync per checkpoint.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Up to 64 MB of pages per connection (SQLite's default is 2 MB): the records
            // indexes of millions of rows stay in memory instead of being read per upsert.
            try db.execute(sql: "PRAGMA cache_size = -65536")
            // No checkpoints in the middle of an upload: `checkpointer` copies the WAL back in the
            // background (uploads touch index pages at random, so a checkpoint after every few
            // uploads, with its fsyncs, took longer than the uploads themselves).
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            // When a writer starts the log over, the file is cut back to the limit.
            try db.execute(sql: "PRAGMA journal_size_limit = \(checkpoints.walLimitBytes)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        // A new database is readable by its owner only (it holds password hashes); SQLite gives
        // its -wal and -shm files the same permissions.
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
        }
        self.path = path
        pool = try DatabasePool(path: path, configuration: config)
        try SQLiteServerSchema.migrator.migrate(pool)
        checkpointer = try Self.startCheckpointer(pool: pool, path: path, policy: checkpoints, log: RateLimitedLog(logger: logger))
    }

    deinit { checkpointer.cancel() }

    /// Every `interval`, a checkpoint.
    ///
    /// Normally passive, on a connection of its own: it never waits for or blocks a writer, and
    /// once it has caught up the next write starts the log over. But it can only copy the frames
    /// that no reader still needs, and a writer can only start the log over when no reader is
    /// reading from it; under load, with some read always open (every request looks its token up)
    /// and uploads always coming, neither happens and the log grows without end. So once the
    /// `-wal` file passes `walLimitBytes`, the checkpoint is TRUNCATE, run by the pool's writer
    /// between two uploads (on a connection of its own it would wait for a gap between uploads
    /// that never comes): it waits (up to the busy timeout) for the readers of the log to finish,
    /// new readers reading the database file meanwhile, copies everything and empties the file.
    /// Uploads wait for it in the writer's queue, then go on.
    private static func startCheckpointer(pool: DatabasePool, path: String, policy: CheckpointPolicy,
                                          log: RateLimitedLog) throws -> Task<Void, Never> {
        var config = Configuration()
        config.busyMode = .timeout(10)
        let connection = try DatabaseQueue(path: path, configuration: config)
        let walPath = path + "-wal"
        return Task.detached(priority: .utility) { [weak pool] in
            while !Task.isCancelled {
                try? await Task.sleep(for: policy.interval)
                let size = walSize(walPath)
                guard size > policy.walLimitBytes, let pool else {
                    _ = try? await connection.writeWithoutTransaction { db in
                        try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
                    }
                    continue
                }
                let started = ContinuousClock.now
                // The answer's first column, busy: 0 when the log was copied and emptied.
                let busy = try? await pool.writeWithoutTransaction { db in
                    try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                }
                let mib = String(format: "%.1f", Double(size) / 1_048_576)
                let limit = policy.walLimitBytes >> 20
                if busy == 0 {
                    let waited = Int((ContinuousClock.now - started) / .milliseconds(1))
                    log.log(.notice, kind: "checkpoint", """
                        write-ahead log at \(mib) MiB, over its \(limit) MiB limit (readers kept passive \
                        checkpoints from finishing): waited for them and emptied it in \(waited) ms
                        """)
                } else {
                    log.log(.warning, kind: "checkpoint-busy", """
                        write-ahead log at \(mib) MiB, over its \(limit) MiB limit: could not empty it (a reader \
                        held on past the busy timeout); trying again
                        """)
                }
            }
            try? connection.close()
        }
    }

    /// The size of the `-wal` file (0 when there is none).
    private static func walSize(_ walPath: String) -> Int64 {
        var info = stat()
        return stat(walPath, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Names of the migrations applied, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try SQLiteServerSchema.migrator.appliedMigrations(db) }
    }

    // MARK: Accounts

    public func createAccount(email: String, passwordHash: String, now: Date) async throws -> Account {
        let now = Self.wholeSeconds(now)
        let account = Account(id: UUID().uuidString.lowercased(), email: email, passwordHash: passwordHash, createdAt: now)
        do {
            try await pool.write { db in
                try db.execute(sql: "INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)",
                               arguments: [account.id, account.email, account.passwordHash, Self.text(now)])
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw StoreError.emailTaken
        }
        return account
    }

    public func account(email: String) async throws -> Account? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, email, password_hash, created_at FROM users WHERE email = ?",
                             arguments: [email]).map { row in
                Account(id: row["id"], email: row["email"], passwordHash: row["password_hash"],
                        createdAt: Self.date(row["created_at"]) ?? Date(timeIntervalSince1970: 0))
            }
        }
    }

    // MARK: Devices

    public func createDevice(userId: String, name: String, tokenHash: String, now: Date) async throws -> Device {
        let now = Self.wholeSeconds(now)
        let device = Device(id: UUID().uuidString.lowercased(), userId: userId, name: name, primary: false, createdAt: now,
                            lastSeenAt: now)
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO devices (id, user_id, name, token_hash, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [device.id, userId, name, tokenHash, Self.text(now), Self.text(now)])
        }
        return device
    }

    public func principal(tokenHash: String) async throws -> Principal? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, user_id FROM devices WHERE token_hash = ? AND revoked_at IS NULL",
                             arguments: [tokenHash]).map { Principal(userId: $0["user_id"], deviceId: $0["id"]) }
        }
    }

    public func touchDevice(id: String, now: Date) async throws {
        let stale = Self.text(now.addingTimeInterval(-60))
        // Reads first: most requests come within a minute of the last one and write nothing.
        let due = try await pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT last_seen_at IS NULL OR last_seen_at < ? FROM devices WHERE id = ?",
                              arguments: [stale, id]) ?? false
        }
        guard due else { return }
        try await pool.write { db in
            try db.execute(sql: "UPDATE devices SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)",
                           arguments: [Self.text(now), id, stale])
        }
    }

    public func revokeDevice(id: String, userId: String, now: Date) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                UPDATE devices SET revoked_at = ?, is_primary = 0 WHERE id = ? AND user_id = ? AND revoked_at IS NULL
                """, arguments: [Self.text(now), id, userId])
        }
    }

    public func devices(userId: String) async throws -> [Device] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, user_id, name, is_primary, created_at, last_seen_at FROM devices
                WHERE user_id = ? AND revoked_at IS NULL ORDER BY rowid
                """, arguments: [userId]).map(Self.device)
        }
    }

    public func markPrimary(deviceId: String, userId: String) async throws -> Device {
        try await pool.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM devices WHERE id = ? AND user_id = ? AND revoked_at IS NULL",
                                    arguments: [deviceId, userId]) != nil else { throw StoreError.noSuchDevice }
            try db.execute(sql: "UPDATE devices SET is_primary = 0 WHERE user_id = ? AND is_primary = 1 AND id <> ?",
                           arguments: [userId, deviceId])
            try db.execute(sql: "UPDATE devices SET is_primary = 1 WHERE id = ?", arguments: [deviceId])
            let row = try Row.fetchOne(db, sql: """
                SELECT id, user_id, name, is_primary, created_at, last_seen_at FROM devices WHERE id = ?
                """, arguments: [deviceId])
            guard let row else { throw StoreError.noSuchDevice }
            return Self.device(row)
        }
    }

    // MARK: Records

    public func upsert(_ records: [IncomingRecord], userId: String, deviceId: String, now: Date) async throws -> [UpsertOutcome] {
        let received = Self.text(now)
        return try await pool.write { db in
            var outcomes: [UpsertOutcome] = []
            outcomes.reserveCapacity(records.count)
            let find = try db.cachedStatement(sql: "SELECT version FROM records WHERE user_id = ? AND record_id = ?")
            let remove = try db.cachedStatement(sql: "DELETE FROM records WHERE user_id = ? AND record_id = ?")
            let insert = try db.cachedStatement(sql: """
                INSERT INTO records (user_id, record_id, version, type, start_time, end_time, body, device_id, received_at,
                                     active_s, distance_m, energy_kcal, sleep_s)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for record in records {
                let stored = try Int.fetchOne(find, arguments: [userId, record.id])
                if let stored, stored >= record.version {
                    outcomes.append(.duplicate)
                    continue
                }
                // A newer version replaces the row, so it gets a new change number.
                if stored != nil { try remove.execute(arguments: [userId, record.id]) }
                let f = record.figures
                try insert.execute(arguments: [userId, record.id, record.version, record.type.rawValue,
                                               record.start.timeIntervalSince1970, record.end.timeIntervalSince1970,
                                               record.body, deviceId, received, f.activeS, f.distanceM, f.energyKcal, f.sleepS])
                outcomes.append(.accepted(seq: db.lastInsertedRowID))
            }
            return outcomes
        }
    }

    public func history(userId: String, after: Int64, limit: Int, byteBudget: Int) async throws -> HistorySlice {
        try await pool.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT seq, record_id, version, type, body, device_id FROM records
                WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, arguments: [userId, after, limit + 1])
            var records: [StoredRecord] = []
            var bytes = 0
            while let row = try rows.next() {
                let body: String = row["body"]
                if records.count == limit || (!records.isEmpty && bytes + body.utf8.count > byteBudget) {
                    return HistorySlice(records: records, more: true)
                }
                bytes += body.utf8.count
                records.append(StoredRecord(id: row["record_id"], version: row["version"], type: row["type"], body: body,
                                            deviceId: row["device_id"], seq: row["seq"]))
            }
            return HistorySlice(records: records, more: false)
        }
    }

    public func summaries(userId: String, period: SummaryPeriod, since: Day?, until: Day?) async throws -> [SummaryResponse.Bucket] {
        let bucket = switch period {
        case .day: "date(start_time, 'unixepoch')"
        // Back six days, then forward to the next Monday (or stay on it): the week's Monday.
        case .week: "date(start_time, 'unixepoch', '-6 days', 'weekday 1')"
        case .month: "strftime('%Y-%m-01', start_time, 'unixepoch')"
        case .year: "strftime('%Y-01-01', start_time, 'unixepoch')"
        }
        return try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT \(bucket) AS bucket,
                       SUM(type = 'workout') AS workouts, SUM(active_s) AS active_s, SUM(distance_m) AS distance_m,
                       SUM(energy_kcal) AS energy_kcal, SUM(sleep_s) AS sleep_s,
                       SUM(type = 'habit') AS habit_events, SUM(type = 'measurement') AS measurements
                FROM records
                WHERE user_id = ? AND start_time >= ? AND start_time < ?
                GROUP BY bucket ORDER BY bucket
                """, arguments: [userId, since?.start.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude,
                                 until?.end.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude]).map { row in
                SummaryResponse.Bucket(start: row["bucket"], workouts: row["workouts"], activeS: row["active_s"],
                                       distanceM: row["distance_m"], energyKcal: row["energy_kcal"], sleepS: row["sleep_s"],
                                       habitEvents: row["habit_events"], measurements: row["measurements"])
            }
        }
    }

    // MARK: Rows

    private static func device(_ row: Row) -> Device {
        Device(id: row["id"], userId: row["user_id"], name: row["name"], primary: row["is_primary"] as Int64 == 1,
               createdAt: date(row["created_at"]) ?? Date(timeIntervalSince1970: 0),
               lastSeenAt: (row["last_seen_at"] as String?).flatMap(ISO8601.parse))
    }

    private static func date(_ text: String?) -> Date? { text.flatMap(ISO8601.parse) }

    /// Stored times: ISO 8601 UTC in whole seconds, so that they also compare as text.
    private static func text(_ date: Date) -> String { ISO8601.string(wholeSeconds(date)) }

    private static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }
}
