import Foundation
@testable import HealthGateDaemon
import HealthSync
import Testing

/// The daemon turns each forwarding cycle's outcome into its status and its metrics.
struct ForwarderOutcomeTests {
    func metricsText(_ metrics: DaemonMetrics) -> [String] {
        String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
    }

    @Test func eachOutcomeLandsInTheStatusAndTheMetrics() async throws {
        let state = DaemonState(database: "test.sqlite", server: "http://127.0.0.1:1")
        let metrics = DaemonMetrics()

        await Daemon.record(ForwarderCycle(result: .notStarted("not logged in")), state: state, metrics: metrics)
        var snapshot = await state.current()
        #expect(snapshot.lastSyncError == "not logged in" && snapshot.lastSyncAt == nil && snapshot.forwarded == 0)
        #expect(!metricsText(metrics).contains { $0.hasPrefix("healthgate_errors_total") })

        await Daemon.record(ForwarderCycle(result: .forwarded(records: 3, problem: nil, duration: .milliseconds(20)), outboxDepth: 0),
                            state: state, metrics: metrics)
        snapshot = await state.current()
        #expect(snapshot.lastSyncError == nil && snapshot.lastSyncAt != nil && snapshot.forwarded == 3)
        var lines = metricsText(metrics)
        #expect(lines.contains("healthgate_records_forwarded_total 3"), "\(lines)")
        #expect(lines.contains("healthgate_outbox_records 0.0"), "\(lines)")
        #expect(lines.contains("healthgate_forward_duration_seconds_count 1"), "\(lines)")

        await Daemon.record(ForwarderCycle(result: .forwarded(records: 2, problem: "1 record(s) held back: too large",
                                                              duration: .milliseconds(20))),
                            state: state, metrics: metrics)
        snapshot = await state.current()
        #expect(snapshot.lastSyncError == "1 record(s) held back: too large" && snapshot.forwarded == 5)

        await Daemon.record(ForwarderCycle(result: .failed("the server is gone"), outboxDepth: 7), state: state, metrics: metrics)
        snapshot = await state.current()
        #expect(snapshot.lastSyncError == "the server is gone" && snapshot.forwarded == 5)
        lines = metricsText(metrics)
        #expect(lines.contains("healthgate_errors_total{kind=\"forward\"} 1"), "\(lines)")
        #expect(lines.contains("healthgate_outbox_records 7.0"), "\(lines)")
        #expect(lines.contains("healthgate_forward_duration_seconds_count 2"), "\(lines)")
        #expect(lines.contains("healthgate_records_forwarded_total 5"), "\(lines)")

        // Cut short by a shutdown: the status stays as it was, the outbox depth is kept up to date.
        let before = await state.current()
        await Daemon.record(ForwarderCycle(result: .cancelled, outboxDepth: 4), state: state, metrics: metrics)
        #expect(await state.current() == before)
        lines = metricsText(metrics)
        #expect(lines.contains("healthgate_outbox_records 4.0"), "\(lines)")
        #expect(lines.contains("healthgate_errors_total{kind=\"forward\"} 1"), "\(lines)")
    }
}
