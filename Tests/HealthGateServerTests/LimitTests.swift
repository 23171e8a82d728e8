import Foundation
import Logging
import Testing
import TestSupport
@testable import HealthGateServer

/// Which ledger the limits count in.
enum LedgerKind: String, CaseIterable, Sendable {
    case memory, postgres
}

/// A ledger of each kind: in memory, or in a new PostgreSQL database (its pool running until
/// `close`), so that the same rules are checked against both.
final class Ledgers: Sendable {
    // The pool's run() lives while the test does.
    let kind: LedgerKind
    let store: PostgresServerStore?
    let database: String
    let pool: Task<Void, Never>?

    init(_ kind: LedgerKind) async throws {
        self.kind = kind
        if kind == .postgres {
            let cluster = try await PostgresCluster.shared()
            database = try await cluster.createDatabase()
            let store = try PostgresServerStore(settings: try PostgresStoreTests.settings(cluster, database),
                                                logger: Logger(label: "test"), beforeCommit: nil)
            pool = Task { await store.database.client.run() }
            try await store.migrate()
            self.store = store
        } else {
            store = nil
            database = ""
            pool = nil
        }
    }

    func ledger(_ rules: [LimitKind: EventWindow.Policy]) -> any LimitLedger {
        store?.limitLedger(rules: rules) ?? MemoryLimitLedger(rules: rules)
    }

    func throttle(_ policy: LoginAttempts.Policy) async throws -> LoginThrottle {
        LoginThrottle(policy: policy, ledger: ledger(LoginAttempts(policy: policy).rules))
    }

    func registrations(_ policy: EventWindow.Policy) async throws -> RegistrationThrottle {
        RegistrationThrottle(policy: policy, ledger: ledger([.registration: policy]))
    }

    func close() { pool?.cancel() }
}

/// The login and registration limits, with the same expectations whichever ledger counts.
@Suite struct LimitTests {
    let t0 = Date(timeIntervalSince1970: 1_780_000_000)

