import Dispatch
import Testing
import Synchronization
@testable import BLERuntime

@Suite struct BackoffTests {
    @Test func scheduleWithoutJitterDoublesUpToTheMaximum() {
        let b = ReconnectBackoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(30), jitter: 0.2)
        let delays = (1...10).map { b.delay(attempt: $0, random: 0.5) }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16),
                           .seconds(30), .seconds(30), .seconds(30), .seconds(30)])
    }

    @Test func jitterStaysWithinItsFraction() {
        let b = ReconnectBackoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(10), jitter: 0.2)
        #expect(b.delay(attempt: 1, random: 0) == .milliseconds(800))
        #expect(b.delay(attempt: 1, random: 1) == .milliseconds(1200))
        #expect(b.delay(attempt: 3, random: 0.25) == .milliseconds(3600))
        #expect(b.delay(attempt: 9, random: 1) == .seconds(12))
        // Out-of-range inputs are clamped; attempt 0 counts as the first.
        #expect(b.delay(attempt: 0, random: 7) == .milliseconds(1200))
        #expect(b.delay(attempt: 2, random: -1) == .milliseconds(1600))
    }

    @Test func configurationIsClamped() {
        let b = ReconnectBackoff(initial: .seconds(2), multiplier: 0.5, maximum: .seconds(1), jitter: 3)
        #expect(b.multiplier == 1 && b.maximum == .seconds(2) && b.jitter == 1)
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
