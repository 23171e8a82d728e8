import Dispatch
import Testing
import Synchronization
import BluetoothCentral
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
        try await events.wait("attempt failed") { $0.contains(.attemptFailed(BLEError.closed.description)) }
        try await events.wait("gave up") { $0.contains(.gaveUp(.closed)) }
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
