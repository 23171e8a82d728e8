import Foundation
import GRDB
import HealthModel
import HealthPipeline
import HealthReports
import HealthStore
import HealthSync
import Testing
import TestSupport

/// No SQLite statement of the store runs on a thread of Swift's cooperative pool (two threads
/// here): every statement of the stores below is traced by `StatementThreadCheck`, which records
/// those that started on a pool thread.
@Suite struct CooperativePoolTests {
    /// The check itself: it tells the pool's threads from GRDB's queues, lets GRDB's asynchronous
    /// accesses through and catches a synchronous write made from a task (what the store did
    /// before: `pool.write` runs its statements on the calling thread).
    @Test func theCheckCatchesASynchronousWriteFromATask() async throws {
        StatementThreadCheck.enable()
        #expect(await Task.detached { StatementThreadCheck.onCooperativeThread() }.value)
        let name = "control-\(UUID().uuidString)"
        var configuration = Configuration()
        configuration.prepareDatabase { db in StatementThreadCheck.install(on: db, path: name) }
        let queue = try await onOwnThread { [configuration] in try DatabaseQueue(configuration: configuration) }
        #expect(try await queue.read { _ in StatementThreadCheck.onCooperativeThread() } == false)
        try await queue.write { db in try db.execute(sql: "CREATE TABLE t (x)") }
        #expect(StatementThreadCheck.checkedStatements(path: name) > 0)
        #expect(StatementThreadCheck.violations(path: name).isEmpty)

        try await Task.detached { try queue.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") } }.value
        #expect(StatementThreadCheck.violations(path: name).map(\.sql).contains("INSERT INTO t VALUES (1)"))
    }

    /// What the daemon and the commands do with a store: import files, store live batches from
    /// several devices at once, list and report, drain the outbox to a real server and pull the
    /// history back, retry dead letters, release memory. Not one statement on the pool.
    @Test func importLiveBatchesReportsAndSyncRunOffThePool() async throws {
        StatementThreadCheck.enable()
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let a = try await Install()
        try await a.importFixtures()

        // Live batches (as BLE recorders emit them): four devices at once, pieces of a workout
        // each plus a measurement per batch, the last piece final.
        let sink = StoreSink(store: a.store)
        let t0 = Date(timeIntervalSince1970: 1_763_900_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in 0..<4 {
                group.addTask {
                    let id = RecordID.derive("workout", "pool-test", String(device))
                    for piece in 0..<10 {
                        let samples = (piece * 5..<piece * 5 + 5).map { Sample(time: t0.addingTimeInterval(Double($0)), heartRate: 100 + $0) }
                        let end = t0.addingTimeInterval(Double(piece * 5 + 4))
                        let w = Workout(id: id, sport: "cycling", start: t0, end: end, timerS: end.timeIntervalSince(t0),
                                        samples: samples, source: Source(driver: "ble", device: "dev-\(device)"))
                        let m = HealthModel.Measurement(id: RecordID.derive("m", String(device), String(piece)), kind: .heartRate,
                                                        time: end, value: 120, source: Source(driver: "ble", device: "dev-\(device)"))
                        try await sink.emit(LiveBatch(records: [.measurement(m)],
                                                      workouts: [WorkoutProgress(workout: w, sampleOffset: piece * 5, rrOffset: 0,
                                                                                 isFinal: piece == 9)]))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(sink.rejected.isEmpty)
        #expect(try await a.store.completeInterruptedWorkouts().isEmpty)

        // What the listing and report commands read.
        #expect(try await !Reports.stats(a.store, period: .day).isEmpty)
        var lines = 0
        try await Reports.csv(a.store, days: .midnight(in: .current), now: Date()) { _ in lines += 1 }
        #expect(lines > 1)
        #expect(try await a.store.ledger().count == 6)
        let workouts = try await a.store.workouts()
        #expect(try await a.store.workout(id: workouts[0].id) != nil)
        #expect(try await a.store.tableCounts()["samples"] ?? 0 > 200)

        // The forwarder against the real server: drain, then pull the history back.
        let client = try SyncClient(configuration: .init(server: server.url))
        let forwarder = fastForwarder(a, client, token: account.token)
        let drained = try await forwarder.drain()
        #expect(drained.remaining == 0 && drained.accepted > 0)
        let pulled = try await forwarder.pull()
        #expect(pulled.received >= drained.accepted)
        await client.shutdown()
        #expect(try await a.store.retryDeadLetters() == 0)
        #expect(try await a.store.syncState("last_success_at") != nil)
        await a.store.releaseMemory()

        #expect(StatementThreadCheck.checkedStatements(path: a.databasePath) > 1000)
        let onPool = StatementThreadCheck.violations(path: a.databasePath)
        #expect(onPool.isEmpty, "\(onPool.count) statement(s) on the pool, e.g. \(onPool.prefix(5))")
    }

    /// The commands, run as a user runs them with the check on: each ends by saying how many
    /// statements it checked, and none ran on the pool.
    @Test func commandsRunOffThePool() async throws {
        let folder = NSTemporaryDirectory() + "hg-pool-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/healthgate.sqlite"
        let fixtures = PackagePaths.fixtures
        let commands: [[String]] = [
            ["import", fixtures + "/fit/garmin-fenix5-run.fit", fixtures + "/tcx"],
            ["workouts"], ["sleep"], ["measurements"], ["stats", "--period", "week"], ["export", "--output", folder + "/all.csv"],
            ["status"], ["dead-letters"],
        ]
        for command in commands {
            let run = try await Tool.run(Tool.path("healthgate"), command + ["--db", db],
                                         environment: ["HEALTHGATE_STATEMENT_CHECK": "1"])
            #expect(run.status == 0, "\(command): \(run.stderr)")
            let summary = run.stderr.split(separator: "\n").last { $0.hasPrefix("statement check: ") }
            let figures = summary.map { $0.split(separator: " ").compactMap { Int($0) } } ?? []
            #expect(figures.count == 2 && figures[0] > 0 && figures[1] == 0, "\(command): \(run.stderr)")
        }
    }
}
