import Foundation
import HealthModel
import HealthStore
import HealthSync
import Synchronization
import SyncProtocol
import Testing
import TestSupport
import Timing

/// The daemon's forwarder against servers on PostgreSQL, whatever store the run uses: several
/// server processes on one database, and PostgreSQL going away in the middle of a sync.
@Suite(.serialized) struct PostgresSyncTests {
    /// Two server processes, one database, one install syncing through each: both converge.
    @Test func twoServerProcessesOnOneDatabaseServeOneAccount() async throws {
        let folder = try temporaryFolder("two-servers")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/shared"
        let first = try await ServerProcess.start(databasePath: path, store: .postgres)
        let second = try await ServerProcess.start(databasePath: path, store: .postgres)
        try await twoInstallsConverge(first, second)
    }

    /// The same through pgbouncer in transaction mode (a server connection lent per transaction):
    /// the store's statements need no session (no named prepared statements, no SET, advisory
    /// locks only inside a transaction).
    @Test func twoServerProcessesThroughPgBouncerInTransactionMode() async throws {
        let cluster = try await PostgresCluster.shared()
        let bouncer = try PgBouncer(in: cluster, poolSize: 4)
        let url = bouncer.url(try await cluster.createDatabase())
        let first = try await ServerProcess.start(databasePath: "pgbouncer-1", databaseURL: url)
        let second = try await ServerProcess.start(databasePath: "pgbouncer-2", databaseURL: url)
        try await twoInstallsConverge(first, second)
        #expect(bouncer.log.contains("login attempt"), "the connections went through pgbouncer: \(bouncer.log.suffix(2000))")
    }

    func twoInstallsConverge(_ first: ServerProcess, _ second: ServerProcess) async throws {
        #expect(first.databaseURL == second.databaseURL && first.url != second.url)

        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let account = try await Account.create(on: first)
        let clientA = try SyncClient(configuration: .init(server: first.url))
        let clientB = try SyncClient(configuration: .init(server: second.url))
        defer { Task { await clientA.shutdown(); await clientB.shutdown() } }
        let sent = try await fastForwarder(a, clientA, token: account.token, maxRecords: 5).drain()
        // Every record reached the server once: a retry after an answer lost to a timeout (a
        // loaded machine) finds its records there already, as duplicates, never twice.
        #expect(sent.accepted + sent.duplicates == local.count && sent.rejected == 0 && sent.remaining == 0
                && (sent.duplicates == 0 || sent.retries > 0), "\(sent)")

        // The second install logs in through the other process and pulls everything.
        let b = try await Install()
        let other = try await account.login(on: second)
        let pulled = try await fastForwarder(b, clientB, token: other.token).pull()
        #expect(pulled.received == local.count)
        #expect(try await b.allRecords() == local)

        // What the second install adds reaches the first through the first process, once.
        let drink = HabitEvent(id: RecordID.derive("habit", "two-servers", "1"), habit: "water",
                               time: Date(timeIntervalSince1970: 1_763_900_000), value: 300, unit: "ml", source: Source(driver: "manual"))
        try await b.store.write([.habit(drink)])
        let back = try await fastForwarder(b, clientB, token: other.token).drain()
        #expect(back.accepted == 1)
        let update = try await fastForwarder(a, clientA, token: account.token).pull()
        #expect(update.received == local.count + 1 && update.stored == 1, "\(update)")
        #expect(try await a.store.habitEvents().contains { $0.id == drink.id })
        #expect(try await fastForwarder(a, clientA, token: account.token).pull().received == 0, "nothing pulled twice")
    }

    /// PostgreSQL killed (immediate stop: as if it crashed) after the first acknowledged batch
    /// and started again three seconds later, longer than the server waits for a connection
    /// (pool_wait=1): meanwhile uploads are answered 503 with Retry-After (never a hang), the
    /// forwarder retries, and the server ends with exactly the install's set.
    @Test func postgresKilledMidSyncEndsWithExactlyTheSameSet() async throws {
        let cluster = try await PostgresCluster.start()
        let server = try await ServerProcess.start(postgres: cluster, postgresOptions: "pool_wait=1")
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let account = try await Account.create(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let killed = Mutex(false)
        let restarted = Doorbell()
        let report = try await fastForwarder(a, client, token: account.token, maxRecords: 1, failures: 200).drain { _ in
            let first = killed.withLock { done in defer { done = true }; return !done }
            guard first else { return }
            do { try cluster.stop(mode: "immediate") } catch { Issue.record("PostgreSQL did not stop: \(error)") }
            Thread {
                Thread.sleep(forTimeInterval: 3)
                do { try cluster.start() } catch { Issue.record("PostgreSQL did not start again: \(error)") }
                restarted.ring()
            }.start()
        }
        #expect(killed.withLock { $0 })
        #expect(await restarted.wait(upTo: Patience.limit))
        #expect(report.remaining == 0 && report.retries > 0, "the forwarder met the outage: \(report)")
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        #expect(try await a.store.outboxDepth() == 0)
        #expect(server.log.contains("database unavailable"), "the outage was answered 503: \(server.log.suffix(3000))")
        try await cluster.stop()
    }
}
