import Foundation
import HealthModel
import Logging
import Synchronization
import SyncProtocol
import Testing
import TestSupport
@testable import HealthGateServer

/// The PostgreSQL store on a real PostgreSQL (whatever store the run's servers use): two stores
/// on one database stand for two server processes.
@Suite struct PostgresStoreTests {
    /// The settings of `database`, with a long wait for a connection: the full suite starts a
    /// thousand tests at once on two cores, and opening a connection can then take seconds (the
    /// test that is about the wait sets its own).
    static func settings(_ cluster: PostgresCluster, _ database: String) throws -> PostgresSettings {
        guard case .postgres(var settings) = try DatabaseLocation.parse(cluster.url(database)) else {
            throw ServerFailure("not a PostgreSQL URL")
        }
        settings.poolWait = .seconds(60)
        return settings
    }

    static func record(_ n: Int, version: Int = 1) -> IncomingRecord {
        let start = Date(timeIntervalSince1970: 1_780_000_000 + Double(n) * 60)
        let id = String(format: "00000000-0000-4000-8000-%012d", n)
        return IncomingRecord(id: id, version: version, type: .habit, start: start, end: start,
                              body: #"{"habit":"water","id":"\#(id)","value":\#(n)}"#, figures: RecordFigures())
    }

    /// Runs `body` with stores on one new database, their pools running; the first store's
    /// uploads call `beforeCommit` (if any) inside their transaction.
    static func withStores<T: Sendable>(_ count: Int, beforeCommit: (@Sendable () async -> Void)? = nil,
                                        _ body: @escaping @Sendable (PostgresCluster, String, [PostgresServerStore]) async throws -> T)
        async throws -> T {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        let settings = try settings(cluster, database)
        let logger = Logger(label: "test")
        let stores = try (0..<count).map { i in
            try PostgresServerStore(settings: settings, logger: logger, beforeCommit: i == 0 ? beforeCommit : nil)
        }
        return try await withPools(stores) {
            try await stores[0].migrate()
            return try await body(cluster, database, stores)
        }
    }

    /// Runs `body` while the stores' connection pools run, then stops the pools without waiting
    /// for them to end. Awaiting `PostgresClient.run()` after its cancellation hung the whole
    /// test run twice in full runs under load: no backend was left in PostgreSQL, and the pool
    /// never finished its shutdown (a connection whose creation raced with the cancellation). The
    /// tests need the pools while they run, not their shutdown; the server's own shutdown is
    /// tested with the server process.
    static func withPools<T: Sendable>(_ stores: [PostgresServerStore], _ body: () async throws -> T) async throws -> T {
        let pools = stores.map { store in Task { await store.database.client.run() } }
        defer { for pool in pools { pool.cancel() } }
        return try await body()
    }

    /// Two uploads of one account through two servers, the first still uncommitted when the
    /// second comes, and a pull in between: every record reaches the puller exactly once. With
    /// change numbers from a sequence the second upload would commit number 2 while number 1 is
    /// invisible, the pull would move the cursor to 2, and record 1 would never be pulled. Here
    /// the second upload waits on the user's counter until the first commits.
    @Test func aPullBetweenUploadsCommittedOutOfOrderSkipsNothing() async throws {
        let held = Doorbell(), release = Doorbell()
        let holdFirst: @Sendable () async -> Void = {
            held.ring()
            _ = await release.wait()
        }
        try await Self.withStores(2, beforeCommit: holdFirst) { cluster, database, stores in
            let (first, second) = (stores[0], stores[1])
            let account = try await second.createAccount(email: "ann@example.org", passwordHash: "x", now: Date())
            let laptop = try await second.createDevice(userId: account.id, name: "laptop", tokenHash: "a", now: Date())
            let phone = try await second.createDevice(userId: account.id, name: "phone", tokenHash: "b", now: Date())

            async let one = first.upsert([Self.record(1), Self.record(2)], userId: account.id, deviceId: laptop.id, now: Date())
            #expect(await held.wait(upTo: Patience.limit), "the first upload reached its commit")
            let secondDone = Mutex(false)
            async let two: [UpsertOutcome] = {
                let outcomes = try await second.upsert([Self.record(3)], userId: account.id, deviceId: phone.id, now: Date())
                secondDone.withLock { $0 = true }
                return outcomes
            }()
            // The second upload is either done or waiting for a lock: never numbered past an
            // uncommitted one.
            try await eventually("the second upload waits on the first") {
                let waiting = try await cluster.psql(database, """
                    SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """)
                return waiting == "1" || secondDone.withLock { $0 }
            }
            #expect(!secondDone.withLock { $0 }, "the second upload of the user waited for the first to commit")

            let between = try await second.history(userId: account.id, after: 0, limit: 100, byteBudget: 1 << 20)
            release.ring()
            let (firstOutcomes, secondOutcomes) = try await (one, two)
            #expect(firstOutcomes == [.accepted(seq: 1), .accepted(seq: 2)])
            #expect(secondOutcomes == [.accepted(seq: 3)])

            let cursor = between.records.last?.seq ?? 0
            let after = try await second.history(userId: account.id, after: cursor, limit: 100, byteBudget: 1 << 20)
            let pulled = (between.records + after.records).map(\.id)
            #expect(pulled.sorted() == [1, 2, 3].map { Self.record($0).id }, "every record once: \(pulled)")
            #expect((between.records + after.records).map(\.seq) == [1, 2, 3])
        }
    }

    /// An upload's rows are written in statements of at most 2 MiB of bodies (each statement's
    /// parameters are one buffer in memory), in order, in one transaction: a 5 MiB upload is
    /// three statements and stores every record once, numbered in order, the counter at the end.
    @Test func aLargeUploadIsWrittenInBoundedStatementsAsOne() async throws {
        let big = (0..<600).map { n in
            var record = Self.record(n)
            record.body = #"{"id":"\#(record.id)","note":""# + String(repeating: "x", count: 9000) + #""}"#
            return record
        }
        let rows = big.enumerated().map { (seq: Int64($0.offset + 1), record: $0.element) }
        let chunks = PostgresServerStore.chunks(rows)
        #expect(chunks.count == 3 && chunks.flatMap { $0.map(\.seq) } == rows.map(\.seq))
        #expect(chunks.allSatisfy { $0.reduce(0) { $0 + ($1.record.body?.utf8.count ?? 0) } <= PostgresServerStore.writeChunkBytes })
        var huge = Self.record(1000)
        huge.body = String(repeating: "y", count: PostgresServerStore.writeChunkBytes + 1)
        #expect(PostgresServerStore.chunks([(1, Self.record(999)), (2, huge), (3, Self.record(1001))]).map(\.count) == [1, 1, 1])
        #expect(PostgresServerStore.chunks([]).isEmpty)

        try await Self.withStores(1) { _, _, stores in
            let store = stores[0]
            let account = try await store.createAccount(email: "big@example.org", passwordHash: "x", now: Date())
            let device = try await store.createDevice(userId: account.id, name: "laptop", tokenHash: "a", now: Date())
            let outcomes = try await store.upsert(big, userId: account.id, deviceId: device.id, now: Date())
            #expect(outcomes == (1...600).map { UpsertOutcome.accepted(seq: Int64($0)) })
            let again = try await store.upsert([Self.record(5000)], userId: account.id, deviceId: device.id, now: Date())
            #expect(again == [.accepted(seq: 601)])
            var pulled: [Int64] = [], cursor: Int64 = 0
            while true {
                let page = try await store.history(userId: account.id, after: cursor, limit: 1000, byteBudget: 1 << 20)
                pulled += page.records.map(\.seq)
                guard page.more, let last = page.records.last else { break }
                cursor = last.seq
            }
            #expect(pulled == Array(1...601))
        }
    }

    /// Two servers storing for one account at once: every change number once, none missing,
    /// every record stored once at its highest version.
    @Test func twoServersRacingOnOneAccountNumberEveryChangeOnce() async throws {
        try await Self.withStores(2) { _, _, stores in
            let account = try await stores[0].createAccount(email: "race@example.org", passwordHash: "x", now: Date())
            var devices: [Device] = []
            for (i, store) in stores.enumerated() {
                devices.append(try await store.createDevice(userId: account.id, name: "d\(i)", tokenHash: "t\(i)", now: Date()))
            }
            let deviceIds = devices.map(\.id)
            // 2 servers x 8 uploads x 10 records; records 0..<60 go through both servers (the same
            // version twice: one of them a duplicate), and half of those get a version 2.
            let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                for (s, store) in stores.enumerated() {
                    for upload in 0..<8 {
                        group.addTask {
                            let records = (0..<10).map { i -> IncomingRecord in
                                let n = (upload * 10 + i) % 60 + (s == 1 && upload >= 6 ? 100 : 0)
                                return Self.record(n, version: s == 1 && n % 2 == 0 && n < 60 ? 2 : 1)
                            }
                            let outcomes = try await store.upsert(records, userId: account.id, deviceId: deviceIds[s], now: Date())
                            return outcomes.filter { if case .accepted = $0 { true } else { false } }.count
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            var all: [StoredRecord] = []
            var cursor: Int64 = 0
            while true {
                let page = try await stores[1].history(userId: account.id, after: cursor, limit: 7, byteBudget: 1 << 20)
                all += page.records
                cursor = page.records.last?.seq ?? cursor
                if !page.more { break }
            }
            // Each id once, at its highest version; the numbers of what is held are increasing.
            #expect(Set(all.map(\.id)).count == all.count)
            #expect(all.count == 80)
            for record in all {
                let n = Int(record.id.suffix(12))!
                #expect(record.version == (n < 60 && n % 2 == 0 ? 2 : 1), "\(record.id) at version \(record.version)")
            }
            #expect(all.map(\.seq) == all.map(\.seq).sorted())
            #expect(all.last?.seq == Int64(accepted), "\(accepted) changes accepted, the last numbered \(all.last?.seq ?? 0)")
        }
    }

    /// A request that finds every connection in use waits the pool's wait, then is told to come
    /// back (StoreError.busy: 503 with Retry-After), and the pool serves again afterwards.
    @Test func anExhaustedPoolAnswersBusyNotAHang() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        var settings = try Self.settings(cluster, database)
        settings.poolMax = 1
        settings.poolWait = .seconds(2)
        let held = Doorbell(), release = Doorbell()
        let store = try PostgresServerStore(settings: settings, logger: Logger(label: "test"), beforeCommit: {
            held.ring()
            _ = await release.wait()
        })
        try await Self.withPools([store]) {
            // The pool's one connection, opened (which may take longer than the wait on a loaded
            // machine): from then on a lease of it is immediate.
            try await eventually("the pool's connection is open", every: .milliseconds(200)) {
                (try? await store.ping()) != nil
            }
            try await store.migrate()
            let account = try await store.createAccount(email: "pool@example.org", passwordHash: "x", now: Date())
            let device = try await store.createDevice(userId: account.id, name: "d", tokenHash: "t", now: Date())
            async let holding = store.upsert([Self.record(1)], userId: account.id, deviceId: device.id, now: Date())
            #expect(await held.wait(upTo: Patience.limit))
            let gaveUp = store.poolUsage.timedOut
            await #expect(throws: StoreError.busy) {
                try await store.history(userId: account.id, after: 0, limit: 10, byteBudget: 1 << 20)
            }
            #expect(store.poolUsage.timedOut == gaveUp + 1 && store.poolUsage.leased == 1)
            release.ring()
            #expect(try await holding == [.accepted(seq: 1)])
            #expect(try await store.history(userId: account.id, after: 0, limit: 10, byteBudget: 1 << 20).records.count == 1)
        }
    }

    /// Migrations: applied once, in order, by however many processes start at once; an
    /// interrupted one (a migration that fails half way) leaves nothing and runs again.
    @Test func migrationsRunOnceAndAnInterruptedOneRunsAgain() async throws {
        try await Self.withStores(3) { cluster, database, stores in
            // withStores migrated through the first store; the others find nothing to do, together.
            let again = try await withThrowingTaskGroup(of: [String].self) { group in
                for store in stores { group.addTask { try await store.migrate() } }
                return try await group.reduce([], +)
            }
            #expect(again.isEmpty)
            #expect(try await stores[2].appliedMigrations() == PostgresSchema.migrations.map(\.name))

            // A database where the first migration died half way (its second statement fails).
            let fresh = try await cluster.createDatabase()
            try await cluster.psql(fresh, "CREATE TABLE users (id text)")  // makes pg-v1-schema fail at CREATE TABLE users
            let other = try PostgresServerStore(settings: try Self.settings(cluster, fresh), logger: Logger(label: "test"))
            try await Self.withPools([other]) {
                await #expect(throws: (any Error).self) { try await other.migrate() }
                #expect(try await cluster.psql(fresh, "SELECT to_regclass('server_meta') IS NULL") == "t", "nothing of it was kept")
                #expect(try await other.appliedMigrations().isEmpty)
                try await cluster.psql(fresh, "DROP TABLE users")
                #expect(try await other.migrate() == ["pg-v1-schema"])
                #expect(try await other.appliedMigrations() == ["pg-v1-schema"])
            }
        }
    }
}
