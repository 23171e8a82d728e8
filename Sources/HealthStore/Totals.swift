public import Foundation
import GRDB
public import HealthModel

/// Totals of the records in one bucket of a ``Buckets`` list (one local day, week, month ...).
public struct BucketTotal: Sendable, Equatable {
    /// The bucket: records at or after `bounds[bucket]` and before `bounds[bucket + 1]`.
    public var bucket: Int
    /// What the totals were grouped by besides the bucket (a vaping trigger), or nil.
    public var key: String?
    public var count: Int
    /// The sum of the values (nil values count as 0).
    public var sum: Double

    public init(bucket: Int, key: String? = nil, count: Int, sum: Double) {
        self.bucket = bucket
        self.key = key
        self.count = count
        self.sum = sum
    }

    /// Adds another total of the same bucket (another spelling of a habit's name).
    mutating func add(_ other: BucketTotal) {
        count += other.count
        sum += other.sum
    }
}

/// Workout totals of one bucket.
public struct WorkoutBucketTotal: Sendable, Equatable {
    public var bucket: Int
    public var count: Int
    /// Active seconds: the timer's, else the elapsed time.
    public var activeS: Double
    public var distanceM: Double
    public var energyKcal: Double
    /// Sum of average heart rate times active seconds, and of those seconds (for a weighted mean).
    public var hrSeconds: Double
    public var hrWeight: Double
}

/// Sleep totals of one bucket (by session start).
public struct SleepBucketTotal: Sendable, Equatable {
    public var bucket: Int
    public var count: Int
    public var sleepS: Double
}

/// Totals grouped in SQL by time buckets that the caller computes (local days, weeks, months
/// of the user's calendar, DST days 23 or 25 hours long): SQLite knows no time zones, so the
/// buckets' bounds are passed in as one JSON array and every record is matched to its bucket
/// through the tables' time indexes.
extension HealthStore {
    /// The bounds as the query reads them: ISO 8601 with milliseconds (`…T23:00:00.000Z`), which
    /// compares in time order with every stored spelling (with or without a fraction).
    static func boundsJSON(_ bounds: [Date]) -> String {
        "[" + bounds.map { "\"" + boundText($0) + "\"" }.joined(separator: ",") + "]"
    }

    static func boundText(_ date: Date) -> String {
        ISO8601.stringWithMilliseconds(date)
    }

    /// The bucket list as a CTE `r(i, s, e)`: bucket `i` from `s` (inclusive) to `e` (exclusive),
    /// each bound paired with the next by `lead` (a self-join on `i + 1` was quadratic). The
    /// queries write `+x.deleted = 0` so that the planner seeks the time index per bucket rather
    /// than building an index on `deleted`.
    static let bucketsCTE = """
        WITH b AS MATERIALIZED (SELECT CAST(key AS INTEGER) AS i, value AS s, lead(value) OVER (ORDER BY CAST(key AS INTEGER)) AS e
                                FROM json_each(?)),
        r AS MATERIALIZED (SELECT i, s, e FROM b WHERE e IS NOT NULL)
        """

    /// Entries of `habit` per bucket (count and sum of values), optionally also per category
    /// (`byCategory`: a vaping session's trigger). Buckets without entries are left out, and so
    /// are events that mark a day not done (``HabitEvent/Mark``: a skipped day is no check-in). The
    /// habit's entries under any spelling of its name count (``Definition/key(_:)``: `Reading` and
    /// `reading` are one habit).
    public func habitTotals(_ habit: String, bounds: [Date], byCategory: Bool = false) async throws -> [BucketTotal] {
        guard bounds.count > 1 else { return [] }
        let json = Self.boundsJSON(bounds)
        let key = byCategory ? "h.category" : "NULL"
        return try await reading { db in
            let names = try Self.spellings(db, of: habit)
            return try Row.fetchAll(db, sql: """
                \(Self.bucketsCTE)
                SELECT r.i, \(key), count(*), total(h.value) FROM r
                JOIN habit_events h ON h.habit IN \(Self.placeholders(names.count)) AND h.time >= r.s AND h.time < r.e
                WHERE +h.deleted = 0 AND (h.label IS NULL OR h.label NOT IN \(Self.placeholders(HabitEvent.Mark.all.count)))
                GROUP BY r.i, \(key) ORDER BY r.i
                """, arguments: StatementArguments([json] + names + HabitEvent.Mark.all.sorted())).map { BucketTotal(bucket: $0[0], key: $0[1], count: $0[2], sum: $0[3]) }
        }
    }

