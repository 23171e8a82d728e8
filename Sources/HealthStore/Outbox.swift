import Foundation
import GRDB
import HealthModel

/// One row of the outbox: a record version waiting to be forwarded.
public struct OutboxEntry: Sendable, Equatable {
    public var seq: Int64
    public var type: RecordType
    public var id: String
    public var version: Int
    public var enqueuedAt: String
}

/// A record version the server refused for good, with its reason.
public struct DeadLetter: Sendable, Equatable, Encodable {
    public var seq: Int64
    public var type: String
    public var id: String
    public var version: Int
    public var reason: String
    public var failedAt: String

    enum CodingKeys: String, CodingKey {
        case seq, type, id, version, reason, failedAt = "failed_at"
    }
}

/// The forwarder's view of the store: read the outbox in order, remove what the server
/// acknowledged, park what it refused, remember the history cursor.
extension HealthStore {
    /// The oldest `limit` outbox entries after `afterSeq`, in order.
    public func outbox(after afterSeq: Int64 = 0, limit: Int) throws -> [OutboxEntry] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT seq, record_type, record_id, version, enqueued_at FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?
                """, arguments: [afterSeq, limit]).compactMap { row in
                guard let type = RecordType(rawValue: row["record_type"]) else { return nil }
                return OutboxEntry(seq: row["seq"], type: type, id: row["record_id"], version: row["version"],
                                   enqueuedAt: row["enqueued_at"])
            }
        }
    }

    /// The records of `entries` as stored now (nil for one that is gone), in one read.
    public func records(for entries: [OutboxEntry]) throws -> [HealthRecord?] {
        try pool.read { db in try entries.map { try RowDecoder.record(db, type: $0.type, id: $0.id) } }
    }

    /// Records waiting to be forwarded.
    public func outboxDepth() throws -> Int {
        try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM outbox") ?? 0 }
    }

    /// Removes acknowledged entries.
    public func acknowledge(_ seqs: [Int64]) throws {
        guard !seqs.isEmpty else { return }
        try pool.write { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM outbox WHERE seq = ?")
            for seq in seqs { try statement.execute(arguments: [seq]) }
        }
    }

    /// Moves refused entries out of the outbox into `dead_letters`, with their reasons, and
    /// removes acknowledged ones, in one transaction.
    public func settle(acknowledged: [Int64], refused: [(seq: Int64, reason: String)]) throws {
        let now = ISO8601.string(Date())
        try pool.write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM outbox WHERE seq = ?")
            for seq in acknowledged { try delete.execute(arguments: [seq]) }
            for (seq, reason) in refused {
                try db.execute(sql: """
                    INSERT OR REPLACE INTO dead_letters (seq, record_type, record_id, version, enqueued_at, reason, failed_at)
                    SELECT seq, record_type, record_id, version, enqueued_at, ?, ? FROM outbox WHERE seq = ?
                    """, arguments: [reason, now, seq])
                try delete.execute(arguments: [seq])
            }
        }
    }

    /// Records the server refused, newest first.
    public func deadLetters(limit: Int = 100) throws -> [DeadLetter] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM dead_letters ORDER BY failed_at DESC, seq DESC LIMIT ?",
                             arguments: [limit]).map { row in
                DeadLetter(seq: row["seq"], type: row["record_type"], id: row["record_id"], version: row["version"],
                           reason: row["reason"], failedAt: row["failed_at"])
            }
        }
    }

    public func deadLetterCount() throws -> Int {
        try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM dead_letters") ?? 0 }
    }

    /// Stores records pulled from the server (the user's other devices): same version rules as
    /// every write, but no outbox rows (the server has them), and the history cursor saved in the
    /// same transaction, so a crash never skips or repeats a page.
    @discardableResult
    public func writePulled(_ records: [HealthRecord], cursor: Int64) throws -> WriteResult {
        try pool.write { db in
            let result = try RecordWriter(db: db).write(records, importHash: nil, enqueue: false)
            try Self.setState(db, "history_cursor", String(cursor))
            return result
        }
    }

    /// A named sync value (`history_cursor`, `last_success_at`, `last_error`, ...), or nil.
    public func syncState(_ key: String) throws -> String? {
        try pool.read { try String.fetchOne($0, sql: "SELECT value FROM sync_state WHERE key = ?", arguments: [key]) }
    }

    /// Sets (or with nil, clears) a named sync value.
    public func setSyncState(_ key: String, _ value: String?) throws {
        try pool.write { db in try Self.setState(db, key, value) }
    }

    static func setState(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM sync_state WHERE key = ?", arguments: [key])
        }
    }
}
