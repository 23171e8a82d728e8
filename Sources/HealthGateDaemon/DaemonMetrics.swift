import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus
import ServiceLifecycle
import Synchronization

/// The daemon's Prometheus metrics: records stored per driver, outbox depth, forwarding time and
/// volume, devices connected per driver, errors by kind.
public final class DaemonMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    let outboxDepth: Gauge
    let forwardSeconds: DurationHistogram
    let forwarded: Counter

    public init() {
        outboxDepth = registry.makeGauge(descriptor: Self.name("outbox", unit: "records", "Records waiting to be forwarded."))
        forwardSeconds = registry.makeDurationHistogram(
            descriptor: Self.name("forward_duration", unit: "seconds", "Time of each forwarding round (drain and pull)."),
            buckets: [.milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30), .seconds(120)])
        forwarded = registry.makeCounter(descriptor: Self.name("records_forwarded", unit: "total", "Records the server acknowledged."))
    }

    /// `healthgate_NAME_UNIT` with its help text.
    private static func name(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "healthgate", metricName: name, unitName: unit, helpText: help)
    }

    /// Records stored by `driver`.
    func stored(_ count: Int, driver: String) {
        registry.makeCounter(descriptor: Self.name("records_stored", unit: "total", "Records stored, per driver instance."),
                             labels: [("driver", driver)]).increment(by: Int64(count))
    }

    /// Counts an error of `kind` (driver_restart, forward, import, bad_line ...).
    func error(_ kind: String) {
        registry.makeCounter(descriptor: Self.name("errors", unit: "total", "Errors, by kind."), labels: [("kind", kind)]).increment()
    }

    /// How many devices of `driver` are connected.
    func devicesConnected(_ count: Int, driver: String) {
        registry.makeGauge(descriptor: Self.name("devices_connected", unit: "", "Devices connected, per driver instance."),
                           labels: [("driver", driver)]).set(Double(count))
    }

    /// The metrics in Prometheus' text format.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

/// Serves `GET /metrics` (Prometheus text format) on a local address; anything else is 404.
final class MetricsServer: Service, Sendable {
    let host: String
    let port: Int
    let metrics: DaemonMetrics
    let logger: Logger

    init(address: String, metrics: DaemonMetrics, logger: Logger) {
        let colon = address.lastIndex(of: ":")!
        host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        port = Int(address[address.index(after: colon)...])!
        self.metrics = metrics
        self.logger = logger
    }

    func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        logger.info("metrics", metadata: ["address": "http://\(host):\(port)/metrics"])
        let metrics = self.metrics
        await cancelWhenGracefulShutdown {
            try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { try? await Self.serve(connection, metrics) }
                    }
                }
            }
        }
    }

    private static func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
                              _ metrics: DaemonMetrics) async throws {
        try await connection.executeThenClose { inbound, outbound in
            for try await part in inbound {
                guard case .head(let request) = part else { continue }
                let found = request.method == .GET && request.uri.split(separator: "?").first == "/metrics"
                let body = found ? metrics.exposition() : Array("not found: GET /metrics\n".utf8)
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
