import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import SyncProtocol

/// What the connection handlers share: the counts, the log and the canned refusals.
struct ConnectionGuardSettings: Sendable {
    let registry: ConnectionRegistry
    let log: RateLimitedLog
    /// How long a refused connection waits for the client to close after the 503.
    let linger: TimeAmount = .seconds(2)
    /// How long the listening socket rests after accepting failed for want of descriptors.
    let acceptPause: TimeAmount = .milliseconds(500)
    private let totalRefusal: ByteBuffer
    private let addressRefusal: ByteBuffer

    init(registry: ConnectionRegistry, logger: Logger) {
        self.registry = registry
        log = RateLimitedLog(logger: logger)
        let limits = registry.limits
        totalRefusal = Self.response("the server has as many connections open as it allows (\(limits.maxConnections)); retry later",
                                     retryAfter: limits.retryAfter)
        addressRefusal = Self.response("too many connections from this address (\(limits.maxConnectionsPerAddress)); retry later",
                                       retryAfter: limits.retryAfter)
    }

    /// The whole answer to a refused connection: 503, `Retry-After`, the API's error JSON.
    func refusal(_ reason: ConnectionCounts.Refusal) -> ByteBuffer {
        switch reason {
        case .total: totalRefusal
        case .perAddress: addressRefusal
        case .openFiles(let room):
            Self.response("the server has as many connections open as its open-file limit allows (\(room)); retry later",
                          retryAfter: registry.limits.retryAfter)
        }
    }

    /// For the log: why a connection was refused.
    func describe(_ reason: ConnectionCounts.Refusal) -> String {
        switch reason {
        case .total: "\(registry.limits.maxConnections) connections open, the most allowed (--max-connections)"
        case .perAddress: "\(registry.limits.maxConnectionsPerAddress) connections open from this address, the most allowed (--max-connections-per-address)"
        case .openFiles(let room):
            "\(room) connections open, the most the open-file limit in force now (\(OpenFileLimit.current())) leaves room for"
        }
    }

    private static func response(_ message: String, retryAfter: Int) -> ByteBuffer {
        let body = (try? SyncAPI.encoder().encode(ErrorResponse(code: "unavailable", message: message))) ?? Data()
        let head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
            + "Retry-After: \(retryAfter)\r\nConnection: close\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }
}

/// HTTP/1 with the connection caps and the request timeout: Hummingbird's ``HTTP1Channel`` with a
/// ``ConnectionGuardHandler`` in front of its HTTP decoder (and a ``RequestEndObserver`` among its
/// additional handlers, after the decoder).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let http: HTTP1Channel
    let settings: ConnectionGuardSettings

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        let registry = settings.registry
        let admission = registry.admit(address: address)
        channel.closeFuture.whenComplete { _ in registry.release(admission, address: address) }
        do {
            try channel.pipeline.syncOperations.addHandler(
                ConnectionGuardHandler(admission: admission, address: address, settings: settings))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return http.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}

/// Told by ``RequestEndObserver`` to ``ConnectionGuardHandler``: a request's head and body are in.
struct RequestReceivedEvent: Sendable {}

/// First in a connection's pipeline, on its raw bytes.
///
/// An admitted connection: the first byte of a request starts the request timeout, which the
/// request's end (as the HTTP decoder sees it) stops; a request still incomplete when it runs
/// out closes the connection (a client sending a byte now and then would otherwise hold it
/// forever, as every byte counts as activity for the idle timeout).
///
/// A refused connection: answered 503 with `Retry-After`, its output closed, whatever it sends
/// read and dropped until it closes or `linger` passes (closing with a request unread would
/// reset the connection, and the client could lose the answer). A dropped one: closed at once.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let admission: ConnectionCounts.Admission
    private let address: String
    private let settings: ConnectionGuardSettings
    private var started = false
    /// The request timeout, while a request is coming in; the linger of a refused connection.
    private var timer: Scheduled<Void>?

    init(admission: ConnectionCounts.Admission, address: String, settings: ConnectionGuardSettings) {
        self.admission = admission
        self.address = address
        self.settings = settings
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        switch admission {
        case .admitted:
            break
        case .refused(let reason):
            settings.log.log(.error, kind: "refused \(reason)", "refused a connection from \(address) with 503: \(settings.describe(reason))")
            context.writeAndFlush(wrapOutboundOut(settings.refusal(reason)), promise: nil)
            context.close(mode: .output, promise: nil)
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: settings.linger) { context.close(promise: nil) }
        case .dropped(let reason):
            settings.log.log(.error, kind: "dropped \(reason)", """
                closed a connection from \(address) without an answer: \(settings.describe(reason)), \
                and \(settings.registry.limits.maxRefusing) refusals already in progress
                """)
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admission == .admitted else { return }
        if timer == nil {
            let timeout = settings.registry.limits.requestTimeout
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) { [self] in
                timer = nil
                settings.log.log(.warning, kind: "timeout", """
                    closed a connection from \(address): its request did not arrive whole within \(timeout) (--request-timeout)
                    """)
                context.close(promise: nil)
            }
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is RequestReceivedEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        timer?.cancel()
        timer = nil
        promise?.succeed(())
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if admission != .admitted, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}

/// After the HTTP decoder: tells ``ConnectionGuardHandler`` when a request has come in whole.
final class RequestEndObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            context.triggerUserOutboundEvent(RequestReceivedEvent(), promise: nil)
        }
        context.fireChannelRead(data)
    }
}

/// On the listening socket. When accepting fails for want of descriptors or memory (EMFILE,
/// ENFILE, ENOBUFS, ENOMEM), NIO reports the error and, its read still pending, is woken again at
/// once by the connections waiting: a busy loop for as long as the shortage lasts, and Hummingbird
/// does not log it. This handler logs it and rests the socket for `acceptPause` (automatic reads
/// off, which stops the wake-ups, and reads asked for meanwhile held back). The connection caps,
/// which follow the open-file limit in force, keep the server from reaching its own limit (where
/// libdispatch would stop the process); this is for shortages from outside: the system's file
/// table (ENFILE), memory.
final class AcceptBackoffHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private let settings: ConnectionGuardSettings
    private var resting: Scheduled<Void>?
    private var readWanted = false

    init(settings: ConnectionGuardSettings) {
        self.settings = settings
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        settings.log.log(.error, kind: "accept", """
            cannot accept connections: \(String(cString: strerror(error.errnoCode))) \
            (\(settings.registry.open) open, open-file limit \(OpenFileLimit.current())); trying again in \(settings.acceptPause)
            """)
        guard resting == nil else { return }
        try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        resting = context.eventLoop.assumeIsolated().scheduleTask(in: settings.acceptPause) { [self] in
            resting = nil
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            if readWanted {
                readWanted = false
                context.read()
            }
        }
    }

    func read(context: ChannelHandlerContext) {
        guard resting == nil else {
            readWanted = true
            return
        }
        context.read()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        resting?.cancel()
        resting = nil
    }
}
