public import Foundation
import GRDB
public import HealthModel
public import Logging
public import SyncProtocol

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

    /// SQLite's page cache of the one writer and of each reader connection, in KiB.
    static let writerCacheKB = 32 * 1024
    static let readerCacheKB = 8 * 1024
    /// Reader connections at most (GRDB's default).
    static let maximumReaders = 5

    /// Opens (creating if needed, with its folder) the database at `path` and migrates it.
    public init(path: String, checkpoints: CheckpointPolicy = CheckpointPolicy(),
                logger: Logger = Logger(label: "healthgate-server.store")) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.maximumReaderCount = Self.maximumReaders
        config.prepareDatabase { db in
            // WAL + NORMAL: durable across crashes of the server, one fsync per checkpoint.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Pages kept per connection (SQLite's default is 2 MB): the writer 32 MB, so that the
            // indexes the upserts touch stay in memory, each reader 8 MB; the file's other
            // pages are in the kernel's cache, a read call away. At most 32 + 5 x 8 = 72 MB in
            // all (the server's memory budget: docs/server.md).
            let cacheKB = db.configuration.readonly ? SQLiteServerStore.readerCacheKB : SQLiteServerStore.writerCacheKB
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKB)")
            // No checkpoints in the middle of an upload: `checkpointer` copies the WAL back in the
            // background (uploads touch index pages at random, so a checkpoint after every few
            // uploads, with its fsyncs, took longer than the uploads themselves).
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            // When a writer starts the log over, the file is cut back to the limit.
            try db.execute(sql: "PRAGMA journal_size_limit = \(checkpoints.walLimitBytes)")
            // Deleted records and accounts (and replaced versions) leave no readable bytes in the
            // pages they were on. Debian's SQLite is built with this on; other builds are not.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
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
                // Cancelled (the store is gone): no last checkpoint, which would hold the file
                // while whoever dropped the store opens it again.
                guard !Task.isCancelled else { return }
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

    /// Names of the migrations applied to the file at `path`, read without changing it.
    public static func appliedMigrations(path: String) throws -> [String] {
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: path, configuration: config)
        return try queue.read { db in try SQLiteServerSchema.migrator.appliedMigrations(db) }
    }

    /// Names of the migrations applied, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try SQLiteServerSchema.migrator.appliedMigrations(db) }
    }

    public func ping() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    // MARK: Accounts

    public func createAccount(email: String, passwordHash: String, now: Date) async throws -> Account {
        let account = Account.new(email: email, passwordHash: passwordHash, now: now)
        let now = account.createdAt
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
                             arguments: [email]).map(Self.account)
        }
    }

    public func account(id: String) async throws -> Account? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, email, password_hash, created_at FROM users WHERE id = ?",
                             arguments: [id]).map(Self.account)
        }
    }

    public func randomPasswordHash() async throws -> String? {
        try await pool.read { db in
            // A random point in the rowid range, then the next account: one index lookup.
            try String.fetchOne(db, sql: """
                SELECT password_hash FROM users
                WHERE rowid >= (SELECT min(rowid) + abs(random() % (max(rowid) - min(rowid) + 1)) FROM users)
                ORDER BY rowid LIMIT 1
                """)
        }
    }

    public func replacePasswordHash(userId: String, old: String, new: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?",
                           arguments: [new, userId, old])
            return db.changesCount > 0
        }
    }

    public func changePassword(userId: String, passwordHash: String, keepDeviceId: String, now: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ?", arguments: [passwordHash, userId])
            try db.execute(sql: """
                UPDATE devices SET revoked_at = ?, is_primary = 0 WHERE user_id = ? AND id <> ? AND revoked_at IS NULL
                """, arguments: [Self.text(now), userId, keepDeviceId])
            return db.changesCount
        }
    }

    public func deleteAccount(userId: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM records WHERE user_id = ?", arguments: [userId])
            let records = db.changesCount
            try db.execute(sql: "DELETE FROM devices WHERE user_id = ?", arguments: [userId])
            // Rows naming this account as the holder stay: the other account still needs settling.
            try db.execute(sql: "DELETE FROM email_collisions WHERE user_id = ?", arguments: [userId])
            try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [userId])
            return records
        }
    }

    // MARK: Devices

    public func createDevice(userId: String, name: String, tokenHash: String, now: Date) async throws -> Device {
        let device = Device.new(userId: userId, name: name, now: now)
        let now = device.createdAt
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO devices (id, user_id, name, token_hash, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [device.id, userId, name, tokenHash, Self.text(now), Self.text(now)])
        }
        return device
    }

    public func principal(tokenHash: String) async throws -> Principal? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT id, user_id, coalesce(last_seen_at, created_at) AS seen FROM devices
                WHERE token_hash = ? AND revoked_at IS NULL
                """, arguments: [tokenHash]).map {
                Principal(userId: $0["user_id"], deviceId: $0["id"], lastSeenAt: Self.date($0["seen"]) ?? Date(timeIntervalSince1970: 0))
            }
        }
    }

    public func touchDevice(id: String, now: Date) async throws {
        let stale = Self.text(now.addingTimeInterval(-Principal.seenResolution))
        try await pool.write { db in
            try db.execute(sql: "UPDATE devices SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)",
                           arguments: [Self.text(now), id, stale])
        }
    }

    public func revokeDevice(id: String, userId: String, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: """
                UPDATE devices SET revoked_at = ?, is_primary = 0 WHERE id = ? AND user_id = ? AND revoked_at IS NULL
                """, arguments: [Self.text(now), id, userId])
            return db.changesCount > 0
        }
    }

    public func devices(userId: String, seenSince: Date?) async throws -> [Device] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, user_id, name, is_primary, created_at, last_seen_at FROM devices
                WHERE user_id = ? AND revoked_at IS NULL AND coalesce(last_seen_at, created_at) >= ? ORDER BY rowid
                """, arguments: [userId, seenSince.map(Self.text) ?? ""]).map(Self.device)
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
            var counter = try Self.changeCounter(db, userId: userId)
            let find = try db.cachedStatement(sql: """
                SELECT version, body IS NULL AS gone FROM records WHERE record_key = ? AND user_id = ? AND record_id = ?
                """)
            let insert = try db.cachedStatement(sql: """
                INSERT INTO records (user_id, seq, record_id, record_key, version, type, start_time, end_time, body, device_id,
                                     received_at, active_s, distance_m, energy_kcal, sleep_s)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let update = try db.cachedStatement(sql: """
                UPDATE records SET seq = ?, version = ?, type = ?, start_time = ?, end_time = ?, body = ?, device_id = ?,
                                   received_at = ?, active_s = ?, distance_m = ?, energy_kcal = ?, sleep_s = ?
                WHERE record_key = ? AND user_id = ? AND record_id = ?
                """)
            for record in records {
                let key = SQLiteServerSchema.recordKey(userId: userId, recordId: record.id)
                let held = try Row.fetchOne(find, arguments: [key, userId, record.id])
                let stored: Int? = held?["version"]
                if let held, !record.replaces(version: held["version"], tombstone: held["gone"]) {
                    outcomes.append(.duplicate)
                    continue
                }
                // A new record, or a newer version (of a live record or a tombstone): the next change number.
                counter += 1
                let f = record.figures
                let start = record.start.timeIntervalSince1970, end = record.end.timeIntervalSince1970
                if stored == nil {
                    try insert.execute(arguments: [userId, counter, record.id, key, record.version, record.type.rawValue, start, end,
                                                   record.body, deviceId, received, f.activeS, f.distanceM, f.energyKcal, f.sleepS])
                } else {
                    try update.execute(arguments: [counter, record.version, record.type.rawValue, start, end, record.body, deviceId,
                                                   received, f.activeS, f.distanceM, f.energyKcal, f.sleepS, key, userId, record.id])
                }
                outcomes.append(.accepted(seq: counter))
            }
            try Self.saveChangeCounter(db, userId: userId, counter)
            return outcomes
        }
    }

    public func deleteRecord(id: String, userId: String, deviceId: String, now: Date) async throws -> Bool {
        try await pool.write { db in
            guard let live = try Bool.fetchOne(db, sql: """
                SELECT body IS NOT NULL FROM records WHERE record_key = ? AND user_id = ? AND record_id = ?
                """, arguments: [SQLiteServerSchema.recordKey(userId: userId, recordId: id), userId, id]) else { return false }
            guard live else { return true }
            let counter = try Self.changeCounter(db, userId: userId) + 1
            try Self.tombstone(db, userId: userId, recordId: id, seq: counter, deviceId: deviceId, now: now)
            try Self.saveChangeCounter(db, userId: userId, counter)
            return true
        }
    }

    public func deleteAllRecords(userId: String, deviceId: String, now: Date) async throws -> Int {
        try await pool.write { db in
            var counter = try Self.changeCounter(db, userId: userId)
            let ids = try String.fetchAll(db, sql: "SELECT record_id FROM records WHERE user_id = ? AND body IS NOT NULL ORDER BY seq",
                                          arguments: [userId])
            for id in ids {
                counter += 1
                try Self.tombstone(db, userId: userId, recordId: id, seq: counter, deviceId: deviceId, now: now)
            }
            try Self.saveChangeCounter(db, userId: userId, counter)
            return ids.count
        }
    }

    /// Makes a record a tombstone: its data, times and figures go; id, type and version stay.
    private static func tombstone(_ db: Database, userId: String, recordId: String, seq: Int64, deviceId: String, now: Date) throws {
        try db.cachedStatement(sql: """
            UPDATE records SET seq = ?, body = NULL, start_time = 0, end_time = 0, device_id = ?, received_at = ?,
                               active_s = 0, distance_m = 0, energy_kcal = 0, sleep_s = 0
            WHERE record_key = ? AND user_id = ? AND record_id = ?
            """).execute(arguments: [seq, deviceId, text(now), SQLiteServerSchema.recordKey(userId: userId, recordId: recordId), userId, recordId])
    }

    /// The last change number given to the user's records.
    private static func changeCounter(_ db: Database, userId: String) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT change_seq FROM users WHERE id = ?"), arguments: [userId]) ?? 0
    }

    private static func saveChangeCounter(_ db: Database, userId: String, _ counter: Int64) throws {
        try db.cachedStatement(sql: "UPDATE users SET change_seq = ? WHERE id = ? AND change_seq <> ?")
            .execute(arguments: [counter, userId, counter])
    }

    public func history(userId: String, after: Int64, limit: Int, byteBudget: Int) async throws -> HistorySlice {
        try await pool.read { db in
            let epoch = try String.fetchOne(db, sql: "SELECT value FROM server_meta WHERE key = 'history_epoch'") ?? ""
            let rows = try Row.fetchCursor(db, sql: """
                SELECT seq, record_id, version, type, body, device_id FROM records
                WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, arguments: [userId, after, limit + 1])
            var records: [StoredRecord] = []
            var bytes = 0
            while let row = try rows.next() {
                let body: String? = row["body"]
                let size = body?.utf8.count ?? 0
                if records.count == limit || (!records.isEmpty && bytes + size > byteBudget) {
                    return HistorySlice(records: records, more: true, epoch: epoch)
                }
                bytes += size
                records.append(StoredRecord(id: row["record_id"], version: row["version"], type: row["type"], body: body,
                                            deviceId: row["device_id"], seq: row["seq"]))
            }
            return HistorySlice(records: records, more: false, epoch: epoch)
        }
    }

    public func summaryScope(userId: String) async throws -> SummaryScope {
        try await pool.read { db in
            let body = try String.fetchOne(db, sql: """
                SELECT body FROM records WHERE user_id = ? AND type = 'definition' AND body IS NOT NULL
                    AND json_extract(body, '$.kind') = 'preferences'
                ORDER BY start_time DESC LIMIT 1
                """, arguments: [userId])
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT min(start_time) FROM records WHERE user_id = ? AND start_time > 0) AS first,
                       (SELECT max(start_time) FROM records WHERE user_id = ? AND start_time > 0) AS last
                """, arguments: [userId, userId])
            // Two seeks of the (user, start) index (tombstones start at 0); a night ends at most
            // two days after the latest start.
            let first: Double? = row?["first"], last: Double? = (row?["last"] as Double?).map { $0 + PhysicalLimits.sleepSpanS }
            return SummaryScope(dayStartMinutes: SummaryScope.dayStart(preferencesBody: body), span: first.flatMap { f in last.map { f...max(f, $0) } })
        }
    }

    public func summaries(userId: String, periods: SummaryPeriods) async throws -> [SummaryResponse.Bucket] {
        guard let from = periods.edges.first, let to = periods.edges.last else { return [] }
        // The periods as a table (label, from, to); each is one range of the (user, start) index.
        let table = """
            periods(label, lo, hi) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
                                       FROM json_each(?))
            """
        // As the client counts them: skipped, unknown and not-done marks are not entries.
        let counted = "coalesce(json_extract(r.body, '$.label'), '') NOT IN (" + SummaryBuilder.marks.map { "'\($0)'" }.joined(separator: ", ") + ")"
        return try await pool.read { db in
            var builder = SummaryBuilder(periods: periods)
            for name in try String.fetchAll(db, sql: """
                SELECT json_extract(body, '$.name') FROM records
                WHERE user_id = ? AND type = 'definition' AND body IS NOT NULL AND json_extract(body, '$.kind') = 'habit'
                """, arguments: [userId]) {
                builder.define(habit: name)
            }
            let totals = try Row.fetchCursor(db, sql: """
                WITH \(table)
                SELECT p.label AS label, SUM(r.type = 'workout') AS workouts, SUM(r.active_s) AS active_s, SUM(r.distance_m) AS distance_m,
                       SUM(r.energy_kcal) AS energy_kcal, SUM(r.type = 'habit' AND \(counted)) AS habit_events,
                       SUM(r.type = 'measurement') AS measurements
                FROM periods p JOIN records r ON r.user_id = ? AND r.start_time >= p.lo AND r.start_time < p.hi
                WHERE r.body IS NOT NULL AND r.type NOT IN ('sleep', 'definition')
                GROUP BY p.label
                """, arguments: [periods.json, userId])
            while let row = try totals.next() {
                builder.add(row["label"], workouts: row["workouts"], activeS: row["active_s"], distanceM: row["distance_m"],
                            energyKcal: row["energy_kcal"], habitEvents: row["habit_events"], measurements: row["measurements"])
            }
            let habits = try Row.fetchCursor(db, sql: """
                WITH \(table)
                SELECT p.label AS label, json_extract(r.body, '$.habit') AS habit, json_extract(r.body, '$.category') AS category,
                       count(*) AS events, total(json_extract(r.body, '$.value')) AS value, max(json_extract(r.body, '$.unit')) AS unit
                FROM periods p JOIN records r ON r.user_id = ? AND r.start_time >= p.lo AND r.start_time < p.hi
                WHERE r.type = 'habit' AND r.body IS NOT NULL AND \(counted)
                GROUP BY 1, 2, 3
                """, arguments: [periods.json, userId])
            while let row = try habits.next() {
                builder.addHabit(row["label"], habit: row["habit"], category: row["category"], events: row["events"], value: row["value"],
                                 unit: row["unit"])
            }
            // A night counts on the day it ends; a session is at most two days long.
            let nights = try Row.fetchCursor(db, sql: """
                SELECT end_time, sleep_s FROM records
                WHERE user_id = ? AND start_time >= ? AND start_time < ? AND type = 'sleep' AND body IS NOT NULL
                """, arguments: [userId, from - PhysicalLimits.sleepSpanS, to])
            while let row = try nights.next() { builder.addSleep(end: row["end_time"], seconds: row["sleep_s"]) }
            return builder.result()
        }
    }

    public func definitionBodies(userId: String, kind: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT body FROM records
                WHERE user_id = ? AND type = 'definition' AND body IS NOT NULL AND json_extract(body, '$.kind') = ?
                """, arguments: [userId, kind])
        }
    }

    public func recordBodies(userId: String, type: RecordType, kind: MeasurementKind?, from: Double, to: Double) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT body FROM records
                WHERE user_id = ? AND start_time >= ? AND start_time < ? AND type = ? AND body IS NOT NULL
                    AND (? IS NULL OR json_extract(body, '$.kind') = ?)
                ORDER BY start_time
                """, arguments: [userId, from, to, type.rawValue, kind?.rawValue, kind?.rawValue])
        }
    }

    public func heartRateByMinute(userId: String, from: Double, to: Double, highest: Bool) async throws -> [(minute: Int, bpm: Double)] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT CAST(start_time AS INTEGER) / 60 AS m, \(highest ? "max" : "min")(json_extract(body, '$.value')) FROM records
                WHERE user_id = ? AND start_time >= ? AND start_time < ? AND type = 'measurement' AND body IS NOT NULL
                    AND json_extract(body, '$.kind') = 'heart_rate' AND json_extract(body, '$.value') > 0
                GROUP BY m
                """, arguments: [userId, from, to]).map { ($0[0], $0[1]) }
        }
    }

    public func stepsBySlot(userId: String, from: Double, to: Double, slotMinutes: Int) async throws -> [(source: Source, slot: Int, steps: Double)] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT json_extract(body, '$.source.driver') AS driver, json_extract(body, '$.source.device') AS device,
                       CAST(start_time AS INTEGER) / \(slotMinutes * 60) * \(slotMinutes) AS slot, total(json_extract(body, '$.value'))
                FROM records
                WHERE user_id = ? AND start_time >= ? AND start_time < ? AND type = 'measurement' AND body IS NOT NULL
                    AND json_extract(body, '$.kind') = 'steps' AND json_extract(body, '$.value') > 0
                GROUP BY driver, device, slot
                """, arguments: [userId, from, to]).map { (Source(driver: $0[0], device: $0[1]), $0[2], $0[3]) }
        }
    }

    // MARK: Rows

    private static func device(_ row: Row) -> Device {
        Device(id: row["id"], userId: row["user_id"], name: row["name"], primary: row["is_primary"] as Int64 == 1,
               createdAt: date(row["created_at"]) ?? Date(timeIntervalSince1970: 0),
               lastSeenAt: (row["last_seen_at"] as String?).flatMap(ISO8601.parse))
    }

    private static func account(_ row: Row) -> Account {
        Account(id: row["id"], email: row["email"], passwordHash: row["password_hash"],
                createdAt: date(row["created_at"]) ?? Date(timeIntervalSince1970: 0))
    }

    private static func date(_ text: String?) -> Date? { text.flatMap(ISO8601.parse) }

    /// Stored times: ISO 8601 UTC in whole seconds, so that they also compare as text.
    private static func text(_ date: Date) -> String { ISO8601.string(wholeSeconds(date)) }

}
