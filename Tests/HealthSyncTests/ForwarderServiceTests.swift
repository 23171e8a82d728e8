import Foundation
import HealthStore
@testable import HealthSync
import Logging
import Synchronization
import Testing
import TestSupport

/// The forwarder's service reports each cycle's outcome (the daemon turns it into its status and
/// metrics), against a real server on loopback.
@Suite(.serialized) struct ForwarderServiceTests {
    /// The outcomes a service reported, in order.
    final class Reported: Sendable {
        private let cycles = Mutex<[ForwarderCycle]>([])
        func append(_ cycle: ForwarderCycle) { cycles.withLock { $0.append(cycle) } }
        var all: [ForwarderCycle] { cycles.withLock { $0 } }
    }

    /// A service for `install`, reporting into a fresh ``Reported``.
    func service(_ install: Install, server: ServerProcess) -> (ForwarderService, Reported) {
        let reported = Reported()
        let settings = ForwarderSettings(server: server.url)
        let service = ForwarderService(store: install.store, settings: settings, database: install.databasePath,
                                       logger: Logger(label: "test"), onCycle: { cycle in reported.append(cycle) })
        return (service, reported)
    }

    @Test func notLoggedInThenForwardedThenNothingLeft() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        let (service, reported) = service(a, server: server)

        // No credentials next to the database: the cycle does not start, and says how to log in.
        let first = await service.cycle()
        #expect(first.result == .notStarted("not logged in: run healthgate login --db \(a.databasePath)"))
        #expect(first.outboxDepth == nil && first.serverWait == nil)

        let account = try await Account.create(on: server)
        try SyncCredentials(server: server.url.absoluteString, email: account.email, userId: "", deviceId: account.deviceId,
                            token: account.token).save(forDatabase: a.databasePath)
        let second = await service.cycle()
        guard case .forwarded(let records, let problem, _) = second.result else {
            Issue.record("not forwarded: \(second.result)")
            return
        }
        #expect(records == depth && problem == nil)
        #expect(second.outboxDepth == 0 && second.serverWait == nil)

        let third = await service.cycle()
        guard case .forwarded(let again, nil, _) = third.result else {
            Issue.record("not forwarded: \(third.result)")
            return
        }
        #expect(again == 0)
        #expect(reported.all == [first, second, third])
    }

    @Test func aRefusedTokenIsAFailureAndTheOutboxStays() async throws {
        let server = try await ServerProcess.start()
        let a = try await Install()
        try await a.importFixtures()
        let depth = try await a.store.outboxDepth()
        try SyncCredentials(server: server.url.absoluteString, email: "nobody@example.org", userId: "", deviceId: "none",
                            token: "not-a-token").save(forDatabase: a.databasePath)
        let (service, reported) = service(a, server: server)

        let cycle = await service.cycle()
        guard case .failed(let error) = cycle.result else {
            Issue.record("not a failure: \(cycle.result)")
            return
        }
        #expect(!error.isEmpty)
        #expect(cycle.outboxDepth == depth && depth > 0)
        #expect(reported.all == [cycle])
    }
}
