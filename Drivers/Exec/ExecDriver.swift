public import DriverKit
import Foundation
import HealthModel
import NIOCore
import NIOExtras
import NIOPosix
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
    /// The program could not be started.
    case failedToStart(String)

    public var description: String {
        switch self {
        case .started(let pid): "started (pid \(pid))"
        case .badLine(let error): "skipped \(error)"
        case .stderr(let line): "stderr: \(line)"
        case .exited(let status): "exited with status \(status)"
        case .failedToStart(let why): "cannot start: \(why)"
        }
    }
}

/// The exec driver (`exec`): runs a program and stores the records it writes to standard output,
/// one JSON object per line (`Drivers/Exec/README.md`). Lines that are not records are reported
/// with their number and skipped. A run of the driver is a run of the program: when the program
/// ends or crashes, the daemon's supervisor starts it again after the driver's own delays
/// (``restartPolicy``: doubling from `restart_delay_s` up to `max_restart_delay_s`, back to the
/// start after a run of a minute). Stopping sends SIGTERM, then SIGKILL after `stopTimeout`, and
/// stores what was read.
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

    /// The delays between runs of the program: `restart_delay_s` doubling up to
    /// `max_restart_delay_s`, from the start again after a run of a minute.
    public var restartPolicy: RestartPolicy? {
        RestartPolicy(backoff: Backoff(initial: configuration.restartDelay, multiplier: 2, maximum: configuration.maximumRestartDelay),
                      healthyAfter: .seconds(60))
    }

    /// Why a run ended without the program running: it could not be started.
    public struct StartFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// One run of the program: its records stored in batches until it exits or the task is
    /// cancelled (then it is stopped). Its standard output and error are read by SwiftNIO (a pipe
    /// channel each, SwiftNIO's line decoder): output lines reach this loop with back pressure
    /// (past ``Configuration/maximumPendingLines`` unhandled lines the channel stops reading and
    /// the program waits on its full pipe), with a `.flush` from the event loop once a batch's
    /// first line has waited ``Configuration/batchInterval``.
    public func run(into sink: some RecordSink) async throws {
        let child: Child
        do { child = try Child.spawn(configuration.command) } catch {
            let why = "\(configuration.command[0]): \(error)"
            configuration.onEvent?(.failedToStart(why))
            throw StartFailure(description: "cannot start \(why)")
        }
        configuration.onEvent?(.started(pid: child.pid))
        let onEvent = configuration.onEvent
        // Reaped on a thread of its own (no zombie, no blocked task); awaited at the end.
        async let status = child.exitStatus()
        let stdout: NIOAsyncChannel<ExecInput, Never>, stderr: NIOAsyncChannel<ExecInput, Never>
        do {
            stdout = try await Self.lines(of: child.stdout, limit: ExecLineParser.maximumLineBytes, flushAfter: configuration.batchInterval,
                                          pending: configuration.maximumPendingLines)
            stderr = try await Self.lines(of: child.stderr, limit: 64 * 1024, flushAfter: nil, pending: 64)
        } catch {
            child.stop(after: configuration.stopTimeout)
            configuration.onEvent?(.exited(status: await status))
            throw error
        }
        // Stopped (the driver's task cancelled): the program gets SIGTERM (SIGKILL after
        // `stopTimeout`) and its output is still read to its end, so what it printed before, or
        // prints as it stops, is stored. The reading is a task of its own for that: the one
        // place cancellation must not reach, awaited here and bounded by the SIGKILL.
        let reading = Task { [configuration] in
            try await Self.read(stdout, stderr: stderr, into: sink, child: child, configuration: configuration)
        }
        let result = await withTaskCancellationHandler {
            await reading.result
        } onCancel: {
            child.stop(after: configuration.stopTimeout)
            // A child of the program that left its process group may hold the output open: the
            // reading ends a second after the SIGKILL whatever it does.
            stdout.channel.eventLoop.scheduleTask(in: TimeAmount(configuration.stopTimeout + .seconds(1))) {
                stdout.channel.close(promise: nil)
                stderr.channel.close(promise: nil)
            }
        }
        configuration.onEvent?(.exited(status: await status))
        try result.get()
    }

    /// Reads the program's output to its end: standard error's lines as events, standard
    /// output's records stored in batches (on a `.flush`, at 1,000 records, and at the end). A
    /// batch the store refuses stops the program, and is what this throws once all is read.
    static func read(_ stdout: NIOAsyncChannel<ExecInput, Never>, stderr: NIOAsyncChannel<ExecInput, Never>, into sink: some RecordSink,
                     child: Child, configuration: Configuration) async throws {
        let onEvent = configuration.onEvent
        let parser = ExecLineParser(instance: configuration.instance)
        var batch: [HealthRecord] = []
        var number = 0
        var failure: (any Error)?
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                try await stderr.executeThenClose { lines in
                    for try await case .line(let line) in lines { onEvent?(.stderr(line.text)) }
                }
            }
            try await stdout.executeThenClose { inputs in
                for try await item in inputs {
                    guard case .line(let line) = item else {
                        // The batch's first line waited `batchInterval`: store what there is.
                        if !batch.isEmpty, failure == nil {
                            do { try await sink.emit(batch) } catch { failure = error; child.stop(after: configuration.stopTimeout) }
                        }
                        batch.removeAll()
                        continue
                    }
                    number += 1
                    if line.tooLong {
                        onEvent?(.badLine(ExecLineError(line: number, reason: "longer than \(ExecLineParser.maximumLineBytes) bytes")))
                        continue
                    }
                    do throws(ExecLineError) {
                        if let record = try parser.parse(line.text, number: number), failure == nil {
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
            }
        }
        if let failure { throw failure }
        if !batch.isEmpty { try await sink.emit(batch) }
    }

    /// What the reading loop gets: a line, or word that the batch's time is up.
    enum ExecInput: Sendable {
        case line(ExecLine)
        case flush
    }

    /// A pipe channel reading `fd` (closed with the channel) as lines of at most `limit` bytes,
    /// at most `pending` of them waiting for the reader; with `flushAfter`, a `.flush` follows a
    /// line once that long has passed.
    static func lines(of fd: Int32, limit: Int, flushAfter: Duration?, pending: Int) async throws -> NIOAsyncChannel<ExecInput, Never> {
        let high = max(2, pending)
        do {
            // One read of 16 KiB per turn of the loop: the back pressure holds within a few
            // hundred lines of `pending`, where four reads of up to 64 KiB could run thousands over.
            return try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.maxMessagesPerRead, value: 1)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 * 1024))
                .takingOwnershipOfDescriptor(input: fd) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ExecLineDecoder(limit: limit)))
                        try channel.pipeline.syncOperations.addHandler(FlushTicks(after: flushAfter.map { TimeAmount($0) }))
                        return try NIOAsyncChannel<ExecInput, Never>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(backPressureStrategy: .init(lowWatermark: high / 2, highWatermark: high)))
                    }
                }
        } catch {
            close(fd)
            throw error
        }
    }
}

