import ANTCommands
import ANTDriver
import ArgumentParser
import BLECommands
import CommandSupport
import Dispatch
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Synchronization

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record", abstract: "Record live Bluetooth LE devices and ANT+ sensors into the database.",
        discussion: """
            Finds the devices given by --device, connects, subscribes to every standard \
            measurement they offer and stores what they send: readings of scales, cuffs, \
            thermometers and oximeters become measurements, a stream of heart rate, speed and \
            cadence, power or fitness-machine data becomes a workout that ends after --gap \
            of silence (default 2m). Readings reach the database within a fraction of a second (a \
            workout grows while it is recorded). Devices that drop out are reconnected. Runs \
            until --for elapses or Ctrl-C, then prints what it stored.

            DEVICE is `auto` (any heart-rate sensor, the default), an address \
            (AA:BB:CC:DD:EE:FF), `service:UUID` (e.g. service:1816 for speed and cadence \
            sensors) or an advertised name (`*` and `?` are wildcards: "Polar H10*"). Repeat \
            --device for several devices.

            --ant records ANT+ sensors through every ANT USB stick too (alone, without --hci): \
            --ant-sensor names them as `ant watch --sensor` does, and the ANT+ network key comes \
            from --ant-network-key or HEALTHGATE_ANT_NETWORK_KEY.
            """)

    @OptionGroup var controller: ControllerOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Option(name: .customLong("device"), help: ArgumentHelp("A device to record (repeatable; default auto).", valueName: "DEVICE"))
    var devices: [String] = []

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (default: until Ctrl-C); \(DurationArgument.forms).",
                                                         valueName: "DURATION"))
    var time: DurationArgument?

    @OptionGroup var workouts: WorkoutOptions

    @OptionGroup(title: "ANT+") var ant: ANTRecordOptions

    @Option(name: .customLong("commit-log"), help: ArgumentHelp(
        "Append one JSON line per stored batch to FILE: the commit time and the workout samples per device (for latency measurements).",
        valueName: "FILE"))
    var commitLog: String?

    func validate() throws {
        for d in devices { try BLERecording.validate(device: d) }
        try time?.requireLongerThanZero("--for")
        if let commitLog, commitLog.isEmpty { throw ValidationError("--commit-log: expected a file name") }
    }

    func run() async throws {
        let store = try await database.open()
        let interrupted = try await store.completeInterruptedWorkouts()
        if !interrupted.isEmpty, !output.json {
            Output.stderr("completed \(interrupted.count) workout(s) left in progress by an earlier recording\n")
        }
        // Bluetooth LE with --hci, ANT+ with --ant: both into one database, in one run.
        let ble = controller.hciOption != nil || !ant.enabled
            ? try BLERecording(controller: controller, devices: devices, workouts: workouts, quiet: output.json) : nil
        let antConfiguration = try ant.configuration(gap: workouts.gap.seconds, sport: Sport.normalize(workouts.sport), wheel: workouts.wheel,
                                                     quiet: output.json)

        let stored = StoredIDs()
        var commits: CommitLog?
        if let commitLog {
            guard let log = CommitLog(path: commitLog) else { throw RuntimeFailure("--commit-log: cannot open \(commitLog) for appending") }
            commits = log
        }
        let sink = StoreSink(store: store) { [commits] batch, committedAt in
            stored.add(batch)
            commits?.append(batch, committedAt: committedAt)
        }
        let started = Date()
        if !output.json {
            let what = (ble?.devices ?? []) + (antConfiguration == nil ? [] : ["ANT+ " + ant.summary])
            Output.stderr("recording \(what.joined(separator: ", ")) into \(database.db); "
                          + (time.map { "stopping after \($0)" } ?? "Ctrl-C to stop") + "\n")
        }
        let task = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let ble {
                    group.addTask { try await ble.run(into: sink) }
                }
                if let antConfiguration {
                    group.addTask {
                        do { try await ANTRecorder(configuration: antConfiguration).run(into: sink) } catch {
                            throw RuntimeFailure("ant: \(error)")
                        }
                    }
                }
                // The first to fail ends the recording (the others store what they hold).
                do { try await group.waitForAll() } catch {
                    group.cancelAll()
                    throw error
                }
            }
        }
        let stop = StopSignals { task.cancel() }
        if let time {
            Task {
                try? await Task.sleep(for: time.duration)
                task.cancel()
            }
        }
        defer { stop.cancel() }
        try await task.value
        try await report(store: store, stored: stored, statistics: ble?.statistics, since: started)
    }

    /// Prints what this run stored.
    private func report(store: HealthStore, stored: StoredIDs, statistics: (values: Int, malformed: Int, devices: [BLERecording.Device])?,
                        since: Date) async throws {
        let ids = stored.snapshot
        let workouts = try await store.workouts().filter { ids.workouts.contains($0.id) }
        let measurements = try await store.measurements().filter { ids.measurements.contains($0.id.description) }
        if output.json {
            return try Output.printJSON(RecordReport(
                workouts: workouts,
                measurements: measurements.map(MeasurementsCommand.MeasurementJSON.init),
                devices: (statistics?.devices ?? []).map { d in
                    .init(address: d.address, name: d.name, connections: d.connections, values: d.values, malformed: d.malformed)
                }))
        }
        let elapsed = Date().timeIntervalSince(since)
        print("Recorded for \(Output.duration(elapsed)): \(workouts.count) workout(s), \(measurements.count) measurement(s)"
              + (statistics.map { ", \($0.values) values from \($0.devices.count) device(s)" + ($0.malformed > 0 ? ", \($0.malformed) malformed" : "") } ?? "")
              + ".")
        if !workouts.isEmpty {
            print("")
            Output.printTable(["ID", "START (UTC)", "SPORT", "ACTIVE", "DIST km", "kcal", "HR avg/max", "SAMPLES", "RR", "DEVICE"],
                              workouts.map { w in
                [String(w.id.prefix(8)), Output.shortTime(w.start), w.sport, Output.duration(w.timerS ?? w.elapsedS),
                 Output.number(w.distanceM, decimals: 2, scale: 0.001),
                 w.energyKcal.map { (w.energySource == "estimated" ? "~" : "") + String(Int(saturating: $0.rounded())) } ?? "-",
                 "\(Output.int(w.avgHR))/\(Output.int(w.maxHR))", String(w.samples), String(w.rrIntervals), w.source.device ?? "-"]
            })
        }
        if !measurements.isEmpty {
            print("")
            Output.printTable(["TIME (UTC)", "KIND", "VALUE", "UNIT", "DEVICE"], measurements.map { m in
                [Output.shortTime(ISO8601.string(m.time)), m.kind.rawValue,
                 Output.number(m.value, decimals: m.value == m.value.rounded() ? 0 : 2), m.unit, m.source.device ?? "-"]
            })
        }
    }
}