    /// The owner's addresses stay open whatever others try; guessing stays slow everywhere else.
    @Test(arguments: LedgerKind.allCases) func loginAttemptsCannotLockTheOwnerOut(_ kind: LedgerKind) async throws {
        let ledgers = try await Ledgers(kind)
        defer { ledgers.close() }
        let policy = LoginAttempts.Policy(pairFailures: 3, addressFailures: 10, emailFailures: 6, window: 600, knownLifetime: 86_400)
        let attempts = try await ledgers.throttle(policy)
        try await attempts.recordSuccess(email: "ann", client: "home", now: t0)
        #expect(try await attempts.isKnown(email: "ann", client: "home", now: t0))
        #expect(try await !attempts.isKnown(email: "ann", client: "evil", now: t0))
        #expect(try await !attempts.isKnown(email: "bob", client: "home", now: t0))

        // One address guessing one email: blocked after 3, for that email only.
        for i in 0..<3 {
            #expect(try await attempts.retryAfter(email: "ann", client: "evil", now: t0) == nil)
            try await attempts.recordFailure(email: "ann", client: "evil", now: t0.addingTimeInterval(Double(i)))
        }
        #expect(try await attempts.retryAfter(email: "ann", client: "evil", now: t0.addingTimeInterval(10)) == 590)
        #expect(try await attempts.retryAfter(email: "bob", client: "evil", now: t0.addingTimeInterval(10)) == nil)
        #expect(try await attempts.retryAfter(email: "ann", client: "home", now: t0.addingTimeInterval(10)) == nil)

        // Many addresses guessing one email: after 6 failures from unknown addresses every unknown
        // address is refused for it, and the owner's known address still is not.
        for i in 0..<3 { try await attempts.recordFailure(email: "ann", client: "bot\(i)", now: t0.addingTimeInterval(20)) }
        #expect(try await attempts.retryAfter(email: "ann", client: "bot9", now: t0.addingTimeInterval(30)) == 570)
        #expect(try await attempts.retryAfter(email: "ann", client: "home", now: t0.addingTimeInterval(30)) == nil)
        #expect(try await attempts.retryAfter(email: "bob", client: "bot9", now: t0.addingTimeInterval(30)) == nil)
        // ...until the oldest of the failures that count is as old as the window.
        #expect(try await attempts.retryAfter(email: "ann", client: "bot9", now: t0.addingTimeInterval(599.5)) == 1)
        #expect(try await attempts.retryAfter(email: "ann", client: "bot9", now: t0.addingTimeInterval(600)) == nil)

        // The owner's own typing mistakes: held to the pair limit, not counted for the email.
        let owner = try await ledgers.throttle(policy)
        try await owner.recordSuccess(email: "ann", client: "home", now: t0)
        for _ in 0..<2 { try await owner.recordFailure(email: "ann", client: "home", now: t0) }
        try await owner.recordSuccess(email: "ann", client: "home", now: t0)  // clears the pair's failures
        for _ in 0..<2 { try await owner.recordFailure(email: "ann", client: "home", now: t0) }
        #expect(try await owner.retryAfter(email: "ann", client: "home", now: t0) == nil)
        try await owner.recordFailure(email: "ann", client: "home", now: t0)
        #expect(try await owner.retryAfter(email: "ann", client: "home", now: t0) == 600)
        #expect(try await owner.retryAfter(email: "ann", client: "elsewhere", now: t0) == nil, "known failures do not add to the email's count")

        // A known address is forgotten after its lifetime: the email's count applies to it again.
        let stale = try await ledgers.throttle(policy)
        try await stale.recordSuccess(email: "ann", client: "home", now: t0)
        let later = t0.addingTimeInterval(86_400)
        for i in 0..<6 { try await stale.recordFailure(email: "ann", client: "bot\(i)", now: later) }
        #expect(try await stale.retryAfter(email: "ann", client: "home", now: later.addingTimeInterval(-1)) == nil)
        #expect(try await stale.retryAfter(email: "ann", client: "home", now: later) != nil)
    }

    /// One address guessing many emails: refused for every email it has not logged in to.
    @Test(arguments: LedgerKind.allCases) func loginAttemptsLimitAnAddressAcrossEmails(_ kind: LedgerKind) async throws {
        let ledgers = try await Ledgers(kind)
        defer { ledgers.close() }
        let attempts = try await ledgers.throttle(.init(pairFailures: 3, addressFailures: 10, emailFailures: 50, window: 600))
        try await attempts.recordSuccess(email: "mallory", client: "evil", now: t0)
        for i in 0..<10 { try await attempts.recordFailure(email: "user\(i)", client: "evil", now: t0) }
        #expect(try await attempts.retryAfter(email: "new", client: "evil", now: t0) == 600)
        #expect(try await attempts.retryAfter(email: "new", client: "other", now: t0) == nil)
        // Its own account (known there) is held to the pair limit only; a success there resets
        // nothing of the address's count.
        #expect(try await attempts.retryAfter(email: "mallory", client: "evil", now: t0) == nil)
        try await attempts.recordSuccess(email: "mallory", client: "evil", now: t0)
        #expect(try await attempts.retryAfter(email: "new", client: "evil", now: t0) == 600)
    }

