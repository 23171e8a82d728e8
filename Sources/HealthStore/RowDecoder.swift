import Foundation
import GRDB
import HealthModel

/// Rows back into records (with their child rows), shared by listings and the outbox reader.
enum RowDecoder {
    static func source(_ row: Row) -> Source {
        Source(driver: row["source_driver"], device: row["source_device"], file: row["source_file"])
    }

    static func workout(_ db: Database, _ row: Row) throws -> Workout {
        let workoutID: String = row["id"]
        let laps = try Row.fetchAll(db, sql: "SELECT * FROM laps WHERE workout_id = ? ORDER BY lap_index",
                                    arguments: [workoutID]).map { r in
            Lap(start: date(r["start_time"]), end: date(r["end_time"]), elapsedS: r["elapsed_s"], timerS: r["timer_s"],
                distanceM: r["distance_m"], energyKcal: r["energy_kcal"], avgHeartRate: r["avg_hr"],
                maxHeartRate: r["max_hr"])
        }
        let lengths = try Row.fetchAll(db, sql: "SELECT * FROM swim_lengths WHERE workout_id = ? ORDER BY length_index",
                                       arguments: [workoutID]).map { r in
            SwimLength(start: date(r["start_time"]), elapsedS: r["elapsed_s"], kind: r["kind"], strokes: r["strokes"],
                       stroke: r["stroke"])
        }
        let samples = try Row.fetchAll(db, sql: "SELECT * FROM samples WHERE workout_id = ? ORDER BY seq",
                                       arguments: [workoutID]).map { r in
            Sample(time: Date(timeIntervalSince1970: r["time"]), heartRate: r["heart_rate"], cadence: r["cadence"],
                   powerW: r["power_w"], speedMps: r["speed_mps"], distanceM: r["distance_m"],
                   latitude: r["latitude"], longitude: r["longitude"], altitudeM: r["altitude_m"],
                   temperatureC: r["temperature_c"])
        }
        let rr = try Double.fetchAll(db, sql: "SELECT rr_s FROM rr_intervals WHERE workout_id = ? ORDER BY seq",
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
        let stages = try Row.fetchAll(db, sql: "SELECT * FROM sleep_stages WHERE session_id = ? ORDER BY stage_index",
                                      arguments: [id]).map { r in
            SleepStageSpan(start: date(r["start_time"]), end: date(r["end_time"]),
                           stage: SleepStage(rawValue: r["stage"]) ?? .unknown)
        }
        return SleepSession(id: RecordID(string: id)!, version: row["version"], start: date(row["start_time"]),
                            end: date(row["end_time"]), stages: stages, source: source(row))
    }

    static func measurement(_ row: Row) -> HealthModel.Measurement? {
        guard let kind = MeasurementKind(rawValue: row["kind"]) else { return nil }
        var extra: [String: Double] = [:]
        if let json: String = row["extra"] {
            extra = (try? JSONDecoder().decode([String: Double].self, from: Data(json.utf8))) ?? [:]
        }
        return HealthModel.Measurement(
            id: RecordID(string: row["id"])!, version: row["version"], kind: kind, time: date(row["time"]),
            end: (row["end_time"] as String?).flatMap(ISO8601.parse), value: row["value"], extra: extra,
            source: source(row))
    }

    static func habit(_ row: Row) -> HabitEvent {
        HabitEvent(id: RecordID(string: row["id"])!, version: row["version"], habit: row["habit"],
                   time: date(row["time"]), value: row["value"], category: row["category"], unit: row["unit"],
                   label: row["label"], note: row["note"], source: source(row))
    }

    /// The stored record of `type` with `id`, or nil.
    static func record(_ db: Database, type: RecordType, id: String) throws -> HealthRecord? {
        let table = RecordWriter.table(of: type)
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id]) else { return nil }
        switch type {
        case .workout: return .workout(try workout(db, row))
        case .sleep: return .sleep(try sleep(db, row))
        case .habit: return .habit(habit(row))
        case .measurement: return measurement(row).map { .measurement($0) }
        }
    }
}
