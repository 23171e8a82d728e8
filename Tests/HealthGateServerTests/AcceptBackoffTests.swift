import Foundation
@testable import HealthGateServer
import NIOCore
import NIOEmbedded
import Testing

/// The listening socket's rest after accepting failed for want of descriptors or memory, on an
/// embedded channel whose clock the test moves (it always reports automatic reads on, so the
/// rest shows as reads held back). (In a real process at its open-file limit,
/// libdispatch stops the process, so admission keeps the server clear of the limit; ENFILE,
/// ENOBUFS and ENOMEM can still come from outside the process.)
@Suite struct AcceptBackoffTests {
    /// Counts the reads that reach the socket.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// Keeps the errors that pass the handler.
    final class ErrorSink: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        var errors: [any Error] = []
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }
    }

    @Test(arguments: [ENFILE, EMFILE, ENOBUFS, ENOMEM])
    func aShortageRestsTheSocketAndLogsIt(code: Int32) throws {
        let lines = LogLines()
        let settings = ConnectionGuardSettings(registry: ConnectionRegistry(limits: ConnectionLimits(openFileLimit: 1000)),
                                               logger: lines.logger)
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        let sink = ErrorSink()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(settings: settings))
        try channel.pipeline.syncOperations.addHandler(sink)

        channel.read()
        #expect(counter.reads == 1)
        channel.pipeline.fireErrorCaught(IOError(errnoCode: code, reason: "accept"))
        #expect(lines.lines.contains { $0.contains("cannot accept connections: \(String(cString: strerror(code)))") }, "\(lines.lines)")
        #expect(sink.errors.isEmpty, "a shortage is the handler's to deal with")

        // Resting: a read asked for is held back, and a second failure does not extend the rest.
        channel.read()
        channel.pipeline.fireErrorCaught(IOError(errnoCode: code, reason: "accept"))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(499))
        #expect(counter.reads == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(counter.reads == 2, "the held-back read goes through once the rest is over")
        channel.read()
        #expect(counter.reads == 3)
        _ = try channel.finish()
    }

    @Test func otherErrorsPassThrough() throws {
        let settings = ConnectionGuardSettings(registry: ConnectionRegistry(limits: ConnectionLimits(openFileLimit: 1000)),
                                               logger: LogLines().logger)
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        let sink = ErrorSink()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(settings: settings))
        try channel.pipeline.syncOperations.addHandler(sink)
        channel.pipeline.fireErrorCaught(IOError(errnoCode: ECONNABORTED, reason: "accept"))
        #expect(sink.errors.count == 1)
        channel.read()
        channel.read()
        #expect(counter.reads == 2, "no rest after an error that is not a shortage")
        _ = try channel.finish()
    }
}