/// `record --json`: what the run stored, in the shapes of `workouts --json` and `measurements --json`.
struct RecordReport: Encodable {
    struct Device: Encodable {
        var address: String
        var name: String?
        var connections: Int
        var values: Int
        var malformed: Int
    }
    var workouts: [WorkoutSummary]
    var measurements: [MeasurementsCommand.MeasurementJSON]
    var devices: [Device]
}

extension MeasurementsCommand.MeasurementJSON {
    init(_ m: HealthModel.Measurement) {
        self.init(id: m.id.description, version: m.version, kind: m.kind.rawValue, time: ISO8601.string(m.time),
                  end: m.end.map(ISO8601.string), value: m.value, unit: m.unit, extra: m.extra,
                  source: ["driver": m.source.driver, "device": m.source.device, "file": m.source.file])
    }
}

/// Ids of what the run stored (filled from the sink's commits).
/// `record --commit-log`: one JSON line per committed batch, `{"t": epoch seconds, "records": N,
/// "samples": {"device": N, ...}}`, written when the transaction has committed.
final class CommitLog: Sendable {
    private let handle: Mutex<FileHandle>

    init?(path: String) {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let h = FileHandle(forWritingAtPath: path) else { return nil }
        h.seekToEndOfFile()
        handle = Mutex(h)
    }

    func append(_ batch: LiveBatch, committedAt: Date) {
        var samples: [String: Int] = [:]
        for piece in batch.workouts { samples[piece.workout.source.device ?? "", default: 0] += piece.workout.samples.count }
        let perDevice = samples.keys.sorted().map { "\"\($0)\":\(samples[$0]!)" }.joined(separator: ",")
        let line = String(format: "{\"t\":%.6f,\"records\":%d,\"samples\":{%@}}\n", committedAt.timeIntervalSince1970,
                          batch.records.count, perDevice)
        handle.withLock { $0.write(Data(line.utf8)) }
    }
}

final class StoredIDs: Sendable {
    private let ids = Mutex<(workouts: Set<String>, measurements: Set<String>)>(([], []))

    func add(_ batch: LiveBatch) {
        ids.withLock { ids in
            for piece in batch.workouts { ids.workouts.insert(piece.workout.id.description) }
            for record in batch.records {
                if case .measurement(let m) = record { ids.measurements.insert(m.id.description) }
            }
        }
    }

    var snapshot: (workouts: Set<String>, measurements: Set<String>) { ids.withLock { $0 } }
}

/// Runs `action` once on SIGINT or SIGTERM (instead of the default: dying), so a recording
/// stops in order and stores its last batch.
final class StopSignals {
    private let sources: [any DispatchSourceSignal]

    init(_ action: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM].map { signal in
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
    }

    func cancel() {
        for s in sources { s.cancel() }
        for s in [SIGINT, SIGTERM] { Foundation.signal(s, SIG_DFL) }
    }
}
