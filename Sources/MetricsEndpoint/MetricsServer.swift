import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Serves `GET /metrics` (Prometheus text format) on a local address; anything else is 404.
/// The daemon's and the tracking server's metrics endpoint alike: `exposition` answers the
/// metrics text at each request.
///
/// A scraper needs one connection for a moment. Anyone who can reach the address could open
/// thousands and keep them, and a process at its open-file limit is stopped by libdispatch
/// (under Swift's concurrency pool on Linux, it opens `/proc/<tid>/stat` for its worker threads
/// every second and traps when it cannot); so at most ``maxConnections`` are open at once (the next
/// ones are closed at once), each for ``connectionTimeout`` at most.
public final class MetricsServer: Service, Sendable {
    public static let maxConnections = 16
    static let connectionTimeout: TimeAmount = .seconds(10)

    let host: String
    let port: Int
    let exposition: @Sendable () -> [UInt8]
    let logger: Logger
    /// Connections open now.
    private let open = Atomic<Int>(0)

    /// `address` is `HOST:PORT` (`[::1]:PORT` for IPv6), checked by ``parse(_:)``.
    public init(address: String, logger: Logger, exposition: @escaping @Sendable () -> [UInt8]) {
        let (host, port) = Self.parse(address) ?? ("127.0.0.1", 0)
        self.host = host
        self.port = port
        self.exposition = exposition
        self.logger = logger
    }

    /// `HOST:PORT` split, or nil when it is not one (a port in 1...65535).
    public static func parse(_ address: String) -> (host: String, port: Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        let host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host.isEmpty ? nil : (host, port)
    }

    public func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard open.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                        open.subtract(1, ordering: .relaxed)
                        channel.close(promise: nil)
                        throw ChannelError.ioOnClosedChannel
                    }
                    channel.closeFuture.whenComplete { _ in self.open.subtract(1, ordering: .relaxed) }
                    channel.eventLoop.assumeIsolated().scheduleTask(in: Self.connectionTimeout) { channel.close(promise: nil) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        logger.info("metrics", metadata: ["address": "http://\(host):\(port)/metrics"])
        let exposition = self.exposition
        await cancelWhenGracefulShutdown {
            try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { try? await Self.serve(connection, exposition) }
                    }
                }
            }
        }
    }

    private static func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
                              _ exposition: @Sendable () -> [UInt8]) async throws {
        try await connection.executeThenClose { inbound, outbound in
            for try await part in inbound {
                guard case .head(let request) = part else { continue }
                let found = request.method == .GET && request.uri.split(separator: "?").first == "/metrics"
                let body = found ? exposition() : Array("not found: GET /metrics\n".utf8)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4" : "text/plain")
                headers.add(name: "Content-Length", value: String(body.count))
                headers.add(name: "Connection", value: "close")
                try await outbound.write(.head(HTTPResponseHead(version: request.version, status: found ? .ok : .notFound,
                                                                headers: headers)))
                try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
                try await outbound.write(.end(nil))
                return
            }
        }
    }
}
