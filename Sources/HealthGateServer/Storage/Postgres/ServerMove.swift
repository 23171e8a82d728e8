import Foundation
import HealthModel
import Crypto
import GRDB
import Logging
import PostgresNIO

/// Moves a server's SQLite file into a PostgreSQL database without loss: accounts, devices (with
/// their token hashes, so no device logs in again), every record version and tombstone with its
/// change number, each account's counter and the history epoch (so every device's cursor stays
/// valid and nothing is pulled twice), and the email collisions an operator still has to settle.
///
/// The SQLite file is read through one snapshot (a consistent state even while its server still
/// runs); the rows go over in batches, each batch one transaction. Safe to run again: a row
/// already there is kept unless the source holds a newer change of it (a record with a higher
/// change number, an account's higher counter), so a second run after an interruption, or after
/// the old server took more uploads, finishes the copy. Afterwards both sides are counted and
/// checksummed (every record's user, id, change number, version, type, times, body, device and
/// figures; every account and device), and the move fails if they differ.
public enum ServerMove {
    /// What was moved and found on both sides.
    public struct Report: Sendable, Encodable, Equatable {
        public var users = 0
        public var devices = 0
        public var records = 0
        public var tombstones = 0
        public var emailCollisions = 0
        /// Rows written to PostgreSQL this run (a re-run writes only what was missing or newer).
        public var written = 0
        public var epoch = ""
        /// SHA-256 over every record, the same on both sides.
        public var recordsChecksum = ""
        /// SHA-256 over every account and device, the same on both sides.
        public var accountsChecksum = ""
    }

    /// The two sides disagree after the copy.
    public struct Mismatch: Error, CustomStringConvertible {
        public var description: String
    }

    /// One step of the move, for progress output.
    public enum Progress: Sendable {
        case migrated([String])
        case copied(table: String, rows: Int, of: Int)
        case checking(table: String)
    }

