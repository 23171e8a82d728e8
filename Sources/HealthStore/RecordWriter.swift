import Foundation
import GRDB
import GRDBSQLite
import HealthModel
import SyncProtocol

/// Writes records and their outbox rows inside a transaction the caller owns.
///
/// A record already stored at the same or a newer version is left alone; an older version is
/// replaced (its child rows too). Sample rows, the bulk of every import, go through a cached
/// statement bound with SQLite's C API to stay close to SQLite's raw insert rate.
struct RecordWriter {
    let db: Database
    let now = ISO8601.string(Date())

    /// `enqueue: false` for records that came from the server (they are there already).
    /// `replacingEqual`: records that replace data (not a tombstone) of their own version.
    func write(_ records: [HealthRecord], importHash: String?, enqueue: Bool = true, replacingEqual: Set<RecordID> = []) throws
        -> WriteResult {
        var result = WriteResult()
        // One version-lookup statement per table, found once per call, not once per record.
        var lookups: [RecordType: Statement] = [:]
        for record in records {
            let table = Self.table(of: record.type)
            let lookup = try lookups[record.type] ?? db.cachedStatement(sql: "SELECT version, deleted FROM \(table) WHERE id = ?")
            lookups[record.type] = lookup
            let state = try storedVersion(lookup, id: record.id.description)
            let existing = state?.version
            if let state, let existing, existing >= record.version {
                var replaces = existing == record.version && !state.deleted && replacingEqual.contains(record.id)
                if replaces { replaces = try RowDecoder.record(db, type: record.type, id: record.id.description) != record }
                if !replaces {
                    result.unchanged += 1
                    continue
                }
            }
            if existing != nil {
                try keepVersion(type: record.type, id: record.id.description)
                try run("DELETE FROM \(table) WHERE id = ?", [record.id.description])
                result.updated += 1
            } else {
                result.inserted += 1
            }
            switch record {
            case .workout(let w): try insert(w, importHash: importHash)
            case .sleep(let s): try insert(s, importHash: importHash)
            case .habit(let h): try insert(h, importHash: importHash)
            case .measurement(let m): try insert(m, importHash: importHash)
            case .definition(let d): try insert(d, importHash: importHash)
            }
            if enqueue { try self.enqueue(record.type, id: record.id, version: record.version) }
        }
        return result
    }

    static func table(of type: RecordType) -> String {
        switch type {
        case .workout: "workouts"
        case .sleep: "sleep_sessions"
        case .habit: "habit_events"
        case .measurement: "measurements"
        case .definition: "definitions"
        }
    }

    private func sourceArguments(_ source: Source, _ importHash: String?) -> StatementArguments {
        [source.driver, source.device, source.file, importHash, now]
    }