/// One line of a program's output, cut off at the decoder's limit (`tooLong`: the rest dropped).
struct ExecLine: Sendable {
    var text: String
    var tooLong: Bool
}

/// Lines by SwiftNIO's line decoder (a newline or CRLF ends one; the last one may lack it), with
/// a cap: once `limit` bytes gather without a newline, the line is handed on cut off and flagged,
/// and its rest is dropped up to its newline, so a program can never fill the memory.
final class ExecLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ExecLine
    private let limit: Int
    private var lines = LineBasedFrameDecoder()
    /// Within a line already handed on as too long: its rest is dropped.
    private var dropping = false

    init(limit: Int) { self.limit = limit }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let start = buffer.readerIndex
        if let frame = try lines.decode(buffer: &buffer) {
            // The line's own bytes, a CR before its newline counted: the cap does not depend on
            // how the bytes were cut into reads.
            let length = buffer.readerIndex - start - 1
            if dropping {
                dropping = false
            } else if length > limit {
                context.fireChannelRead(wrapInboundOut(ExecLine(text: String(buffer: frame.getSlice(at: frame.readerIndex, length: limit) ?? frame),
                                                                tooLong: true)))
            } else {
                context.fireChannelRead(wrapInboundOut(ExecLine(text: String(buffer: frame), tooLong: false)))
            }
            return .continue
        }
        guard buffer.readableBytes > limit || (dropping && buffer.readableBytes > 0) else { return .needMoreData }
        if !dropping {
            context.fireChannelRead(wrapInboundOut(ExecLine(text: buffer.getString(at: buffer.readerIndex, length: limit) ?? "", tooLong: true)))
            dropping = true
        }
        // No newline in what is here: all of it is the long line's. A new decoder: the old one's
        // scan position belonged to the bytes dropped.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        lines = LineBasedFrameDecoder()
        return .needMoreData
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // The last line, without its newline (at most `limit` bytes here, or `decode` took it).
        if buffer.readableBytes > 0, !dropping {
            context.fireChannelRead(wrapInboundOut(ExecLine(text: buffer.readString(length: buffer.readableBytes) ?? "", tooLong: false)))
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

/// Passes lines on as ``ExecDriver/ExecInput/line(_:)``; with `after`, follows the first line
/// since the last tick with a ``ExecDriver/ExecInput/flush`` that much later (an event-loop timer,
/// cancelled when the channel closes).
final class FlushTicks: ChannelInboundHandler {
    typealias InboundIn = ExecLine
    typealias InboundOut = ExecDriver.ExecInput
    private let after: TimeAmount?
    private var tick: Scheduled<Void>?

    init(after: TimeAmount?) { self.after = after }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(wrapInboundOut(.line(unwrapInboundIn(data))))
        guard let after, tick == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        tick = context.eventLoop.scheduleTask(in: after) {
            let (handler, context) = loopBound.value
            handler.tick = nil
            context.fireChannelRead(handler.wrapInboundOut(.flush))
            context.fireChannelReadComplete()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        context.fireChannelInactive()
    }
}

/// A running program in a process group of its own, started with default signal handling
/// (the daemon ignores SIGTERM, SIGINT and SIGHUP, and ignored signals are inherited) and
/// standard input from /dev/null.
final class Child: Sendable {
    let pid: pid_t
    /// The read ends of its standard output and standard error.
    let stdout: Int32, stderr: Int32

    struct SpawnError: Error, CustomStringConvertible {
        var code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    private init(pid: pid_t, stdout: Int32, stderr: Int32) {
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
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
    /// left of it: the program, or children of its that still hold its output open), timed by
    /// the event loop (the caller is being cancelled: it cannot sleep).
    func stop(after timeout: Duration) {
        let group = -pid
        kill(group, SIGTERM)
        MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: TimeAmount(timeout)) { kill(group, SIGKILL) }
    }

    /// Its exit status, or 128 + the signal that ended it: waited for on a thread of its own.
    func exitStatus() async -> Int32 {
        let pid = pid
        return await OffPool.runOnNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        }
    }
}

extension ExecDriver {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        ExecDriver.self, summary: "Runs a program and stores the records it prints, one JSON object per line",
        sample: PackageResources.sample_toml)
}