    /// Entries of every habit per bucket in one query: totals by the habit's case-folded name
    /// (``Definition/key(_:)``), every spelling of it counted (`Reading` and `reading` add up),
    /// buckets without entries left out, each habit's in order. What
    /// ``habitTotals(_:bounds:byCategory:)`` gives for one habit (marks are not entries either),
    /// for the views that want them all: one index seek per stored name and bucket.
    public func everyHabitTotals(bounds: [Date]) async throws -> [String: [BucketTotal]] {
        guard bounds.count > 1 else { return [:] }
        let json = Self.boundsJSON(bounds)
        let rows = try await reading { db in
            try Row.fetchAll(db, sql: """
                \(Self.bucketsCTE),
                \(Self.storedNamesCTE)
                SELECT n.name, r.i, count(*), total(h.value) FROM n CROSS JOIN r
                JOIN habit_events h ON h.habit = n.name AND h.time >= r.s AND h.time < r.e
                WHERE +h.deleted = 0 AND (h.label IS NULL OR h.label NOT IN \(Self.placeholders(HabitEvent.Mark.all.count)))
                GROUP BY n.name, r.i
                """, arguments: StatementArguments([json] + HabitEvent.Mark.all.sorted())).map { row -> (String, BucketTotal) in
                (row[0], BucketTotal(bucket: row[1], count: row[2], sum: row[3]))
            }
        }
        // Rows come grouped by stored name; spellings of one habit are merged by bucket.
        var byName: [String: [BucketTotal]] = [:]
        for (name, total) in rows { byName[name, default: []].append(total) }
        var byKey: [String: [BucketTotal]] = [:]
        for (name, totals) in byName {
            let key = Definition.key(name)
            guard let other = byKey[key] else {
                byKey[key] = totals.sorted { $0.bucket < $1.bucket }
                continue
            }
            var merged = Dictionary(other.map { ($0.bucket, $0) }) { a, _ in a }
            for t in totals { merged[t.bucket, default: BucketTotal(bucket: t.bucket, count: 0, sum: 0)].add(t) }
            byKey[key] = merged.values.sorted { $0.bucket < $1.bucket }
        }
        return byKey
    }

    /// The times of the `skipped` marks (``HabitEvent/Mark``) within `range`, by the habit's
    /// case-folded name: the days a habit was set aside on purpose, which a streak passes over.
    public func everyHabitSkip(in range: DateRange) async throws -> [String: [Date]] {
        let (condition, arguments) = range.condition("time")
        // The mark written out, not bound: only then may SQLite use the partial index.
        let rows = try await reading { db in
            try Row.fetchAll(db, sql: """
                SELECT habit, time FROM habit_events INDEXED BY habit_events_skipped
                WHERE label = 'skipped' AND deleted = 0 AND \(condition)
                """, arguments: arguments).map { (Definition.key($0[0] as String), $0[1] as String) }
        }
        var out: [String: [Date]] = [:]
        for (key, text) in rows {
            guard let time = ISO8601.parse(text) else { continue }
            out[key, default: []].append(time)
        }
        return out
    }

    /// The first and last entry of every habit that has one, by case-folded name (every
    /// spelling counted): two index seeks per stored name, not a pass over every event.
    public func everyHabitSpan() async throws -> [String: (first: Date, last: Date)] {
        let rows = try await reading { db in
            try Row.fetchAll(db, sql: """
                WITH RECURSIVE \(Self.storedNamesCTE)
                SELECT name, (SELECT min(time) FROM habit_events WHERE habit = n.name AND deleted = 0),
                    (SELECT max(time) FROM habit_events WHERE habit = n.name AND deleted = 0) FROM n
                """).compactMap { row -> (String, String, String)? in
                guard let first: String = row[1], let last: String = row[2] else { return nil }
                return (row[0], first, last)
            }
        }
        var spans: [String: (first: Date, last: Date)] = [:]
        for (name, first, last) in rows {
            let (f, l) = (date(first), date(last))
            let key = Definition.key(name)
            spans[key] = spans[key].map { (min($0.first, f), max($0.last, l)) } ?? (f, l)
        }
        return spans
    }