    @Test(arguments: LedgerKind.allCases) func loginAttemptsStayBounded(_ kind: LedgerKind) async throws {
        let ledgers = try await Ledgers(kind)
        defer { ledgers.close() }
        let attempts = try await ledgers.throttle(.init(pairFailures: 2, window: 60, maxKeys: 100))
        for i in 0..<1000 {
            try await attempts.recordFailure(email: "e\(i)", client: "c\(i)", now: t0.addingTimeInterval(Double(i)))
            try await attempts.recordSuccess(email: "e\(i)", client: "k\(i)", now: t0.addingTimeInterval(Double(i)))
        }
        switch kind {
        case .memory:
            let memory = try #require(attempts.ledger as? MemoryLimitLedger)
            #expect(memory.keyCount <= 400, "four counts of at most 100 keys")
        case .postgres:
            // In the database: each key keeps at most its limit of events, however often it is counted.
            for _ in 0..<20 { try await attempts.recordFailure(email: "e1", client: "c1", now: t0.addingTimeInterval(999)) }
            let most = try await PostgresCluster.shared().psql(ledgers.database, """
                SELECT max(n) FROM (SELECT count(*) AS n FROM limit_events WHERE kind = 'pair' GROUP BY key) AS counts
                """)
            #expect(most == "2", "a pair keeps its latest 2 failures")
            let plain = try await PostgresCluster.shared().psql(ledgers.database, "SELECT count(*) FROM limit_events WHERE key !~ '^[0-9a-f]{64}$'")
            #expect(plain == "0", "keys are stored hashed")
        }
        // The most recent stay remembered.
        try await attempts.recordFailure(email: "e999", client: "c999", now: t0.addingTimeInterval(1000))
        #expect(try await attempts.retryAfter(email: "e999", client: "c999", now: t0.addingTimeInterval(1000)) != nil)
        #expect(try await attempts.isKnown(email: "e999", client: "k999", now: t0.addingTimeInterval(1000)))
    }

    @Test(arguments: LedgerKind.allCases) func registrationsAreAdmittedPerAddressWithinTheWindow(_ kind: LedgerKind) async throws {
        let ledgers = try await Ledgers(kind)
        defer { ledgers.close() }
        let throttle = try await ledgers.registrations(.init(limit: 2, window: 3600))
        #expect(try await throttle.admit(client: "1.1.1.1", now: t0) == nil)
        #expect(try await throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(100)) == nil)
        #expect(try await throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(200)) == 3400)
        #expect(try await throttle.admit(client: "2.2.2.2", now: t0.addingTimeInterval(200)) == nil)
        // A refused attempt does not count: once the first is an hour old, one more is allowed.
        #expect(try await throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(3600)) == nil)
        #expect(try await throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(3601)) == 99)
    }
}

/// Two server processes on one PostgreSQL database count failed logins together: guessing
/// through both is refused after the same number of failures as through one.
@Suite struct SharedLimitTests {
    @Test func twoServersCountFailedLoginsTogether() async throws {
        let folder = try temporaryFolder("shared-limits")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try await ServerProcess.start(databasePath: folder + "/db", store: .postgres)
        let second = try await ServerProcess.start(databasePath: folder + "/db", store: .postgres)
        #expect(try await APIClient(first).register("ann@example.org", "long enough password").status == 201)
        // Five failures (the pair limit) from one address, alternating between the servers.
        for i in 0..<5 {
            let server = i % 2 == 0 ? first : second
            #expect(try await APIClient(server).login("ann@example.org", "wrong password \(i)").status == 401)
        }
        for server in [first, second] {
            let refused = try await APIClient(server).login("ann@example.org", "long enough password")
            #expect(refused.status == 429 && refused.headers.first(name: "Retry-After") != nil, "\(refused.text)")
        }
        // Registrations too: the second server knows of the first one's.
        let limited = try await ServerProcess.start(databasePath: folder + "/db2", extraArguments: ["--registrations-per-hour", "2"],
                                                    store: .postgres)
        let other = try await ServerProcess.start(databasePath: folder + "/db2", extraArguments: ["--registrations-per-hour", "2"],
                                                  store: .postgres)
        #expect(try await APIClient(limited).register("a@example.org", "long enough password").status == 201)
        #expect(try await APIClient(other).register("b@example.org", "long enough password").status == 201)
        #expect(try await APIClient(limited).register("c@example.org", "long enough password").status == 429)
    }
}
