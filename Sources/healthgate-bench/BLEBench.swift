import BluetoothCentral
import BLEDriver
import BLEHost
import BLERuntime
import DriverKit
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Synchronization
import TestSupport

/// Live recording against the emulated peer (Tests/peers/ble_peer.py, a separate process):
/// latency from a notification's arrival to its committed row, and this process's CPU per
/// notification. Baseline in the same run: the same recorder and notifications with a sink that
/// stores nothing, so the difference is what storing costs.
func bleBenchmarks() async throws {
    print("\n== Live BLE recording (emulated peer in its own process; CPU is this process only) ==")
    let scenarios: [(name: String, devices: Int, hz: Int, seconds: Double)] = [
        ("10 devices x 4 Hz", 10, 4, 30),
        ("2 devices x 200 Hz", 2, 200, 15),
    ]
    for s in scenarios {
        let stored = try await measureRecording(devices: s.devices, hz: s.hz, seconds: s.seconds, store: true)
        let baseline = try await measureRecording(devices: s.devices, hz: s.hz, seconds: s.seconds, store: false)
        print("  \(s.name), \(Int(s.seconds)) s measured after all devices connected:")
        print(String(format: "    record into SQLite: %5d values, %.2f%% of a core, %.1f ms CPU per 1,000 values; latency p50 %.0f ms, p99 %.0f ms, max %.0f ms",
                     stored.values, stored.corePercent, stored.cpuPer1000 * 1000, stored.p50 * 1000, stored.p99 * 1000, stored.max * 1000))
        print(String(format: "    baseline, no store: %5d values, %.2f%% of a core, %.1f ms CPU per 1,000 values -> storing adds %.1f ms per 1,000",
                     baseline.values, baseline.corePercent, baseline.cpuPer1000 * 1000, (stored.cpuPer1000 - baseline.cpuPer1000) * 1000))
        if s.devices == 10 && s.hz == 4 {
            print(String(format: "    targets: p99 < 1 s (%@), 10 devices x 4 Hz < 2%% of a core (%@)",
                         stored.p99 < 1 ? "met" : "NOT met", stored.corePercent < 2 ? "met" : "NOT met"))
        }
    }
}

struct RecordingFigures {
    var values: Int
    var corePercent: Double
    var cpuPer1000: Double
    var p50: Double
    var p99: Double
    var max: Double
}

/// Counts what reaches a sink during the measured window and, when storing, the latency of
/// every sample and measurement (commit time minus arrival time).
final class MeasuringSink: RecordSink {
    struct State {
        var measuring = false
        var values = 0
        var latencies: [Double] = []
    }
    let state = Mutex(State())
    let store: StoreSink?

    init(store: StoreSink?) { self.store = store }

    func emit(_ batch: [HealthRecord]) async throws { try await emit(LiveBatch(records: batch)) }

    func emit(_ batch: LiveBatch) async throws {
        try await store?.emit(batch)
        let committed = Date()
        state.withLock { s in
            guard s.measuring else { return }
            for piece in batch.workouts {
                s.values += piece.workout.samples.count
                if store != nil { s.latencies += piece.workout.samples.map { committed.timeIntervalSince($0.time) } }
            }
            s.values += batch.records.count
        }
    }
}

func measureRecording(devices: Int, hz: Int, seconds: Double, store: Bool) async throws -> RecordingFigures {
    let peer = try BLEPeer(peripherals: Array(repeating: "hr", count: devices), rate: String(hz))
    defer { peer.stop() }
    let folder = NSTemporaryDirectory() + "healthgate-bench-ble-\(getpid())"
    try? FileManager.default.removeItem(atPath: folder)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let sink = MeasuringSink(store: store ? StoreSink(store: try await HealthStore(path: folder + "/bench.sqlite")) : nil)

    let connected = Mutex(0)
    var configuration = BLERecorder.Configuration(controller: peer.h4, devices: [.auto])
    configuration.scanPause = .milliseconds(500)
    configuration.onEvent = { event in
        if case .connected = event { connected.withLock { $0 += 1 } }
    }
    let recorder = BLERecorder(configuration: configuration)
    let task = Task { try await recorder.run(into: sink) }
    for _ in 0..<600 where connected.withLock({ $0 }) < devices {
        try await Task.sleep(for: .milliseconds(50))
    }
    guard connected.withLock({ $0 }) >= devices else {
        task.cancel()
        throw PeerError("only \(connected.withLock { $0 }) of \(devices) devices connected")
    }
    try await Task.sleep(for: .seconds(2))  // settle: every subscription notifying

    sink.state.withLock { $0.measuring = true }
    let wall0 = now(), cpu0 = cpuSeconds()
    try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    let wall = now() - wall0, cpu = cpuSeconds() - cpu0
    let state = sink.state.withLock { s in
        s.measuring = false
        return s
    }
    task.cancel()
    try await task.value
    return RecordingFigures(values: state.values, corePercent: cpu / wall * 100, cpuPer1000: cpu / Double(max(1, state.values)) * 1000,
                            p50: percentile(state.latencies, 0.5), p99: percentile(state.latencies, 0.99),
                            max: state.latencies.max() ?? .nan)
}
