import ArgumentParser
import BLEDriver
public import CommandSupport
public import DriverKit
import Foundation
import HealthModel
import Synchronization

/// The Bluetooth LE part of `healthgate record`: the recorder for `--hci` and `--device`, its
/// events on standard error, and what it saw for the command's report.
public final class BLERecording: Sendable {
    /// What the recorder saw of one device.
    public struct Device: Sendable {
        public var address: String
        public var name: String?
        public var connections: Int
        public var values: Int
        public var malformed: Int
    }

    private let configuration: BLERecorder.Configuration
    private let hci: String
    private let log: RecordingLog

    /// `devices` as `--device` gives them (`auto` when none); `quiet` keeps standard error for
    /// errors (`--json`).
    public init(controller: ControllerOptions, devices: [String], workouts: WorkoutOptions, quiet: Bool) throws {
        var c = BLERecorder.Configuration(controller: try controller.address(), devices: try devices.isEmpty ? [.auto] : devices.map(Self.selector))
        c.sessionizer = workouts.sessionizer
        c.snoopPath = try controller.snoopPath()
        c.log = controller.diagnostics
        let log = RecordingLog(quiet: quiet)
        c.onEvent = { log.event($0) }
        configuration = c
        hci = controller.hciOption ?? ""
        self.log = log
    }

    /// Checks one `--device` value (a usage error when it is not a selector).
    public static func validate(device: String) throws { _ = try selector(device) }

    private static func selector(_ text: String) throws -> DeviceSelector {
        do { return try DeviceSelector(parsing: text) } catch { throw ArgumentParser.ValidationError("--device: \(error)") }
    }

    /// The selectors, as the command says what it records.
    public var devices: [String] { configuration.devices.map(\.description) }

    /// Records into `sink` until the task is cancelled.
    public func run(into sink: some RecordSink) async throws {
        do { try await BLERecorder(configuration: configuration).run(into: sink) } catch {
            throw CommandFailure.controller(hci, error)
        }
    }

    /// The recorder's final statistics, once it has stopped: values, malformed values, devices.
    public var statistics: (values: Int, malformed: Int, devices: [Device])? {
        log.statistics.map { s in
            (s.values, s.malformed, s.devices.map { address, d in
                Device(address: address, name: d.name, connections: d.connections, values: d.values, malformed: d.malformed)
            }.sorted { $0.address < $1.address })
        }
    }
}

extension WorkoutOptions {
    var sessionizer: GATTSessionizer.Configuration {
        GATTSessionizer.Configuration(gap: gap.seconds, defaultSport: Sport.normalize(sport), wheelCircumference: wheel)
    }
}

/// Prints the recorder's events on stderr (not with --json) and keeps its final statistics.
final class RecordingLog: Sendable {
    private let quiet: Bool
    private let state = Mutex<(statistics: BLERecorderStatistics?, malformed: [String: Int])>((nil, [:]))

    init(quiet: Bool) { self.quiet = quiet }

    var statistics: BLERecorderStatistics? { state.withLock { $0.statistics } }

    func event(_ event: BLERecorderEvent) {
        let line: String?
        switch event {
        case .malformed(let address, _, _):
            let count = state.withLock { s in
                s.malformed[address.text, default: 0] += 1
                return s.malformed[address.text, default: 0]
            }
            // The first few in full; then one line per hundred.
            line = count <= 3 ? event.message : count % 100 == 0 ? "\(address.text): \(count) malformed values skipped so far" : nil
        case .finished(let statistics):
            state.withLock { $0.statistics = statistics }
            line = nil  // the command prints its own summary
        default:
            line = event.message
        }
        if let line, !quiet { CommandOutput.stderr(DisplayText.safe(line, limit: 1000) + "\n") }
    }
}

