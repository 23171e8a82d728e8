import Foundation
import LinuxAdapters
import HealthPipeline
public import HealthStore
public import Logging
import Entries
public import DaemonProtocol
import NIOCore
import NIOPosix
public import ServiceLifecycle
import Synchronization
import Timing

/// The local API: a Unix socket speaking ``SocketProtocol`` (one JSON line each way). It answers
/// the daemon's ``DaemonState/Snapshot`` (`healthgate status`) and stores entries through
/// ``ManualEntries/log`` as `healthgate log` does, then wakes the forwarder.
///
/// The socket is readable and writable by the daemon's user and group only. A client has
/// ``SocketProtocol/readTimeout`` to send its line of at most ``SocketProtocol/maxRequestBytes``;
/// at most ``SocketProtocol/maxConnections`` are served at once, the next ones are answered an
/// error and closed.
public final class StatusServer: Service, Sendable {
    let path: String
    let state: DaemonState
    let store: HealthStore
    let logger: Logger
    /// Called after an entry was stored, with the number of records (wakes the forwarder).
    let onStored: @Sendable (Int) -> Void
    private let serving = Mutex(0)

    public init(path: String, state: DaemonState, store: HealthStore, logger: Logger,
                onStored: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.path = path
        self.state = state
        self.store = store
        self.logger = logger
        self.onStored = onStored
    }

    public func run() async throws {
        let directory = (path as NSString).deletingLastPathComponent
        try? PrivateFiles.createDirectory(directory)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // A client that closes its side after the request (`nc -N`, `socat`) still gets the answer.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RequestLineHandler(timeout: SocketProtocol.readTimeout))
                    return try NIOAsyncChannel<RequestLineReader.Outcome, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        chmod(path, 0o660)
        logger.info("status socket", metadata: ["path": "\(path)"])
        await cancelWhenGracefulShutdown {
            try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        }
        unlink(path)
    }

    /// One connection: its request, one answer line, closed.
    private func serve(_ connection: NIOAsyncChannel<RequestLineReader.Outcome, ByteBuffer>) async {
        let admitted = serving.withLock { count in
            guard count < SocketProtocol.maxConnections else { return false }
            count += 1
            return true
        }
        defer { if admitted { serving.withLock { $0 -= 1 } } }
        try? await connection.executeThenClose { inbound, outbound in
            var answer: [UInt8]
            if admitted {
                var requests = inbound.makeAsyncIterator()
                answer = await self.answer(try await requests.next() ?? .empty)
            } else {
                answer = SocketProtocol.errorAnswer("busy: \(SocketProtocol.maxConnections) connections open; try again shortly")
            }
            answer.append(UInt8(ascii: "\n"))
            try await outbound.write(ByteBuffer(bytes: answer))
        }
    }

    /// The answer to what a client sent.
    func answer(_ read: RequestLineReader.Outcome) async -> [UInt8] {
        switch read {
        case .tooLong: return SocketProtocol.errorAnswer("the request is longer than \(SocketProtocol.maxRequestBytes) bytes")
        case .timedOut:
            return SocketProtocol.errorAnswer("no request within \(SocketProtocol.readTimeout.inMilliseconds / 1000) s: send one JSON line, \(SocketProtocol.example)")
        case .empty: return SocketProtocol.errorAnswer("no request: send one JSON line, \(SocketProtocol.example)")
        case .line(let line):
            switch SocketProtocol.parse(line) {
            case .failure(let refusal): return SocketProtocol.errorAnswer(refusal.message)
            case .success(.status):
                return (try? StatusJSON.encode(await state.current())) ?? SocketProtocol.errorAnswer("cannot encode the status")
            case .success(.log(let entry)): return await log(entry)
            }
        }
    }

    /// Stores `entry` as `healthgate log` does (the same function, the daemon's clock and time zone).
    private func log(_ entry: EntryRequest) async -> [UInt8] {
        do {
            let stored = try await ManualEntries.log(entry, into: store)
            onStored(stored.count)
            logger.info("entry stored", metadata: ["kind": "\(entry.kind.rawValue)", "records": "\(stored.count)"])
            return try SocketProtocol.storedAnswer(stored)
        } catch let error as EntryError {
            return SocketProtocol.errorAnswer(error.description)
        } catch {
            logger.error("entry not stored", metadata: ["error": "\(error)"])
            return SocketProtocol.errorAnswer("cannot store the entry: \(error)")
        }
    }