    /// Workouts per bucket of their start.
    public func workoutTotals(bounds: [Date]) async throws -> [WorkoutBucketTotal] {
        guard bounds.count > 1 else { return [] }
        let json = Self.boundsJSON(bounds)
        return try await reading { db in
            try Row.fetchAll(db, sql: """
                \(Self.bucketsCTE)
                SELECT r.i, count(*), total(coalesce(w.timer_s, w.elapsed_s)), total(w.distance_m), total(w.energy_kcal),
                    total(CASE WHEN w.avg_hr IS NOT NULL AND coalesce(w.timer_s, w.elapsed_s) > 0
                          THEN w.avg_hr * coalesce(w.timer_s, w.elapsed_s) END),
                    total(CASE WHEN w.avg_hr IS NOT NULL AND coalesce(w.timer_s, w.elapsed_s) > 0
                          THEN coalesce(w.timer_s, w.elapsed_s) END)
                FROM r JOIN workouts w ON w.start_time >= r.s AND w.start_time < r.e
                WHERE +w.deleted = 0 GROUP BY r.i ORDER BY r.i
                """, arguments: [json]).map {
                WorkoutBucketTotal(bucket: $0[0], count: $0[1], activeS: $0[2], distanceM: $0[3], energyKcal: $0[4],
                                   hrSeconds: $0[5], hrWeight: $0[6])
            }
        }
    }

    /// Sleep sessions per bucket of their end: a night belongs to the day it ends in (DayBoundary).
    public func sleepTotals(bounds: [Date]) async throws -> [SleepBucketTotal] {
        guard bounds.count > 1 else { return [] }
        let json = Self.boundsJSON(bounds)
        return try await reading { db in
            try Row.fetchAll(db, sql: """
                \(Self.bucketsCTE)
                SELECT r.i, count(*), total(s.total_sleep_s) FROM r
                JOIN sleep_sessions s ON s.end_time >= r.s AND s.end_time < r.e
                WHERE +s.deleted = 0 GROUP BY r.i ORDER BY r.i
                """, arguments: [json]).map { SleepBucketTotal(bucket: $0[0], count: $0[1], sleepS: $0[2]) }
        }
    }

    /// The names the habits' entries are stored under, sorted: each spelling once (`Reading` and
    /// `reading` are two names of one habit; ``habitTotals(_:bounds:byCategory:)`` counts both).
    public func habitNames() async throws -> [String] {
        try await reading { db in
            // One index seek per distinct name (a skip scan), not a pass over every event.
            try String.fetchAll(db, sql: """
                WITH RECURSIVE n(name) AS (
                    SELECT min(habit) FROM habit_events WHERE deleted = 0
                    UNION ALL
                    SELECT (SELECT min(habit) FROM habit_events WHERE habit > n.name AND deleted = 0) FROM n WHERE n.name IS NOT NULL
                ) SELECT name FROM n WHERE name IS NOT NULL
                """)
        }
    }

    /// The time of the first and of the last entry of `habit` (any spelling), or nil when it has none.
    public func habitSpan(_ habit: String) async throws -> (first: Date, last: Date)? {
        try await reading { db in
            let names = try Self.spellings(db, of: habit)
            guard let row = try Row.fetchOne(db, sql: """
                SELECT min(time), max(time) FROM habit_events WHERE habit IN \(Self.placeholders(names.count)) AND deleted = 0
                """, arguments: StatementArguments(names)),
                  let first: String = row[0], let last: String = row[1] else { return nil }
            return (date(first), date(last))
        }
    }

