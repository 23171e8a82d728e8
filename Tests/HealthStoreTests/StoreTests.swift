import Foundation
import GRDB
import Testing
import HealthModel
@testable import HealthStore

/// A fresh database file in a temporary folder, removed when the test ends.
final class TempStore {
    let folder: String
    let store: HealthStore

    init() async throws {
        folder = NSTemporaryDirectory() + "healthgate-store-" + UUID().uuidString
        store = try await HealthStore(path: folder + "/healthgate.sqlite")
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}

func sampleWorkout(start: Double = 1_495_129_762, version: Int = 1, samples: Int = 3) -> Workout {
    let t0 = Date(timeIntervalSince1970: start)
    return Workout(
        id: RecordID.derive("workout", "test", "dev", String(Int(start))), version: version, sport: "running",
        start: t0, end: t0.addingTimeInterval(600), timerS: 590, distanceM: 2000, energyKcal: 150, avgHeartRate: 140,
        maxHeartRate: 170, ascentM: 12,
        laps: [Lap(start: t0, end: t0.addingTimeInterval(300), elapsedS: 300, distanceM: 1000),
               Lap(start: t0.addingTimeInterval(300), end: t0.addingTimeInterval(600), elapsedS: 300, distanceM: 1000)],
        samples: (0..<samples).map { i in
            Sample(time: t0.addingTimeInterval(Double(i)), heartRate: 120 + i, speedMps: 3.3, latitude: 52.5, longitude: 13.4)
        },
        rrIntervals: [0.5, 0.51, 0.49],
        source: Source(driver: "test", device: "dev", file: "a.fit"))
}

@Suite struct StoreTests {
    @Test func migratesByName() async throws {
        let t = try await TempStore()
        #expect(try await t.store.appliedMigrations() == ["v1-import-ledger", "v1-records", "v1-outbox", "v2-live-workouts", "v3-sync",
                                                    "v4-outbox-sequential", "v5-held-records", "v6-import-progress", "v7-definitions", "v8-record-versions", "v9-sleep-assessment",
                                                    "v10-habit-totals-index", "v11-i15-pair-glucose-sync", "v12-glucose-last-record",
                                                    "v13-driver-checkpoints", "v14-day-start", "v15-skipped-days", "v16-goal-weight", "v17-derived-habits", "v18-derived-days",
                                                    "v19-measurement-hours", "v20-derived-change-spans"])
        let mode = try await t.store.reading { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }

    /// A database from before `v4-outbox-sequential`: its queue survives in order, the id index
    /// is gone, and no seq is handed out twice (a dead letter keeps its seq).
    @Test func outboxMigrationKeepsTheQueueAndItsSequence() async throws {
        let path = NSTemporaryDirectory() + "hg-v3-\(UUID().uuidString).sqlite"
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        do {
            let queue = try DatabaseQueue(path: path)
            try Schema.migrator.migrate(queue, upTo: "v3-sync")
            try await queue.write { db in
                for i in 1...5 {
                    try db.execute(sql: "INSERT INTO outbox (record_type, record_id, version, enqueued_at) VALUES ('habit', ?, 1, 'x')",
                                   arguments: ["id-\(i)"])
                }
                // 1 and 5 acknowledged, 2 refused: the sequence stands at 5.
                try db.execute(sql: "DELETE FROM outbox WHERE seq IN (1, 5)")
                try db.execute(sql: """
                    INSERT INTO dead_letters SELECT seq, record_type, record_id, version, enqueued_at, 'no', 'x' FROM outbox WHERE seq = 2
                    """)
                try db.execute(sql: "DELETE FROM outbox WHERE seq = 2")
            }
        }
        let store = try await HealthStore(path: path)
        #expect(try await store.outbox(limit: 10).map(\.seq) == [3, 4])
        #expect(try await store.outbox(limit: 10).map(\.id) == ["id-3", "id-4"])
        try await store.write([.habit(HabitEvent(id: RecordID.derive("h", "new"), habit: "water", time: Date(timeIntervalSince1970: 1e9),
                                           source: Source(driver: "test")))])
        #expect(try await store.outbox(limit: 10).map(\.seq) == [3, 4, 6])
        #expect(try await store.deadLetters().map(\.seq) == [2])
        let indexes = try await store.reading { try Row.fetchAll($0, sql: "PRAGMA index_list(outbox)").count }
        #expect(indexes == 0)
    }