    // MARK: Clients

    /// Sends `request` to the daemon listening at `path` and returns its answer line (without
    /// the newline); nil when none answers (not running) within `timeout`.
    public static func exchange(_ request: SocketProtocol.Request, path: String,
                                timeout: Duration = .seconds(10)) async -> [UInt8]? {
        guard let line = try? SocketProtocol.line(request) else { return nil }
        return await exchange(bytes: line, path: path, timeout: timeout)
    }

    /// Sends `bytes` as they are (nothing at all when empty), closes its sending side when
    /// `closeOutput` says so, and returns the answer line; nil when nothing answers within `timeout`.
    public static func exchange(bytes line: [UInt8], path: String, closeOutput: Bool = false,
                                timeout: Duration = .seconds(10)) async -> [UInt8]? {
        do {
            // The request is written on the event loop as soon as the connection is up, not after
            // a hop through the task pool: a busy pool must not make the daemon's read deadline
            // pass between connecting and sending.
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(timeout.inMilliseconds))
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(SendOnConnect(bytes: line, closeOutput: closeOutput))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                }
            // A daemon that accepts but never answers is cut off, not waited on forever.
            let deadline = channel.channel.eventLoop.scheduleTask(in: .milliseconds(timeout.inMilliseconds)) {
                channel.channel.close(promise: nil)
            }
            defer { deadline.cancel() }
            return try await channel.executeThenClose { inbound, _ in
                var received = ByteBuffer()
                for try await part in inbound {
                    received.writeImmutableBuffer(part)
                    if received.readableBytes > 1 << 20 { break }
                }
                var bytes = Array(received.readableBytesView)
                while bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
                return bytes.isEmpty ? nil : bytes
            }
        } catch {
            return nil
        }
    }

    /// Asks the daemon listening at `path` for its status; nil when none answers (not running).
    public static func query(path: String, timeout: Duration = .seconds(10)) async -> DaemonState.Snapshot? {
        guard let answer = await exchange(.status, path: path, timeout: timeout) else { return nil }
        return try? JSONDecoder().decode(DaemonState.Snapshot.self, from: Data(answer))
    }
}

/// Frames a connection's request with a ``RequestLineReader`` and passes on one
/// ``RequestLineReader/Outcome``: the line, too long, nothing (the client closed its side), or
/// timed out (no newline within `timeout` of connecting). What arrives after it is dropped.
final class RequestLineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = RequestLineReader.Outcome

    private let timeout: TimeAmount
    private var reader = RequestLineReader()
    private var decided = false
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = .milliseconds(timeout.inMilliseconds)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startDeadline(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startDeadline(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else { return }
        let buffer = unwrapInboundIn(data)
        if let outcome = reader.feed(buffer.readableBytesView) { decide(outcome, context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed, !decided { decide(reader.end(), context, outsideARead: true) }
        context.fireUserInboundEventTriggered(event)
    }

    private func startDeadline(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            if !handler.decided { handler.decide(.timedOut, context, outsideARead: true) }
        }
    }

    /// Passes `outcome` on. The async channel hands reads over at the end of a read cycle: one
    /// decided outside a read (the deadline, the client's end) ends its own.
    private func decide(_ outcome: RequestLineReader.Outcome, _ context: ChannelHandlerContext, outsideARead: Bool = false) {
        decided = true
        deadline?.cancel()
        context.fireChannelRead(wrapInboundOut(outcome))
        if outsideARead { context.fireChannelReadComplete() }
    }
}

/// A client's side: writes the request when the connection becomes active (or at once when it
/// already is), then closes the sending side if asked to.
final class SendOnConnect: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let bytes: [UInt8]
    private let closeOutput: Bool
    private var sent = false

    init(bytes: [UInt8], closeOutput: Bool) {
        self.bytes = bytes
        self.closeOutput = closeOutput
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        if !bytes.isEmpty { context.writeAndFlush(NIOAny(ByteBuffer(bytes: bytes)), promise: nil) }
        if closeOutput { context.close(mode: .output, promise: nil) }
    }
}
