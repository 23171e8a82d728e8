import DriverKit
import Foundation
import HealthModel
import Synchronization
import Testing
import TestSupport
@testable import ExecDriver

@Suite struct ExecLineParserTests {
    let parser = ExecLineParser(instance: "bridge")
    let t = "2026-11-22T07:30:00Z"

    @Test func readsEveryType() throws {
        let m = try #require(try parser.parse(#"{"type":"measurement","kind":"blood_pressure","time":"\#(t)","value":121,"extra":{"diastolic":79},"device":"cuff"}"#, number: 1))
        guard case .measurement(let measurement) = m else { Issue.record("not a measurement"); return }
        #expect(measurement.kind == .bloodPressure && measurement.value == 121 && measurement.extra == ["diastolic": 79])
        #expect(measurement.source == Source(driver: "exec", device: "cuff"))
        #expect(measurement.time == ISO8601.parse(t))
        // The same reading twice has the same id; a key gives the id.
        #expect(try parser.parse(#"{"type":"measurement","kind":"blood_pressure","time":"\#(t)","value":121,"device":"cuff"}"#, number: 2)?.id == m.id)
        let keyed = try parser.parse(#"{"type":"habit","habit":"water","time":"\#(t)","key":"k1","value":250,"unit":"ml"}"#, number: 3)
        #expect(keyed?.id == RecordID.derive("exec", "bridge", "k1"))
        guard case .habit(let habit)? = keyed else { Issue.record("not a habit"); return }
        #expect(habit.value == 250 && habit.unit == "ml")
        let sleep = try parser.parse(#"{"type":"sleep","start":"2026-11-21T23:00:00Z","end":"2026-11-22T06:00:00Z","stages":[{"start":"2026-11-21T23:00:00Z","end":"2026-11-22T01:00:00Z","stage":"deep"}],"version":2}"#, number: 4)
        guard case .sleep(let session)? = sleep else { Issue.record("not sleep"); return }
        #expect(session.stages.map(\.stage) == [.deep] && session.version == 2)
        let workout = try parser.parse(#"{"type":"workout","sport":"rowing","start":"\#(t)","end":"2026-11-22T08:00:00Z","distance_m":6000,"avg_hr":140}"#, number: 5)
        guard case .workout(let w)? = workout else { Issue.record("not a workout"); return }
        #expect(w.sport == "rowing" && w.distanceM == 6000 && w.avgHeartRate == 140)
        #expect(try parser.parse("", number: 6) == nil && parser.parse("  # comment", number: 7) == nil)
        // One habit, one name: `Reading` and `reading` at the same time are one entry (the name
        // as written is kept).
        let upper = try parser.parse(#"{"type":"habit","habit":"Reading","time":"\#(t)","value":20}"#, number: 8)
        let lower = try parser.parse(#"{"type":"habit","habit":" reading","time":"\#(t)","value":20}"#, number: 9)
        #expect(upper?.id == lower?.id)
        guard case .habit(let spelled)? = upper else { Issue.record("not a habit"); return }
        #expect(spelled.habit == "Reading")
    }

    /// The optional keys of each type arrive where they belong; null is the same as absent.
    @Test func readsTheOptionalKeys() throws {
        let m = try parser.parse(#"{"type":"measurement","kind":"spo2","time":"\#(t)","end":"2026-11-22T07:31:00Z","value":97,"device":null}"#, number: 1)
        guard case .measurement(let measurement)? = m else { Issue.record("not a measurement"); return }
        #expect(measurement.end == ISO8601.parse("2026-11-22T07:31:00Z") && measurement.source.device == nil && measurement.extra.isEmpty)
        let h = try parser.parse(#"{"type":"habit","habit":"vape","time":"\#(t)","category":"cessation","label":"craving","note":"after lunch"}"#, number: 2)
        guard case .habit(let habit)? = h else { Issue.record("not a habit"); return }
        #expect(habit.category == "cessation" && habit.label == "craving" && habit.note == "after lunch" && habit.value == nil && habit.unit == nil)
        let w = try parser.parse(#"{"type":"workout","sport":"cycling","sub_sport":"indoor_cycling","start":"\#(t)","end":"2026-11-22T08:30:00Z","elapsed_s":3600,"timer_s":3500.5,"energy_kcal":640,"max_hr":171,"ascent_m":12.5,"descent_m":11}"#, number: 3)
        guard case .workout(let workout)? = w else { Issue.record("not a workout"); return }
        #expect(workout.subSport == "indoor_cycling" && workout.elapsedS == 3600 && workout.timerS == 3500.5)
        #expect(workout.energyKcal == 640 && workout.energySource == .device && workout.maxHeartRate == 171)
        #expect(workout.ascentM == 12.5 && workout.descentM == 11 && workout.distanceM == nil && workout.avgHeartRate == nil)
        let bare = try parser.parse(#"{"type":"workout","sport":"yoga","start":"\#(t)","end":"2026-11-22T08:30:00Z","energy_kcal":null}"#, number: 4)
        guard case .workout(let plain)? = bare else { Issue.record("not a workout"); return }
        #expect(plain.energyKcal == nil && plain.energySource == nil && plain.subSport == nil)
        let s = try parser.parse(#"{"type":"sleep","start":"2026-11-21T23:00:00Z","end":"2026-11-22T06:00:00Z","stages":[{"start":"2026-11-21T23:00:00Z","end":"2026-11-21T23:30:00Z"}]}"#, number: 5)
        guard case .sleep(let session)? = s else { Issue.record("not sleep"); return }
        #expect(session.stages.map(\.stage) == [.unknown] && session.version == 1)
        for (line, message) in [
            (#"{"type":"measurement","kind":"weight","time":"\#(t)","value":70,"extra":{"fat":"high"}}"#, "line 8: extra.fat: must be a number"),
            (#"{"type":"measurement","kind":"weight","time":"\#(t)","value":70,"extra":[1]}"#, "line 8: extra: must be an object of numbers"),
            (#"{"type":"sleep","start":"\#(t)","end":"\#(t)","stages":[3]}"#, "line 8: stages[0]: not an object"),
            (#"{"type":"sleep","start":"\#(t)","end":"\#(t)","stages":{}}"#, "line 8: stages: must be a list"),
            (#"{"type":"sleep","start":"\#(t)","end":"\#(t)","stages":[{"start":"\#(t)"}]}"#, "line 8: sleep: missing key 'stages[0].end'"),
            (#"{"type":"sleep","start":"\#(t)","end":"\#(t)","stages":[{"start":"\#(t)","end":"\#(t)","depth":1}]}"#, "line 8: stages[0].depth: unknown key"),
            (#"{"type":"habit","habit":"water","time":"\#(t)","note":5}"#, "line 8: note: must be a string"),
        ] {
            #expect(throws: ExecLineError(line: 8, reason: String(message.dropFirst("line 8: ".count)))) { try parser.parse(line, number: 8) }
        }
    }

    @Test func everyMistakeNamesItsLineAndKey() {
        let cases: [(String, String)] = [
            ("{not json", "line 9: not JSON: "),
            ("[1,2]", "line 9: not a JSON object"),
            (#"{"kind":"weight"}"#, "line 9: missing key 'type'"),
            (#"{"type":"note"}"#, "line 9: unknown type 'note' (measurement, habit, sleep or workout)"),
            (#"{"type":"measurement","kind":"weight","time":"\#(t)"}"#, "line 9: measurement: missing key 'value'"),
            (#"{"type":"measurement","kind":"mood","time":"\#(t)","value":1}"#, "line 9: measurement: kind 'mood' is not one of "),
            (#"{"type":"measurement","kind":"weight","time":"2026-13-01","value":1}"#, "line 9: time: '2026-13-01' is not an ISO 8601 time"),
            (#"{"type":"measurement","kind":"weight","time":"\#(t)","value":"70"}"#, "line 9: value: must be a number"),
            (#"{"type":"measurement","kind":"weight","time":"\#(t)","value":true}"#, "line 9: value: must be a number"),
            (#"{"type":"measurement","kind":"weight","time":"\#(t)","value":70,"colour":"red"}"#, "line 9: colour: unknown key"),
            (#"{"type":"habit","time":"\#(t)"}"#, "line 9: habit: missing key 'habit'"),
            (#"{"type":"workout","sport":"run","start":"\#(t)","end":"\#(t)","avg_hr":140.5}"#, "line 9: avg_hr: must be a whole number"),
            (#"{"type":"sleep","start":"\#(t)","end":"\#(t)","stages":[{"start":"\#(t)","end":"\#(t)","stage":"dream"}]}"#,
             "line 9: stages[0].stage: 'dream' is not one of awake, light, deep, rem, unknown"),
            (#"{"type":"habit","habit":"x","time":"\#(t)","version":0}"#, "line 9: version: must be 1 or more"),
            (String(repeating: " ", count: 10) + "{" + String(repeating: "x", count: ExecLineParser.maximumLineBytes) + "}",
             "line 9: longer than"),
        ]
        for (line, message) in cases {
            do {
                _ = try parser.parse(line, number: 9)
                Issue.record("accepted \(line.prefix(80))")
            } catch {
                #expect(error.description.hasPrefix(message), "\(line.prefix(80)): \(error.description)")
            }
        }
    }
}

/// Collects what a driver emits (records only).
final class Collected: RecordSink, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [HealthRecord] = []
    var records: [HealthRecord] { lock.withLock { stored } }
    func emit(_ batch: [HealthRecord]) async throws { lock.withLock { stored += batch } }
    func emit(_ batch: LiveBatch) async throws { lock.withLock { stored += batch.records } }
}

/// A store that is stuck until `open()`: every batch waits for it.
final class GatedSink: RecordSink, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [HealthRecord] = []
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    var records: [HealthRecord] { lock.withLock { stored } }
    /// Batches waiting for the gate.
    var waiting: Int { lock.withLock { waiters.count } }

    func open() {
        let woken = lock.withLock {
            isOpen = true
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in woken { waiter.resume() }
    }

    func emit(_ batch: [HealthRecord]) async throws {
        await withCheckedContinuation { continuation in
            let through = lock.withLock {
                if !isOpen { waiters.append(continuation) }
                return isOpen
            }
            if through { continuation.resume() }
        }
        lock.withLock { stored += batch }
    }

    func emit(_ batch: LiveBatch) async throws { try await emit(batch.records) }
}

final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [ExecEvent] = []
    var all: [ExecEvent] { lock.withLock { list } }
    func add(_ event: ExecEvent) { lock.withLock { list.append(event) } }
}

@Suite struct ExecDriverTests {
    func script(_ body: String) throws -> (path: String, folder: String) {
        let folder = NSTemporaryDirectory() + "hg-exec-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/program.sh"
        try ("#!/bin/sh\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return (path, folder)
    }

    /// A program printing every type, a malformed line and an unknown type, then crashing
    /// (status 3): its records arrive, bad lines are reported by number, and the run ends with
    /// the program (the supervisor starts it again: `DriverSupervisorTests`); a second run
    /// stores the same records under the same ids.
    @Test func storesRecordsSkipsBadLinesAndEndsWithTheProgram() async throws {
        let (path, folder) = try script("""
            echo run >> "$(dirname "$0")/runs"
            echo '{"type":"measurement","kind":"weight","time":"2026-11-22T07:30:00Z","value":71.4,"device":"scale"}'
            echo '{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z","value":250}'
            echo 'this is not json'
            echo '{"type":"mood","time":"2026-11-22T09:00:00Z"}'
            echo 'a warning' >&2
            echo '{"type":"sleep","start":"2026-11-21T23:00:00Z","end":"2026-11-22T06:00:00Z"}'
            exit 3
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ExecDriver.Configuration(command: [path], instance: "test")
        let events = Events()
        configuration.onEvent = { events.add($0) }
        let sink = Collected()
        try await ExecDriver(configuration: configuration).run(into: sink)
        #expect(sink.records.count == 3)
        try await ExecDriver(configuration: configuration).run(into: sink)
        #expect(sink.records.count == 6)
        let runs = try String(contentsOfFile: folder + "/runs", encoding: .utf8).split(separator: "\n").count
        #expect(runs == 2)
        // Each run stores the same three records (same ids: storing them again changes nothing).
        let ids = Set(sink.records.map(\.id))
        #expect(ids.count == 3)
        #expect(ids.contains(RecordID.derive("exec", "test", "habit", "water", ISO8601.exactString(ISO8601.parse("2026-11-22T09:00:00Z")!))))
        let bad = events.all.compactMap { event -> String? in if case .badLine(let e) = event { return e.description } else { return nil } }
        #expect(bad.prefix(2).map { String($0.prefix(7)) } == ["line 3:", "line 4:"])
        #expect(events.all.contains(.exited(status: 3)))
        #expect(events.all.contains(.stderr("a warning")))
    }

    /// A hostile or broken program: a line of 3 MiB without a newline in sight, then records,
    /// the last one without its newline (CRLF before it). The long line is reported by number and
    /// dropped (never held whole), and every record after it arrives.
    @Test func aLineTooLongIsSkippedAndTheRestRead() async throws {
        let (path, folder) = try script("""
            head -c 3145728 /dev/zero | tr '\\0' 'x'
            printf '\\n{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z","key":"a"}\\r\\n'
            printf '{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z","key":"b"}'
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ExecDriver.Configuration(command: [path], instance: "t")
        configuration.batchInterval = .milliseconds(50)
        let events = Events()
        configuration.onEvent = { events.add($0) }
        let sink = Collected()
        let task = Task { try await ExecDriver(configuration: configuration).run(into: sink) }
        defer { task.cancel() }
        // The last line, without its newline, arrives when the program ends.
        #expect(await cameTrue { Set(sink.records.map(\.id)).count == 2 }, "\(sink.records.count) records; \(events.all)")
        let bad = events.all.compactMap { event -> String? in if case .badLine(let e) = event { return e.description } else { return nil } }
        #expect(bad == ["line 1: longer than \(ExecLineParser.maximumLineBytes) bytes"], "\(bad)")
        // Its end is reported once its output is read and it is reaped.
        #expect(await cameTrue { events.all.contains(.exited(status: 0)) }, "\(events.all)")
        task.cancel()
        _ = try? await task.value
    }

    /// Cancelled while the program runs: it is stopped (SIGTERM) and what it printed is stored.
    @Test func cancellationStopsTheProgram() async throws {
        // The pid file appears whole (renamed into place) once the record is in the pipe: the
        // cancellation comes after the program printed it, however slow the machine.
        let (path, folder) = try script("""
            echo '{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z"}'
            echo $$ > "$(dirname "$0")/pid.new" && mv "$(dirname "$0")/pid.new" "$(dirname "$0")/pid"
            exec sleep 600
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sink = Collected()
        let task = Task { try await ExecDriver(configuration: .init(command: [path], instance: "t")).run(into: sink) }
        defer { task.cancel() }
        try await eventually("the program writes its pid") { FileManager.default.fileExists(atPath: folder + "/pid") }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        _ = try? await task.value
        let pid = try #require(Int32(try String(contentsOfFile: folder + "/pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) != 0, "program still running")
        #expect(sink.records.count == 1)
    }

    /// A program that prints a record and then waits (polling something, say, with its wait in
    /// a background child that holds the output open): the record is stored after the batch
    /// interval, not when a later line comes, and cancelling stops the whole process group.
    @Test func quietProgramsRecordsArriveAndItsGroupIsStopped() async throws {
        let (path, folder) = try script("""
            echo '{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z"}'
            sleep 600 &
            echo $! > "$(dirname "$0")/child"
            wait
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ExecDriver.Configuration(command: [path], instance: "t")
        configuration.batchInterval = .milliseconds(100)
        let sink = Collected()
        let task = Task { try await ExecDriver(configuration: configuration).run(into: sink) }
        #expect(await cameTrue { !sink.records.isEmpty }, "stored only when a later line comes")
        #expect(sink.records.count == 1)
        task.cancel()
        _ = try? await task.value  // returns: the background child does not keep it waiting
        let child = try #require(Int32(try String(contentsOfFile: folder + "/child", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await cameTrue { kill(child, 0) != 0 }, "the program's background child still runs")
    }

    /// A hostile program: its child leaves the process group (a new session) and holds the
    /// output open forever. A stop still ends: the group gets SIGTERM and SIGKILL, and the reading
    /// gives up a second after; the record printed before is stored.
    @Test func aChildOutsideTheGroupDoesNotHoldTheStop() async throws {
        let (path, folder) = try script("""
            setsid sleep 600 &
            echo $! > "$(dirname "$0")/child"
            echo '{"type":"habit","habit":"water","time":"2026-11-22T09:00:00Z"}'
            exec sleep 600
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ExecDriver.Configuration(command: [path], instance: "t")
        configuration.batchInterval = .milliseconds(50)
        configuration.stopTimeout = .milliseconds(200)
        let sink = Collected()
        let task = Task { try await ExecDriver(configuration: configuration).run(into: sink) }
        #expect(await cameTrue { sink.records.count == 1 })
        let ended = Mutex(false)
        let stop = Task {
            task.cancel()
            _ = try? await task.value
            ended.withLock { $0 = true }
        }
        #expect(await cameTrue { ended.withLock { $0 } }, "the stop waits for the escaped child's output")
        stop.cancel()
        if let child = Int32((try? String(contentsOfFile: folder + "/child", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
            kill(child, SIGKILL)
        }
        #expect(sink.records.count == 1)
    }

    /// A program that writes far faster than its records are stored (the store is stuck) is held
    /// back by its full pipe instead of the driver reading everything into memory; once the
    /// store moves again every line arrives. (The wait for them ends only when they stop
    /// coming: on a loaded machine 200,000 lines once took longer than a fixed two minutes.)
    @Test func aFloodingProgramWaitsForTheStore() async throws {
        let lines = 30_000
        let (path, folder) = try script("""
            exec awk 'BEGIN { for (i = 1; i <= \(lines); i++) {
                printf "{\\"type\\":\\"habit\\",\\"habit\\":\\"water\\",\\"time\\":\\"2026-11-22T09:00:00Z\\",\\"key\\":\\"k%d\\"}\\n", i
                if (i % 100 == 0) { printf "%d\\n", i > "'"$(dirname "$0")"'/written"; close("'"$(dirname "$0")"'/written") }
            } }'
            """)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ExecDriver.Configuration(command: [path], instance: "t")
        configuration.maximumPendingLines = 100
        let sink = GatedSink()
        let task = Task { try await ExecDriver(configuration: configuration).run(into: sink) }
        defer { task.cancel() }
        func written() -> Int {
            Int((try? String(contentsOfFile: folder + "/written", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        }
        // The first batch (1,000 records) is stuck in the store; the program gets a little further.
        try await eventually("the first batch reaches the store") { sink.waiting > 0 }
        #expect(sink.waiting == 1)
        try await Task.sleep(for: .seconds(2))
        let held = written()
        // 1,000 in the batch, 100 read ahead, then what the pipe and the reader's buffer hold
        // (64 KiB each, about 900 lines): far from the 30,000 it would have written.
        #expect(held < 5_000, "the program wrote \(held) lines while nothing was stored")
        sink.open()
        // Waits while records keep arriving; gives up only after ``Patience/limit`` without a new one.
        var last = (count: -1, at: ContinuousClock.now)
        while sink.records.count < lines {
            let count = sink.records.count
            if count != last.count { last = (count, .now) }
            if ContinuousClock.now - last.at > Patience.limit {
                throw TestTimeout(what: "the records keep arriving (\(count) of \(lines) stored)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(sink.records.count == lines)
        #expect(Set(sink.records.map(\.id)).count == lines)
        task.cancel()
        _ = try? await task.value
    }

    /// A program that cannot be started ends the run with an error naming it (the supervisor
    /// logs it and tries again after the driver's delay), and is reported.
    @Test func aMissingProgramEndsTheRunWithAnError() async throws {
        var configuration = ExecDriver.Configuration(command: ["/nonexistent/program"], instance: "t")
        let events = Events()
        configuration.onEvent = { events.add($0) }
        do {
            try await ExecDriver(configuration: configuration).run(into: Collected())
            Issue.record("a missing program ran")
        } catch let failure as ExecDriver.StartFailure {
            #expect(failure.description.hasPrefix("cannot start /nonexistent/program: "), "\(failure)")
        }
        #expect(events.all.contains { if case .failedToStart = $0 { true } else { false } }, "\(events.all)")
    }

    /// The typed table: each mistake names its key; arguments may hold commas (a TOML list is
    /// passed as is); durations take a number in the key's unit or a duration string.
    @Test func configurationIsChecked() throws {
        func make(_ table: [String: ConfigValue]) throws(ConfigError) -> ExecDriver {
            try ExecDriver(settings: ConfigDecoder.decode(ExecDriver.Settings.self, from: table), context: .standalone("x"))
        }
        let cases: [([String: ConfigValue], String)] = [
            ([:], "command: is required (a list: the program, then its arguments)"),
            (["command": .array([.string("relative/path")])], "command: 'relative/path' must be an absolute path"),
            (["command": .array([])], "command: must name the program (a list: the program, then its arguments)"),
            (["command": .string("/bin/true")], "command: must be a list"),
            (["command": .array([.string("/bin/true"), .integer(1)])], "command[1]: must be a string"),
            (["command": .array([.string("/bin/true")]), "restart": .integer(1)], "restart: unknown key"),
            (["command": .array([.string("/bin/true")]), "batch_ms": .integer(0)], "batch_ms: is out of range (1 to 60000)"),
            (["command": .array([.string("/bin/true")]), "restart_delay_s": .string("soon")],
             "restart_delay_s: 'soon' is not a duration (a number, or like 10s, 250ms, 5m, 1h30m)"),
        ]
        for (table, message) in cases {
            #expect(throws: ConfigError(keyPath: String(message.prefix { $0 != ":" }), reason: String(message.drop { $0 != ":" }.dropFirst(2))),
                    "\(table)") { try make(table) }
        }
        let driver = try make(["command": .array([.string("/bin/echo"), .string("a,b"), .string("c")]),
                               "restart_delay_s": .integer(2), "max_restart_delay_s": .string("1h30m"), "batch_ms": .float(2.5)])
        #expect(driver.configuration.command == ["/bin/echo", "a,b", "c"] && driver.configuration.instance == "x")
        #expect(driver.configuration.restartDelay == .seconds(2) && driver.configuration.maximumRestartDelay == .seconds(5400))
        #expect(driver.configuration.batchInterval == .microseconds(2500))  // nanosecond resolution
    }
}
