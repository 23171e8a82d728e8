import Foundation
import GRDB
import HealthModel
@testable import HealthStore
import Testing
import TestSupport

/// Measurement totals read from the kept hourly totals equal the rule computed here from the
/// records themselves (per UTC hour the source that measured most; buckets add their hours), in
/// zones whose days start off the hour, after new versions, deletions, removals and writes made
/// with plain SQL behind the store's back; and a database migrated with readings already in it.
@Suite struct MeasurementHoursTests {
    static let sources = [Source(driver: "apple_health", device: "iPhone"), Source(driver: "apple_health", device: "Watch"),
                          Source(driver: "gadgetbridge")]
    static let start = ISO8601.parse("2026-03-24T00:00:00Z")!

    /// Random readings of `kind` over ten days from three sources, at whole seconds and at
    /// milliseconds, some at an hour's very start.
    static func readings(_ kind: MeasurementKind, count: Int, seed: UInt64, version: Int = 1) -> [HealthModel.Measurement] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { i in
            let second = Double(Int.random(in: 0..<(10 * 86_400), using: &random))
            let time = start.addingTimeInterval(i % 7 == 0 ? (second / 3600).rounded(.down) * 3600
                                                : second + (i % 3 == 0 ? Double(Int.random(in: 0..<1000, using: &random)) / 1000 : 0))
            let value = kind == .weight ? Double(Int.random(in: 600...900, using: &random)) / 10 : Double(Int.random(in: 0...400, using: &random))
            return HealthModel.Measurement(id: RecordID.derive("hours", kind.rawValue, String(i)), version: version, kind: kind, time: time,
                               value: value, source: sources[Int.random(in: 0..<3, using: &random)])
        }
    }

    /// The rule, from the records: per bucket, per UTC hour, per source the sum; the hour's
    /// total the largest; the bucket's the sum of its hours; buckets without readings left out.
    static func expected(_ readings: [HealthModel.Measurement], bounds: [Date]) -> [BucketTotal] {
        var out: [BucketTotal] = []
        for i in 0..<(bounds.count - 1) {
            let inside = readings.filter { $0.time >= bounds[i] && $0.time < bounds[i + 1] }
            guard !inside.isEmpty else { continue }
            var perHour: [Int: [String: Double]] = [:]
            for m in inside {
                let hour = Int((m.time.timeIntervalSince1970 / 3600).rounded(.down))
                perHour[hour, default: [:]][m.source.device ?? m.source.driver, default: 0] += m.value
            }
            out.append(BucketTotal(bucket: i, count: inside.count, sum: perHour.values.reduce(0) { $0 + $1.values.max()! }))
        }
        return out
    }

    /// Local days in `zone`, and weeks, and uneven bounds that cut hours anywhere.
    static func boundsLists() -> [[Date]] {
        var lists: [[Date]] = []
        for zone in ["Asia/Kolkata", "Asia/Kathmandu", "Europe/Berlin", "UTC"] {
            for startMinutes in [0, 270] {
                let days = DayBoundary(timeZone: TimeZone(identifier: zone)!, startMinutes: startMinutes)
                let first = days.day(of: start).adding(-1)
                lists.append((0...12).map { days.start(of: first.adding($0)) })
            }
        }
        lists.append([start.addingTimeInterval(-1), start.addingTimeInterval(1234.5), start.addingTimeInterval(1800),
                      start.addingTimeInterval(5400), start.addingTimeInterval(5400.001), start.addingTimeInterval(7 * 86_400 + 17),
                      start.addingTimeInterval(11 * 86_400)])
        return lists
    }

    func check(_ store: HealthStore, _ readings: [MeasurementKind: [HealthModel.Measurement]], _ step: String) async throws {
        for (kind, records) in readings {
            for bounds in Self.boundsLists() {
                let got = try await store.measurementTotals(kind, bounds: bounds)
                let want = Self.expected(records, bounds: bounds)
                #expect(got.map(\.bucket) == want.map(\.bucket), "\(step): \(kind) buckets over \(bounds.first!)")
                #expect(got.map(\.count) == want.map(\.count), "\(step): \(kind) counts over \(bounds.first!)")
                for (g, w) in zip(got, want) {
                    #expect(abs(g.sum - w.sum) <= 1e-9 * max(1, abs(w.sum)), "\(step): \(kind) bucket \(g.bucket): \(g.sum) vs \(w.sum)")
                }
            }
        }
        let pending = try await store.reading { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM measurement_hour_changes") }
        #expect(pending == 0, "\(step): every noted hour kept again")
    }

    @Test func keptHoursGiveTheRulesTotals() async throws {
        let t = try await TempStore()
        // Steps and weight are kept per hour; heart rate is summed from its readings.
        var readings: [MeasurementKind: [HealthModel.Measurement]] = [
            .steps: Self.readings(.steps, count: 3000, seed: 1), .weight: Self.readings(.weight, count: 200, seed: 2),
            .heartRate: Self.readings(.heartRate, count: 500, seed: 3),
        ]
        try await t.store.write(readings.values.flatMap { $0 }.map { HealthRecord.measurement($0) })
        try await check(t.store, readings, "first read")
        // A second read keeps nothing again and gives the same.
        try await check(t.store, readings, "second read")

        // New versions: every fifth reading moved by 40 minutes with a new value.
        var steps = readings[.steps]!
        var changed: [HealthRecord] = []
        for i in stride(from: 0, to: steps.count, by: 5) {
            steps[i].version = 2
            steps[i].time = steps[i].time.addingTimeInterval(2400)
            steps[i].value += 17
            changed.append(.measurement(steps[i]))
        }
        try await t.store.write(changed)
        readings[.steps] = steps
        try await check(t.store, readings, "new versions")

        // Deleted (a tombstone): gone from the totals.
        for i in stride(from: 1, to: 300, by: 7) { _ = try await t.store.delete(id: steps[i].id.description) }
        steps = steps.enumerated().filter { $0.offset >= 300 || ($0.offset - 1) % 7 != 0 }.map(\.element)
        readings[.steps] = steps
        try await check(t.store, readings, "deleted")

        // Written with plain SQL behind the store's back: values doubled, rows removed.
        let queue = try DatabaseQueue(path: t.folder + "/healthgate.sqlite")
        try await queue.write { db in
            try db.execute(sql: "UPDATE measurements SET value = value * 2 WHERE kind = 'weight' AND time < '2026-03-28'")
            try db.execute(sql: "DELETE FROM measurements WHERE kind = 'steps' AND time >= '2026-03-30T05' AND time < '2026-03-30T07'")
        }
        readings[.weight] = readings[.weight]!.map { m in
            var m = m
            if m.time < ISO8601.parse("2026-03-28T00:00:00Z")! { m.value *= 2 }
            return m
        }
        readings[.steps] = steps.filter { !($0.time >= ISO8601.parse("2026-03-30T05:00:00Z")! && $0.time < ISO8601.parse("2026-03-30T07:00:00Z")!) }
        try await check(t.store, readings, "plain SQL")
    }

    /// A database written before the hours were kept: the migration notes every hour, and the
    /// first read keeps them.
    @Test func migratedDatabaseKeepsItsHours() async throws {
        let folder = NSTemporaryDirectory() + "healthgate-hours-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/healthgate.sqlite"
        let steps = Self.readings(.steps, count: 2000, seed: 9)
        // Written by this version, then taken back to the one before: its tables, triggers and
        // the migration's name dropped (the rest of the schema is the same).
        try await HealthStore(path: path).write(steps.map { HealthRecord.measurement($0) })
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                DROP TRIGGER measurements_hours_insert; DROP TRIGGER measurements_hours_update; DROP TRIGGER measurements_hours_delete;
                DROP TABLE measurement_hours; DROP TABLE measurement_hour_changes;
                DELETE FROM grdb_migrations WHERE identifier = 'v19-measurement-hours';
                """)
        }
        let store = try await HealthStore(path: path)
        #expect(try await store.appliedMigrations().contains("v19-measurement-hours"))
        let noted = try await store.reading { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM measurement_hour_changes") ?? 0 }
        #expect(noted == Set(steps.map { Int(($0.time.timeIntervalSince1970 / 3600).rounded(.down)) }).count)
        try await check(store, [.steps: steps], "migrated")
    }
}
