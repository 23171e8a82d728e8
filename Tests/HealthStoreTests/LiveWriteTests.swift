import Foundation
import GRDB
import Testing
import HealthModel
@testable import HealthStore

/// Pieces of one live workout: `count` samples each, from `first`.
func piece(_ id: RecordID, first: Int, count: Int, final: Bool = false) -> WorkoutProgress {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000)
    let samples = (first..<first + count).map { Sample(time: t0.addingTimeInterval(Double($0)), heartRate: 100 + $0) }
    let end = t0.addingTimeInterval(Double(max(0, first + count - 1)))
    let w = Workout(id: id, sport: "cycling", start: t0, end: end, timerS: end.timeIntervalSince(t0),
                    avgHeartRate: 100 + (first + count - 1) / 2, maxHeartRate: 100 + first + count - 1,
                    samples: samples, rrIntervals: samples.map { _ in 0.6 }, source: Source(driver: "ble", device: "C0:4E:47:00:00:01"))
    return WorkoutProgress(workout: w, sampleOffset: first, rrOffset: first, isFinal: final)
}

@Suite struct LiveWriteTests {
    let id = RecordID.derive("workout", "ble", "C0:4E:47:00:00:01", "1")

    func counts(_ t: TempStore) async throws -> (samples: Int, rr: Int, outbox: Int, inProgress: Int) {
        try await t.store.reading { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM samples") ?? -1,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM rr_intervals") ?? -1,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? -1,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM workouts WHERE in_progress = 1") ?? -1)
        }
    }

    @Test func piecesGrowTheWorkoutAndTheFinalOneQueuesIt() async throws {
        let t = try await TempStore()
        var result = try await t.store.write(LiveBatch(workouts: [piece(id, first: 0, count: 3)]))
        #expect(result.stored == 0)  // in progress: not counted as stored, not queued
        #expect(try await counts(t) == (3, 3, 0, 1))
        #expect(try await t.store.workouts().first?.inProgress == true)

        result = try await t.store.write(LiveBatch(workouts: [piece(id, first: 3, count: 4)]))
        #expect(try await counts(t) == (7, 7, 0, 1))
        let summary = try #require(try await t.store.workouts().first)
        #expect(summary.maxHR == 106 && summary.samples == 7 && summary.elapsedS == 6)

        result = try await t.store.write(LiveBatch(workouts: [piece(id, first: 7, count: 0, final: true)]))
        #expect(result.inserted == 0 && result.updated == 1)
        #expect(try await counts(t) == (7, 7, 1, 0))
        let whole = try #require(try await t.store.workout(id: id.description))
        #expect(whole.samples.map(\.heartRate) == (100..<107).map { $0 })
        #expect(whole.rrIntervals.count == 7)

        // A piece for a completed workout changes nothing.
        result = try await t.store.write(LiveBatch(workouts: [piece(id, first: 7, count: 2)]))
        #expect(result.unchanged == 1)
        #expect(try await counts(t) == (7, 7, 1, 0))
    }

    @Test func aWorkoutRecordedInOnePieceIsInsertedAndQueued() async throws {
        let t = try await TempStore()
        let m = HealthModel.Measurement(id: RecordID.derive("m", "1"), kind: .batteryLevel, time: Date(timeIntervalSince1970: 1_763_800_000),
                                        value: 80, source: Source(driver: "ble", device: "x"))
        let result = try await t.store.write(LiveBatch(records: [.measurement(m)], workouts: [piece(id, first: 0, count: 5, final: true)]))
        #expect(result.inserted == 2)
        #expect(try await counts(t) == (5, 5, 2, 0))
    }

    @Test func aBatchThatFailsLeavesNothingHalfWritten() async throws {
        let t = try await TempStore()
        try await t.store.write(LiveBatch(workouts: [piece(id, first: 0, count: 3)]))
        let m = HealthModel.Measurement(id: RecordID.derive("m", "2"), kind: .weight, time: Date(timeIntervalSince1970: 1_763_800_000),
                                        value: 70, source: Source(driver: "ble", device: "x"))
        // Samples 2... again: seq 2 exists, so the insert fails and the whole batch rolls back.
        await #expect(throws: (any Error).self) {
            try await t.store.write(LiveBatch(records: [.measurement(m)], workouts: [piece(id, first: 2, count: 3)]))
        }
        #expect(try await counts(t) == (3, 3, 0, 1))
        #expect(try await t.store.measurements().isEmpty)
    }

    @Test func aDriverCheckpointIsStoredWithItsRecordsOrNotAtAll() async throws {
        let t = try await TempStore()
        let meter = "C0:4E:47:00:00:0A"
        let key = CheckpointKey(driver: "ble", device: meter)
        func reading(_ seq: Int) -> HealthRecord {
            .measurement(HealthModel.Measurement(id: RecordID.derive("measurement", "ble", meter, "glucose", "\(seq)"), kind: .glucose,
                                                 time: Date(timeIntervalSince1970: 1_763_800_000 + Double(seq) * 3600), value: 5.5,
                                                 source: Source(driver: "ble", device: meter)))
        }
        func cursor(_ seq: Int) -> String { #"{"record":"02\#(String(format: "%02x", seq))00ea","sequence":\#(seq)}"# }
        try await t.store.write(LiveBatch(records: [reading(1), reading(2)], checkpoints: [key: cursor(2)]))
        #expect(try await t.store.checkpoint(key) == cursor(2))
        // Batches in a row: the later checkpoint wins (a reset meter's sequence number may be lower).
        let merged = LiveBatch(records: [reading(3)], checkpoints: [key: cursor(3)]) + LiveBatch(checkpoints: [key: cursor(1)])
        #expect(merged.checkpoints == [key: cursor(1)] && !LiveBatch(checkpoints: [key: cursor(1)]).isEmpty)
        try await t.store.write(merged)
        #expect(try await t.store.checkpoint(key) == cursor(1))
        // A batch that fails stores neither its records nor the checkpoint.
        try await t.store.write(LiveBatch(workouts: [piece(id, first: 0, count: 3)]))
        await #expect(throws: (any Error).self) {
            try await t.store.write(LiveBatch(records: [reading(4)], workouts: [piece(id, first: 2, count: 3)], checkpoints: [key: cursor(4)]))
        }
        #expect(try await t.store.checkpoint(key) == cursor(1))
        #expect(try await t.store.measurements().count == 3)
        // One checkpoint per driver and device: another driver's for the same device is its own.
        let other = CheckpointKey(driver: "ant", device: meter)
        try await t.store.write(LiveBatch(checkpoints: [other: #"{"files":[]}"#]))
        #expect(try await t.store.checkpoint(other) == #"{"files":[]}"#)
        #expect(try await t.store.checkpoints(driver: "ble") == [meter: cursor(1)])
        // The table takes JSON only.
        await #expect(throws: (any Error).self) { try await t.store.write(LiveBatch(checkpoints: [other: "not json"])) }
        #expect(try await t.store.checkpoint(other) == #"{"files":[]}"#)
    }

    /// `v13-driver-checkpoints` turns each `glucose_sync` row into the `ble` driver's checkpoint
    /// for the meter, with its record as hex, and without one where the row had none.
    @Test func glucoseCursorsBecomeTheBLEDriversCheckpoints() async throws {
        let folder = NSTemporaryDirectory() + "healthgate-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/healthgate.sqlite"
        let old = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(old, upTo: "v12-glucose-last-record")
        try await old.write { db in
            try db.execute(sql: "INSERT INTO glucose_sync (device, last_sequence, last_record, updated_at) VALUES ('C0:4E:47:00:00:0A', 7, X'0207A0EA', 'x')")
            try db.execute(sql: "INSERT INTO glucose_sync (device, last_sequence, updated_at) VALUES ('C0:4E:47:00:00:0B', 65535, 'y')")
        }
        try old.close()
        let store = try await HealthStore(path: path)
        #expect(try await store.checkpoints(driver: "ble") == [
            "C0:4E:47:00:00:0A": #"{"record":"0207a0ea","sequence":7}"#,
            "C0:4E:47:00:00:0B": #"{"sequence":65535}"#,
        ])
        let tables = try await store.reading { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        #expect(tables.contains("driver_checkpoints") && !tables.contains("glucose_sync"))
    }

    @Test func workoutsLeftInProgressAreCompletedOnTheNextStart() async throws {
        let t = try await TempStore()
        try await t.store.write(LiveBatch(workouts: [piece(id, first: 0, count: 4)]))
        // The recording died here (no final piece). The next one completes what was stored.
        let reopened = try await HealthStore(path: t.store.path)
        #expect(try await reopened.completeInterruptedWorkouts() == [id])
        #expect(try await counts(t) == (4, 4, 1, 0))
        let w = try #require(try await reopened.workout(id: id.description))
        #expect(w.end == Date(timeIntervalSince1970: 1_763_800_003) && w.samples.count == 4)
        #expect(try await reopened.completeInterruptedWorkouts().isEmpty)
    }
}

@Suite struct ConcurrentOpenTests {
    /// Processes opening a new database at the same moment (here: threads with their own pools)
    /// all end with it migrated once.
    @Test func databasesOpenedAtOnceAreMigratedOnce() async throws {
        for _ in 0..<20 {
            let path = NSTemporaryDirectory() + "hg-open-\(UUID().uuidString).sqlite"
            defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
            let migrations = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 { group.addTask { try await HealthStore(path: path).appliedMigrations() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(migrations.count == 4 && Set(migrations.map { $0.joined(separator: ",") }).count == 1)
            #expect(migrations.first?.last == "v20-derived-change-spans")
        }
    }
}
