public import DriverKit
import Foundation
import HealthModel
import Timing
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
        /// Lines read but not yet handled, at most: beyond that the program waits on its full
        /// pipe (a program writing faster than records are stored cannot fill the memory).
        public var maximumPendingLines = 4096
        public var onEvent: (@Sendable (ExecEvent) -> Void)?

        public init(command: [String], instance: String) {
            self.command = command
            self.instance = instance
        }
    }

    /// The `[drivers.NAME]` table (`Drivers/Exec/README.md`).
    public struct Settings: Decodable, Sendable, Equatable {
        /// The program (an absolute path), then its arguments; each is passed as is.
        public var command: [String]
        public var restartDelay: Duration?
        public var maximumRestartDelay: Duration?
        public var batchInterval: Duration?

        enum CodingKeys: String, CodingKey {
            case command, restartDelay = "restart_delay_s", maximumRestartDelay = "max_restart_delay_s", batchInterval = "batch_ms"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            command = try c.decode([String].self, forKey: .command, required: "a list: the program, then its arguments")
            guard let program = command.first, !program.isEmpty else {
                throw c.configError(.command, "must name the program (a list: the program, then its arguments)")
            }
            guard program.hasPrefix("/") else { throw c.configError(.command, "'\(program)' must be an absolute path") }
            restartDelay = try c.decodeIfPresent(duration: .restartDelay, unit: .seconds, in: .milliseconds(10)...(.seconds(3600)))
            maximumRestartDelay = try c.decodeIfPresent(duration: .maximumRestartDelay, unit: .seconds,
                                                        in: .milliseconds(10)...(.seconds(86_400)))
            batchInterval = try c.decodeIfPresent(duration: .batchInterval, unit: .milliseconds, in: .milliseconds(1)...(.seconds(60)))
        }
    }

    public var configuration: Configuration

    public init(configuration: Configuration) { self.configuration = configuration }

    /// From the driver's table: the instance's name is part of record ids; bad lines and the
    /// program's fate go to the log, bad lines also to the metrics.
    public init(settings: Settings, context: DriverContext) {
        var c = Configuration(command: settings.command, instance: context.instance)
        if let delay = settings.restartDelay { c.restartDelay = delay }
        if let delay = settings.maximumRestartDelay { c.maximumRestartDelay = delay }
        if let interval = settings.batchInterval { c.batchInterval = interval }
        c.onEvent = { event in
            switch event {
            case .badLine(let error):
                context.report(.problem(kind: "bad_line", message: "\(error)"))
                context.logger.warning("\(event)")
            case .failedToStart, .exited: context.logger.warning("\(event)")
            default: context.logger.info("\(event)")
            }
        }
        self.init(configuration: c)
    }

    public func run(into sink: some RecordSink) async throws {
        let backoff = Backoff(initial: configuration.restartDelay, multiplier: 2, maximum: configuration.maximumRestartDelay)
        var attempt = 1
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let started = clock.now
            try await runOnce(into: sink)
            if Task.isCancelled { break }
            if clock.now - started >= .seconds(60) { attempt = 1 }
            let delay = backoff.delay(attempt: attempt, random: 0.5)
            configuration.onEvent?(.restarting(after: delay))
            // Cancelled while waiting: a graceful stop, not an error.
            do { try await Task.sleep(for: delay) } catch { return }
            attempt += 1
        }
    }

    /// What the reading loop waits for: the next line, or the batch's time being up.
    enum Input: Sendable {
        case line(LineReader.Line)
        case flush
    }

    /// One run of the program: its records stored in batches until it exits or the task is
    /// cancelled (then it is stopped).
    func runOnce(into sink: some RecordSink) async throws {
        let child: Child
        do { child = try Child.spawn(configuration.command) } catch {
            configuration.onEvent?(.failedToStart("\(configuration.command[0]): \(error)"))
            return
        }
        configuration.onEvent?(.started(pid: child.pid))
        let onEvent = configuration.onEvent
        let (inputs, input) = AsyncStream<Input>.makeStream(bufferingPolicy: .unbounded)
        let credits = Credits(configuration.maximumPendingLines)
        LineReader.read(child.stdout, limit: ExecLineParser.maximumLineBytes, onLine: {
            credits.take()  // on the reading thread: waits while the driver is behind
            input.yield(.line($0))
        }, onEnd: { input.finish() })
        let stderrDone = Doorbell()
        LineReader.read(child.stderr, limit: 64 * 1024, onLine: { onEvent?(.stderr($0.text)) },
                        onEnd: { stderrDone.ring() })
        let parser = ExecLineParser(instance: configuration.instance)
        let interval = configuration.batchInterval
        var batch: [HealthRecord] = []
        var timer: Task<Void, Never>?
        var number = 0
        var failure: (any Error)?
        await withTaskCancellationHandler {
            for await item in inputs {
                guard case .line(let line) = item else {
                    // The first record of the batch waited `batchInterval`: store what there is.
                    timer = nil
                    if !batch.isEmpty, failure == nil {
                        do { try await sink.emit(batch) } catch { failure = error; child.stop(after: configuration.stopTimeout) }
                    }
                    batch.removeAll()
                    continue
                }
                credits.give()
                number += 1
                if line.tooLong {
                    onEvent?(.badLine(ExecLineError(line: number, reason: "longer than \(ExecLineParser.maximumLineBytes) bytes")))
                    continue
                }
                do throws(ExecLineError) {
                    if let record = try parser.parse(line.text, number: number), failure == nil {
                        if batch.isEmpty, timer == nil {
                            timer = Task { try? await Task.sleep(for: interval); input.yield(.flush) }
                        }
                        batch.append(record)
                        if batch.count >= 1000 {
                            do { try await sink.emit(batch) } catch { failure = error; child.stop(after: configuration.stopTimeout) }
                            batch.removeAll()
                        }
                    }
                } catch {
                    onEvent?(.badLine(error))
                }
            }
        } onCancel: {
            child.stop(after: configuration.stopTimeout)
        }
        credits.release()  // nobody takes lines any more: the reader must not wait for them
        timer?.cancel()
        _ = await stderrDone.wait()  // standard error read to its end (or cancelled)
        let status = await child.exitStatus()
        configuration.onEvent?(.exited(status: status))
        if let failure { throw failure }
        if !batch.isEmpty { try await sink.emit(batch) }
    }
}