    @Test func writesRecordWithChildrenAndOutboxRow() async throws {
        let t = try await TempStore()
        let w = sampleWorkout()
        let result = try await t.store.write([.workout(w)])
        #expect(result == WriteResult(inserted: 1))
        let counts = try await t.store.tableCounts()
        #expect(counts["workouts"] == 1)
        #expect(counts["laps"] == 2)
        #expect(counts["samples"] == 3)
        #expect(counts["rr_intervals"] == 3)
        #expect(counts["outbox"] == 1)

        let back = try #require(try await t.store.workout(id: w.id.description))
        #expect(back == w)
        let listed = try await t.store.workouts()
        #expect(listed.count == 1)
        #expect(listed[0].samples == 3 && listed[0].laps == 2 && listed[0].rrIntervals == 3)
        #expect(listed[0].start == "2017-05-18T17:49:22Z")
    }

    /// A task told to stop (a driver at SIGTERM) still stores what it hands over: a write asked
    /// for by a cancelled task runs to the end, and so does the read before it (GRDB's `async`
    /// accesses threw `CancellationError` and stored nothing).
    @Test func cancelledTaskStillStoresWhatItHandsOver() async throws {
        let t = try await TempStore()
        let store = t.store
        let (gate, open) = AsyncStream<Void>.makeStream()
        let task = Task {
            for await _ in gate { break }
            #expect(Task.isCancelled)
            let counts = try await store.tableCounts()
            return (counts, try await store.write([.workout(sampleWorkout())]))
        }
        task.cancel()
        open.yield()
        let (before, written) = try await task.value
        #expect(before["workouts"] == 0 && written == WriteResult(inserted: 1))
        #expect(try await store.tableCounts()["outbox"] == 1)
    }

    @Test func sameVersionIsStoredOnceAndNewerVersionReplaces() async throws {
        let t = try await TempStore()
        try await t.store.write([.workout(sampleWorkout())])
        #expect(try await t.store.write([.workout(sampleWorkout())]) == WriteResult(unchanged: 1))
        var edited = sampleWorkout(version: 2, samples: 5)
        edited.energyKcal = 200
        #expect(try await t.store.write([.workout(edited)]) == WriteResult(updated: 1))
        let counts = try await t.store.tableCounts()
        #expect(counts["workouts"] == 1)
        #expect(counts["samples"] == 5)  // children replaced, not added to
        #expect(counts["outbox"] == 2)  // both versions queued for forwarding
        #expect(try await t.store.workout(id: edited.id.description)?.energyKcal == 200)
        // An older version arriving late changes nothing.
        #expect(try await t.store.write([.workout(sampleWorkout(version: 1))]) == WriteResult(unchanged: 1))
    }

    @Test func fileCommitIsAtomicAndRemembered() async throws {
        let t = try await TempStore()
        let file = FileImport(contentHash: "abc", path: "a.fit", sizeBytes: 10, driver: "fit",
                              records: [.workout(sampleWorkout()), .workout(sampleWorkout(start: 1_495_200_000))],
                              status: .imported)
        #expect(try await t.store.commit(file) == .committed(WriteResult(inserted: 2)))
        guard case .alreadyImported(let entry) = try await t.store.commit(file) else {
            Issue.record("second commit was not refused"); return
        }
        #expect(entry.records == 2 && entry.status == .imported)
        #expect(try await t.store.tableCounts()["workouts"] == 2)

        // A file whose write fails half-way (here: a sample the schema refuses) leaves nothing.
        var bad = sampleWorkout(start: 1_496_000_000)
        bad.samples[1].time = Date(timeIntervalSince1970: .nan)
        let before = try await t.store.tableCounts()
        let broken = FileImport(contentHash: "def", path: "b.fit", sizeBytes: 10, driver: "fit",
                                records: [.workout(sampleWorkout(start: 1_497_000_000)), .workout(bad)], status: .imported)
        await #expect(throws: (any Error).self) { try await t.store.commit(broken) }
        #expect(try await t.store.tableCounts() == before)
        #expect(try await t.store.ledgerEntry(contentHash: "def") == nil)
    }

    @Test func failedFileIsRetried() async throws {
        let t = try await TempStore()
        let failed = FileImport(contentHash: "h", path: "x.fit", sizeBytes: 1, driver: "fit", records: [], status: .failed,
                                error: "bad")
        #expect(try await t.store.commit(failed) == .committed(WriteResult()))
        #expect(try await t.store.ledgerEntry(contentHash: "h")?.status == .failed)
        let fixed = FileImport(contentHash: "h", path: "x.fit", sizeBytes: 1, driver: "fit",
                               records: [.workout(sampleWorkout())], status: .imported)
        #expect(try await t.store.commit(fixed) == .committed(WriteResult(inserted: 1)))
        #expect(try await t.store.ledgerEntry(contentHash: "h")?.status == .imported)
    }