    private func insert(_ w: Workout, importHash: String?) throws {
        let id = w.id.description
        try run("""
            INSERT INTO workouts (id, version, sport, sub_sport, start_time, end_time, elapsed_s, timer_s,
                distance_m, energy_kcal, energy_source, avg_hr, max_hr, ascent_m, descent_m, multisport_id,
                source_driver, source_device, source_file, import_hash, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [id, w.version, w.sport, w.subSport, ISO8601.string(w.start), ISO8601.string(w.end),
                             w.elapsedS, w.timerS, w.distanceM, w.energyKcal, w.energySource?.rawValue,
                             w.avgHeartRate, w.maxHeartRate, w.ascentM, w.descentM, w.multisportID?.description]
                + sourceArguments(w.source, importHash))
        for (index, lap) in w.laps.enumerated() {
            try run("""
                INSERT INTO laps (workout_id, lap_index, start_time, end_time, elapsed_s, timer_s, distance_m,
                    energy_kcal, avg_hr, max_hr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [id, index, ISO8601.string(lap.start), ISO8601.string(lap.end), lap.elapsedS,
                                 lap.timerS, lap.distanceM, lap.energyKcal, lap.avgHeartRate, lap.maxHeartRate])
        }
        for (index, length) in w.lengths.enumerated() {
            try run("""
                INSERT INTO swim_lengths (workout_id, length_index, start_time, elapsed_s, kind, strokes, stroke)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, [id, index, ISO8601.string(length.start), length.elapsedS, length.kind,
                                 length.strokes, length.stroke])
        }
        try insertSamples(w.samples, workoutID: id)
        try insertRR(w.rrIntervals, workoutID: id)
    }

    /// Writes one piece of a live workout: inserts or updates the summary, appends the new
    /// samples and RR intervals at their offsets, and queues the workout for forwarding with its
    /// final piece. Pieces of a workout already completed are ignored (`unchanged`).
    func write(_ pieces: [WorkoutProgress]) throws -> WriteResult {
        var result = WriteResult()
        for piece in pieces {
            let w = piece.workout
            let id = w.id.description
            let state = try Row.fetchOne(db.cachedStatement(sql: "SELECT version, in_progress FROM workouts WHERE id = ?"), arguments: [id])
            if let state, state["in_progress"] as Int == 0 {
                result.unchanged += 1
                continue
            }
            let summary: StatementArguments = [
                w.sport, w.subSport, ISO8601.string(w.start), ISO8601.string(w.end), w.elapsedS, w.timerS, w.distanceM,
                w.energyKcal, w.energySource?.rawValue, w.avgHeartRate, w.maxHeartRate, w.ascentM, w.descentM,
                piece.isFinal ? 0 : 1, now]
            if state == nil {
                try run("""
                    INSERT INTO workouts (sport, sub_sport, start_time, end_time, elapsed_s, timer_s, distance_m,
                        energy_kcal, energy_source, avg_hr, max_hr, ascent_m, descent_m, in_progress, updated_at,
                        id, version, source_driver, source_device, source_file)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, summary + [id, w.version, w.source.driver, w.source.device, w.source.file])
            } else {
                try run("""
                    UPDATE workouts SET sport = ?, sub_sport = ?, start_time = ?, end_time = ?, elapsed_s = ?,
                        timer_s = ?, distance_m = ?, energy_kcal = ?, energy_source = ?, avg_hr = ?, max_hr = ?,
                        ascent_m = ?, descent_m = ?, in_progress = ?, updated_at = ?
                    WHERE id = ?
                    """, summary + [id])
            }
            try insertSamples(w.samples, workoutID: id, from: piece.sampleOffset)
            try insertRR(w.rrIntervals, workoutID: id, from: piece.rrOffset)
            if piece.isFinal {
                try enqueue(.workout, id: w.id, version: w.version)
                if state == nil { result.inserted += 1 } else { result.updated += 1 }
            }
        }
        return result
    }

    /// The stored version of `id` and whether it is a tombstone, by `lookup` (`SELECT version,
    /// deleted ... WHERE id = ?`), bound with SQLite's C API: this runs once per record written.
    private func storedVersion(_ lookup: Statement, id: String) throws -> (version: Int, deleted: Bool)? {
        let raw = lookup.sqliteStatement
        defer { sqlite3_reset(raw); sqlite3_clear_bindings(raw) }
        sqlite3_reset(raw)
        bind(raw, 1, id)
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return (Int(sqlite3_column_int64(raw, 0)), sqlite3_column_int64(raw, 1) != 0)
        case SQLITE_DONE: return nil
        case let code:
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    /// Runs `sql` through the connection's statement cache: compiled once, not once per record.
    private func run(_ sql: String, _ arguments: StatementArguments) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func enqueue(_ type: RecordType, id: RecordID, version: Int) throws {
        try enqueue(type, id: id.description, version: version)
    }

    func enqueue(_ type: RecordType, id: String, version: Int) throws {
        let raw = try db.cachedStatement(sql: "INSERT INTO outbox (record_type, record_id, version, enqueued_at) VALUES (?, ?, ?, ?)")
            .sqliteStatement
        defer { sqlite3_reset(raw); sqlite3_clear_bindings(raw) }
        sqlite3_reset(raw)
        bind(raw, 1, type.rawValue)
        bind(raw, 2, id)
        bind(raw, 3, version)
        bind(raw, 4, now)
        try step(raw)
    }

    /// Keeps the stored version of `id` (before it is replaced or deleted) in `record_versions`,
    /// for `HealthStore.history(id:)`. A version kept before stays as it was.
    func keepVersion(type: RecordType, id: String) throws {
        guard let current = try versionJSON(type: type, id: id) else { return }
        try run("""
            INSERT OR IGNORE INTO record_versions (record_id, version, record_type, deleted, body, replaced_at)
            VALUES (?, ?, ?, ?, ?, ?)
            """, [id, current.version, type.rawValue, current.deleted ? 1 : 0, current.json, now])
    }

    /// The stored version of `id` as the sync protocol's record JSON (a tombstone when deleted;
    /// a workout without its series), or nil when there is no such row or this version cannot
    /// read it.
    func versionJSON(type: RecordType, id: String) throws -> (version: Int, deleted: Bool, json: String)? {
        let state = try Row.fetchOne(db.cachedStatement(sql: "SELECT version, deleted FROM \(Self.table(of: type)) WHERE id = ?"),
                                     arguments: [id])
        guard let state else { return nil }
        let version: Int = state["version"]
        let wire: WireRecord
        if (state["deleted"] as Int) != 0 {
            wire = WireRecord(tombstone: id, type: type, version: version)
        } else {
            guard let record = try RowDecoder.record(db, type: type, id: id, series: false) else { return nil }
            wire = WireRecord(record)
        }
        let json = String(decoding: try SyncJSONEncoder().encode(wire), as: UTF8.self)
        return (version, wire.deleted, json)
    }

    private func insertSamples(_ samples: [Sample], workoutID: String, from offset: Int = 0) throws {
        guard !samples.isEmpty else { return }
        let statement = try db.cachedStatement(sql: """
            INSERT INTO samples (workout_id, seq, time, heart_rate, cadence, power_w, speed_mps, distance_m,
                latitude, longitude, altitude_m, temperature_c) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let raw = statement.sqliteStatement
        try workoutID.withCString { idPointer in
            for (index, s) in samples.enumerated() {
                sqlite3_reset(raw)
                sqlite3_bind_text(raw, 1, idPointer, -1, nil)  // static for the loop's duration
                sqlite3_bind_int64(raw, 2, Int64(offset + index))
                sqlite3_bind_double(raw, 3, s.time.timeIntervalSince1970)
                bind(raw, 4, s.heartRate)
                bind(raw, 5, s.cadence)
                bind(raw, 6, s.powerW)
                bind(raw, 7, s.speedMps)
                bind(raw, 8, s.distanceM)
                bind(raw, 9, s.latitude)
                bind(raw, 10, s.longitude)
                bind(raw, 11, s.altitudeM)
                bind(raw, 12, s.temperatureC)
                try step(raw)
            }
        }
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    private func insertRR(_ intervals: [Double], workoutID: String, from offset: Int = 0) throws {
        guard !intervals.isEmpty else { return }
        let statement = try db.cachedStatement(sql: "INSERT INTO rr_intervals (workout_id, seq, rr_s) VALUES (?, ?, ?)")
        let raw = statement.sqliteStatement
        try workoutID.withCString { idPointer in
            for (index, rr) in intervals.enumerated() {
                sqlite3_reset(raw)
                sqlite3_bind_text(raw, 1, idPointer, -1, nil)
                sqlite3_bind_int64(raw, 2, Int64(offset + index))
                sqlite3_bind_double(raw, 3, rr)
                try step(raw)
            }
        }
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    private func step(_ raw: OpaquePointer) throws {
        let code = sqlite3_step(raw)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    private func bind(_ raw: OpaquePointer, _ index: Int32, _ value: Int?) {
        if let value { sqlite3_bind_int64(raw, index, Int64(value)) } else { sqlite3_bind_null(raw, index) }
    }

    /// Text, copied by SQLite (SQLITE_TRANSIENT) so that nothing must outlive the call.
    private func bind(_ raw: OpaquePointer, _ index: Int32, _ value: String?) {
        guard var text = value else {
            sqlite3_bind_null(raw, index)
            return
        }
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                if let base = chars.baseAddress {
                    _ = sqlite3_bind_text(raw, index, base, Int32(chars.count), Self.transient)
                } else {
                    _ = sqlite3_bind_text(raw, index, "", 0, nil)  // the empty string (a static literal)
                }
            }
        }
    }

    /// SQLite's SQLITE_TRANSIENT destructor: copy the value now.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func bind(_ raw: OpaquePointer, _ index: Int32, _ value: Double?) {
        if let value, value.isFinite { sqlite3_bind_double(raw, index, value) } else { sqlite3_bind_null(raw, index) }
    }

    private func insert(_ s: SleepSession, importHash: String?) throws {
        let id = s.id.description
        try run("""
            INSERT INTO sleep_sessions (id, version, start_time, end_time, total_sleep_s, score, awakenings,
                source_driver, source_device, source_file, import_hash, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [id, s.version, ISO8601.string(s.start), ISO8601.string(s.end), s.totalSleepS, s.assessment?.score,
                  s.assessment?.awakenings] + sourceArguments(s.source, importHash))
        for (index, span) in s.stages.enumerated() {
            try run("""
                INSERT INTO sleep_stages (session_id, stage_index, start_time, end_time, stage) VALUES (?, ?, ?, ?, ?)
                """, [id, index, ISO8601.string(span.start), ISO8601.string(span.end), span.stage.rawValue])
        }
    }

    private func insert(_ h: HabitEvent, importHash: String?) throws {
        try run("""
            INSERT INTO habit_events (id, version, habit, time, value, category, unit, label, note,
                source_driver, source_device, source_file, import_hash, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [h.id.description, h.version, h.habit, ISO8601.string(h.time), h.value, h.category,
                             h.unit, h.label, h.note] + sourceArguments(h.source, importHash))
    }

    /// Measurements are most of a large import's records: bound with SQLite's C API.
    private func insert(_ m: HealthModel.Measurement, importHash: String?) throws {
        let raw = try db.cachedStatement(sql: """
            INSERT INTO measurements (id, version, kind, time, end_time, value, unit, extra,
                source_driver, source_device, source_file, import_hash, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).sqliteStatement
        defer { sqlite3_reset(raw); sqlite3_clear_bindings(raw) }
        sqlite3_reset(raw)
        bind(raw, 1, m.id.description)
        bind(raw, 2, m.version)
        bind(raw, 3, m.kind.rawValue)
        bind(raw, 4, ISO8601.string(m.time))
        bind(raw, 5, m.end.map(ISO8601.string))
        bind(raw, 6, m.value)
        bind(raw, 7, m.unit)
        bind(raw, 8, Self.json(m.extra))
        bind(raw, 9, m.source.driver)
        bind(raw, 10, m.source.device)
        bind(raw, 11, m.source.file)
        bind(raw, 12, importHash)
        bind(raw, 13, now)
        try step(raw)
    }

    private func insert(_ d: Definition, importHash: String?) throws {
        var habit: HabitDefinition?
        var meal: SavedMeal?
        var weight: Double?, goal: Double?
        var preferences: Preferences?
        switch d.body {
        case .habit(let h): habit = h
        case .trigger: break
        case .meal(let m): meal = m
        case .profile(let p): (weight, goal) = (p.weightKg, p.goalWeightKg)
        case .preferences(let p): preferences = p
        }
        let categories = habit.map { $0.categories.isEmpty ? nil : Self.jsonText($0.categories) } ?? nil
        let ingredients = meal.map { m in
            m.ingredients.isEmpty ? nil : Self.jsonText(m.ingredients.map { ["name": $0.name, "kcal": $0.kcal] as [String: any Sendable] })
        } ?? nil
        let columns: [(any DatabaseValueConvertible)?] = [
            d.id.description, d.version, d.kind.rawValue, d.name, ISO8601.string(d.time),
            habit?.valueKind.rawValue, habit?.unit, categories, habit?.target?.amount, habit?.target?.period.rawValue,
            habit?.target?.direction.rawValue, meal?.kcal, ingredients, weight, preferences?.volume.rawValue, preferences?.mass.rawValue,
            preferences.flatMap { $0.dayStartMinutes == 0 ? nil : $0.dayStartMinutes }, goal,
            habit?.derivation.flatMap(Self.derivedText),
        ]
        try run("""
            INSERT INTO definitions (id, version, kind, name, time, value_kind, unit, categories, target_amount, target_period,
                target_direction, kcal, ingredients, weight_kg, volume_unit, mass_unit, day_start_min, goal_weight_kg, derived,
                source_driver, source_device, source_file, import_hash, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, StatementArguments(columns) + sourceArguments(d.source, importHash))
    }

    /// A derivation as the wire spells it, keys sorted (`{"bpm":120,"from":"heart_rate_above"}`).
    static func derivedText(_ derivation: HabitDerivation) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(derivation)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Compact JSON text with sorted keys (arrays of names, ingredients).
    static func jsonText(_ value: Any) -> String? {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// `{"diastolic":80,...}` with sorted keys, or nil when empty.
    static func json(_ extra: [String: Double]) -> String? {
        guard !extra.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(extra)).map { String(decoding: $0, as: UTF8.self) }
    }
}
