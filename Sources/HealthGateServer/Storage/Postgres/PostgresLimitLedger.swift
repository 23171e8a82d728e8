import Crypto
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The login and registration limits' events in PostgreSQL (`limit_events`), so that every
/// server process on the database counts together. Each key keeps at most its rule's limit of
/// events (older ones are deleted when one is counted), and events older than the longest window
/// are deleted every few hundred counts. Keys are kept as their SHA-256: no email or address is
/// readable in the table (and no byte PostgreSQL's text cannot hold, such as NUL, reaches it); a
/// deleted account's email count goes with it (``PostgresServerStore/deleteAccount(userId:)``).
final class PostgresLimitLedger: LimitLedger {
    let database: PostgresDatabase
    let rules: [LimitKind: EventWindow.Policy]
    private let logger: Logger
    private let counted = Counter()

    init(database: PostgresDatabase, rules: [LimitKind: EventWindow.Policy], logger: Logger) {
        self.database = database
        self.rules = rules
        self.logger = logger
    }

    /// What the table holds for a key.
    static func stored(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    func recent(_ keys: [LimitKey], now: Date) async throws -> [LimitKey: [Date]] {
        let kinds = keys.map(\.kind.rawValue), names = keys.map { Self.stored($0.key) }
        let cutoffs = keys.map { now.addingTimeInterval(-(rules[$0.kind]?.window ?? 0)) }
        let query: PostgresQuery = """
            SELECT q.i, l.at FROM unnest(\(kinds)::text[], \(names)::text[], \(cutoffs)::timestamptz[]) WITH ORDINALITY AS q(kind, key, cutoff, i)
            JOIN limit_events l ON l.kind = q.kind AND l.key = q.key AND l.at > q.cutoff AND l.at <= \(now)
            ORDER BY l.at
            """
        let found = try await database.read { connection in
            var found: [Int: [Date]] = [:]
            for try await (index, at) in try await connection.query(query, logger: self.logger).decode((Int, Date).self) {
                found[index - 1, default: []].append(at)
            }
            return found
        }
        var events: [LimitKey: [Date]] = [:]
        for (index, dates) in found where keys.indices.contains(index) {
            events[keys[index]] = Array(dates.suffix(rules[keys[index].kind]?.limit ?? 1))
        }
        return events
    }

    func record(_ keys: [LimitKey], now: Date) async throws {
        let kinds = keys.map(\.kind.rawValue), names = keys.map { Self.stored($0.key) }
        let limits = keys.map { Int64(rules[$0.kind]?.limit ?? 1) }
        let prune = counted.next() % 500 == 0
        let longest = rules.values.map(\.window).max() ?? 0
        try await database.transaction { connection in
            try await connection.query("""
                INSERT INTO limit_events (kind, key, at) SELECT kind, key, \(now) FROM unnest(\(kinds)::text[], \(names)::text[]) AS k(kind, key)
                """, logger: self.logger)
            // Each key keeps its latest `limit` events (what the rules read).
            try await connection.query("""
                DELETE FROM limit_events l USING unnest(\(kinds)::text[], \(names)::text[], \(limits)::int8[]) AS k(kind, key, keep)
                WHERE l.kind = k.kind AND l.key = k.key AND l.ctid NOT IN (
                    SELECT m.ctid FROM limit_events m WHERE m.kind = k.kind AND m.key = k.key ORDER BY m.at DESC LIMIT k.keep)
                """, logger: self.logger)
            if prune {
                try await connection.query("DELETE FROM limit_events WHERE at < \(now.addingTimeInterval(-longest))", logger: self.logger)
            }
        }
    }

    func clear(_ key: LimitKey) async throws {
        try await database.read { connection in
            try await connection.query("DELETE FROM limit_events WHERE kind = \(key.kind.rawValue) AND key = \(Self.stored(key.key))",
                                       logger: self.logger)
        }
    }

    /// Counts the ledger's writes (which of them also prunes).
    private final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.add(1, ordering: .relaxed).newValue }
    }
}