    @Test func otherRecordTypesRoundTrip() async throws {
        let t = try await TempStore()
        let t0 = Date(timeIntervalSince1970: 1_600_000_000)
        let sleep = SleepSession(id: RecordID.derive("s"), start: t0, end: t0.addingTimeInterval(3600),
                                 stages: [SleepStageSpan(start: t0, end: t0.addingTimeInterval(600), stage: .awake),
                                          SleepStageSpan(start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(3600), stage: .deep)],
                                 assessment: SleepAssessment(score: 74, awakenings: 2), source: Source(driver: "fit"))
        let bp = HealthModel.Measurement(id: RecordID.derive("m"), kind: .bloodPressure, time: t0, value: 120,
                                         extra: ["diastolic": 80], source: Source(driver: "ble", device: "cuff"))
        let drink = HabitEvent(id: RecordID.derive("h"), habit: "hydration", time: t0, value: 8, category: "glass",
                               unit: "fl_oz", source: Source(driver: "manual"))
        try await t.store.write([.sleep(sleep), .measurement(bp), .habit(drink)])
        #expect(try await t.store.sleepSessions() == [sleep])
        #expect(try await t.store.sleepSessions()[0].totalSleepS == 3000)
        #expect(try await t.store.measurements(kind: .bloodPressure) == [bp])
        #expect(try await t.store.measurements(kind: .weight).isEmpty)
        #expect(try await t.store.habitEvents() == [drink])
        #expect(try await t.store.tableCounts()["outbox"] == 3)
    }

    /// Measurements are bound with SQLite's C API: text beyond ASCII, an empty device, no file,
    /// an end time and extras come back as written, and a newer version replaces the stored one
    /// (the version lookup) while the same version is left alone.
    @Test func measurementsBoundDirectlyRoundTrip() async throws {
        let t = try await TempStore()
        let t0 = Date(timeIntervalSince1970: 1_600_000_000.25)
        var m = HealthModel.Measurement(id: RecordID.derive("m-utf8"), kind: .weight, time: t0, end: t0.addingTimeInterval(60),
                                        value: 71.5, extra: ["body_fat": 0.18],
                                        source: Source(driver: "apple-health", device: "Jörg’s ⌚ Watch 10.1, UTC+01:00"))
        let empty = HealthModel.Measurement(id: RecordID.derive("m-empty"), kind: .steps, time: t0, value: 12,
                                            source: Source(driver: "csv", device: ""))
        #expect(try await t.store.write([.measurement(m), .measurement(empty)]) == WriteResult(inserted: 2))
        #expect(try await t.store.measurements(kind: .weight) == [m])
        #expect(try await t.store.measurements(kind: .steps) == [empty])
        #expect(try await t.store.write([.measurement(m)]) == WriteResult(unchanged: 1))
        m.version = 2
        m.value = 71.0
        #expect(try await t.store.write([.measurement(m)]) == WriteResult(updated: 1))
        #expect(try await t.store.measurements(kind: .weight) == [m])
        #expect(try await t.store.tableCounts()["outbox"] == 3)
    }

    /// The in-memory database of unit tests: migrated, with the same pragmas and write rules.
    @Test func anInMemoryStoreHasTheSchemaAndTheRules() async throws {
        let store = try await HealthStore.inMemory()
        #expect(store.path == ":memory:")
        #expect(try await store.appliedMigrations().last == "v20-derived-change-spans")
        #expect(try await store.reading { try Int.fetchOne($0, sql: "PRAGMA secure_delete") } == 1)
        let w = sampleWorkout()
        #expect(try await store.write([.workout(w)]) == WriteResult(inserted: 1))
        #expect(try await store.write([.workout(w)]) == WriteResult(unchanged: 1))
        #expect(try await store.workout(id: w.id.description) == w)
        #expect(try await store.outboxDepth() == 1)
        // Another in-memory store is another database.
        #expect(try await HealthStore.inMemory().outboxDepth() == 0)
        await store.releaseMemory()
        #expect(try await store.tableCounts()["samples"] == 3)
    }

    @Test func dateRangeFilters() async throws {
        let t = try await TempStore()
        try await t.store.write([.workout(sampleWorkout(start: 1_500_000_000)), .workout(sampleWorkout(start: 1_600_000_000))])
        let since = try await t.store.workouts(in: DateRange(since: Date(timeIntervalSince1970: 1_550_000_000)))
        #expect(since.count == 1)
        let until = try await t.store.workouts(in: DateRange(until: Date(timeIntervalSince1970: 1_550_000_000)))
        #expect(until.count == 1 && until[0].start == ISO8601.string(Date(timeIntervalSince1970: 1_500_000_000)))
    }
}
