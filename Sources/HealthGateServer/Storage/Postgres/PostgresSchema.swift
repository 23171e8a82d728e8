import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, as named migrations applied in order. A migration is never edited once
/// released: a change is a new migration. Each runs in one transaction with its name's row in
/// `schema_migrations` (PostgreSQL's DDL is transactional: an interrupted migration left nothing
/// and runs again), under a transaction-scoped advisory lock, so that several server processes
/// starting together migrate once.
///
/// Every table that holds a user's data has `user_id` in its primary key or leading its
/// indexes, and every statement of ``PostgresServerStore`` on it names one user: the layout a
/// sharded PostgreSQL (Citus, distributing by `user_id`) needs (docs/server.md).
enum PostgresSchema {
    struct Migration {
        var name: String
        var statements: [String]
    }

    static let migrations: [Migration] = [
        Migration(name: "pg-v1-schema", statements: [
            """
            CREATE TABLE server_meta (
                key text PRIMARY KEY,
                value text NOT NULL
            )
            """,
            // Names the history numbering (see SQLiteServerSchema.historyPerUser); a move from
            // SQLite copies the old file's value over it, so cursors stay valid.
            "INSERT INTO server_meta (key, value) VALUES ('history_epoch', replace(gen_random_uuid()::text, '-', ''))",
            """
            CREATE TABLE users (
                id text PRIMARY KEY,                        -- UUID, lower case
                email text NOT NULL UNIQUE,                 -- normalized (EmailAddress.normalize)
                password_hash text NOT NULL,                -- bcrypt
                created_at timestamptz NOT NULL,
                change_seq bigint NOT NULL DEFAULT 0        -- the last change number given to the user's records
            )
            """,
            """
            CREATE TABLE devices (
                id text PRIMARY KEY,                        -- UUID, lower case
                user_id text NOT NULL REFERENCES users(id),
                ordinal bigint GENERATED ALWAYS AS IDENTITY, -- creation order (lists are oldest first)
                name text NOT NULL,
                token_hash text NOT NULL UNIQUE,            -- SHA-256 of the device token, hex
                is_primary boolean NOT NULL DEFAULT false,
                created_at timestamptz NOT NULL,
                last_seen_at timestamptz,
                revoked_at timestamptz                      -- set by logout: the token no longer works
            )
            """,
            "CREATE INDEX devices_by_user ON devices(user_id, ordinal)",
            "CREATE UNIQUE INDEX devices_one_primary ON devices(user_id) WHERE is_primary",
            """
            CREATE TABLE records (
                user_id text NOT NULL REFERENCES users(id),
                record_id text NOT NULL,                    -- UUID, lower case
                seq bigint NOT NULL,                        -- the user's change number: a new version or a deletion gets a new one
                version bigint NOT NULL CHECK (version >= 1),
                type text NOT NULL CHECK (type IN ('workout', 'sleep', 'habit', 'measurement', 'definition')),
                start_time double precision NOT NULL,       -- Unix epoch seconds (UTC); 0 for a tombstone
                end_time double precision NOT NULL,
                body text,                                  -- the record as canonical JSON (kept byte for byte); NULL: a tombstone
                device_id text NOT NULL REFERENCES devices(id),  -- the uploader of this version, or the deleter
                received_at timestamptz NOT NULL,
                active_s double precision NOT NULL DEFAULT 0,    -- what the record adds to summaries
                distance_m double precision NOT NULL DEFAULT 0,
                energy_kcal double precision NOT NULL DEFAULT 0,
                sleep_s double precision NOT NULL DEFAULT 0,
                PRIMARY KEY (user_id, record_id)
            )
            """,
            "CREATE UNIQUE INDEX records_by_user_seq ON records(user_id, seq)",
            "CREATE INDEX records_by_user_start ON records(user_id, start_time)",
            // Accounts whose emails normalised alike in an older SQLite file (copied by a move).
            """
            CREATE TABLE email_collisions (
                user_id text PRIMARY KEY,
                email text NOT NULL,
                normalized text NOT NULL,
                holder_id text NOT NULL
            )
            """,
            // Failed and successful logins and registrations (the login limits, shared by every
            // server process): one row per event, kept for the longest window.
            """
            CREATE TABLE limit_events (
                kind text NOT NULL,                         -- pair, address, email, known, registration
                key text NOT NULL,
                at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX limit_events_by_key ON limit_events(kind, key, at)",
            "CREATE INDEX limit_events_by_time ON limit_events(at)",
        ])
    ]

    /// The lock every migrating process takes (any number: only it uses it).
    static let lockKey: Int64 = 0x4847_5345_5256  // "HGSERV"

    /// Applies the migrations not yet applied, in order; answers the names it applied.
    static func migrate(_ database: PostgresDatabase, logger: Logger) async throws -> [String] {
        try await database.transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name text PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
        }
        var applied: [String] = []
        for migration in migrations {
            let done = try await database.transaction { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                let rows = try await connection.query("SELECT 1 FROM schema_migrations WHERE name = \(migration.name)",
                                                      logger: logger)
                for try await _ in rows { return false }
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (name) VALUES (\(migration.name))", logger: logger)
                return true
            }
            if done { applied.append(migration.name) }
        }
        return applied
    }

    /// Names of the migrations applied, in order (empty for a database never migrated).
    static func applied(_ database: PostgresDatabase, logger: Logger) async throws -> [String] {
        try await database.read { connection in
            let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present { return [] }
            var names: [String] = []
            let rows = try await connection.query("SELECT name FROM schema_migrations ORDER BY applied_at, name", logger: logger)
            for try await name in rows.decode(String.self) { names.append(name) }
            return names
        }
    }
}
