import ANTCommands
import ANTDriver
import ArgumentParser
import BluetoothCentral
import BLEDriver
import BLEHost
import BLERuntime
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
        for d in devices { _ = try selector(d) }
        try time?.requireLongerThanZero("--for")
        if let commitLog, commitLog.isEmpty { throw ValidationError("--commit-log: expected a file name") }
    }

    private func selector(_ text: String) throws -> DeviceSelector {
        do { return try DeviceSelector(parsing: text) } catch { throw ValidationError("--device: \(error)") }
    }

    func run() async throws {
        let store = try await database.open()
        let interrupted = try await store.completeInterruptedWorkouts()
        if !interrupted.isEmpty, !output.json {
            Output.stderr("completed \(interrupted.count) workout(s) left in progress by an earlier recording\n")
        }
        // Bluetooth LE with --hci, ANT+ with --ant: both into one database, in one run.
        var configuration: BLERecorder.Configuration?
        let log = RecordingLog(quiet: output.json)
        if controller.hciOption != nil || !ant.enabled {
            var c = BLERecorder.Configuration(controller: try controller.address(), devices: try devices.isEmpty ? [.auto] : devices.map(selector))
            c.sessionizer = workouts.sessionizer
            c.snoopPath = try controller.snoopPath()
            c.log = controller.diagnostics
            c.onEvent = { log.event($0) }
            configuration = c
        }
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
            let what = (configuration.map { $0.devices.map(\.description) } ?? []) + (antConfiguration == nil ? [] : ["ANT+ " + ant.summary])
            Output.stderr("recording \(what.joined(separator: ", ")) into \(database.db); "
                          + (time.map { "stopping after \($0)" } ?? "Ctrl-C to stop") + "\n")
        }
        let hci = controller.hciOption ?? ""
        let task = Task { [configuration] in
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let configuration {
                    group.addTask {
                        do { try await BLERecorder(configuration: configuration).run(into: sink) } catch {
                            throw RuntimeFailure.controller(hci, error)
                        }
                    }
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
        try await report(store: store, stored: stored, statistics: log.statistics, since: started)
    }

    /// Prints what this run stored.
    private func report(store: HealthStore, stored: StoredIDs, statistics: BLERecorderStatistics?, since: Date) async throws {
        let ids = stored.snapshot
        let workouts = try await store.workouts().filter { ids.workouts.contains($0.id) }
        let measurements = try await store.measurements().filter { ids.measurements.contains($0.id.description) }
        if output.json {
            return try Output.printJSON(RecordReport(
                workouts: workouts,
                measurements: measurements.map(MeasurementsCommand.MeasurementJSON.init),
                devices: (statistics?.devices ?? [:]).map { address, d in
                    .init(address: address, name: d.name, connections: d.connections, values: d.values, malformed: d.malformed)
                }.sorted { $0.address < $1.address }))
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
        if let line, !quiet { Output.stderr(DisplayText.safe(line, limit: 1000) + "\n") }
    }
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

/// `--gap`, `--sport`, `--wheel`: how live readings become workouts (`record`, `ble replay --record`).
struct WorkoutOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Silence that ends a workout, 1s to 1d; \(DurationArgument.forms).", valueName: "DURATION"))
    var gap = DurationArgument(seconds: 120)

    @Option(help: ArgumentHelp("Sport of a workout whose device does not tell (a heart-rate strap alone).", valueName: "SPORT"))
    var sport: String = "other"

    @Option(help: ArgumentHelp("Wheel circumference for speed sensors.", valueName: "METRES"))
    var wheel: Double = 2.096

    func validate() throws {
        guard (1...86_400).contains(gap.seconds) else { throw ValidationError("--gap must be from 1s to 1d (\(DurationArgument.forms))") }
        guard (0.5...4).contains(wheel) else { throw ValidationError("--wheel must be between 0.5 and 4 metres") }
        if Sport.normalize(sport) == .other, sport.lowercased() != "other" {
            throw ValidationError("--sport '\(sport)' is not a sport HealthGate knows")
        }
    }

    var sessionizer: GATTSessionizer.Configuration {
        GATTSessionizer.Configuration(gap: gap.seconds, defaultSport: Sport.normalize(sport), wheelCircumference: wheel)
    }
}
