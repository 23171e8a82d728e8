import DriverRegistry
import Foundation
import GRDB
import HealthModel
import HealthPipeline
import HealthStore
import HealthSync
import SyncProtocol
import Synchronization
import Testing
import TestSupport


/// The first line where two values' dumps differ, to say what changed.
func firstDifference(_ a: HealthRecord?, _ b: HealthRecord) -> String {
    var x = "", y = ""
    dump(a, to: &x)
    dump(b, to: &y)
    let (l, r) = (x.split(separator: "\n"), y.split(separator: "\n"))
    for (i, (p, q)) in zip(l, r).enumerated() where p != q { return "line \(i): \(p) vs \(q)" }
    return "lengths \(l.count) vs \(r.count)"
}

/// A HealthGate install: its own database file.
final class Install: Sendable {
    let folder: String
    let store: HealthStore
    var databasePath: String { folder + "/healthgate.sqlite" }

    init() async throws {
        folder = NSTemporaryDirectory() + "hg-install-" + UUID().uuidString
        store = try await HealthStore(path: folder + "/healthgate.sqlite")
    }

    /// A connection of the test's own on the database file, for what the store has no API for
    /// (rows edited by hand).
    func connection() throws -> DatabaseQueue { try DatabaseQueue(path: databasePath) }

    /// Imports real fixture files and adds habit events (no importer for them yet), so every
    /// record type is there.
    func importFixtures() async throws {
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        for file in ["fit/garmin-fenix5-run.fit", "fit/fitsdk-MonitoringFile.fit", "fit/fitsdk-WeightScaleMultiUser.fit",
                     "fit/garmin-fr735xt-poolswim-hr-chained.fit", "tcx/" + (try firstFile("tcx")), "gpx/" + (try firstFile("gpx"))] {
            let report = await pipeline.importFile(PackagePaths.fixtures + "/" + file)
            #expect(report.status == .imported || report.status == .partial, "\(file): \(report.error ?? "")")
        }
        let t0 = Date(timeIntervalSince1970: 1_763_800_000)
        try await store.write((0..<5).map { i in
            .habit(HabitEvent(id: RecordID.derive("habit", "test", String(i)), habit: "water", time: t0.addingTimeInterval(Double(i) * 3600),
                              value: 250, unit: "ml", source: Source(driver: "manual")))
        })
    }

