import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import TestSupport

/// How many idle connections one server process holds, and what each costs it
/// (`healthgate-bench capacity`): a device keeps its connection between syncs (HTTP keep-alive),
/// so 100,000 devices are up to 100,000 open connections across the server processes. Opens
/// `count` connections (or as many as the server admits before it answers 503), each with one
/// `GET /v1/health` answered, in plain HTTP and in TLS 1.3, and reads the server's resident
/// memory before and after: the difference over the count is the memory per held connection.
/// Its open-file limit is the ceiling: the server raises its soft limit to the hard one and
/// keeps descriptors for itself (``OpenFileLimit``).
func heldConnectionsBenchmarks(count: Int) async throws {
    print("\n== Held connections per server process (idle, keep-alive, one request each) ==")
    raiseOwnFileLimit()
    let certificates = try await TestCertificates.make()
    for tls in [false, true] {
        let tlsArguments = tls ? ["--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("server.key")] : []
        let server = try await ServerProcess.start(
            extraArguments: tlsArguments + ["--max-connections-per-address", "1000000", "--idle-timeout", "3600", "--log-level", "warning"],
            store: .sqlite)
        let pid = server.process.processIdentifier
        let limit = openFileLimit(pid)
        let target = min(count, limit)
        let before = ProcessStats.statusKB(pid)
        var context: NIOSSLContext?
        if tls {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(certificates.path("ca.pem"))
            configuration.minimumTLSVersion = .tlsv13
            context = try NIOSSLContext(configuration: configuration)
        }
        let started = now()
        let held = try await hold(target, port: server.url.port ?? 0, tls: context)
        let seconds = now() - started
        // Let the server's allocator settle (buffers of the answers freed).
        try await Task.sleep(for: .seconds(2))
        let after = ProcessStats.statusKB(pid)
        let perConnection = held.open > 0 ? Double(after - before) * 1024 / Double(held.open) : 0
        print(String(format: "  %@: %d of %d connections held (%d refused with 503, %d failed), opened in %.1f s; server open-file limit %d; server RSS %.1f -> %.1f MB: %.1f KB per connection",
                     tls ? "TLS 1.3" : "plain HTTP", held.open, target, held.refused, held.failed, seconds, limit,
                     Double(before) / 1024, Double(after) / 1024, perConnection / 1024))
        for channel in held.channels { channel.close(promise: nil) }
        _ = await server.stopped()
    }
}

/// The server's soft open-file limit (it raises it to the hard one as it starts).
private func openFileLimit(_ pid: Int32) -> Int {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
    return line.split(separator: " ", omittingEmptySubsequences: true).compactMap { Int($0) }.first ?? 1024
}

/// This process needs a descriptor per connection it holds too.
private func raiseOwnFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// Opens up to `count` connections, 200 at a time, each answered once; stops at the first 503.
private func hold(_ count: Int, port: Int, tls: NIOSSLContext?) async throws -> (channels: [any Channel], open: Int, refused: Int, failed: Int) {
    var channels: [any Channel] = []
    var refused = 0, failed = 0
    while channels.count < count && refused == 0 {
        let batch = min(200, count - channels.count)
        let opened = await withTaskGroup(of: ((any Channel)?, Int).self) { group in
            for _ in 0..<batch {
                group.addTask {
                    let answered = EventLoopPromiseBox()
                    do {
                        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connectTimeout(.seconds(30))
                        let channel = try await bootstrap.channelInitializer { channel in
                            answered.set(channel.eventLoop.makePromise(of: Int.self))
                            return channel.eventLoop.makeCompletedFuture {
                                if let tls {
                                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: nil))
                                }
                                try channel.pipeline.syncOperations.addHandler(StatusReader(answered: answered.promise!))
                            }
                        }.connect(host: "127.0.0.1", port: port).get()
                        let request = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
                        let status = try await answered.promise!.futureResult.get()
                        if status == 200 { return (channel, 200) }
                        try? await channel.close().get()
                        return (nil, status)
                    } catch {
                        return (nil, 0)
                    }
                }
            }
            var results: [((any Channel)?, Int)] = []
            for await result in group { results.append(result) }
            return results
        }
        let before = channels.count
        for (channel, status) in opened {
            if let channel { channels.append(channel) } else if status == 503 { refused += 1 } else { failed += 1 }
        }
        // The server's cap: over TLS its refusal is not a TLS answer, so it shows as failures.
        if channels.count == before { break }
    }
    return (channels, channels.count, refused, failed)
}

/// A promise made inside the channel initializer, read outside it.
private final class EventLoopPromiseBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: EventLoopPromise<Int>?
    func set(_ promise: EventLoopPromise<Int>) { lock.withLock { value = promise } }
    var promise: EventLoopPromise<Int>? { lock.withLock { value } }
}

/// Completes with the status of the first answer's status line (0: the connection closed first).
private final class StatusReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let answered: EventLoopPromise<Int>
    private var head = ""
    private var done = false

    init(answered: EventLoopPromise<Int>) { self.answered = answered }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var buffer = unwrapInboundIn(data)
        head += buffer.readString(length: buffer.readableBytes) ?? ""
        // "HTTP/1.1 200 OK": the status is the second word of the first line.
        if let line = head.split(separator: "\r\n", maxSplits: 1).first, head.contains("\r\n") {
            done = true
            answered.succeed(Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            answered.succeed(0)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            answered.succeed(0)
        }
        context.close(promise: nil)
    }
}