    /// The latest entry of `habit` (any spelling) at or before `time`, or nil.
    public func lastHabitEvent(_ habit: String, atOrBefore time: Date) async throws -> HabitEvent? {
        let (condition, arguments) = DateRange(until: time.addingTimeInterval(0.001)).condition("time")
        return try await reading { db in
            let names = try Self.spellings(db, of: habit)
            return try Row.fetchOne(db, sql: """
                SELECT \(RowDecoder.habitColumns) FROM habit_events WHERE habit IN \(Self.placeholders(names.count)) AND \(condition)
                AND deleted = 0 ORDER BY time DESC LIMIT 1
                """, arguments: StatementArguments(names) + arguments).map(RowDecoder.habit)
        }
    }

    /// The first and last record times over every record table (starts), within `range`, or nil
    /// when there are none.
    public func recordSpan(in range: DateRange = DateRange()) async throws -> (first: Date, last: Date)? {
        // Each table's time index: by time alone, or after a group column (habit, kind). A
        // grouped one is read by a skip scan over its groups, two seeks each, not a full pass.
        let parts: [(table: String, group: String?, column: String)] = [
            ("workouts", nil, "start_time"), ("sleep_sessions", nil, "start_time"), ("habit_events", "habit", "time"),
            ("measurements", "kind", "time"),
        ]
        return try await reading { db in
            var first: String?
            var last: String?
            for (table, group, column) in parts {
                let (condition, arguments) = range.condition(column)
                let sql: String
                if let group {
                    let bound = "FROM \(table) WHERE \(group) = g.v AND deleted = 0 AND \(condition)"
                    sql = """
                        WITH RECURSIVE g0(v) AS (
                            SELECT min(\(group)) FROM \(table)
                            UNION ALL
                            SELECT (SELECT min(\(group)) FROM \(table) WHERE \(group) > g0.v) FROM g0 WHERE g0.v IS NOT NULL),
                        g(v) AS MATERIALIZED (SELECT v FROM g0 WHERE v IS NOT NULL)
                        SELECT min(lo), max(hi) FROM (SELECT (SELECT min(\(column)) \(bound)) AS lo, (SELECT max(\(column)) \(bound)) AS hi FROM g)
                        """
                } else {
                    sql = "SELECT min(\(column)), max(\(column)) FROM \(table) WHERE deleted = 0 AND \(condition)"
                }
                let row = try Row.fetchOne(db, sql: sql, arguments: group == nil ? arguments : arguments + arguments)
                if let low: String = row?[0], first.map({ date(low) < date($0) }) ?? true { first = low }
                if let high: String = row?[1], last.map({ date(high) > date($0) }) ?? true { last = high }
            }
            guard let first, let last else { return nil }
            return (date(first), date(last))
        }
    }

    /// Sleep sessions ending within `range` (by end), latest end first.
    public func sleepSessions(endingIn range: DateRange) async throws -> [SleepSession] {
        let (condition, arguments) = range.condition("end_time")
        return try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM sleep_sessions WHERE deleted = 0 AND \(condition) ORDER BY end_time DESC, id",
                             arguments: arguments).map { try RowDecoder.sleep(db, $0) }
        }
    }

    /// Whole records of `type` (every version's latest, without deleted ones) starting within
    /// `range`, oldest first, a page at a time: those after `after` (a start time and id), at
    /// most `limit`. For the export, which must lose nothing.
    public func records(_ type: RecordType, in range: DateRange = DateRange(), after: (start: String, id: String)? = nil,
                        limit: Int = 500) async throws -> [(start: String, record: HealthRecord)] {
        let table = RecordWriter.table(of: type)
        let column = switch type {
        case .workout, .sleep: "start_time"
        case .habit, .measurement, .definition: "time"
        }
        var (condition, arguments) = range.condition(column)
        if let after {
            condition += " AND (\(column) > ? OR (\(column) = ? AND id > ?))"
            arguments += [after.start, after.start, after.id]
        }
        return try await reading { [condition, arguments] db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, \(column) FROM \(table) WHERE deleted = 0 AND \(condition) ORDER BY \(column), id LIMIT \(limit)
                """, arguments: arguments)
            return try rows.compactMap { row -> (String, HealthRecord)? in
                let id: String = row[0]
                return try RowDecoder.record(db, type: type, id: id).map { (row[1] as String, $0) }
            }
        }
    }
}
