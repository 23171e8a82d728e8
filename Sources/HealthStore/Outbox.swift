public import Foundation
import GRDB
public import HealthModel

/// One row of the outbox: a record version waiting to be forwarded.
public struct OutboxEntry: Sendable, Equatable {
    public var seq: Int64
    /// The record type as stored (a newer install may have queued a type this one does not know).
    public var typeName: String
    public var id: String
    public var version: Int
    public var enqueuedAt: String

    /// The record type, if this version knows it.
    public var type: RecordType? { RecordType(rawValue: typeName) }
}

/// What the store holds now for an outbox entry.
public enum OutboxContent: Sendable, Equatable {
    /// The record, to send.
    case record(HealthRecord)
    /// Deleted: its tombstone (type, id and the version of the deletion), to send.
    case tombstone(type: RecordType, id: String, version: Int)
    /// No longer stored (never written, or erased): nothing to send.
    case gone
    /// There, but this version cannot read it (a type or kind a newer install wrote): kept, and
    /// given up as a dead letter with this reason until an upgrade can send it.
    case unreadable(String)

    /// The record, when there is one to send.
    public var record: HealthRecord? {
        if case .record(let record) = self { return record }
        return nil
    }
}

/// A record deleted on the server (a tombstone in the history).
public struct PulledDeletion: Sendable, Equatable {
    public var type: RecordType
    public var id: String
    public var version: Int
    public init(type: RecordType, id: String, version: Int) {
        self.type = type
        self.id = id
        self.version = version
    }
}

/// A record pulled from the server that could not be stored (see ``HealthStore/holdPulled``).
public struct HeldRecord: Sendable, Equatable, Encodable {
    /// The row's own number.
    public var number: Int64
    public var id: String?
    public var version: Int?
    public var type: String?
    public var serverSeq: Int64?
    /// The record as the server sent it (JSON).
    public var body: String
    public var reason: String
    public var receivedAt: String

    public init(number: Int64 = 0, id: String?, version: Int?, type: String?, serverSeq: Int64?, body: String, reason: String,
                receivedAt: String = ISO8601.string(Date())) {
        self.number = number
        self.id = id
        self.version = version
        self.type = type
        self.serverSeq = serverSeq
        self.body = body
        self.reason = reason
        self.receivedAt = receivedAt
    }

    enum CodingKeys: String, CodingKey {
        case number, id, version, type, serverSeq = "server_seq", reason, receivedAt = "received_at"
    }
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
    public func outbox(after afterSeq: Int64 = 0, limit: Int) async throws -> [OutboxEntry] {
        try await reading { db in
            try Row.fetchAll(db, sql: """
                SELECT seq, record_type, record_id, version, enqueued_at FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?
                """, arguments: [afterSeq, limit]).map { row in
                OutboxEntry(seq: row[0], typeName: row[1], id: row[2], version: row[3], enqueuedAt: row[4])
            }
        }
    }

    /// What the store holds now for each of `entries`, in one read. Measurements and habit
    /// events (most of any outbox) are read with one statement per type and 500 records, not
    /// two lookups each: reading was half the forwarder's own work.
    public func records(for entries: [OutboxEntry]) async throws -> [OutboxContent] {
        try await reading { db in
            let flat = try RowDecoder.flatContents(db, ids: entries.filter { $0.type?.isFlat == true }.map { ($0.type!, $0.id) })
            return try entries.map { entry in
                guard let type = entry.type else {
                    return .unreadable("record type '\(entry.typeName)' is not known to this version of HealthGate")
                }
                if type.isFlat { return flat[RowDecoder.FlatKey(type: type, id: entry.id)] ?? .gone }
                return try RowDecoder.content(db, type: type, id: entry.id)
            }
        }
    }

    /// Records waiting to be forwarded.
    public func outboxDepth() async throws -> Int {
        try await reading { try Int.fetchOne($0, sql: "SELECT count(*) FROM outbox") ?? 0 }
    }

    /// Removes acknowledged entries.
    public func acknowledge(_ seqs: [Int64]) async throws {
        guard !seqs.isEmpty else { return }
        try await writing { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM outbox WHERE seq = ?")
            for seq in seqs { try statement.execute(arguments: [seq]) }
        }
    }

    /// Moves refused entries out of the outbox into `dead_letters`, with their reasons, and
    /// removes acknowledged ones, in one transaction.
    public func settle(acknowledged: [Int64], refused: [(seq: Int64, reason: String)]) async throws {
        let now = ISO8601.string(Date())
        try await writing { db in
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

    /// Records given up (refused by the server, or unreadable here), newest first; all of them
    /// when `limit` is nil.
    public func deadLetters(limit: Int? = 100) async throws -> [DeadLetter] {
        try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM dead_letters ORDER BY failed_at DESC, seq DESC LIMIT ?",
                             arguments: [limit ?? -1]).map { row in
                DeadLetter(seq: row["seq"], type: row["record_type"], id: row["record_id"], version: row["version"],
                           reason: row["reason"], failedAt: row["failed_at"])
            }
        }
    }

    public func deadLetterCount() async throws -> Int {
        try await reading { try Int.fetchOne($0, sql: "SELECT count(*) FROM dead_letters") ?? 0 }
    }

    /// Puts dead letters back in the outbox (all of them, or those with these seqs), as new
    /// outbox entries in one transaction; answers how many. For after the cause is fixed: an
    /// upgrade, a server that accepts them now.
    @discardableResult
    public func retryDeadLetters(seqs: [Int64]? = nil) async throws -> Int {
        try await writing { db in
            let chosen = try Int64.fetchAll(db, sql: "SELECT seq FROM dead_letters ORDER BY seq")
                .filter { seqs?.contains($0) ?? true }
            let move = try db.cachedStatement(sql: """
                INSERT INTO outbox (record_type, record_id, version, enqueued_at)
                SELECT record_type, record_id, version, enqueued_at FROM dead_letters WHERE seq = ?
                """)
            let delete = try db.cachedStatement(sql: "DELETE FROM dead_letters WHERE seq = ?")
            for seq in chosen {
                try move.execute(arguments: [seq])
                try delete.execute(arguments: [seq])
            }
            return chosen.count
        }
    }