    private func firstFile(_ folder: String) throws -> String {
        try #require(try FileManager.default.contentsOfDirectory(atPath: PackagePaths.fixtures + "/" + folder)
            .filter { $0.hasSuffix("." + folder) }.sorted().first)
    }

    /// Every stored record, by id, as the store gives it back.
    func allRecords() async throws -> [String: HealthRecord] {
        var out: [String: HealthRecord] = [:]
        for w in try await store.workouts() { out[w.id] = .workout(try #require(try await store.workout(id: w.id))) }
        for s in try await store.sleepSessions() { out[s.id.description] = .sleep(s) }
        for m in try await store.measurements() { out[m.id.description] = .measurement(m) }
        for h in try await store.habitEvents() { out[h.id.description] = .habit(h) }
        return out
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}

/// An account on the server with a logged-in device.
struct Account {
    var email: String
    var token: String
    var deviceId: String

    static func create(on server: ServerProcess, email: String = "user-\(UUID().uuidString.prefix(8))@example.org") async throws -> Account {
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        _ = try await client.register(email: email, password: "correct horse battery")
        let login = try await client.login(email: email, password: "correct horse battery", deviceName: "test")
        return Account(email: email, token: login.token, deviceId: login.deviceId)
    }

    func login(on server: ServerProcess) async throws -> Account {
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let login = try await client.login(email: email, password: "correct horse battery", deviceName: "second")
        return Account(email: email, token: login.token, deviceId: login.deviceId)
    }
}

/// Everything the server holds for `token`'s user, pulled page by page.
func serverRecords(_ server: ServerProcess, token: String) async throws -> [String: WireRecord] {
    let client = try SyncClient(configuration: .init(server: server.url))
    defer { Task { await client.shutdown() } }
    var out: [String: WireRecord] = [:]
    var cursor: Int64 = 0
    while true {
        let page = try await client.history(after: cursor, limit: 500, token: token)
        for r in page.records {
            #expect(out[r.id] == nil || (out[r.id]!.version < r.version), "\(r.id) listed twice at version \(r.version)")
            out[r.id] = r
        }
        cursor = page.next
        if !page.more { break }
    }
    return out
}

func fastForwarder(_ install: Install, _ client: SyncClient, token: String, maxRecords: Int = 1000,
                   failures: Int? = 50) -> Forwarder {
    var c = Forwarder.Configuration()
    c.maxRecords = maxRecords
    c.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(400), jitter: 0.2)
    c.maxConsecutiveFailures = failures
    return Forwarder(store: install.store, client: client, token: token, configuration: c)
}

@Suite(.serialized) struct ForwarderTests {
    @Test func syncSendsEverythingOnceAndASecondInstallConverges() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let depth = try await a.store.outboxDepth()
        #expect(depth == local.count && depth >= 10)

        let account = try await Account.create(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let report = try await fastForwarder(a, client, token: account.token, maxRecords: 7).drain()
        #expect(report.accepted == depth && report.duplicates == 0 && report.rejected == 0 && report.remaining == 0)
        #expect(report.uploads >= depth / 7)
        #expect(try await a.store.outboxDepth() == 0)

        // The server holds exactly these records: ids, versions and values.
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        for (id, record) in local {
            let back = try held[id]?.record()
            #expect(back == record, "\(id): \(firstDifference(back, record))")
        }

        // A second sync sends nothing.
        let again = try await fastForwarder(a, client, token: account.token).drain()
        #expect(again.uploads == 0 && again.accepted == 0)

        // A second install of the same account pulls the same data, and queues none of it.
        let b = try await Install()
        let second = try await account.login(on: server)
        let pulled = try await fastForwarder(b, client, token: second.token).pull()
        #expect(pulled.received == local.count && pulled.stored == local.count)
        #expect(try await b.store.outboxDepth() == 0)
        #expect(try await b.allRecords() == local)
        #expect(try await b.store.workouts().map(\.id) == a.store.workouts().map(\.id))
        // Pulling again brings nothing new (the cursor was saved with the records).
        let more = try await fastForwarder(b, client, token: second.token).pull()
        #expect(more.received == 0)
    }

    /// The server killed after the first acknowledged batch and started again on the same port
    /// (one outside the kernel's ephemeral range, so that no other connection takes it meanwhile).
    @Test func aServerKilledMidDrainEndsWithExactlyTheSameSet() async throws {
        let server = try await ServerProcess.start(port: try unusedPort())
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let account = try await Account.create(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let crashed = Mutex(false)
        let forwarder = fastForwarder(a, client, token: account.token, maxRecords: 3)
        let report = try await forwarder.drain { progress in
            // After the first acknowledged batch, kill the server and bring it back.
            let first = crashed.withLock { done in defer { done = true }; return !done }
            if first {
                do { try server.crashAndRestart() } catch { Issue.record("the server did not start again: \(error) \(server.log)") }
            }
        }
        #expect(crashed.withLock { $0 })
        #expect(report.remaining == 0)
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        #expect(try await a.store.outboxDepth() == 0)
    }

    /// The server fails uploads on purpose (seeded): 503 with Retry-After, no answer past the
    /// client's timeout, and the worst case, stored but the connection dropped before the answer.
    @Test func aFaultyServerEndsWithExactlyTheSameSet() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--fault-rate", "0.5", "--fault-seed", "7",
                                                        "--fault-kinds", "unavailable,stall,drop", "--fault-stall", "3"])
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let account = try await Account.create(on: server)
        var configuration = SyncClient.Configuration(server: server.url)
        configuration.requestTimeout = .seconds(1)
        let client = try SyncClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        let report = try await fastForwarder(a, client, token: account.token, maxRecords: 4).drain()
        #expect(report.retries > 0 && report.remaining == 0)
        // Every record acknowledged once in effect: accepted, or (resent after a dropped answer)
        // found already there.
        #expect(report.accepted + report.duplicates == local.count && report.rejected == 0)
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        for (id, record) in local { #expect(try held[id]?.record() == record, "\(id)") }
        #expect(server.log.contains("fault"), "the server injected no fault")
    }

    /// A server with low upload limits refuses big batches as too large (413): the forwarder
    /// splits them until they fit, and a record too large on its own becomes a dead letter.
    @Test func batchesRefusedAsTooLargeAreSplitDownToTheRecord() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--max-upload-records", "3", "--max-upload-bytes", "60000"])
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let encoder = SyncAPI.encoder()
        let tooLarge = try Set(local.filter { try encoder.encode(WireRecord($0.value)).count > 60000 }.keys)
        #expect(!tooLarge.isEmpty && tooLarge.count < local.count)
        let account = try await Account.create(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let report = try await fastForwarder(a, client, token: account.token, maxRecords: 10).drain()
        #expect(report.remaining == 0 && report.rejected == tooLarge.count)
        #expect(report.accepted == local.count - tooLarge.count)
        let dead = try await a.store.deadLetters()
        #expect(Set(dead.map(\.id)) == tooLarge)
        #expect(dead.allSatisfy { $0.reason.contains("413") }, "\(dead.map(\.reason))")
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys).subtracting(tooLarge))
    }

    @Test func aWrongTokenKeepsEverythingInTheOutbox() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        await #expect(throws: SyncError.self) {
            _ = try await fastForwarder(a, client, token: "not-a-token").drain()
        }
        #expect(try await a.store.outboxDepth() == depth)
        #expect(try await a.store.syncState("last_error")?.contains("token") == true)

        // Revoked (logged out): the same.
        let account = try await Account.create(on: server)
        try await client.logout(token: account.token)
        do {
            _ = try await fastForwarder(a, client, token: account.token).drain()
            Issue.record("a revoked token was accepted")
        } catch let error as SyncError {
            guard case .unauthorized = error else { Issue.record("\(error)"); return }
        }
        #expect(try await a.store.outboxDepth() == depth)
    }

    @Test func recordsTheServerRefusesBecomeDeadLettersAndTheRestIsSent() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        // A record from a device whose clock ran a year ahead: stored here (written past the
        // normalizer), refused by the server's validation.
        let future = HealthModel.Measurement(id: RecordID.derive("m", "future"), kind: .weight,
                                             time: Date().addingTimeInterval(365 * 86400), value: 70, source: Source(driver: "manual"))
        try await a.store.write([.measurement(future)])
        let depth = try await a.store.outboxDepth()
        let account = try await Account.create(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let report = try await fastForwarder(a, client, token: account.token).drain()
        #expect(report.rejected == 1 && report.accepted == depth - 1 && report.remaining == 0)
        let dead = try await a.store.deadLetters()
        #expect(dead.map(\.id) == [future.id.description])
        #expect(dead.first?.reason.contains("future") == true, "\(dead)")
    }
}

