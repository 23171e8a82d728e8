import Foundation
import HealthModel
import HealthStore
@testable import HealthSync
import SyncProtocol
import Synchronization
import Testing
import TestSupport

/// Runs `work`, failing the test (instead of hanging the suite) when it takes longer than
/// `limit`: the old code looped forever on some of these inputs.
func within<T: Sendable>(_ limit: Duration, _ what: String, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw PeerError("\(what) did not end within \(limit)")
        }
        return value
    }
}

/// A real server, an account on it, and an install whose fixture records were all sent.
enum SyncedAccount {
    static func make() async throws -> (server: ServerProcess, account: Account, install: Install, client: SyncClient) {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let install = try await Install()
        try await install.importFixtures()
        let client = try SyncClient(configuration: .init(server: server.url))
        let report = try await fastForwarder(install, client, token: account.token).drain()
        #expect(report.remaining == 0)
        return (server, account, install, client)
    }
}

/// The path to the server is hostile or broken (`Tests/peers/hostile_proxy.py` in front of a real
/// server): whatever it answers, no record is given up because of it, none is stored twice, and
/// nothing crashes.
@Suite(.serialized) struct HostilePathTests {
    /// A redirect or a proxy's error page is not the server refusing the records: the drain stops
    /// with a clear error, every record still queued, no dead letter (before: split down to single
    /// records and every one dead-lettered, "0 left in the outbox").
    @Test(arguments: ["301", "302", "307", "308", "403", "404", "405", "407", "413", "400"])
    func answersNotFromTheServerGiveNothingUp(_ status: String) async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: Array(repeating: status, count: 50))
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let client = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await client.shutdown() } }
        do {
            _ = try await fastForwarder(a, client, token: account.token, maxRecords: 4).drain()
            Issue.record("\(status): the drain finished")
        } catch let error as SyncError {
            guard case .notTheServer(let got, let detail) = error else { Issue.record("\(status): \(error)"); return }
            #expect("\(got)" == status)
            if status.hasPrefix("3") { #expect(detail.contains("https://"), "\(detail)") }
            #expect(error.description.contains("nothing was lost"))
        }
        #expect(try await a.store.outboxDepth() == depth)
        #expect(try await a.store.deadLetterCount() == 0)
        #expect(try await a.store.syncState("last_success_at") == nil)
        #expect(try await a.store.syncState("last_error")?.contains("did not come from a HealthGate tracking server") == true)
        // One upload was tried (or as many as the forwarder keeps in flight), not one per record.
        let played = proxy.playedFaults(), inFlight = Forwarder.Configuration().concurrentUploads
        #expect((1...inFlight).contains(played.count) && played.allSatisfy { $0 == status }, "\(played)")
        #expect(try await serverRecords(server, token: account.token).isEmpty)
    }

    /// The fault-injection run: one proxy plays every fault in turn (redirects, a proxy's error
    /// pages, throttling, server errors, garbage, a hang and a reset); `healthgate sync` is run
    /// until it succeeds. Every record ends on the server exactly once and nothing is a dead letter.
    @Test func everyFaultInTurnEndsWithEveryRecordOnceAndNoDeadLetter() async throws {
        let faults = ["301", "307", "403", "404", "405", "407", "413", "429", "500", "503", "garbage", "hang", "reset"]
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: faults,
                                                 extraArguments: ["--hang", "3", "--retry-after", "1"])
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        try SyncCredentials(server: proxy.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        var runs: [Int32] = []
        for _ in 0..<faults.count + 2 {
            let run = try await Tool.run(Tool.path("healthgate"),
                                         ["sync", "--db", a.databasePath, "--batch-records", "5", "--max-retries", "20", "--no-pull"])
            runs.append(run.status)
            #expect(!run.stderr.contains("Fatal error") && run.status != 132 && run.status != 134, "\(run.stderr)")
            if run.status == 0 { break }
            #expect(run.stderr.contains("nothing was lost"), "\(run.stderr)")
            #expect(try await a.store.deadLetterCount() == 0)
        }
        #expect(runs.last == 0, "exit statuses \(runs)")
        #expect(proxy.playedFaults() == faults, "the proxy played \(proxy.playedFaults())")
        #expect(try await a.store.outboxDepth() == 0)
        #expect(try await a.store.deadLetterCount() == 0)
        let held = try await serverRecords(server, token: account.token)
        #expect(Set(held.keys) == Set(local.keys))
        for (id, record) in local { #expect(try held[id]?.record() == record, "\(id)") }
        // Exactly once: the server holds each record at version 1 (an upload repeated after a
        // lost answer is a duplicate, not a second record).
        #expect(held.values.allSatisfy { $0.version == 1 })
    }

    /// `Retry-After: 1e20`, `inf` and friends, on a 503 and on a 200: no crash (before: SIGILL in
    /// a Double-to-Int conversion, which under systemd is a crash loop), and no wait longer than
    /// the forwarder allows.
    @Test(arguments: ["1e20", "inf", "-inf", "nan", "-5", "86400", "99999999999999999999999", "Wed, 21 Oct 2099 07:28:00 GMT"])
    func absurdRetryAfterIsClamped(_ value: String) async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: ["503", "503"],
                                                 extraArguments: ["--header", "Retry-After: \(value)"])
        let a = try await Install()
        try await a.importFixtures()
        // No hang here: the default timeout, so that a loaded machine's slow answer is not a failure.
        let client = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await client.shutdown() } }
        let waits = Mutex<[Duration]>([])
        var configuration = Forwarder.Configuration()
        configuration.backoff = Backoff(initial: .milliseconds(10), maximum: .milliseconds(50), jitter: 0.2)
        configuration.longestServerWait = .seconds(60)
        let forwarder = Forwarder(store: a.store, client: client, token: account.token, configuration: configuration,
                                  sleep: { d in waits.withLock { $0.append(d) } })
        let depth = try await a.store.outboxDepth()
        do {
            let report = try await forwarder.drain()
            // Waits the server may ask for: honoured, within the limit.
            #expect(report.remaining == 0 && report.accepted + report.duplicates == depth)
            #expect(!waits.withLock { $0 }.isEmpty)
        } catch let error as SyncError {
            // Longer than the limit (or nonsense counted as the longest): the drain stops at once
            // instead of sleeping, and says what the server asked.
            guard case .transient(_, let wait?) = error else { Issue.record("\(value): \(error)"); return }
            #expect(wait > configuration.longestServerWait && wait <= SyncClient.longestServerWait)
            #expect(try await a.store.outboxDepth() == depth)
        }
        #expect(waits.withLock { $0 }.allSatisfy { $0 <= configuration.longestServerWait }, "\(waits.withLock { $0 })")
        #expect(try await a.store.deadLetterCount() == 0)

        // The same header on every answer the real server gives (200 included), through the CLI.
        let cli = try await HostileProxy.start(upstream: server.url, extraArguments: ["--header", "Retry-After: \(value)"])
        try SyncCredentials(server: cli.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let run = try await Tool.run(Tool.path("healthgate"), ["sync", "--db", a.databasePath, "--json"])
        #expect(run.status == 0, "\(value): \(run.stderr)")
    }

    /// A connection that breaks before any answer (a server closing an idle connection just as
    /// the next upload goes out on it, a reset) costs no failure: uploads are idempotent, so the
    /// client sends it again at once on a new connection.
    @Test(arguments: ["reset", "hang"])
    func aConnectionBrokenBeforeTheAnswerIsSentAgainAtOnce(_ fault: String) async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: [fault], extraArguments: ["--hang", "1"])
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let client = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await client.shutdown() } }
        var configuration = Forwarder.Configuration()
        configuration.maxConsecutiveFailures = 1
        configuration.concurrentUploads = 1
        let report = try await Forwarder(store: a.store, client: client, token: account.token, configuration: configuration).drain()
        #expect(report.accepted == depth && report.retries == 0 && report.remaining == 0)
        #expect(proxy.playedFaults() == [fault])
        #expect(proxy.requests().filter { $0["method"] == "POST" }.count == 2)
    }

    @Test func retryAfterParsing() {
        #expect(SyncClient.retryAfter("3") == .seconds(3))
        #expect(SyncClient.retryAfter(" 1.5 ") == .milliseconds(1500))
        #expect(SyncClient.retryAfter("1e20") == SyncClient.longestServerWait)
        #expect(SyncClient.retryAfter("inf") == SyncClient.longestServerWait)
        #expect(SyncClient.retryAfter("-inf") == .zero)
        #expect(SyncClient.retryAfter("-5") == .zero)
        #expect(SyncClient.retryAfter("nan") == nil)
        #expect(SyncClient.retryAfter("soon") == nil)
        #expect(SyncClient.retryAfter("Wed, 21 Oct 2099 07:28:00 GMT") == SyncClient.longestServerWait)
        #expect(SyncClient.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == .zero)
    }

    /// Transient failures are retried after delays that double from the initial one up to the
    /// maximum (with jitter), at least as long as the server asked; the drain gives up after the
    /// configured number of failures in a row, with everything still queued.
    @Test func retryDelaysRetryAfterAndTheFailureLimit() async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: Array(repeating: "503", count: 6),
                                                 extraArguments: ["--retry-after", "2"])
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let client = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await client.shutdown() } }
        let waits = Mutex<[Duration]>([])
        var configuration = Forwarder.Configuration()
        configuration.backoff = Backoff(initial: .seconds(1), maximum: .seconds(8), jitter: 0.2)
        configuration.maxConsecutiveFailures = 5
        configuration.concurrentUploads = 1
        let forwarder = Forwarder(store: a.store, client: client, token: account.token, configuration: configuration,
                                  sleep: { d in waits.withLock { $0.append(d) } }, random: { 1 })
        await #expect(throws: SyncError.self) { _ = try await forwarder.drain() }
        // Four waits, then the fifth failure ends it: max(backoff with +20% jitter, Retry-After 2 s).
        #expect(waits.withLock { $0 } == [.seconds(2), .milliseconds(2400), .milliseconds(4800), .milliseconds(9600)])
        #expect(proxy.playedFaults().count == 5)
        #expect(try await a.store.outboxDepth() == depth)
        #expect(try await a.store.deadLetterCount() == 0)

        // The delays alone (Timing's Backoff, tested there): doubling, capped, jitter within bounds,
        // never trapping on huge attempts; the forwarder's own: 0.5 s doubling to 5 min, ±20 %.
        #expect(configuration.backoff.delay(attempt: 1, random: 0.5) == .seconds(1))
        #expect(configuration.backoff.delay(attempt: 10, random: 0.5) == .seconds(8))
        #expect(configuration.backoff.delay(attempt: Int.max, random: 1) == .milliseconds(9600))
        #expect(Forwarder.Configuration().backoff == Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(300), jitter: 0.2))

        // The rest of the faults, then success: the next drain sends everything.
        let report = try await forwarder.drain()
        #expect(report.accepted == depth && report.remaining == 0)
    }

    /// A refusal of a whole batch in the protocol's format that names no record: split down to
    /// single records, which are then held back in the outbox (not dead letters) while the rest is
    /// sent; `sync` says so and exits 1; the next sync sends them.
    @Test func aRefusalNamingNoRecordHoldsRecordsBack() async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        // A batch of 4 is refused, then its halves, then its four records: 7 refusals.
        let proxy = try await HostileProxy.start(upstream: server.url, faults: Array(repeating: "protocol-413", count: 7))
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        try SyncCredentials(server: proxy.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        // One upload at a time, so that the 7 refusals fall on one batch and its parts in order.
        let first = try await Tool.run(Tool.path("healthgate"),
                                       ["sync", "--db", a.databasePath, "--batch-records", "4", "--concurrent-uploads", "1", "--no-pull", "--json"])
        #expect(first.status == 1, "\(first.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        let upload = try #require(report["upload"] as? [String: Any])
        let heldBack = try #require(upload["held_back"] as? Int)
        // The batch, its first half, that half's two records, the second half and its two: all four held back.
        #expect(heldBack == 4 && upload["rejected"] as? Int == 0, "\(upload)")
        #expect((upload["held_back_reason"] as? String)?.contains("413 payload_too_large") == true, "\(upload)")
        #expect(try await a.store.outboxDepth() == heldBack)
        #expect(try await a.store.deadLetterCount() == 0)
        #expect(proxy.playedFaults().count == 7)
        let status = try await Tool.run(Tool.path("healthgate"), ["status", "--db", a.databasePath])
        #expect(status.stdout.contains("held back"), "\(status.stdout)")
        let second = try await Tool.run(Tool.path("healthgate"), ["sync", "--db", a.databasePath, "--no-pull"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try await a.store.outboxDepth() == 0)
        #expect(try await a.store.deadLetterCount() == 0)
        #expect(Set(try await serverRecords(server, token: account.token).keys) == Set(local.keys))
    }

    /// A server's error text with escape sequences reaches the terminal as text, not as commands.
    @Test func serverTextReachesTheTerminalAsText() async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let proxy = try await HostileProxy.start(upstream: server.url, faults: ["ansi"])
        let a = try await Install()
        try await a.importFixtures()
        try SyncCredentials(server: proxy.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let run = try await Tool.run(Tool.path("healthgate"), ["sync", "--db", a.databasePath, "--max-retries", "1"])
        #expect(run.status == 1)
        #expect(!run.stderr.utf8.contains(0x1B) && !run.stderr.utf8.contains(0x07), "\(run.stderr.debugDescription)")
        #expect(run.stderr.contains("\\u{1b}[2J"), "\(run.stderr)")
        #expect(!run.stderr.contains("\r"), "\(run.stderr.debugDescription)")
        let status = try await Tool.run(Tool.path("healthgate"), ["status", "--db", a.databasePath])
        #expect(!status.stdout.utf8.contains(0x1B), "\(status.stdout.debugDescription)")
        #expect(status.stdout.contains("maintenance"))
    }

    /// Records pulled from the server are checked as local ones are: a record this version cannot
    /// read (a measurement kind a newer install knows) and records that break the rules (a weight
    /// of -5 kg, a date in 2099) are held aside with the reason, not lost and not stored; the
    /// cursor moves past them; an upgrade (here: a validator that accepts them) stores them at the
    /// next pull.
    @Test func pulledRecordsThatCannotBeStoredAreHeldNotLost() async throws {
        let (server, account, a, client) = try await SyncedAccount.make()
        defer { Task { await client.shutdown() } }
        let local = try await a.allRecords()

        let t = ISO8601.string(Date(timeIntervalSince1970: 1_763_800_000))
        func measurement(_ id: String, kind: String, value: String, time: String = t) -> String {
            #"{"data":{"extra":{},"id":"\#(id)","kind":"\#(kind)","source":{"driver":"newer"},"time":"\#(time)","value":\#(value),"version":1},"device_id":"x","id":"\#(id)","seq":1,"type":"measurement","version":1}"#
        }
        let unknownKind = RecordID.derive("m", "ketones").description
        let negative = RecordID.derive("m", "negative").description
        let future = RecordID.derive("m", "future").description
        let newType = RecordID.derive("m", "meditation").description
        let injected = "[" + [
            measurement(unknownKind, kind: "ketones", value: "1.2"),
            measurement(negative, kind: "weight", value: "-5"),
            measurement(future, kind: "weight", value: "70", time: "2099-01-01T00:00:00Z"),
            #"{"data":{"minutes":20},"id":"\#(newType)","seq":2,"type":"meditation","version":3}"#,
            #"{"data":{},"seq":3,"version":"one"}"#,
        ].joined(separator: ",") + "]"
        let file = NSTemporaryDirectory() + "inject-\(UUID().uuidString).json"
        try injected.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let proxy = try await HostileProxy.start(upstream: server.url, extraArguments: ["--inject-history", file])

        let b = try await Install()
        let second = try await account.login(on: server)
        let proxied = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await proxied.shutdown() } }
        let report = try await fastForwarder(b, proxied, token: second.token).pull()
        #expect(report.received == local.count + 5)
        #expect(report.stored == local.count && report.held == 5 && report.stillHeld == 5)
        #expect(try await b.allRecords() == local)
        let held = try await b.store.heldRecords()
        let reasons = Dictionary(held.map { ($0.id ?? "none", $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(reasons[unknownKind]?.contains("ketones") == true, "\(reasons)")
        #expect(reasons[negative]?.contains("weight -5 kg is outside") == true, "\(reasons)")
        #expect(reasons[future]?.contains("future") == true, "\(reasons)")
        #expect(reasons[newType]?.contains("meditation") == true, "\(reasons)")
        #expect(reasons["none"]?.contains("missing key 'id'") == true, "\(reasons)")
        // Kept as the server sent them.
        #expect(held.first { $0.id == unknownKind }?.body.contains("ketones") == true)
        // The cursor moved past them: nothing new on the next pull, and they are still held.
        let again = try await fastForwarder(b, client, token: second.token).pull()
        #expect(again.received == 0 && again.stillHeld == 5 && again.released == 0)

        // "An upgrade": a version whose rules accept the 2099 record stores it at the next pull.
        var lenient = RecordValidator()
        lenient.futureTolerance = 200 * 365 * 86400
        let upgraded = Forwarder(store: b.store, client: client, token: second.token, validator: lenient)
        let after = try await upgraded.pull()
        #expect(after.released == 1 && after.stillHeld == 4)
        #expect(try await b.store.measurements().contains { $0.id.description == future })
        // The status says they are held, and why.
        let status = try await Tool.run(Tool.path("healthgate"), ["status", "--db", b.databasePath, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(json["held_records"] as? Int == 4)
    }

    /// A server whose history pages never advance (more: true, next: the same cursor) is an
    /// error, not an endless loop.
    @Test func historyThatNeverAdvancesIsAnError() async throws {
        let (server, account, _, client) = try await SyncedAccount.make()
        defer { Task { await client.shutdown() } }
        let proxy = try await HostileProxy.start(upstream: server.url, extraArguments: ["--stuck-history"])
        let b = try await Install()
        let proxied = try SyncClient(configuration: .init(server: proxy.url))
        defer { Task { await proxied.shutdown() } }
        let store = b.store
        let token = account.token
        let outcome = try await within(.seconds(60), "a pull from a stuck history") {
            do {
                _ = try await fastForwarder(b, proxied, token: token).pull()
                return "finished"
            } catch let error as SyncError {
                return error.description
            }
        }
        #expect(outcome.contains("did not advance"), "\(outcome)")
        #expect(try await store.syncState("history_cursor") == nil)
        #expect(proxy.requests().count == 1)
    }

    /// A record deleted on the server (on request, from another device) reaches the other
    /// installs as a tombstone: marked deleted there, not held aside as unreadable; a newer local
    /// version is kept.
    @Test func deletionsOnTheServerReachOtherInstalls() async throws {
        let (server, account, _, client) = try await SyncedAccount.make()
        defer { Task { await client.shutdown() } }
        let b = try await Install()
        let second = try await account.login(on: server)
        _ = try await fastForwarder(b, client, token: second.token).pull()
        let victims = Array(try await b.store.measurements().prefix(2))
        try #require(victims.count == 2)
        for victim in victims { try await client.deleteRecord(id: victim.id.description, token: account.token) }
        // A newer version of the second one, edited here before the deletion arrives.
        var edited = victims[1]
        edited.version = 2
        try await b.store.write([.measurement(edited)])
        let report = try await fastForwarder(b, client, token: second.token).pull()
        #expect(report.deleted == 2 && report.held == 0 && report.stillHeld == 0, "\(report)")
        let left = Set(try await b.store.measurements().map(\.id))
        #expect(!left.contains(victims[0].id) && left.contains(victims[1].id))
        #expect(try await b.store.measurements().first { $0.id == victims[1].id }?.version == 2)
    }

    /// A history whose epoch changes (the server renumbered its cursors) is pulled again from
    /// the start, once: nothing is missed, nothing stored twice.
    @Test func aNewHistoryEpochStartsThePullAgain() async throws {
        let (server, account, a, client) = try await SyncedAccount.make()
        defer { Task { await client.shutdown() } }
        let local = try await a.allRecords()
        let b = try await Install()
        let second = try await account.login(on: server)
        // A cursor saved under another numbering, far beyond what this server has.
        try await b.store.setSyncState("history_cursor", "999999")
        try await b.store.setSyncState("history_epoch", "an-older-numbering")
        let report = try await fastForwarder(b, client, token: second.token).pull()
        #expect(report.restarted && report.received == local.count)
        #expect(try await b.allRecords() == local)
    }

    /// The outbox holds a record this version cannot read (a measurement kind a newer install
    /// wrote into the same database): before, it was dropped from the outbox as if deleted. Now
    /// it becomes a dead letter with the reason, the rest is sent, and it can be queued again.
    @Test func unreadableOutboxRowsAreDeadLettersThatCanBeRetried() async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let strange = try #require(try await a.store.measurements().first)
        try await a.connection().write { db in
            try db.execute(sql: "UPDATE measurements SET kind = 'ketones' WHERE id = ?", arguments: [strange.id.description])
        }
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        let report = try await fastForwarder(a, client, token: account.token).drain()
        #expect(report.unreadable == 1 && report.accepted == depth - 1 && report.remaining == 0)
        let dead = try await a.store.deadLetters()
        #expect(dead.map(\.id) == [strange.id.description])
        #expect(dead.first?.reason.contains("ketones") == true)
        // The record itself is still in the database.
        #expect(try await a.connection().read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM measurements WHERE id = ?", arguments: [strange.id.description])
        } == 1)
        // Fixed (here by hand; in life by an upgrade): queued again and sent.
        try await a.connection().write { db in
            try db.execute(sql: "UPDATE measurements SET kind = ? WHERE id = ?", arguments: [strange.kind.rawValue, strange.id.description])
        }
        let list = try await Tool.run(Tool.path("healthgate"), ["dead-letters", "--db", a.databasePath, "--json"])
        #expect(list.status == 0)
        #expect(list.stdout.contains(strange.id.description))
        try SyncCredentials(server: server.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let sync = try await Tool.run(Tool.path("healthgate"), ["sync", "--db", a.databasePath, "--retry-dead-letters", "--json"])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(sync.stdout.contains(#""requeued":1"#) || sync.stdout.contains(#""requeued" : 1"#), "\(sync.stdout)")
        #expect(try await a.store.deadLetterCount() == 0)
        #expect(try await a.store.outboxDepth() == 0)
        #expect(try await serverRecords(server, token: account.token)[strange.id.description] != nil)
    }

    /// `sync` exits 1 when a record was given up, even though everything else went through.
    @Test func syncExitsNonZeroWhenARecordWasRejected() async throws {
        let server = try await ServerProcess.start()
        let account = try await Account.create(on: server)
        let a = try await Install()
        try await a.importFixtures()
        let future = HealthModel.Measurement(id: RecordID.derive("m", "future-cli"), kind: .weight,
                                             time: Date().addingTimeInterval(365 * 86400), value: 70, source: Source(driver: "manual"))
        try await a.store.write([.measurement(future)])
        try SyncCredentials(server: server.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let run = try await Tool.run(Tool.path("healthgate"), ["sync", "--db", a.databasePath])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stdout.contains("1 rejected") && run.stdout.contains("dead-letters"), "\(run.stdout)")
        let list = try await Tool.run(Tool.path("healthgate"), ["dead-letters", "--db", a.databasePath])
        #expect(list.stdout.contains(future.id.description) && list.stdout.contains("future"), "\(list.stdout)")
    }
}
