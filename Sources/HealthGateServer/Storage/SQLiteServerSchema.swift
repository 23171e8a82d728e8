import GRDB

/// The server database's schema, as named migrations. A migration is never edited once
/// released: a change is a new migration.
enum SQLiteServerSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("server-v1-accounts", migrate: createAccounts)
        migrator.registerMigration("server-v1-records", migrate: createRecords)
        return migrator
    }

    private static func createAccounts(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE users (
                id TEXT PRIMARY KEY,                    -- UUID, lower case
                email TEXT NOT NULL UNIQUE,             -- trimmed, lower case
                password_hash TEXT NOT NULL,            -- bcrypt
                created_at TEXT NOT NULL                -- ISO 8601 UTC
            ) STRICT;

            CREATE TABLE devices (
                id TEXT PRIMARY KEY,                    -- UUID, lower case
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,        -- SHA-256 of the device token, hex
                is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
                created_at TEXT NOT NULL,
                last_seen_at TEXT,
                revoked_at TEXT                         -- set by logout: the token no longer works
            ) STRICT;
            CREATE INDEX devices_by_user ON devices(user_id);
            -- At most one primary device per user.
            CREATE UNIQUE INDEX devices_one_primary ON devices(user_id) WHERE is_primary = 1;
            """)
    }

    private static func createRecords(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE records (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- change number: a new version gets a new one
                user_id TEXT NOT NULL REFERENCES users(id),
                record_id TEXT NOT NULL,                -- UUID, lower case
                version INTEGER NOT NULL CHECK (version >= 1),
                type TEXT NOT NULL CHECK (type IN ('workout', 'sleep', 'habit', 'measurement')),
                start_time REAL NOT NULL,               -- Unix epoch seconds (UTC)
                end_time REAL NOT NULL,
                body TEXT NOT NULL,                     -- the record as canonical JSON
                device_id TEXT NOT NULL REFERENCES devices(id),
                received_at TEXT NOT NULL,
                active_s REAL NOT NULL DEFAULT 0,       -- what the record adds to summaries
                distance_m REAL NOT NULL DEFAULT 0,
                energy_kcal REAL NOT NULL DEFAULT 0,
                sleep_s REAL NOT NULL DEFAULT 0,
                UNIQUE (user_id, record_id)
            ) STRICT;
            CREATE INDEX records_by_user_seq ON records(user_id, seq);
            CREATE INDEX records_by_user_start ON records(user_id, start_time);
            """)
    }
}