    public static func run(from sqlitePath: String, to target: PostgresServerStore, batch: Int = 2000,
                           progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw Mismatch(description: "\(sqlitePath): no such file")
        }
        // Brings the file's own schema up to date first (as its server would on start).
        _ = try SQLiteServerStore(path: sqlitePath).appliedMigrations()
        progress(.migrated(try await target.migrate()))
        var configuration = Configuration()
        configuration.readonly = true
        // The file's server (or the store that just brought its schema up to date) may hold it
        // for a moment: a checkpoint, or the last connection closing. Wait, as its server does.
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: sqlitePath, configuration: configuration)
        let snapshot = try pool.makeSnapshot()
        let database = target.database
        let logger = database.logger
        var report = Report()

        // Accounts, devices, the epoch and the email collisions: small, read whole.
        let (users, devices, collisions, epoch) = try await snapshot.read { db in
            (try Row.fetchAll(db, sql: "SELECT id, email, password_hash, created_at, change_seq FROM users ORDER BY id").map(UserRow.init),
             try Row.fetchAll(db, sql: """
                SELECT id, user_id, name, token_hash, is_primary, created_at, last_seen_at, revoked_at FROM devices ORDER BY rowid
                """).map(DeviceRow.init),
             try Row.fetchAll(db, sql: "SELECT user_id, email, normalized, holder_id FROM email_collisions ORDER BY user_id")
                .map { [$0["user_id"], $0["email"], $0["normalized"], $0["holder_id"]] as [String] },
             try String.fetchOne(db, sql: "SELECT value FROM server_meta WHERE key = 'history_epoch'") ?? "")
        }
        let recordCount = try await snapshot.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM records") ?? 0 }
        report.epoch = epoch

        try await database.transaction { connection in
            try await connection.query("""
                INSERT INTO server_meta (key, value) VALUES ('history_epoch', \(epoch))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, logger: logger)
        }
        for chunk in users.chunked(batch) {
            let query: PostgresQuery = """
                    INSERT INTO users (id, email, password_hash, created_at, change_seq)
                    SELECT * FROM unnest(\(chunk.map(\.id))::text[], \(chunk.map(\.email))::text[],
                                         \(chunk.map(\.passwordHash))::text[], \(chunk.map(\.createdAt))::timestamptz[],
                                         \(chunk.map(\.changeSeq))::int8[])
                    ON CONFLICT (id) DO UPDATE SET email = excluded.email, password_hash = excluded.password_hash,
                        change_seq = greatest(users.change_seq, excluded.change_seq)
                    WHERE (users.email, users.password_hash, users.change_seq)
                        IS DISTINCT FROM (excluded.email, excluded.password_hash, greatest(users.change_seq, excluded.change_seq))
                    RETURNING 1
                    """
            report.written += try await database.transaction { connection in
                try await PostgresServerStore.changed(connection.query(query, logger: logger))
            }
            report.users += chunk.count
            progress(.copied(table: "users", rows: report.users, of: users.count))
        }
        for chunk in devices.chunked(batch) {
            // Primaries are set once every device is in (at most one per user at any time).
            let query: PostgresQuery = """
                    INSERT INTO devices (id, user_id, name, token_hash, created_at, last_seen_at, revoked_at)
                    SELECT d.id, d.user_id, d.name, d.token_hash, d.created_at, nullif(d.seen, 'epoch'), nullif(d.revoked, 'epoch')
                    FROM unnest(\(chunk.map(\.id))::text[], \(chunk.map(\.userId))::text[], \(chunk.map(\.name))::text[],
                                \(chunk.map(\.tokenHash))::text[], \(chunk.map(\.createdAt))::timestamptz[],
                                \(chunk.map(\.lastSeenAt))::timestamptz[], \(chunk.map(\.revokedAt))::timestamptz[])
                         AS d(id, user_id, name, token_hash, created_at, seen, revoked)
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name,
                        last_seen_at = greatest(devices.last_seen_at, excluded.last_seen_at),
                        revoked_at = coalesce(devices.revoked_at, excluded.revoked_at)
                    WHERE (devices.name, devices.last_seen_at, devices.revoked_at) IS DISTINCT FROM
                          (excluded.name, greatest(devices.last_seen_at, excluded.last_seen_at),
                           coalesce(devices.revoked_at, excluded.revoked_at))
                    RETURNING 1
                    """
            report.written += try await database.transaction { connection in
                try await PostgresServerStore.changed(connection.query(query, logger: logger))
            }
            report.devices += chunk.count
            progress(.copied(table: "devices", rows: report.devices, of: devices.count))
        }
        let primaries = devices.filter(\.primary).map(\.id)
        try await database.transaction { connection in
            try await connection.query("""
                UPDATE devices SET is_primary = false WHERE is_primary AND NOT (id = ANY(\(primaries)::text[]))
                """, logger: logger)
            try await connection.query("UPDATE devices SET is_primary = true WHERE id = ANY(\(primaries)::text[])", logger: logger)
        }
        if !collisions.isEmpty {
            let query: PostgresQuery = """
                INSERT INTO email_collisions (user_id, email, normalized, holder_id)
                SELECT * FROM unnest(\(collisions.map { $0[0] })::text[], \(collisions.map { $0[1] })::text[],
                                     \(collisions.map { $0[2] })::text[], \(collisions.map { $0[3] })::text[])
                ON CONFLICT (user_id) DO NOTHING RETURNING 1
                """
            report.written += try await database.transaction { connection in
                try await PostgresServerStore.changed(connection.query(query, logger: logger))
            }
        }
        report.emailCollisions = collisions.count

        // Records, in pages of (user, change number).
        var after: (user: String, seq: Int64) = ("", -1)
        while true {
            let from = after
            let rows = try await snapshot.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT user_id, record_id, seq, version, type, start_time, end_time, body, device_id, received_at,
                           active_s, distance_m, energy_kcal, sleep_s
                    FROM records WHERE (user_id, seq) > (?, ?) ORDER BY user_id, seq LIMIT ?
                    """, arguments: [from.user, from.seq, batch]).map(RecordRow.init)
            }
            guard let last = rows.last else { break }
            after = (last.userId, last.seq)
            let query: PostgresQuery = """
                    INSERT INTO records (user_id, record_id, seq, version, type, start_time, end_time, body, device_id, received_at,
                                         active_s, distance_m, energy_kcal, sleep_s)
                    SELECT r.user_id, r.record_id, r.seq, r.version, r.type, r.s, r.e, CASE WHEN r.gone THEN NULL ELSE r.body END,
                           r.device_id, r.received, r.a, r.d, r.k, r.sl
                    FROM unnest(\(rows.map(\.userId))::text[], \(rows.map(\.recordId))::text[], \(rows.map(\.seq))::int8[],
                                \(rows.map(\.version))::int8[], \(rows.map(\.type))::text[], \(rows.map(\.start))::float8[],
                                \(rows.map(\.end))::float8[], \(rows.map { $0.body ?? "" })::text[], \(rows.map { $0.body == nil })::bool[],
                                \(rows.map(\.deviceId))::text[], \(rows.map(\.received))::timestamptz[],
                                \(rows.map(\.activeS))::float8[], \(rows.map(\.distanceM))::float8[], \(rows.map(\.energyKcal))::float8[],
                                \(rows.map(\.sleepS))::float8[])
                         AS r(user_id, record_id, seq, version, type, s, e, body, gone, device_id, received, a, d, k, sl)
                    ON CONFLICT (user_id, record_id) DO UPDATE SET seq = excluded.seq, version = excluded.version,
                        type = excluded.type, start_time = excluded.start_time, end_time = excluded.end_time, body = excluded.body,
                        device_id = excluded.device_id, received_at = excluded.received_at, active_s = excluded.active_s,
                        distance_m = excluded.distance_m, energy_kcal = excluded.energy_kcal, sleep_s = excluded.sleep_s
                    WHERE records.seq < excluded.seq
                    RETURNING 1
                    """
            report.written += try await database.transaction { connection in
                try await PostgresServerStore.changed(connection.query(query, logger: logger))
            }
            report.records += rows.count
            report.tombstones += rows.filter { $0.body == nil }.count
            progress(.copied(table: "records", rows: report.records, of: recordCount))
        }

        // The check: both sides, counted and checksummed the same way.
        progress(.checking(table: "users and devices"))
        let accountsHere = try await snapshot.read { db in
            var hash = SHA256()
            for row in try Row.fetchAll(db, sql: "SELECT id, email, password_hash, change_seq FROM users ORDER BY id") {
                hash.update(line: [row["id"], row["email"], row["password_hash"], String(row["change_seq"] as Int64)])
            }
            for row in try Row.fetchAll(db, sql: "SELECT id, user_id, token_hash, revoked_at IS NULL AS live FROM devices ORDER BY id") {
                hash.update(line: [row["id"], row["user_id"], row["token_hash"], (row["live"] as Bool) ? "live" : "revoked"])
            }
            return hash.hex
        }
        let accountsThere = try await database.read { connection in
            var hash = SHA256()
            let users = try await connection.query("SELECT id, email, password_hash, change_seq FROM users ORDER BY id COLLATE \"C\"",
                                                   logger: logger)
            for try await (id, email, password, seq) in users.decode((String, String, String, Int64).self) {
                hash.update(line: [id, email, password, String(seq)])
            }
            let devices = try await connection.query("""
                SELECT id, user_id, token_hash, revoked_at IS NULL FROM devices ORDER BY id COLLATE "C"
                """, logger: logger)
            for try await (id, user, token, live) in devices.decode((String, String, String, Bool).self) {
                hash.update(line: [id, user, token, live ? "live" : "revoked"])
            }
            return hash.hex
        }
        guard accountsHere == accountsThere else {
            throw Mismatch(description: """
                the accounts and devices in PostgreSQL differ from the SQLite file's (the old server took changes during \
                the move?): run the move again
                """)
        }
        report.accountsChecksum = accountsHere

        progress(.checking(table: "records"))
        let recordsHere = try await snapshot.read { db in
            var hash = SHA256()
            var count = 0
            let rows = try Row.fetchCursor(db, sql: """
                SELECT user_id, record_id, seq, version, type, start_time, end_time, body, device_id,
                       active_s, distance_m, energy_kcal, sleep_s
                FROM records ORDER BY user_id, seq
                """)
            while let row = try rows.next() {
                hash.update(RecordRow(row))
                count += 1
            }
            return (hash.hex, count)
        }
        let recordsThere = try await database.read { connection in
            var hash = SHA256()
            var count = 0
            let rows = try await connection.query("""
                SELECT user_id, record_id, seq, version, type, start_time, end_time, body, device_id,
                       active_s, distance_m, energy_kcal, sleep_s
                FROM records ORDER BY user_id COLLATE "C", seq
                """, logger: logger)
            for try await (user, id, seq, version, type, start, end, body, device, a, d, k, s)
                in rows.decode((String, String, Int64, Int64, String, Double, Double, String?, String, Double, Double, Double, Double).self) {
                hash.update(RecordRow(userId: user, recordId: id, seq: seq, version: version, type: type, start: start, end: end,
                                      body: body, deviceId: device, received: Date(timeIntervalSince1970: 0), activeS: a,
                                      distanceM: d, energyKcal: k, sleepS: s))
                count += 1
            }
            return (hash.hex, count)
        }
        guard recordsHere == recordsThere else {
            throw Mismatch(description: """
                PostgreSQL holds \(recordsThere.1) records, the SQLite file \(recordsHere.1), and their checksums \
                \(recordsThere.0 == recordsHere.0 ? "agree" : "differ"): run the move again (was the old server still taking uploads?)
                """)
        }
        report.recordsChecksum = recordsHere.0
        let epochThere = try await database.read { connection in
            try await PostgresServerStore.first(connection.query("SELECT value FROM server_meta WHERE key = 'history_epoch'",
                                                                 logger: logger), as: String.self)
        }
        guard epochThere == epoch else { throw Mismatch(description: "the history epoch did not arrive: run the move again") }
        return report
    }

    /// Stored times: whole-second ISO 8601 text in SQLite; NULL becomes the epoch (and back).
    static func time(_ text: String?) -> Date {
        text.flatMap(ISO8601.parse) ?? Date(timeIntervalSince1970: 0)
    }

    struct UserRow: Sendable {
        var id: String
        var email: String
        var passwordHash: String
        var createdAt: Date
        var changeSeq: Int64

        init(_ row: Row) {
            (id, email, passwordHash) = (row["id"], row["email"], row["password_hash"])
            (createdAt, changeSeq) = (ServerMove.time(row["created_at"]), row["change_seq"])
        }
    }

    struct DeviceRow: Sendable {
        var id: String
        var userId: String
        var name: String
        var tokenHash: String
        var primary: Bool
        var createdAt: Date
        /// The epoch for none (NULL again in PostgreSQL).
        var lastSeenAt: Date
        var revokedAt: Date

        init(_ row: Row) {
            (id, userId, name, tokenHash) = (row["id"], row["user_id"], row["name"], row["token_hash"])
            revokedAt = ServerMove.time(row["revoked_at"])
            primary = (row["is_primary"] as Int64) == 1 && (row["revoked_at"] as String?) == nil
            createdAt = ServerMove.time(row["created_at"])
            lastSeenAt = ServerMove.time(row["last_seen_at"])
        }
    }

    struct RecordRow: Sendable {
        var userId: String
        var recordId: String
        var seq: Int64
        var version: Int64
        var type: String
        var start: Double
        var end: Double
        var body: String?
        var deviceId: String
        var received: Date
        var activeS: Double
        var distanceM: Double
        var energyKcal: Double
        var sleepS: Double

        init(userId: String, recordId: String, seq: Int64, version: Int64, type: String, start: Double, end: Double, body: String?,
             deviceId: String, received: Date, activeS: Double, distanceM: Double, energyKcal: Double, sleepS: Double) {
            (self.userId, self.recordId, self.seq, self.version, self.type) = (userId, recordId, seq, version, type)
            (self.start, self.end, self.body, self.deviceId, self.received) = (start, end, body, deviceId, received)
            (self.activeS, self.distanceM, self.energyKcal, self.sleepS) = (activeS, distanceM, energyKcal, sleepS)
        }

        init(_ row: Row) {
            self.init(userId: row["user_id"], recordId: row["record_id"], seq: row["seq"], version: row["version"], type: row["type"],
                      start: row["start_time"], end: row["end_time"], body: row["body"], deviceId: row["device_id"],
                      received: ServerMove.time(row["received_at"]), activeS: row["active_s"], distanceM: row["distance_m"],
                      energyKcal: row["energy_kcal"], sleepS: row["sleep_s"])
        }
    }
}

extension SHA256 {
    /// Fields separated by a byte no field holds, a record by another.
    fileprivate mutating func update(line fields: [String]) {
        for field in fields {
            update(data: Data(field.utf8))
            update(data: Data([0x1F]))
        }
        update(data: Data([0x1E]))
    }

    fileprivate mutating func update(_ row: ServerMove.RecordRow) {
        update(line: [row.userId, row.recordId, String(row.seq), String(row.version), row.type, String(row.start), String(row.end),
                      row.body ?? "\u{0}", row.deviceId, String(row.activeS), String(row.distanceM), String(row.energyKcal),
                      String(row.sleepS)])
    }

    fileprivate var hex: String {
        finalize().map { String(format: "%02x", $0) }.joined()
    }
}

extension Array {
    fileprivate func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
