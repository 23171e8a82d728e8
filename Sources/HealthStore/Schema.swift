import GRDB

/// The database schema, as named migrations. A migration is never edited once released: a
/// change is a new migration. `docs/schema.md` documents every table for `sqlite3` users.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-import-ledger", migrate: createImportLedger)
        migrator.registerMigration("v1-records", migrate: createRecordTables)
        migrator.registerMigration("v1-outbox", migrate: createOutbox)
        migrator.registerMigration("v2-live-workouts", migrate: addLiveWorkouts)
        migrator.registerMigration("v3-sync", migrate: createSyncTables)
        migrator.registerMigration("v4-outbox-sequential", migrate: outboxWithoutIdIndex)
        migrator.registerMigration("v5-held-records", migrate: createHeldRecords)
        migrator.registerMigration("v6-import-progress", migrate: importLedgerWithProgress)
        migrator.registerMigration("v7-definitions", migrate: createDefinitions)
        migrator.registerMigration("v8-record-versions", migrate: createRecordVersions)
        migrator.registerMigration("v9-sleep-assessment", migrate: addSleepAssessment)
        migrator.registerMigration("v10-habit-totals-index", migrate: coverHabitTotals)
        migrator.registerMigration("v11-i15-pair-glucose-sync", migrate: createGlucoseSync)
        migrator.registerMigration("v12-glucose-last-record", migrate: addGlucoseLastRecord)
        migrator.registerMigration("v13-driver-checkpoints", migrate: createDriverCheckpoints)
        migrator.registerMigration("v14-day-start", migrate: addDayStart)
        migrator.registerMigration("v15-skipped-days", migrate: indexSkippedDays)
        migrator.registerMigration("v16-goal-weight", migrate: addGoalWeight)
        migrator.registerMigration("v17-derived-habits", migrate: addDerivedHabits)
        migrator.registerMigration("v18-derived-days", migrate: createDerivedDays)
        migrator.registerMigration("v19-measurement-hours", migrate: createMeasurementHours)
        migrator.registerMigration("v20-derived-change-spans", migrate: noteDerivedChangeSpans)
        return migrator
    }

    private static func createImportLedger(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE imports (
                content_hash TEXT PRIMARY KEY,          -- SHA-256 of the file's bytes, hex
                path TEXT NOT NULL,                     -- path as given when first seen
                size_bytes INTEGER NOT NULL,
                driver TEXT NOT NULL,                   -- fit, tcx, gpx ...
                status TEXT NOT NULL CHECK (status IN ('imported', 'partial', 'filtered', 'failed')),
                records INTEGER NOT NULL DEFAULT 0,     -- records stored from this file (all imports of it)
                error TEXT,                             -- why the file failed or is partial
                imported_at TEXT NOT NULL
            ) STRICT;
            """)
    }

    private static func createRecordTables(_ db: Database) throws {
        // Columns every record table shares.
        let common = """
            source_driver TEXT NOT NULL,
            source_device TEXT,
            source_file TEXT,
            import_hash TEXT REFERENCES imports(content_hash),
            deleted INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
            """
        try db.execute(sql: """
            CREATE TABLE workouts (
                id TEXT PRIMARY KEY,
                version INTEGER NOT NULL CHECK (version >= 1),
                sport TEXT NOT NULL,
                sub_sport TEXT,
                start_time TEXT NOT NULL,
                end_time TEXT NOT NULL,
                elapsed_s REAL NOT NULL,
                timer_s REAL,
                distance_m REAL,
                energy_kcal REAL,
                energy_source TEXT CHECK (energy_source IN ('device', 'estimated')),
                avg_hr INTEGER,
                max_hr INTEGER,
                ascent_m REAL,
                descent_m REAL,
                multisport_id TEXT,
                \(common)
            ) STRICT;
            CREATE INDEX workouts_by_start ON workouts(start_time);

            CREATE TABLE laps (
                workout_id TEXT NOT NULL REFERENCES workouts(id) ON DELETE CASCADE,
                lap_index INTEGER NOT NULL,
                start_time TEXT NOT NULL,
                end_time TEXT NOT NULL,
                elapsed_s REAL NOT NULL,
                timer_s REAL,
                distance_m REAL,
                energy_kcal REAL,
                avg_hr INTEGER,
                max_hr INTEGER,
                PRIMARY KEY (workout_id, lap_index)
            ) STRICT, WITHOUT ROWID;

            CREATE TABLE samples (
                workout_id TEXT NOT NULL REFERENCES workouts(id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                time REAL NOT NULL,                     -- Unix epoch seconds (UTC)
                heart_rate INTEGER,
                cadence REAL,
                power_w REAL,
                speed_mps REAL,
                distance_m REAL,
                latitude REAL,
                longitude REAL,
                altitude_m REAL,
                temperature_c REAL,
                PRIMARY KEY (workout_id, seq)
            ) STRICT, WITHOUT ROWID;

            CREATE TABLE rr_intervals (
                workout_id TEXT NOT NULL REFERENCES workouts(id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                rr_s REAL NOT NULL,
                PRIMARY KEY (workout_id, seq)
            ) STRICT, WITHOUT ROWID;

            CREATE TABLE swim_lengths (
                workout_id TEXT NOT NULL REFERENCES workouts(id) ON DELETE CASCADE,
                length_index INTEGER NOT NULL,
                start_time TEXT NOT NULL,
                elapsed_s REAL NOT NULL,
                kind TEXT NOT NULL,
                strokes INTEGER,
                stroke TEXT,
                PRIMARY KEY (workout_id, length_index)
            ) STRICT, WITHOUT ROWID;

            CREATE TABLE sleep_sessions (
                id TEXT PRIMARY KEY,
                version INTEGER NOT NULL CHECK (version >= 1),
                start_time TEXT NOT NULL,
                end_time TEXT NOT NULL,
                total_sleep_s REAL NOT NULL,
                \(common)
            ) STRICT;
            CREATE INDEX sleep_by_start ON sleep_sessions(start_time);

            CREATE TABLE sleep_stages (
                session_id TEXT NOT NULL REFERENCES sleep_sessions(id) ON DELETE CASCADE,
                stage_index INTEGER NOT NULL,
                start_time TEXT NOT NULL,
                end_time TEXT NOT NULL,
                stage TEXT NOT NULL CHECK (stage IN ('awake', 'light', 'deep', 'rem', 'unknown')),
                PRIMARY KEY (session_id, stage_index)
            ) STRICT, WITHOUT ROWID;

            CREATE TABLE habit_events (
                id TEXT PRIMARY KEY,
                version INTEGER NOT NULL CHECK (version >= 1),
                habit TEXT NOT NULL,
                time TEXT NOT NULL,
                value REAL,
                category TEXT,
                unit TEXT,
                label TEXT,
                note TEXT,
                \(common)
            ) STRICT;
            CREATE INDEX habit_events_by_time ON habit_events(habit, time);

            CREATE TABLE measurements (
                id TEXT PRIMARY KEY,
                version INTEGER NOT NULL CHECK (version >= 1),
                kind TEXT NOT NULL,
                time TEXT NOT NULL,
                end_time TEXT,
                value REAL NOT NULL,
                unit TEXT NOT NULL,
                extra TEXT,                             -- JSON object of secondary values, or NULL
                \(common)
            ) STRICT;
            CREATE INDEX measurements_by_kind_time ON measurements(kind, time);
            """)
    }

    private static func createOutbox(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE outbox (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                record_type TEXT NOT NULL CHECK (record_type IN ('workout', 'sleep', 'habit', 'measurement')),
                record_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                enqueued_at TEXT NOT NULL,
                UNIQUE (record_id, version)
            ) STRICT;
            """)
    }

    /// Live drivers write a workout piece by piece while it is recorded; `in_progress` marks
    /// one whose last piece has not arrived (it is not in the outbox yet).
    private static func addLiveWorkouts(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE workouts ADD COLUMN in_progress INTEGER NOT NULL DEFAULT 0 CHECK (in_progress IN (0, 1));
            CREATE INDEX workouts_in_progress ON workouts(in_progress) WHERE in_progress = 1;
            """)
    }

    /// The forwarder's bookkeeping: records the server refused for good (moved out of the
    /// outbox with the reason), and small named values (history cursor, last success, last error).
    private static func createSyncTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE dead_letters (
                seq INTEGER PRIMARY KEY,                -- the outbox seq it had
                record_type TEXT NOT NULL,
                record_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                enqueued_at TEXT NOT NULL,
                reason TEXT NOT NULL,
                failed_at TEXT NOT NULL
            ) STRICT;

            CREATE TABLE sync_state (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT, WITHOUT ROWID;
            """)
    }

    /// The outbox without its UNIQUE (record_id, version): an index keyed by random ids made
    /// every acknowledged batch rewrite pages all over it (at a million queued records, most of
    /// the drain's disk writes). Nothing needs it: a record version is queued once, by the write
    /// that stored it, and a version sent twice is a harmless duplicate for the server. The
    /// sequence carries over, so no seq is ever used twice (dead letters keep theirs).
    private static func outboxWithoutIdIndex(_ db: Database) throws {
        let last = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'")
        try db.execute(sql: """
            CREATE TABLE outbox_v4 (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                record_type TEXT NOT NULL CHECK (record_type IN ('workout', 'sleep', 'habit', 'measurement')),
                record_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                enqueued_at TEXT NOT NULL
            ) STRICT;
            INSERT INTO outbox_v4 (seq, record_type, record_id, version, enqueued_at)
                SELECT seq, record_type, record_id, version, enqueued_at FROM outbox ORDER BY seq;
            DROP TABLE outbox;
            ALTER TABLE outbox_v4 RENAME TO outbox;
            """)
        if let last {
            try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = 'outbox'")
            try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('outbox', ?)", arguments: [last])
        }
    }

    /// Records pulled from the server that this version cannot store: they did not decode (a
    /// newer install's format) or break the model's rules. Kept as the server sent them, with the
    /// reason, and tried again at every pull (an upgrade may read them), so the history cursor
    /// can move past them without losing them.
    /// A large file is committed in several transactions (DriverKit's `FileImporter`): the
    /// ledger gains the status `in_progress` and the count of records the importer had handed
    /// over by the last of them, where an interrupted import resumes. SQLite cannot change a
    /// CHECK constraint: the table is rebuilt (GRDB defers foreign-key checks to the end of the
    /// migration, so the records' references to it hold throughout).
    private static func importLedgerWithProgress(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE imports_v6 (
                content_hash TEXT PRIMARY KEY,          -- SHA-256 of the file's bytes, hex
                path TEXT NOT NULL,                     -- path as given when first seen
                size_bytes INTEGER NOT NULL,
                driver TEXT NOT NULL,                   -- fit, tcx, gpx ...
                status TEXT NOT NULL CHECK (status IN ('imported', 'partial', 'filtered', 'failed', 'in_progress')),
                records INTEGER NOT NULL DEFAULT 0,     -- records stored from this file (all imports of it)
                error TEXT,                             -- why the file failed or is partial
                imported_at TEXT NOT NULL,
                handed_over INTEGER NOT NULL DEFAULT 0  -- in_progress: records the importer handed over, all committed
            ) STRICT;
            INSERT INTO imports_v6 (content_hash, path, size_bytes, driver, status, records, error, imported_at)
                SELECT content_hash, path, size_bytes, driver, status, records, error, imported_at FROM imports;
            DROP TABLE imports;
            ALTER TABLE imports_v6 RENAME TO imports;
            """)
    }

    /// Habits with their goals, vaping triggers, saved meals, the body profile and preferred units
    /// (HealthModel's `Definition`): records like the others, one row per definition, the kind's
    /// fields in columns (NULL where the kind has none).
    private static func createDefinitions(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE definitions (
                id TEXT PRIMARY KEY,                    -- derived from kind and name (case-folded)
                version INTEGER NOT NULL CHECK (version >= 1),
                kind TEXT NOT NULL,                     -- habit, trigger, meal, profile, preferences
                name TEXT NOT NULL,
                time TEXT NOT NULL,                     -- defined or last changed
                value_kind TEXT,                        -- habit: numeric, categorical, yes_no
                unit TEXT,                              -- habit
                categories TEXT,                        -- habit: JSON array of strings
                target_amount REAL,                     -- habit
                target_period TEXT,                     -- habit: day, week
                target_direction TEXT,                  -- habit: at_least, at_most
                kcal REAL,                              -- meal
                ingredients TEXT,                       -- meal: JSON array of {"name", "kcal"}
                weight_kg REAL,                         -- profile
                volume_unit TEXT,                       -- preferences: ml, fl_oz
                mass_unit TEXT,                         -- preferences: kg, lb
                source_driver TEXT NOT NULL,
                source_device TEXT,
                source_file TEXT,
                import_hash TEXT REFERENCES imports(content_hash),
                deleted INTEGER NOT NULL DEFAULT 0,
                updated_at TEXT NOT NULL
            ) STRICT;
            CREATE INDEX definitions_by_kind ON definitions(kind, name);
            """)
        // The outbox queues definitions too: its CHECK of the record types is rebuilt (numbering kept).
        let last = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'")
        try db.execute(sql: """
            CREATE TABLE outbox_v7 (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                record_type TEXT NOT NULL CHECK (record_type IN ('workout', 'sleep', 'habit', 'measurement', 'definition')),
                record_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                enqueued_at TEXT NOT NULL
            ) STRICT;
            INSERT INTO outbox_v7 (seq, record_type, record_id, version, enqueued_at)
                SELECT seq, record_type, record_id, version, enqueued_at FROM outbox ORDER BY seq;
            DROP TABLE outbox;
            ALTER TABLE outbox_v7 RENAME TO outbox;
            """)
        if let last {
            try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = 'outbox'")
            try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('outbox', ?)", arguments: [last])
        }
    }

    private static func createHeldRecords(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE held_records (
                id INTEGER PRIMARY KEY,
                record_id TEXT,                         -- when the envelope said
                version INTEGER,
                record_type TEXT,
                server_seq INTEGER,                     -- the server's change number
                body TEXT NOT NULL,                     -- the record as the server sent it (JSON)
                reason TEXT NOT NULL,
                received_at TEXT NOT NULL
            ) STRICT;
            CREATE INDEX held_records_by_record ON held_records(record_id);
            """)
    }

    /// The versions a record had before it was edited, deleted or replaced (by a pull, or an
    /// import of a newer version), for `healthgate history`: each as the sync protocol's record
    /// JSON, the one encoding of a whole record HealthGate has (a workout without its series,
    /// which an edit never changes). The stored row is the newest version; this table the others.
    private static func createRecordVersions(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE record_versions (
                record_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                record_type TEXT NOT NULL,
                deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
                body TEXT NOT NULL,                     -- {"data":...,"id","type","version"} or {"deleted":true,...}
                replaced_at TEXT NOT NULL,
                PRIMARY KEY (record_id, version)
            ) STRICT, WITHOUT ROWID;
            """)
    }

    /// A device's judgement of a night (Garmin's sleep score and awakenings), when it gives one.
    private static func addSleepAssessment(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE sleep_sessions ADD COLUMN score INTEGER CHECK (score BETWEEN 0 AND 100);
            ALTER TABLE sleep_sessions ADD COLUMN awakenings INTEGER CHECK (awakenings >= 0);
            """)
    }

    /// The habit index covers what the totals read (deleted, label, value after habit and
    /// time): `stats` and `today` sum every habit per local day from the index alone, with no
    /// lookup of each event's row (about a quarter of `stats --period week` over five years).
    /// Per glucose meter, the last sequence number whose records are stored: the next RACP
    /// download asks for the records after it (`ble download`, the ble driver).
    private static func createGlucoseSync(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE glucose_sync (
                device TEXT PRIMARY KEY,                -- the meter's address, as in source_device
                last_sequence INTEGER NOT NULL CHECK (last_sequence BETWEEN 0 AND 65535),
                updated_at TEXT NOT NULL
            ) STRICT;
            """)
    }

    /// The last stored record of each glucose meter as the meter sent it (its Glucose
    /// Measurement value, at most a GATT attribute's 512 bytes): a meter reset since has another
    /// record under that sequence number (`GlucoseCursor`). NULL for a cursor stored before.
    private static func addGlucoseLastRecord(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE glucose_sync ADD COLUMN last_record BLOB CHECK (length(last_record) BETWEEN 1 AND 512);
            """)
    }

    private static func coverHabitTotals(_ db: Database) throws {
        try db.execute(sql: """
            DROP INDEX habit_events_by_time;
            CREATE INDEX habit_events_by_habit_time ON habit_events(habit, time, deleted, label, value);
            """)
    }

    /// What each driver remembers about each device across runs (DriverKit's `DriverCheckpoint`):
    /// one JSON value per driver and device, written in the transaction that stores the records it
    /// covers. Replaces `glucose_sync`, whose rows become the `ble` driver's checkpoints:
    /// `{"record":"<hex>","sequence":N}` (no `record` for a row that had none).
    /// Preferences: the minute of the day at which the user's day starts (NULL: midnight). Nights
    /// belong to the day they end in (``DayBoundary``): sleep is found by its end.
    private static func addDayStart(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE definitions ADD COLUMN day_start_min INTEGER CHECK (day_start_min BETWEEN 0 AND 719);
            CREATE INDEX sleep_by_end ON sleep_sessions(end_time);
            """)
    }

    /// The days a habit was skipped (``HealthStore/everyHabitSkip(in:)``): few rows, read at
    /// every view, through an index of them alone.
    private static func indexSkippedDays(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX habit_events_skipped ON habit_events(time) WHERE label = 'skipped' AND deleted = 0")
    }

    /// The profile's goal weight (``BodyProfile/goalWeightKg``).
    private static func addGoalWeight(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE definitions ADD COLUMN goal_weight_kg REAL")
    }

    /// A derived habit's source and conditions (``HabitDerivation``), as the JSON the wire uses.
    private static func addDerivedHabits(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE definitions ADD COLUMN derived TEXT CHECK (derived IS NULL OR json_valid(derived))")
    }

    /// Derived habits' values per local day, computed once and kept until a record near the day
    /// changes (``HealthStore/prepareDerivedDays(habit:signature:)``). Every write of a workout,
    /// sleep session, measurement or habit event (insert, new version, tombstone, removal),
    /// through any path, notes its UTC days in `derived_changes` by trigger, while a derived
    /// habit is defined.
    private static func createDerivedDays(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE derived_days (
                habit TEXT NOT NULL,                    -- the derived habit's definition id
                day TEXT NOT NULL,                      -- the local day, YYYY-MM-DD
                value REAL,                             -- NULL: computed, nothing counted
                PRIMARY KEY (habit, day)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE derived_signatures (
                habit TEXT PRIMARY KEY,
                signature TEXT NOT NULL                 -- the definition version and day rule the days were computed by
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE derived_changes (
                utc_day TEXT PRIMARY KEY                -- a UTC date a record written since touched
            ) STRICT, WITHOUT ROWID;
            """)
        let tables: [(table: String, first: String, last: String)] = [
            ("workouts", "start_time", "end_time"), ("sleep_sessions", "start_time", "end_time"),
            ("measurements", "time", "coalesce(%.end_time, %.time)"), ("habit_events", "time", "time"),
        ]
        let defined = "EXISTS (SELECT 1 FROM definitions WHERE derived IS NOT NULL AND deleted = 0)"
        for t in tables {
            func days(_ row: String) -> String {
                let first = t.first.contains("%") ? t.first.replacingOccurrences(of: "%", with: row) : "\(row).\(t.first)"
                let last = t.last.contains("%") ? t.last.replacingOccurrences(of: "%", with: row) : "\(row).\(t.last)"
                return "(substr(\(first), 1, 10)), (substr(\(last), 1, 10))"
            }
            try db.execute(sql: """
                CREATE TRIGGER \(t.table)_derived_insert AFTER INSERT ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(days("NEW")); END;
                CREATE TRIGGER \(t.table)_derived_update AFTER UPDATE ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(days("OLD")), \(days("NEW")); END;
                CREATE TRIGGER \(t.table)_derived_delete AFTER DELETE ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(days("OLD")); END;
                """)
        }
    }

    /// The summed kinds' totals per UTC hour (``HealthStore/measurementTotals(_:bounds:)``), kept
    /// so that a year's steps are not summed again from every reading: every write of such a
    /// measurement (insert, new version, tombstone, removal), through any path, notes its hour in
    /// `measurement_hour_changes` by trigger; the totals read those hours again first. Every
    /// hour already stored is noted here: the first totals read keep them.
    private static func createMeasurementHours(_ db: Database) throws {
        let kinds = HealthStore.hourlyKinds.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        try db.execute(sql: """
            CREATE TABLE measurement_hours (
                kind TEXT NOT NULL,
                hour TEXT NOT NULL,                     -- the UTC hour, YYYY-MM-DDTHH (the stored time's first 13 characters)
                readings INTEGER NOT NULL,              -- of every source
                total REAL NOT NULL,                    -- the total of the source that measured most in the hour
                PRIMARY KEY (kind, hour)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE measurement_hour_changes (
                kind TEXT NOT NULL,
                hour TEXT NOT NULL,                     -- an hour whose readings were written since its total was kept
                PRIMARY KEY (kind, hour)
            ) STRICT, WITHOUT ROWID;
            CREATE TRIGGER measurements_hours_insert AFTER INSERT ON measurements WHEN NEW.kind IN (\(kinds))
            BEGIN INSERT OR IGNORE INTO measurement_hour_changes VALUES (NEW.kind, substr(NEW.time, 1, 13)); END;
            CREATE TRIGGER measurements_hours_update AFTER UPDATE ON measurements WHEN OLD.kind IN (\(kinds)) OR NEW.kind IN (\(kinds))
            BEGIN INSERT OR IGNORE INTO measurement_hour_changes VALUES (OLD.kind, substr(OLD.time, 1, 13)), (NEW.kind, substr(NEW.time, 1, 13)); END;
            CREATE TRIGGER measurements_hours_delete AFTER DELETE ON measurements WHEN OLD.kind IN (\(kinds))
            BEGIN INSERT OR IGNORE INTO measurement_hour_changes VALUES (OLD.kind, substr(OLD.time, 1, 13)); END;
            INSERT INTO measurement_hour_changes SELECT DISTINCT kind, substr(time, 1, 13) FROM measurements WHERE kind IN (\(kinds));
            """)
    }

    /// `derived_changes` notes each written record's first and last UTC day as one span, not
    /// the two days alone: a two-week workout or a week's steps touch every day between
    /// (``HealthStore/prepareDerivedDays(habit:signature:)``). Changes noted before carry over.
    private static func noteDerivedChangeSpans(_ db: Database) throws {
        let tables: [(table: String, first: String, last: String)] = [
            ("workouts", "start_time", "end_time"), ("sleep_sessions", "start_time", "end_time"),
            ("measurements", "time", "coalesce(%.end_time, %.time)"), ("habit_events", "time", "time"),
        ]
        for t in tables {
            for event in ["insert", "update", "delete"] { try db.execute(sql: "DROP TRIGGER \(t.table)_derived_\(event)") }
        }
        try db.execute(sql: """
            CREATE TABLE derived_change_spans (
                first_day TEXT NOT NULL,                -- the UTC date a record written since begins on
                last_day TEXT NOT NULL,                 -- and the one it ends on
                PRIMARY KEY (first_day, last_day)
            ) STRICT, WITHOUT ROWID;
            INSERT INTO derived_change_spans SELECT utc_day, utc_day FROM derived_changes;
            DROP TABLE derived_changes;
            ALTER TABLE derived_change_spans RENAME TO derived_changes;
            """)
        let defined = "EXISTS (SELECT 1 FROM definitions WHERE derived IS NOT NULL AND deleted = 0)"
        for t in tables {
            func span(_ row: String) -> String {
                let first = t.first.contains("%") ? t.first.replacingOccurrences(of: "%", with: row) : "\(row).\(t.first)"
                let last = t.last.contains("%") ? t.last.replacingOccurrences(of: "%", with: row) : "\(row).\(t.last)"
                return "(substr(\(first), 1, 10), substr(\(last), 1, 10))"
            }
            try db.execute(sql: """
                CREATE TRIGGER \(t.table)_derived_insert AFTER INSERT ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(span("NEW")); END;
                CREATE TRIGGER \(t.table)_derived_update AFTER UPDATE ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(span("OLD")), \(span("NEW")); END;
                CREATE TRIGGER \(t.table)_derived_delete AFTER DELETE ON \(t.table) WHEN \(defined)
                BEGIN INSERT OR IGNORE INTO derived_changes VALUES \(span("OLD")); END;
                """)
        }
    }

    private static func createDriverCheckpoints(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE driver_checkpoints (
                driver TEXT NOT NULL,                   -- the driver's id: ble, ant ...
                device TEXT NOT NULL,                   -- as in source_device
                value TEXT NOT NULL CHECK (json_valid(value) AND length(value) <= 1048576),
                updated_at TEXT NOT NULL,
                PRIMARY KEY (driver, device)
            ) STRICT, WITHOUT ROWID;
            INSERT INTO driver_checkpoints (driver, device, value, updated_at)
                SELECT 'ble', device,
                       CASE WHEN last_record IS NULL THEN json_object('sequence', last_sequence)
                            ELSE json_object('record', lower(hex(last_record)), 'sequence', last_sequence) END,
                       updated_at
                FROM glucose_sync;
            DROP TABLE glucose_sync;
            """)
    }
}