    /// Stores records pulled from the server (the user's other devices): same version rules as
    /// every write, but no outbox rows (the server has them). In the same transaction: the
    /// records that could not be stored are held (``heldRecords()``), older held versions of
    /// what was stored are dropped, and the history cursor (and the server's cursor epoch) saved,
    /// so a crash never skips or repeats a page and nothing the cursor moved past is lost.
    /// Tombstones (records deleted on another device or on request) mark the record deleted here
    /// when the version held here is not newer: at equal versions the tombstone wins, as on the
    /// server (a record held here as a tombstone is not brought back by data of its version).
    @discardableResult
    ///
    /// `serverKept`: records another device uploaded, which the server holds as their latest
    /// version: each replaces data of the same version held here (two installs that edited one
    /// version offline end with the version the server stored first), but not a tombstone of it.
    public func writePulled(_ records: [HealthRecord], deletions: [PulledDeletion] = [], held: [HeldRecord] = [], cursor: Int64,
                            epoch: String? = nil, serverKept: Set<RecordID> = []) async throws -> WriteResult {
        try await writing { db in
            var result = try RecordWriter(db: db).write(records, importHash: nil, enqueue: false, replacingEqual: serverKept)
            let now = ISO8601.string(Date())
            let writer = RecordWriter(db: db)
            for deletion in deletions {
                let table = RecordWriter.table(of: deletion.type)
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table) WHERE id = ? AND version <= ? AND deleted = 0",
                                     arguments: [deletion.id, deletion.version]) != nil {
                    try writer.keepVersion(type: deletion.type, id: deletion.id)
                }
                try db.execute(sql: """
                    UPDATE \(RecordWriter.table(of: deletion.type)) SET deleted = 1, version = ?, updated_at = ?
                    WHERE id = ? AND version <= ? AND deleted = 0
                    """, arguments: [deletion.version, now, deletion.id, deletion.version])
                result.updated += db.changesCount
                try db.execute(sql: "DELETE FROM held_records WHERE record_id = ? AND version <= ?",
                               arguments: [deletion.id, deletion.version])
            }
            try Self.insertHeld(db, held)
            try Self.dropSupersededHeld(db, by: records)
            try Self.setState(db, "history_cursor", String(cursor))
            try Self.setState(db, "history_epoch", epoch)
            return result
        }
    }

    /// Records pulled from the server that are waiting, oldest first.
    public func heldRecords() async throws -> [HeldRecord] {
        try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM held_records ORDER BY id").map { row in
                HeldRecord(number: row["id"], id: row["record_id"], version: row["version"], type: row["record_type"],
                           serverSeq: row["server_seq"], body: row["body"], reason: row["reason"], receivedAt: row["received_at"])
            }
        }
    }

    public func heldRecordCount() async throws -> Int {
        try await reading { try Int.fetchOne($0, sql: "SELECT count(*) FROM held_records") ?? 0 }
    }

    /// Stores held records that can be read now (`records`, each with the number of the held row
    /// it came from) and removes their rows; updates the reason of those still held.
    @discardableResult
    public func releaseHeld(_ records: [(number: Int64, record: HealthRecord)], stillHeld: [(number: Int64, reason: String)] = [])
        async throws -> WriteResult {
        try await writing { db in
            let result = try RecordWriter(db: db).write(records.map(\.record), importHash: nil, enqueue: false)
            for (number, _) in records { try db.execute(sql: "DELETE FROM held_records WHERE id = ?", arguments: [number]) }
            for (number, reason) in stillHeld {
                try db.execute(sql: "UPDATE held_records SET reason = ? WHERE id = ?", arguments: [reason, number])
            }
            try Self.dropSupersededHeld(db, by: records.map(\.record))
            return result
        }
    }

    private static func insertHeld(_ db: Database, _ held: [HeldRecord]) throws {
        for h in held {
            try db.execute(sql: """
                INSERT INTO held_records (record_id, version, record_type, server_seq, body, reason, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [h.id, h.version, h.type, h.serverSeq, h.body, h.reason, h.receivedAt])
        }
    }

    /// A held version older than (or equal to) one now stored is of no more use.
    private static func dropSupersededHeld(_ db: Database, by records: [HealthRecord]) throws {
        guard try Int.fetchOne(db, sql: "SELECT count(*) FROM held_records") ?? 0 > 0 else { return }
        for record in records {
            try db.execute(sql: "DELETE FROM held_records WHERE record_id = ? AND version <= ?",
                           arguments: [record.id.description, record.version])
        }
    }

    /// A named sync value (`history_cursor`, `last_success_at`, `last_error`, ...), or nil.
    public func syncState(_ key: String) async throws -> String? {
        try await reading { try String.fetchOne($0, sql: "SELECT value FROM sync_state WHERE key = ?", arguments: [key]) }
    }

    /// Sets (or with nil, clears) a named sync value.
    public func setSyncState(_ key: String, _ value: String?) async throws {
        try await writing { db in try Self.setState(db, key, value) }
    }

    static func setState(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM sync_state WHERE key = ?", arguments: [key])
        }
    }
}

extension RecordType {
    /// Stored in one row of its own table (no series or stages in other tables): read in bulk.
    fileprivate var isFlat: Bool { self == .measurement || self == .habit }
}
