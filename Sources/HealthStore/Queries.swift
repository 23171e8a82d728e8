public import Foundation
import GRDB
public import HealthModel

/// A workout as listed by `healthgate workouts`: its figures and the sizes of its series.
public struct WorkoutSummary: Sendable, Equatable, Encodable {
    public var id: String
    public var version: Int
    public var sport: String
    public var subSport: String?
    public var start: String
    public var end: String
    public var elapsedS: Double
    public var timerS: Double?
    public var distanceM: Double?
    public var energyKcal: Double?
    public var energySource: String?
    public var avgHR: Int?
    public var maxHR: Int?
    public var ascentM: Double?
    public var descentM: Double?
    public var multisportID: String?
    public var laps: Int
    public var samples: Int
    public var rrIntervals: Int
    public var lengths: Int
    public var source: Source
    /// True while a live driver is still recording the workout.
    public var inProgress: Bool

    enum CodingKeys: String, CodingKey {
        case id, version, sport, subSport = "sub_sport", start, end, elapsedS = "elapsed_s", timerS = "timer_s"
        case distanceM = "distance_m", energyKcal = "energy_kcal", energySource = "energy_source"
        case avgHR = "avg_hr", maxHR = "max_hr", ascentM = "ascent_m", descentM = "descent_m"
        case multisportID = "multisport_id", laps, samples, rrIntervals = "rr_intervals", lengths, source
        case inProgress = "in_progress"
    }

    /// Every key is written, absent values as `null`, so scripts can rely on the shape.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(sport, forKey: .sport)
        try c.encode(subSport, forKey: .subSport)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(elapsedS, forKey: .elapsedS)
        try c.encode(timerS, forKey: .timerS)
        try c.encode(distanceM, forKey: .distanceM)
        try c.encode(energyKcal, forKey: .energyKcal)
        try c.encode(energySource, forKey: .energySource)
        try c.encode(avgHR, forKey: .avgHR)
        try c.encode(maxHR, forKey: .maxHR)
        try c.encode(ascentM, forKey: .ascentM)
        try c.encode(descentM, forKey: .descentM)
        try c.encode(multisportID, forKey: .multisportID)
        try c.encode(laps, forKey: .laps)
        try c.encode(samples, forKey: .samples)
        try c.encode(rrIntervals, forKey: .rrIntervals)
        try c.encode(lengths, forKey: .lengths)
        try c.encode(SourceJSON(source), forKey: .source)
        try c.encode(inProgress, forKey: .inProgress)
    }

    init(row: Row) {
        id = row["id"]
        version = row["version"]
        sport = row["sport"]
        subSport = row["sub_sport"]
        start = row["start_time"]
        end = row["end_time"]
        elapsedS = row["elapsed_s"]
        timerS = row["timer_s"]
        distanceM = row["distance_m"]
        energyKcal = row["energy_kcal"]
        energySource = row["energy_source"]
        avgHR = row["avg_hr"]
        maxHR = row["max_hr"]
        ascentM = row["ascent_m"]
        descentM = row["descent_m"]
        multisportID = row["multisport_id"]
        laps = row["lap_count"]
        samples = row["sample_count"]
        rrIntervals = row["rr_count"]
        lengths = row["length_count"]
        source = Source(driver: row["source_driver"], device: row["source_device"], file: row["source_file"])
        inProgress = (row["in_progress"] as Int? ?? 0) != 0
    }
}

/// `source` as written in JSON: driver, device and file, with nulls.
struct SourceJSON: Encodable {
    var source: Source
    init(_ source: Source) { self.source = source }
    enum CodingKeys: String, CodingKey { case driver, device, file }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source.driver, forKey: .driver)
        try c.encode(source.device, forKey: .device)
        try c.encode(source.file, forKey: .file)
    }
}

/// A time window over record start times; either side may be open.
public struct DateRange: Sendable, Equatable {
    public var since: Date?
    public var until: Date?

    public init(since: Date? = nil, until: Date? = nil) {
        self.since = since
        self.until = until
    }

