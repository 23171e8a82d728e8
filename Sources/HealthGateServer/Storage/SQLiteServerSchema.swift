import Crypto
import Foundation
import GRDB

/// The server database's schema, as named migrations. A migration is never edited once
/// released: a change is a new migration.
enum SQLiteServerSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("server-v1-accounts", migrate: createAccounts)
        migrator.registerMigration("server-v1-records", migrate: createRecords)
        migrator.registerMigration("server-v2-history-per-user", migrate: historyPerUser)
        migrator.registerMigration("server-v2-email-nfkc-casefold", migrate: normalizeEmails)
        migrator.registerMigration("server-v3-definitions", migrate: recordsWithDefinitions)
        migrator.registerMigration("server-v4-record-keys", migrate: recordsByKey)
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

    /// History cursors per user: each user's records are numbered 1, 2, 3 ... by a counter of
    /// their own (`users.change_seq`, the last number given), so that nobody learns from the
    /// gaps how much others store. Existing rows are renumbered per user in their old order;
    /// `server_meta.history_epoch` is set to a new random value, which tells clients holding
    /// cursors of the old numbering to start over. Deleted records stay as tombstones: `body`
    /// NULL, no times or figures, the version they had.
    private static func historyPerUser(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE users ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;  -- the last change number given

            CREATE TABLE records_per_user (
                user_id TEXT NOT NULL REFERENCES users(id),
                seq INTEGER NOT NULL,                   -- the user's change number: a new version or a deletion gets a new one
                record_id TEXT NOT NULL,                -- UUID, lower case
                version INTEGER NOT NULL CHECK (version >= 1),
                type TEXT NOT NULL CHECK (type IN ('workout', 'sleep', 'habit', 'measurement')),
                start_time REAL NOT NULL,               -- Unix epoch seconds (UTC); 0 for a tombstone
                end_time REAL NOT NULL,
                body TEXT,                              -- the record as canonical JSON; NULL: deleted (a tombstone)
                device_id TEXT NOT NULL REFERENCES devices(id),  -- the uploader of this version, or the deleter
                received_at TEXT NOT NULL,
                active_s REAL NOT NULL DEFAULT 0,       -- what the record adds to summaries
                distance_m REAL NOT NULL DEFAULT 0,
                energy_kcal REAL NOT NULL DEFAULT 0,
                sleep_s REAL NOT NULL DEFAULT 0,
                UNIQUE (user_id, record_id)
            ) STRICT;

            INSERT INTO records_per_user (user_id, seq, record_id, version, type, start_time, end_time, body, device_id,
                                          received_at, active_s, distance_m, energy_kcal, sleep_s)
            SELECT user_id, row_number() OVER (PARTITION BY user_id ORDER BY seq), record_id, version, type, start_time,
                   end_time, body, device_id, received_at, active_s, distance_m, energy_kcal, sleep_s
            FROM records ORDER BY user_id, seq;

            UPDATE users SET change_seq = coalesce((SELECT max(seq) FROM records_per_user r WHERE r.user_id = users.id), 0);

            DROP TABLE records;
            ALTER TABLE records_per_user RENAME TO records;
            CREATE UNIQUE INDEX records_by_user_seq ON records(user_id, seq);
            CREATE INDEX records_by_user_start ON records(user_id, start_time);

            CREATE TABLE server_meta (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT;
            INSERT INTO server_meta (key, value) VALUES ('history_epoch', lower(hex(randomblob(16))));
            """)
    }

    /// Definitions (habits and goals, triggers, saved meals, profile, preferences) are a record
    /// type too. SQLite cannot change a CHECK constraint: the table is rebuilt with every row kept.
    private static func recordsWithDefinitions(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE records_v3 (
                user_id TEXT NOT NULL REFERENCES users(id),
                seq INTEGER NOT NULL,                   -- the user's change number: a new version or a deletion gets a new one
                record_id TEXT NOT NULL,                -- UUID, lower case
                version INTEGER NOT NULL CHECK (version >= 1),
                type TEXT NOT NULL CHECK (type IN ('workout', 'sleep', 'habit', 'measurement', 'definition')),
                start_time REAL NOT NULL,               -- Unix epoch seconds (UTC); 0 for a tombstone
                end_time REAL NOT NULL,
                body TEXT,                              -- the record as canonical JSON; NULL: deleted (a tombstone)
                device_id TEXT NOT NULL REFERENCES devices(id),  -- the uploader of this version, or the deleter
                received_at TEXT NOT NULL,
                active_s REAL NOT NULL DEFAULT 0,       -- what the record adds to summaries
                distance_m REAL NOT NULL DEFAULT 0,
                energy_kcal REAL NOT NULL DEFAULT 0,
                sleep_s REAL NOT NULL DEFAULT 0,
                UNIQUE (user_id, record_id)
            ) STRICT;
            INSERT INTO records_v3 SELECT user_id, seq, record_id, version, type, start_time, end_time, body, device_id,
                received_at, active_s, distance_m, energy_kcal, sleep_s FROM records;
            DROP TABLE records;
            ALTER TABLE records_v3 RENAME TO records;
            CREATE UNIQUE INDEX records_by_user_seq ON records(user_id, seq);
            CREATE INDEX records_by_user_start ON records(user_id, start_time);
            """)
    }

    /// A record is found by its key, ``recordKey(userId:recordId:)``, in a unique index of 16-byte
    /// keys, instead of by the unique (user id, record id) pair of two 36-character texts. Record
    /// ids are random, so each upsert lands on a random page of that index; with a million records
    /// an upload of 1,000 dirtied as many pages either way, but the pair's index was three times
    /// the size (80 bytes an entry against 24), and writing it made the upload 13 us a record
    /// slower (issue 26: docs/server.md, "Capacity"). The table is rebuilt with every row kept.
    private static func recordsByKey(_ db: Database) throws {
        let keyFunction = DatabaseFunction("healthgate_record_key", argumentCount: 2, pure: true) { values in
            guard let user = String.fromDatabaseValue(values[0]), let record = String.fromDatabaseValue(values[1]) else { return nil }
            return recordKey(userId: user, recordId: record)
        }
        db.add(function: keyFunction)
        defer { db.remove(function: keyFunction) }
        try db.execute(sql: """
            CREATE TABLE records_v4 (
                user_id TEXT NOT NULL REFERENCES users(id),
                seq INTEGER NOT NULL,                   -- the user's change number: a new version or a deletion gets a new one
                record_id TEXT NOT NULL,                -- UUID, lower case
                record_key BLOB NOT NULL UNIQUE CHECK (length(record_key) = 16),  -- recordKey(user_id, record_id)
                version INTEGER NOT NULL CHECK (version >= 1),
                type TEXT NOT NULL CHECK (type IN ('workout', 'sleep', 'habit', 'measurement', 'definition')),
                start_time REAL NOT NULL,               -- Unix epoch seconds (UTC); 0 for a tombstone
                end_time REAL NOT NULL,
                body TEXT,                              -- the record as canonical JSON; NULL: deleted (a tombstone)
                device_id TEXT NOT NULL REFERENCES devices(id),  -- the uploader of this version, or the deleter
                received_at TEXT NOT NULL,
                active_s REAL NOT NULL DEFAULT 0,       -- what the record adds to summaries
                distance_m REAL NOT NULL DEFAULT 0,
                energy_kcal REAL NOT NULL DEFAULT 0,
                sleep_s REAL NOT NULL DEFAULT 0
            ) STRICT;
            INSERT INTO records_v4 (user_id, seq, record_id, record_key, version, type, start_time, end_time, body, device_id,
                                    received_at, active_s, distance_m, energy_kcal, sleep_s)
            SELECT user_id, seq, record_id, healthgate_record_key(user_id, record_id), version, type, start_time, end_time, body,
                   device_id, received_at, active_s, distance_m, energy_kcal, sleep_s
            FROM records ORDER BY user_id, seq;
            DROP TABLE records;
            ALTER TABLE records_v4 RENAME TO records;
            CREATE UNIQUE INDEX records_by_user_seq ON records(user_id, seq);
            CREATE INDEX records_by_user_start ON records(user_id, start_time);
            """)
    }

    /// The key a record is found by: the first 16 bytes of SHA-256 over the user id, a zero byte
    /// and the record id. It is unique per (user, record id) as the pair was: two keys of
    /// different pairs would be a collision of 128 bits of SHA-256. A lookup still compares the
    /// user and the record id, so such a collision could refuse an upload, never mix two accounts.
    static func recordKey(userId: String, recordId: String) -> Data {
        var hash = SHA256()
        hash.update(data: Array(userId.utf8))
        hash.update(data: [0])
        hash.update(data: Array(recordId.utf8))
        return Data(hash.finalize().prefix(16))
    }

    /// Emails are compared as ``EmailAddress/normalize(_:)`` makes them (NFKC and case folding,
    /// no longer only lower case), and stored normalised. Accounts whose emails normalise alike
    /// collide: the one whose email already is the normalised form keeps it, else the oldest gets it;
    /// every other one keeps its stored email unchanged (its devices keep working, but a login
    /// by email reaches the holder) and is listed in `email_collisions` for an operator to settle
    /// with its owner.
    private static func normalizeEmails(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE email_collisions (
                user_id TEXT PRIMARY KEY,               -- the account that kept its stored email
                email TEXT NOT NULL,                    -- that email
                normalized TEXT NOT NULL,               -- what it normalises to
                holder_id TEXT NOT NULL                 -- the account that has the normalised email
            ) STRICT;
            """)
        var groups: [String: [(id: String, email: String)]] = [:]
        var order: [String] = []
        let rows = try Row.fetchAll(db, sql: "SELECT id, email FROM users ORDER BY created_at, rowid")
        for row in rows {
            let email: String = row["email"]
            let normalized = EmailAddress.normalize(email)
            if groups[normalized] == nil { order.append(normalized) }
            groups[normalized, default: []].append((row["id"], email))
        }
        for normalized in order {
            let members = groups[normalized] ?? []
            // The account already holding the normalised email keeps it; else the oldest gets it.
            let owner = try String.fetchOne(db, sql: "SELECT id FROM users WHERE email = ?", arguments: [normalized])
            let holder = owner ?? members[0].id
            if owner == nil {
                try db.execute(sql: "UPDATE users SET email = ? WHERE id = ?", arguments: [normalized, holder])
            }
            for member in members where member.id != holder {
                try db.execute(sql: "INSERT INTO email_collisions (user_id, email, normalized, holder_id) VALUES (?, ?, ?, ?)",
                               arguments: [member.id, member.email, normalized, holder])
            }
        }
    }
}
