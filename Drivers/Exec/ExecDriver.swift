import DriverKit
import Foundation
import HealthModel
#if canImport(Glibc)
import Glibc
#endif

/// What the exec driver tells its owner (for the log and metrics).
public enum ExecEvent: Sendable, Equatable, CustomStringConvertible {
    case started(pid: Int32)
    /// A line that is not a record, skipped.
    case badLine(ExecLineError)
    /// A line the program wrote to standard error.
    case stderr(String)
    case exited(status: Int32)
    case restarting(after: Duration)
    /// The program could not be started.
    case failedToStart(String)

    public var description: String {
        switch self {
        case .started(let pid): "started (pid \(pid))"
        case .badLine(let error): "skipped \(error)"
        case .stderr(let line): "stderr: \(line)"
        case .exited(let status): "exited with status \(status)"
        case .restarting(let after): "restarting in \(after.components.seconds) s"
        case .failedToStart(let why): "cannot start: \(why)"
        }
    }
}

/// The exec driver (`exec`): runs a program and stores the records it writes to standard output,
/// one JSON object per line (`Drivers/Exec/README.md`). Lines that are not records are reported
/// with their number and skipped. When the program ends or crashes it is started again after a
/// delay that doubles up to a maximum (back to the start after a run of a minute). Stopping
/// sends SIGTERM, then SIGKILL after `stopTimeout`, and stores what was read.
public struct ExecDriver: DeviceDriver {
    public static let id = "exec"

    public struct Configuration: Sendable {
        /// The program and its arguments.
        public var command: [String]
        /// The driver instance's name (part of record ids).
        public var instance: String
        public var restartDelay: Duration = .seconds(1)
        public var maximumRestartDelay: Duration = .seconds(300)
        /// How long records gather before they are stored together.
        public var batchInterval: Duration = .milliseconds(500)
        public var stopTimeout: Duration = .seconds(3)
        public var onEvent: (@Sendable (ExecEvent) -> Void)?

        public init(command: [String], instance: String) {
            self.command = command
            self.instance = instance
        }
    }

    public struct ConfigurationError: Error, CustomStringConvertible {
        public var description: String
    }

    public var configuration: Configuration

    public init(configuration: Configuration) { self.configuration = configuration }

    /// From a driver table: `command` (required; a list: the program, then its arguments),
    /// `instance` (the name; the daemon sets it), `restart_delay_s`, `max_restart_delay_s`, `batch_ms`.
    public init(config: DriverConfig) throws {
        guard let command = config["command"]?.split(separator: ",").map(String.init), let program = command.first,
              !program.isEmpty else {
            throw ConfigurationError(description: "exec: `command` is required (a list: the program, then its arguments)")
        }
        guard program.hasPrefix("/") else {
            throw ConfigurationError(description: "exec: command: '\(program)' must be an absolute path")
        }
        var c = Configuration(command: command, instance: config["instance"] ?? "exec")
        func seconds(_ key: String, _ range: ClosedRange<Double>) throws -> Duration? {
            guard let text = config[key] else { return nil }
            guard let value = Double(text), range.contains(value) else {
                throw ConfigurationError(description: "exec: \(key) = \(text) is not a number in \(range.lowerBound)...\(range.upperBound)")
            }
            return .milliseconds(Int64(value * 1000))
        }
        if let delay = try seconds("restart_delay_s", 0.01...3600) { c.restartDelay = delay }
        if let delay = try seconds("max_restart_delay_s", 0.01...86_400) { c.maximumRestartDelay = delay }
        if let ms = try seconds("batch_ms", 1...60_000) { c.batchInterval = ms / 1000 }
        let unknown = Set(config.values.keys).subtracting(["command", "instance", "restart_delay_s", "max_restart_delay_s", "batch_ms"])
        if let key = unknown.sorted().first { throw ConfigurationError(description: "exec: unknown key `\(key)`") }
        self.init(configuration: c)
    }

    public func run(into sink: some RecordSink) async throws {
        var delay = configuration.restartDelay
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let started = clock.now
            try await runOnce(into: sink)
            if Task.isCancelled { break }
            if clock.now - started >= .seconds(60) { delay = configuration.restartDelay }
            configuration.onEvent?(.restarting(after: delay))
            try await Task.sleep(for: delay)
            delay = min(delay * 2, configuration.maximumRestartDelay)
        }
    }

    /// One run of the program: its records stored in batches until it exits or the task is
    /// cancelled (then it is stopped).
    func runOnce(into sink: some RecordSink) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: configuration.command[0])
        process.arguments = Array(configuration.command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch {
            configuration.onEvent?(.failedToStart("\(configuration.command[0]): \(error.localizedDescription)"))
            return
        }
        configuration.onEvent?(.started(pid: process.processIdentifier))
        let lines = LineReader.lines(of: out.fileHandleForReading.fileDescriptor, limit: ExecLineParser.maximumLineBytes)
        let errors = LineReader.lines(of: err.fileHandleForReading.fileDescriptor, limit: 64 * 1024)
        let onEvent = configuration.onEvent
        let stderrTask = Task { for await line in errors { onEvent?(.stderr(line.text)) } }
        let parser = ExecLineParser(instance: configuration.instance)
        var batch: [HealthRecord] = []
        var lastFlush = ContinuousClock.now
        var number = 0
        await withTaskCancellationHandler {
            for await line in lines {
                number += 1
                if line.tooLong {
                    onEvent?(.badLine(ExecLineError(line: number, reason: "longer than \(ExecLineParser.maximumLineBytes) bytes")))
                    continue
                }
                do throws(ExecLineError) {
                    if let record = try parser.parse(line.text, number: number) { batch.append(record) }
                } catch {
                    onEvent?(.badLine(error))
                }
                if !batch.isEmpty, ContinuousClock.now - lastFlush >= configuration.batchInterval || batch.count >= 1000 {
                    try? await sink.emit(batch)
                    batch.removeAll()
                    lastFlush = .now
                }
            }
        } onCancel: {
            Self.stop(process, after: configuration.stopTimeout)
        }
        if !batch.isEmpty { try await sink.emit(batch) }
        process.waitUntilExit()
        await stderrTask.value
        configuration.onEvent?(.exited(status: process.terminationStatus))
    }

    /// SIGTERM, then SIGKILL if it is still running after `timeout`.
    static func stop(_ process: Process, after timeout: Duration) {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(timeout.components.seconds * 1000))) {
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }
}

/// Lines read from a file descriptor on a thread of their own, ending at end of file. A line
/// longer than `limit` bytes is cut off and flagged (and the rest of it dropped).
enum LineReader {
    struct Line: Sendable {
        var text: String
        var tooLong: Bool
    }

    static func lines(of fd: Int32, limit: Int) -> AsyncStream<Line> {
        let (stream, continuation) = AsyncStream<Line>.makeStream(bufferingPolicy: .unbounded)
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var current: [UInt8] = []
            var tooLong = false
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                for byte in buffer[..<count] {
                    if byte == UInt8(ascii: "\n") {
                        continuation.yield(Line(text: String(decoding: current, as: UTF8.self), tooLong: tooLong))
                        current.removeAll(keepingCapacity: true)
                        tooLong = false
                    } else if current.count < limit {
                        current.append(byte)
                    } else {
                        tooLong = true
                    }
                }
            }
            if !current.isEmpty { continuation.yield(Line(text: String(decoding: current, as: UTF8.self), tooLong: tooLong)) }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}