/// A running program in a process group of its own, started with default signal handling
/// (the daemon ignores SIGTERM, SIGINT and SIGHUP, and ignored signals are inherited) and
/// standard input from /dev/null.
final class Child: Sendable {
    let pid: pid_t
    /// The read ends of its standard output and standard error.
    let stdout: Int32, stderr: Int32
    private let exit = ExitStatus()

    struct SpawnError: Error, CustomStringConvertible {
        var code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    private init(pid: pid_t, stdout: Int32, stderr: Int32) {
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        let exit = exit
        // Reaps the child on a thread of its own (no zombie, no blocked task).
        Thread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            exit.set(status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
        }.start()
    }

    static func spawn(_ command: [String]) throws(SpawnError) -> Child {
        var out: [Int32] = [0, 0], err: [Int32] = [0, 0]
        guard pipe(&out) == 0 else { throw SpawnError(code: errno) }
        guard pipe(&err) == 0 else {
            let code = errno
            close(out[0]); close(out[1])
            throw SpawnError(code: code)
        }
        // Other programs started meanwhile must not inherit these.
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, command[0], &actions, &attributes, &argv, environ)
        close(out[1])
        close(err[1])
        guard code == 0 else {
            close(out[0]); close(err[0])
            throw SpawnError(code: code)
        }
        return Child(pid: pid, stdout: out[0], stderr: err[0])
    }

    /// SIGTERM to its process group, then SIGKILL to the group after `timeout` (to what is
    /// left of it: the program, or children of its that still hold its output open).
    func stop(after timeout: Duration) {
        let group = -pid
        kill(group, SIGTERM)
        Task {
            try? await Task.sleep(for: timeout)
            kill(group, SIGKILL)
        }
    }

    /// Its exit status, or 128 + the signal that ended it.
    func exitStatus() async -> Int32 { await exit.value() }
}

/// Credits for lines read ahead of the driver: the reading thread takes one per line (waiting
/// when there is none), the driver gives one back per line handled.
final class Credits: @unchecked Sendable {
    private let condition = NSCondition()
    private var available: Int
    private var released = false

    init(_ count: Int) { available = max(1, count) }

    func take() {
        condition.lock()
        defer { condition.unlock() }
        while available == 0 && !released { condition.wait() }
        available -= 1
    }

    func give() {
        condition.lock()
        available += 1
        condition.signal()
        condition.unlock()
    }

    /// From now on `take()` never waits.
    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A status set once by the reaping thread and awaited by the driver.
final class ExitStatus: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    func set(_ value: Int32) {
        let waiting = lock.withLock {
            status = value
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiting { waiter.resume(returning: value) }
    }

    func value() async -> Int32 {
        await withCheckedContinuation { continuation in
            let known: Int32? = lock.withLock {
                if status == nil { waiters.append(continuation) }
                return status
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}

/// Lines read from a file descriptor on a thread of their own until end of file; the descriptor
/// is closed then. A line longer than `limit` bytes is cut off and flagged (the rest dropped).
enum LineReader {
    struct Line: Sendable {
        var text: String
        var tooLong: Bool
    }

    static func read(_ fd: Int32, limit: Int, onLine: @escaping @Sendable (Line) -> Void, onEnd: @escaping @Sendable () -> Void) {
        Thread {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var current: [UInt8] = []
            var tooLong = false
            while true {
                let count = Glibc.read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                for byte in buffer[..<count] {
                    if byte == UInt8(ascii: "\n") {
                        onLine(Line(text: String(decoding: current, as: UTF8.self), tooLong: tooLong))
                        current.removeAll(keepingCapacity: true)
                        tooLong = false
                    } else if current.count < limit {
                        current.append(byte)
                    } else {
                        tooLong = true
                    }
                }
            }
            if !current.isEmpty || tooLong { onLine(Line(text: String(decoding: current, as: UTF8.self), tooLong: tooLong)) }
            close(fd)
            onEnd()
        }.start()
    }
}

extension ExecDriver {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        ExecDriver.self, summary: "Runs a program and stores the records it prints, one JSON object per line",
        sample: PackageResources.sample_toml)
}
