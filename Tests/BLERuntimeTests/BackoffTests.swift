import Dispatch
import Testing
import Synchronization
@testable import BLERuntime
import Timing

@Suite struct BackoffTests {
    /// A session's reconnect delays: Timing's one backoff (tested there) with BLE's values.
    @Test func reconnectDelaysAreHalfASecondDoublingTo30SecondsWithJitter() {
        let b = Backoff.reconnect
        #expect(b == Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(30), jitter: 0.2))
        #expect((1...8).map { b.delay(attempt: $0, random: 0.5) } == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4),
                                                                      .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
        #expect(b.delay(attempt: 1, random: 0) == .milliseconds(400) && b.delay(attempt: 99, random: 1) == .seconds(36))
        #expect(DeviceSession.Configuration(address: .init(0xC0_4E_47_00_00_01, kind: .random), subscriptions: []).backoff == b)
    }

    /// Against a closed runtime an attempt fails with `closed`, which is final: no retry.
    @Test func sessionStopsOnAClosedRuntime() async throws {
        let host = HostRuntime(transport: ClosedTransport())
        await host.close()
        let slept = Collector<Duration>.Sink()
        let configuration = DeviceSession.Configuration(address: .init(0xC0_4E_47_00_00_01, kind: .random), subscriptions: [])
        let session = DeviceSession(runtime: host, configuration: configuration, sleep: { slept.append($0) }, random: { 0.5 })
        let events = Collector(session.events)
        await session.start()
        try await events.wait("attempt failed") { $0.contains(.attemptFailed(BLERuntimeError.closed.description)) }
        await session.stop()
        #expect(slept.values.isEmpty)
        #expect(!events.values.contains { if case .retrying = $0 { true } else { false } })
    }
}

final class ClosedTransport: HCITransport {
    let name = "closed"
    func start(on queue: DispatchQueue, _ receive: @escaping @Sendable ([UInt8]?) -> Void) { queue.async { receive(nil) } }
    func send(_ bytes: [UInt8]) throws(TransportError) { throw TransportError(.closed, "closed") }
    func close() {}
}

/// `dispatchSleep` cancelled just as its timer fires, 20,000 times: it always ends (the
/// timer's wake-up used to resume the task under a lock that the cancellation handler, holding
/// the task's own lock, was waiting for; a CI run hung in `DeviceSession.stop`), it ends with
/// `CancellationError` or normally, and a long sleep cancelled ends at once.
@Suite struct DispatchSleepTests {
    @Test func cancellationRacingTheTimerAlwaysEnds() async throws {
        let ended = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                var ended = 0
                for round in 0..<20_000 {
                    let sleeper = Task { try await dispatchSleep(.microseconds(Int64(round % 200))) }
                    if round % 3 != 0 { await Task.yield() }
                    sleeper.cancel()
                    switch await sleeper.result {
                    case .success: ended += 1
                    case .failure(let error): if error is CancellationError { ended += 1 }
                    }
                }
                return ended
            }
            group.addTask {
                try await Task.sleep(for: .seconds(120))
                return -1
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
        #expect(ended == 20_000, "a sleep did not end (a deadlock)")

        let long = Task { try await dispatchSleep(.seconds(3600)) }
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
    }
}
