public import Foundation
import GRDB
public import HealthModel

/// Measurement totals per bucket, and the kept per-hour totals they are read from
/// (``Schema``'s `measurement_hours`). The rule is one: within each UTC hour a kind's total is
/// that of the source that measured most in it, and a bucket's total adds its hours. Hours
/// wholly inside a bucket come from the kept totals (read again first where readings were
/// written since); a bucket's first and last part hour (a zone half an hour off UTC, a day
/// start at 04:30) is summed from the readings.
extension HealthStore {
    /// The kinds whose hours are kept: the ones the views total (steps and active energy today
    /// and in stats, weight in stats). The `v19-measurement-hours` migration's triggers note
    /// these kinds' writes: changing the list needs a migration.
    static let hourlyKinds: [MeasurementKind] = [.steps, .energy, .weight]

    /// Measurements of `kind` per bucket: how many, and their total counted once where sources
    /// overlap. Two sources often measure the same hours (a phone and a watch both count steps):
    /// within each hour (UTC) the total is that of the source that measured most in it, and a
    /// bucket's total adds its hours. A source is the device, else the driver. One source gives
    /// the plain sum. Buckets without readings are left out.
    public func measurementTotals(_ kind: MeasurementKind, bounds: [Date]) async throws -> [BucketTotal] {
        guard bounds.count > 1 else { return [] }
        let split = Self.splitHours(bounds)
        // Whole hours from the kept totals when this kind's are kept; else from the readings too.
        let kept = Self.hourlyKinds.contains(kind)
        let whole = kept ? split.whole : []
        let parts = kept ? split.parts : split.whole.map { ($0.bucket, $0.from, $0.to) } + split.parts
        let query = { @Sendable (db: Database) throws -> [BucketTotal] in
            try Row.fetchAll(db, sql: """
                WITH w AS MATERIALIZED (SELECT value ->> 0 AS i, value ->> 1 AS s, value ->> 2 AS e FROM json_each(?)),
                p AS MATERIALIZED (SELECT value ->> 0 AS i, value ->> 1 AS s, value ->> 2 AS e FROM json_each(?)),
                kept AS (SELECT w.i AS i, sum(h.readings) AS n, total(h.total) AS v FROM w
                    JOIN measurement_hours h ON h.kind = ? AND h.hour >= w.s AND h.hour < w.e GROUP BY w.i),
                per_source AS (
                    SELECT p.i AS i, p.s AS part, substr(m.time, 1, 13) AS hour, coalesce(m.source_device, m.source_driver) AS source,
                        count(*) AS n, total(m.value) AS v
                    FROM p JOIN measurements m ON m.kind = ? AND m.time >= p.s AND m.time < p.e
                    WHERE +m.deleted = 0 GROUP BY p.i, part, hour, source),
                per_hour AS (SELECT i, sum(n) AS n, max(v) AS v FROM per_source GROUP BY i, part, hour)
                SELECT i, sum(n), total(v) FROM (SELECT i, n, v FROM kept UNION ALL SELECT i, n, v FROM per_hour)
                GROUP BY i ORDER BY i
                """, arguments: [Self.rangesJSON(whole), Self.rangesJSON(parts), kind.rawValue, kind.rawValue])
                .map { BucketTotal(bucket: $0[0], count: $0[1], sum: $0[2]) }
        }
        guard kept else { return try await reading(query) }
        // Hours written since they were kept are read again, in the transaction that reads
        // them; a read finding none noted stays a read (the check and the totals in one snapshot).
        let unchanged = try await reading { db -> [BucketTotal]? in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM measurement_hour_changes)") == true ? nil : try query(db)
        }
        if let unchanged { return unchanged }
        return try await writing { db in
            try Self.refreshMeasurementHours(db)
            return try query(db)
        }
    }

    /// Keeps again the totals of every hour noted in `measurement_hour_changes`, from its
    /// readings, and forgets the notes.
    static func refreshMeasurementHours(_ db: Database) throws {
        // Each noted hour is a seek on the kind and time index: the hour's readings are the
        // times from `YYYY-MM-DDTHH` up to `YYYY-MM-DDTHH;` (`;` follows `:`).
        try db.execute(sql: """
            DELETE FROM measurement_hours WHERE (kind, hour) IN (SELECT kind, hour FROM measurement_hour_changes);
            INSERT INTO measurement_hours (kind, hour, readings, total)
                SELECT kind, hour, sum(n), max(v) FROM (
                    SELECT c.kind AS kind, c.hour AS hour, coalesce(m.source_device, m.source_driver) AS source,
                        count(*) AS n, total(m.value) AS v
                    FROM measurement_hour_changes c JOIN measurements m ON m.kind = c.kind AND m.time >= c.hour AND m.time < c.hour || ';'
                    WHERE +m.deleted = 0 GROUP BY c.kind, c.hour, source)
                GROUP BY kind, hour;
            DELETE FROM measurement_hour_changes;
            """)
    }

    /// Bucket `i`'s hours that lie wholly inside it (`from` and `to` as hour texts, `to`
    /// excluded), and its part hours (each within one hour, as bound texts).
    static func splitHours(_ bounds: [Date]) -> (whole: [(bucket: Int, from: String, to: String)], parts: [(bucket: Int, from: String, to: String)]) {
        var whole: [(Int, String, String)] = [], parts: [(Int, String, String)] = []
        for i in 0..<(bounds.count - 1) {
            let (s, e) = (bounds[i], bounds[i + 1])
            guard s < e else { continue }
            let firstWhole = hourStart(s) == s ? s : hourStart(s).addingTimeInterval(3600)
            let lastWhole = hourStart(e)
            if firstWhole < lastWhole {
                whole.append((i, hourText(firstWhole), hourText(lastWhole)))
                if s < firstWhole { parts.append((i, boundText(s), boundText(firstWhole))) }
                if lastWhole < e { parts.append((i, boundText(lastWhole), boundText(e))) }
            } else if firstWhole < e {
                // Across one hour's start: a part on each side.
                if s < firstWhole { parts.append((i, boundText(s), boundText(firstWhole))) }
                parts.append((i, boundText(firstWhole), boundText(e)))
            } else {
                parts.append((i, boundText(s), boundText(e)))
            }
        }
        return (whole, parts)
    }

    /// The start of the UTC hour holding `date`.
    static func hourStart(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
    }

    /// An hour as `measurement_hours` keys it: the stored time's first 13 characters.
    static func hourText(_ hour: Date) -> String {
        String(boundText(hour).prefix(13))
    }

    static func rangesJSON(_ ranges: [(bucket: Int, from: String, to: String)]) -> String {
        "[" + ranges.map { "[\($0.bucket),\"\($0.from)\",\"\($0.to)\"]" }.joined(separator: ",") + "]"
    }
}
