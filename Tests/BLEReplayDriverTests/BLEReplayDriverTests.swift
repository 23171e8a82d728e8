import BLEReplayDriver
import DriverKit
import Foundation
import HealthModel
import Testing
import TestSupport

/// The replay driver on the committed capture (Fixtures/ble: a heart-rate strap and a speed and
/// cadence sensor recorded against the emulated peers, with the log of what the peers sent).
@Suite struct BLEReplayDriverTests {
    static let capture = PackagePaths.fixtures + "/ble/hr-csc-watch.btsnoop"

    /// What the peers sent, per peripheral.
    static func sent() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: PackagePaths.fixtures + "/ble/hr-csc-watch.sent.jsonl", encoding: .utf8)
        return try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func make(_ table: [String: ConfigValue], events: @escaping @Sendable (DriverEvent) -> Void = { _ in }) throws -> any DeviceDriver {
        let context = DriverContext(instance: "replay", logger: DriverContext.standalone("replay").logger, events: events)
        return try BLEReplayDriver.descriptor.makeDeviceDriver(table, context: context)
    }

    /// One workout per device stream with every value the peer sent, and the battery read; then
    /// the driver idles until stopped.
    @Test func storesTheCaptureAsALiveRecordingWould() async throws {
        let sink = CollectingSink()
        let driver = try make(["capture": .string(Self.capture), "sport": .string("running")])
        let task = Task { try await driver.run(into: sink) }
        defer { task.cancel() }
        try await eventually("the capture's 3 records are stored", every: .milliseconds(20), detail: "\(sink.records.count) stored") {
            sink.records.count >= 3
        }
        task.cancel()
        try await task.value
        let workouts = sink.records.compactMap { if case .workout(let w) = $0 { w } else { nil } }
        let measurements = sink.records.compactMap { if case .measurement(let m) = $0 { m } else { nil } }
        #expect(workouts.count == 2 && measurements.map(\.value) == [87])
        let sent = try Self.sent()
        for (peripheral, sport) in [("hr", Sport.running), ("csc", .cycling)] {
            let entries = sent.filter { $0["peripheral"] as? String == peripheral }
            let address = try #require(entries.first?["address"] as? String)
            let workout = try #require(workouts.first { $0.source.device == address })
            #expect(workout.sport == sport.rawValue && workout.samples.count == entries.count, "\(peripheral)")
        }
    }

    /// A damaged capture stores what precedes the damage and reports the problem, naming the file.
    @Test func damagedCaptureIsReported() async throws {
        let folder = try temporaryFolder("replay")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.capture))
        let cut = folder + "/cut.btsnoop"
        try bytes.prefix(bytes.count - 5).write(to: URL(fileURLWithPath: cut))
        let problems = Problems()
        let driver = try make(["capture": .string(cut)], events: { problems.add("\($0)") })
        let task = Task { try await driver.run(into: CollectingSink()) }
        defer { task.cancel() }
        try await eventually("the damage is reported", every: .milliseconds(20)) { !problems.all.isEmpty }
        task.cancel()
        try await task.value
        #expect(problems.all.first?.hasPrefix("ble_replay: \(cut): ") == true, "\(problems.all)")
    }

    @Test func settingsNameTheirKey() {
        #expect(throws: ConfigError(keyPath: "capture", reason: "is required (the btsnoop capture to replay)")) { try make([:]) }
        #expect(throws: ConfigError(keyPath: "capture", reason: "'x.btsnoop' must be an absolute path")) {
            try make(["capture": .string("x.btsnoop")])
        }
        #expect(throws: ConfigError(keyPath: "sport", reason: "'quidditch' is not a sport HealthGate knows")) {
            try make(["capture": .string("/x"), "sport": .string("quidditch")])
        }
    }
}

final class Problems: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    var all: [String] { lock.withLock { list } }
    func add(_ problem: String) { lock.withLock { list.append(problem) } }
}