/// `healthgate sync` as a user runs it, through the built binary.
@Suite(.serialized) struct SyncCommandTests {
    func run(_ arguments: [String], stdin: String? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try await Tool.run(Tool.path("healthgate"), arguments, stdin: stdin)
        return (result.status, result.stdout, result.stderr)
    }

    @Test func registerLoginSyncStatusLogout() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let email = "cli-\(UUID().uuidString.prefix(8))@example.org"
        let url = server.url.absoluteString
        let registered = try await run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: "a long passphrase")
        #expect(registered.status == 0, "\(registered.stderr)")
        let login = try await run(["login", "--server", url, "--email", email, "--password-stdin", "--db", a.databasePath],
                            stdin: "a long passphrase")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("primary syncing device"))
        // The token file: owner-only, and the token works.
        let credentialsPath = SyncCredentials.path(forDatabase: a.databasePath)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: credentialsPath)[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        let wrong = try await run(["login", "--server", url, "--email", email, "--password-stdin", "--db", a.databasePath + "-x"],
                            stdin: "not the passphrase")
        #expect(wrong.status != 0 && !wrong.stderr.isEmpty)

        let sync = try await run(["sync", "--db", a.databasePath, "--json"])
        #expect(sync.status == 0, "\(sync.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sync.stdout.utf8)) as? [String: Any])
        #expect((report["upload"] as? [String: Any])?["accepted"] as? Int == depth)

        let status = try await run(["status", "--db", a.databasePath, "--json"])
        let s = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(s["outbox"] as? Int == 0 && s["dead_letters"] as? Int == 0)
        #expect(s["last_success_at"] as? String != nil && s["email"] as? String == email)

        let logout = try await run(["logout", "--db", a.databasePath])
        #expect(logout.status == 0 && logout.stdout.contains("Logged out"))
        #expect(!FileManager.default.fileExists(atPath: credentialsPath))
        let afterLogout = try await run(["sync", "--db", a.databasePath])
        #expect(afterLogout.status != 0 && afterLogout.stderr.contains("not logged in"))
    }

    /// The syncing process is killed part-way (SIGKILL: no chance to tidy up) and run again:
    /// the server ends with exactly the install's records, none missing, none twice.
    @Test func aSyncKilledMidDrainAndRunAgainSendsEverythingOnce() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let account = try await Account.create(on: server)
        try SyncCredentials(server: server.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Tool.path("healthgate"))
        process.arguments = ["sync", "--db", a.databasePath, "--batch-records", "1", "--no-pull"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let start = try await a.store.outboxDepth()
        let connection = try a.connection()
        // A tight watch (on a thread of its own, with a connection of its own: the drain takes a few
        // seconds; ``Patience/limit`` is a guard against hangs).
        try await onOwnThread {
            defer { end(process, signal: SIGKILL) }
            let deadline = ContinuousClock.now + Patience.limit
            var depth = start
            while depth > start / 2 {
                guard ContinuousClock.now < deadline else {
                    throw TestTimeout(what: "the sync drains half the outbox (\(depth) of \(start) left)")
                }
                usleep(5_000)
                depth = try connection.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM outbox") ?? 0 }
            }
        }
        let left = try await a.store.outboxDepth()
        #expect(left > 0 && left < start, "killed with \(left) of \(start) left")

        let again = try await run(["sync", "--db", a.databasePath, "--json", "--no-pull"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await a.store.outboxDepth() == 0)
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        for (id, record) in local { #expect(try held[id]?.record() == record, "\(id)") }
    }
}
