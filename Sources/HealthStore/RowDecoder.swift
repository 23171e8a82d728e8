import Foundation
import GRDB
import HealthModel

/// Rows back into records (with their child rows), shared by listings and the outbox reader.
enum RowDecoder {
    static func source(_ row: Row) -> Source {
        Source(driver: row["source_driver"], device: row["source_device"], file: row["source_file"])
    }

    /// A workout row with its laps, lengths, samples and RR intervals (none of them when `series` is false).
    static func workout(_ db: Database, _ row: Row, series: Bool = true) throws -> Workout {
        let workoutID: String = row["id"]
        guard series else {
            return Workout(id: RecordID(string: workoutID)!, version: row["version"], sport: row["sport"],
                           subSport: row["sub_sport"], start: date(row["start_time"]), end: date(row["end_time"]),
                           elapsedS: row["elapsed_s"], timerS: row["timer_s"], distanceM: row["distance_m"],
                           energyKcal: row["energy_kcal"],
                           energySource: (row["energy_source"] as String?).flatMap(EnergySource.init(rawValue:)),
                           avgHeartRate: row["avg_hr"], maxHeartRate: row["max_hr"], ascentM: row["ascent_m"],
                           descentM: row["descent_m"],
                           multisportID: (row["multisport_id"] as String?).flatMap(RecordID.init(string:)),
                           laps: [], samples: [], rrIntervals: [], lengths: [], source: source(row))
        }
        let laps = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM laps WHERE workout_id = ? ORDER BY lap_index"),
                                    arguments: [workoutID]).map { r in
            Lap(start: date(r["start_time"]), end: date(r["end_time"]), elapsedS: r["elapsed_s"], timerS: r["timer_s"],
                distanceM: r["distance_m"], energyKcal: r["energy_kcal"], avgHeartRate: r["avg_hr"],
                maxHeartRate: r["max_hr"])
        }
        let lengths = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM swim_lengths WHERE workout_id = ? ORDER BY length_index"),
                                       arguments: [workoutID]).map { r in
            SwimLength(start: date(r["start_time"]), elapsedS: r["elapsed_s"], kind: r["kind"], strokes: r["strokes"],
                       stroke: r["stroke"])
        }
        let samples = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM samples WHERE workout_id = ? ORDER BY seq"),
                                       arguments: [workoutID]).map { r in
            Sample(time: Date(timeIntervalSince1970: r["time"]), heartRate: r["heart_rate"], cadence: r["cadence"],
                   powerW: r["power_w"], speedMps: r["speed_mps"], distanceM: r["distance_m"],
                   latitude: r["latitude"], longitude: r["longitude"], altitudeM: r["altitude_m"],
                   temperatureC: r["temperature_c"])
        }
        let rr = try Double.fetchAll(db.cachedStatement(sql: "SELECT rr_s FROM rr_intervals WHERE workout_id = ? ORDER BY seq"),
                                     arguments: [workoutID])
        return Workout(id: RecordID(string: workoutID)!, version: row["version"], sport: row["sport"],
                       subSport: row["sub_sport"], start: date(row["start_time"]), end: date(row["end_time"]),
                       elapsedS: row["elapsed_s"], timerS: row["timer_s"], distanceM: row["distance_m"],
                       energyKcal: row["energy_kcal"],
                       energySource: (row["energy_source"] as String?).flatMap(EnergySource.init(rawValue:)),
                       avgHeartRate: row["avg_hr"], maxHeartRate: row["max_hr"], ascentM: row["ascent_m"],
                       descentM: row["descent_m"],
                       multisportID: (row["multisport_id"] as String?).flatMap(RecordID.init(string:)),
                       laps: laps, samples: samples, rrIntervals: rr, lengths: lengths, source: source(row))
    }

    static func sleep(_ db: Database, _ row: Row) throws -> SleepSession {
        let id: String = row["id"]
        let stages = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM sleep_stages WHERE session_id = ? ORDER BY stage_index"),
                                      arguments: [id]).map { r in
            SleepStageSpan(start: date(r["start_time"]), end: date(r["end_time"]),
                           stage: SleepStage(rawValue: r["stage"]) ?? .unknown)
        }
        let assessment = SleepAssessment(score: row["score"], awakenings: row["awakenings"])
        return SleepSession(id: RecordID(string: id)!, version: row["version"], start: date(row["start_time"]),
                            end: date(row["end_time"]), stages: stages,
                            assessment: assessment == SleepAssessment() ? nil : assessment, source: source(row))
    }

    /// The columns ``measurement(_:)`` reads, in its order (read by index: looking a column up by
    /// name costs more than decoding it).
    static let measurementColumns = "id, version, kind, time, end_time, value, extra, source_driver, source_device, source_file"

    /// A row of ``measurementColumns``; nil for a kind this version does not know.
    static func measurement(_ row: Row) -> HealthModel.Measurement? {
        guard let kind = MeasurementKind(rawValue: row[2]) else { return nil }
        var extra: [String: Double] = [:]
        if let json: String = row[6] {
            extra = (try? JSONDecoder().decode([String: Double].self, from: Data(json.utf8))) ?? [:]
        }
        return HealthModel.Measurement(
            id: RecordID(string: row[0])!, version: row[1], kind: kind, time: date(row[3]),
            end: (row[4] as String?).flatMap(ISO8601.parse), value: row[5], extra: extra,
            source: Source(driver: row[7], device: row[8], file: row[9]))
    }

    /// The columns ``habit(_:)`` reads, in its order.
    static let habitColumns = "id, version, habit, time, value, category, unit, label, note, source_driver, source_device, source_file"

    /// The columns ``definition(_:)`` reads, in its order.
    static let definitionColumns = """
        id, version, kind, name, time, value_kind, unit, categories, target_amount, target_period, target_direction, kcal,
        ingredients, weight_kg, volume_unit, mass_unit, source_driver, source_device, source_file, day_start_min, goal_weight_kg, derived
        """

    /// A row of ``definitionColumns``; nil for a kind or spelling this version does not know.
    static func definition(_ row: Row) -> Definition? {
        guard let id = RecordID(string: row[0]), let kind = DefinitionKind(rawValue: row[2]) else { return nil }
        let body: DefinitionBody
        switch kind {
        case .habit:
            guard let valueKind = HabitDefinition.ValueKind(rawValue: row[5] as String? ?? "") else { return nil }
            var target: HabitTarget?
            if let amount: Double = row[8] {
                guard let period = HabitTarget.Period(rawValue: row[9] as String? ?? ""),
                      let direction = HabitTarget.Direction(rawValue: row[10] as String? ?? "") else { return nil }
                target = HabitTarget(amount: amount, period: period, direction: direction)
            }
            let categories = (row[7] as String?).flatMap { jsonArray($0) as? [String] } ?? []
            // A derivation this version cannot read makes the definition unreadable, not a typed habit.
            var derivation: HabitDerivation?
            if let text: String = row[21] {
                guard let read = try? JSONDecoder().decode(HabitDerivation.self, from: Data(text.utf8)) else { return nil }
                derivation = read
            }
            body = .habit(HabitDefinition(valueKind: valueKind, unit: row[6], categories: categories, target: target, derivation: derivation))
        case .trigger:
            body = .trigger
        case .meal:
            guard let kcal: Double = row[11] else { return nil }
            let items = (row[12] as String?).flatMap { jsonArray($0) as? [[String: Any]] } ?? []
            let ingredients = items.compactMap { item -> SavedMeal.Ingredient? in
                guard let name = item["name"] as? String, let kcal = (item["kcal"] as? NSNumber)?.doubleValue else { return nil }
                return SavedMeal.Ingredient(name: name, kcal: kcal)
            }
            body = .meal(SavedMeal(kcal: kcal, ingredients: ingredients))
        case .profile:
            guard let weight: Double = row[13] else { return nil }
            body = .profile(BodyProfile(weightKg: weight, goalWeightKg: row[20]))
        case .preferences:
            guard let volume = Preferences.VolumeUnit(rawValue: row[14] as String? ?? ""),
                  let mass = Preferences.MassUnit(rawValue: row[15] as String? ?? "") else { return nil }
            body = .preferences(Preferences(volume: volume, mass: mass, dayStartMinutes: row[19] as Int? ?? 0))
        }
        return Definition(id: id, version: row[1], name: row[3], time: date(row[4]), body: body,
                          source: Source(driver: row[16], device: row[17], file: row[18]))
    }

    private static func jsonArray(_ text: String) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    /// A row of ``habitColumns``.
    static func habit(_ row: Row) -> HabitEvent {
        HabitEvent(id: RecordID(string: row[0])!, version: row[1], habit: row[2], time: date(row[3]), value: row[4],
                   category: row[5], unit: row[6], label: row[7], note: row[8],
                   source: Source(driver: row[9], device: row[10], file: row[11]))
    }

    struct FlatKey: Hashable {
        var type: RecordType
        var id: String
    }

    /// What ``content(_:type:id:)`` answers, for many measurements and habit events at once
    /// (one statement per type and 500 ids); ids not stored are left out.
    static func flatContents(_ db: Database, ids: [(RecordType, String)]) throws -> [FlatKey: OutboxContent] {
        var contents: [FlatKey: OutboxContent] = [:]
        for type in [RecordType.measurement, .habit] {
            let wanted = Array(Set(ids.filter { $0.0 == type }.map(\.1)))
            let columns = type == .measurement ? measurementColumns : habitColumns
            let deletedColumn = type == .measurement ? 10 : 12
            for start in stride(from: 0, to: wanted.count, by: 500) {
                let part = Array(wanted[start..<min(start + 500, wanted.count)])
                let sql = "SELECT \(columns), deleted FROM \(RecordWriter.table(of: type)) WHERE id IN (\(databaseQuestionMarks(count: part.count)))"
                let rows = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(part))
                while let row = try rows.next() {
                    let id: String = row[0]
                    let key = FlatKey(type: type, id: id)
                    if (row[deletedColumn] as Int) != 0 {
                        contents[key] = .tombstone(type: type, id: id, version: row[1])
                    } else if type == .habit {
                        contents[key] = .record(.habit(habit(row)))
                    } else if let m = measurement(row) {
                        contents[key] = .record(.measurement(m))
                    } else {
                        contents[key] = .unreadable("measurement kind '\(row[2] as String? ?? "")' is not known to this version of HealthGate")
                    }
                }
            }
        }
        return contents
    }

    /// The stored record of `type` with `id` as an outbox sends it: the record, its tombstone
    /// (deleted), gone, or unreadable by this version (a measurement kind a newer install wrote).
    static func content(_ db: Database, type: RecordType, id: String) throws -> OutboxContent {
        let state = try Row.fetchOne(db.cachedStatement(sql: "SELECT version, deleted FROM \(RecordWriter.table(of: type)) WHERE id = ?"),
                                     arguments: [id])
        guard let state else { return .gone }
        if (state["deleted"] as Int) != 0 { return .tombstone(type: type, id: id, version: state["version"]) }
        if type == .definition {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(definitionColumns) FROM definitions WHERE id = ?"),
                                             arguments: [id]) else { return .gone }
            guard let d = definition(row) else {
                return .unreadable("definition '\(row[3] as String? ?? "")' of kind '\(row[2] as String? ?? "")' is not readable by this version of HealthGate")
            }
            return .record(.definition(d))
        }
        if type == .measurement {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(measurementColumns) FROM measurements WHERE id = ?"),
                                             arguments: [id]) else { return .gone }
            guard let m = measurement(row) else {
                return .unreadable("measurement kind '\(row[2] as String? ?? "")' is not known to this version of HealthGate")
            }
            return .record(.measurement(m))
        }
        return try record(db, type: type, id: id).map { .record($0) } ?? .gone
    }

    /// The stored record of `type` with `id`, or nil.
    static func record(_ db: Database, type: RecordType, id: String, series: Bool = true) throws -> HealthRecord? {
        let table = RecordWriter.table(of: type)
        let columns = switch type {
        case .measurement: measurementColumns
        case .habit: habitColumns
        case .definition: definitionColumns
        case .workout, .sleep: "*"
        }
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM \(table) WHERE id = ?"),
                                         arguments: [id]) else { return nil }
        switch type {
        case .workout: return .workout(try workout(db, row, series: series))
        case .sleep: return .sleep(try sleep(db, row))
        case .habit: return .habit(habit(row))
        case .measurement: return measurement(row).map { .measurement($0) }
        case .definition: return definition(row).map { .definition($0) }
        }
    }
}