    /// Whether `date` is within the range.
    public func contains(_ date: Date) -> Bool {
        (since.map { date >= $0 } ?? true) && (until.map { date < $0 } ?? true)
    }

    /// SQL condition on `column` and its arguments.
    func condition(_ column: String) -> (sql: String, arguments: StatementArguments) {
        var parts = ["1"]
        var arguments: StatementArguments = []
        for (bound, isSince) in [(since, true), (until, false)] {
            guard let bound else { continue }
            let (sql, values) = Self.compare(column, isSince ? ">=" : "<", bound)
            parts.append(sql)
            arguments += values
        }
        return (parts.joined(separator: " AND "), arguments)
    }

    /// `column >= date` or `column < date` on stored times, as text (so the column's index
    /// serves). Stored times are ``ISO8601/string(_:)``'s: `…:SSZ`, or `…:SS.fffZ` with a
    /// fraction, and `Z` sorts after `.`, so the bound is spelled with milliseconds (`…:SS.000Z`
    /// sorts before `…:SS.500Z` and before `…:SSZ`, the same instant); a bound with a fraction
    /// sorts before the whole second it comes after, so that stored time is handled apart.
    static func compare(_ column: String, _ op: String, _ date: Date) -> (String, StatementArguments) {
        let text = HealthStore.boundText(date)
        guard !text.hasSuffix(".000Z") else { return ("\(column) \(op) ?", [text]) }
        let whole = String(text.prefix(19)) + "Z"
        return op == ">=" ? ("(\(column) >= ? AND \(column) != ?)", [text, whole]) : ("(\(column) < ? OR \(column) = ?)", [text, whole])
    }
}

/// What ``HealthStore/earliest(_:)`` looks for.
public enum EarliestOf: Sendable {
    case workout, sleep
    case measurement(MeasurementKind)
}

extension HealthStore {
    /// Workouts starting within `range`, oldest first, without deleted ones.
    public func workouts(in range: DateRange = DateRange()) async throws -> [WorkoutSummary] {
        let (condition, arguments) = range.condition("w.start_time")
        return try await reading { db in
            try Row.fetchAll(db, sql: """
                SELECT w.*,
                    (SELECT count(*) FROM laps WHERE workout_id = w.id) AS lap_count,
                    (SELECT count(*) FROM samples WHERE workout_id = w.id) AS sample_count,
                    (SELECT count(*) FROM rr_intervals WHERE workout_id = w.id) AS rr_count,
                    (SELECT count(*) FROM swim_lengths WHERE workout_id = w.id) AS length_count
                FROM workouts w WHERE w.deleted = 0 AND \(condition)
                ORDER BY w.start_time, w.id
                """, arguments: arguments).map(WorkoutSummary.init(row:))
        }
    }

    /// Whole workouts (laps, lengths and, when `samples`, their sample series) starting within
    /// `range`, oldest first, without deleted ones.
    public func wholeWorkouts(in range: DateRange, samples: Bool) async throws -> [Workout] {
        let (condition, arguments) = range.condition("start_time")
        return try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM workouts WHERE deleted = 0 AND \(condition) ORDER BY start_time, id", arguments: arguments)
                .map { try RowDecoder.workout(db, $0, series: samples) }
        }
    }

    /// The earliest time of any live record of a table (`workouts`: start, `sleep_sessions`:
    /// end, `measurements` of `kind`: time), nil when it holds none.
    public func earliest(_ table: EarliestOf) async throws -> Date? {
        // The first live row in the time index's order (a min() with the deleted filter would
        // read every row of the kind).
        let sql = switch table {
        case .workout: "SELECT start_time FROM workouts WHERE deleted = 0 ORDER BY start_time LIMIT 1"
        case .sleep: "SELECT end_time FROM sleep_sessions WHERE deleted = 0 ORDER BY end_time LIMIT 1"
        case .measurement: "SELECT time FROM measurements WHERE kind = ? AND deleted = 0 ORDER BY time LIMIT 1"
        }
        let arguments: StatementArguments = if case .measurement(let kind) = table { [kind.rawValue] } else { [] }
        let text = try await reading { db in try String.fetchOne(db, sql: sql, arguments: arguments) }
        return text.map(date)
    }

    /// One workout with its laps, lengths and samples, or nil (also for a deleted one). `id` may
    /// be a unique prefix.
    public func workout(id: String) async throws -> Workout? {
        try await reading { db in
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM workouts WHERE id LIKE ? || '%' AND deleted = 0 LIMIT 2",
                                        arguments: [id.lowercased()])
            guard rows.count == 1, let row = rows.first else { return nil }
            return try RowDecoder.workout(db, row)
        }
    }

    /// Sleep sessions starting within `range`, oldest first, with their stages.
    public func sleepSessions(in range: DateRange = DateRange()) async throws -> [SleepSession] {
        let (condition, arguments) = range.condition("start_time")
        return try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM sleep_sessions WHERE deleted = 0 AND \(condition) ORDER BY start_time, id",
                             arguments: arguments).map { try RowDecoder.sleep(db, $0) }
        }
    }

    /// Measurements of `kind` (all kinds when nil) taken within `range`, oldest first.
    public func measurements(kind: MeasurementKind? = nil, in range: DateRange = DateRange()) async throws -> [HealthModel.Measurement] {
        var (condition, arguments) = range.condition("time")
        if let kind {
            condition += " AND kind = ?"
            arguments += [kind.rawValue]
        }
        return try await reading { [condition, arguments] db in
            try Row.fetchAll(db, sql: "SELECT \(RowDecoder.measurementColumns) FROM measurements WHERE deleted = 0 AND \(condition) ORDER BY time, kind, id",
                             arguments: arguments).compactMap(RowDecoder.measurement)
        }
    }

    /// Habit events within `range`, oldest first.
    public func habitEvents(in range: DateRange = DateRange()) async throws -> [HabitEvent] {
        let (condition, arguments) = range.condition("time")
        return try await reading { db in
            try Row.fetchAll(db, sql: "SELECT \(RowDecoder.habitColumns) FROM habit_events WHERE deleted = 0 AND \(condition) ORDER BY time, id",
                             arguments: arguments).map(RowDecoder.habit)
        }
    }

    /// The definitions (of `kind`, or all), not deleted, by kind and name.
    public func definitions(_ kind: DefinitionKind? = nil) async throws -> [Definition] {
        try await reading { db in
            let condition = kind == nil ? "" : " AND kind = ?"
            let arguments: StatementArguments = kind.map { [$0.rawValue] } ?? []
            return try Row.fetchAll(db, sql: "SELECT \(RowDecoder.definitionColumns) FROM definitions WHERE deleted = 0\(condition) ORDER BY kind, name COLLATE NOCASE",
                                    arguments: arguments).compactMap(RowDecoder.definition)
        }
    }

    /// The definition of `kind` named `name` (case-insensitive), if defined and not deleted.
    public func definition(_ kind: DefinitionKind, name: String) async throws -> Definition? {
        let id = Definition.id(kind, name: name).description
        return try await reading { db in
            try Row.fetchOne(db, sql: "SELECT \(RowDecoder.definitionColumns) FROM definitions WHERE id = ? AND deleted = 0",
                             arguments: [id]).flatMap(RowDecoder.definition)
        }
    }

    /// Rows in each table, for status output and tests.
    public func tableCounts() async throws -> [String: Int] {
        try await reading { db in
            var counts: [String: Int] = [:]
            for table in ["workouts", "laps", "samples", "rr_intervals", "swim_lengths", "sleep_sessions", "sleep_stages",
                          "habit_events", "measurements", "definitions", "outbox", "imports"] {
                counts[table] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0
            }
            return counts
        }
    }
}

/// Stored times are written by ``ISO8601/string(_:)``; unreadable text maps to the epoch so a
/// hand-edited row shows up as obviously wrong instead of crashing a listing.
func date(_ text: String) -> Date { ISO8601.parse(text) ?? Date(timeIntervalSince1970: 0) }
