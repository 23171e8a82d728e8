import Foundation
public import Prometheus

/// The server's Prometheus metrics (`--metrics-address`): request latency by route, method and
/// status class; records accepted, duplicate and rejected; the database pool's use (PostgreSQL);
/// connections open. Route labels are the endpoint table's patterns (`/v1/records/{id}`), so
/// the label set stays small whatever clients ask for.
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    /// Read at each exposition: the store's pool and the connection registry.
    private let gauges: @Sendable () -> [(name: String, help: String, value: Double)]

    public init(gauges: @escaping @Sendable () -> [(name: String, help: String, value: Double)] = { [] }) {
        self.gauges = gauges
    }

    private static func name(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "healthgate_server", metricName: name, unitName: unit, helpText: help)
    }

    /// One answered request.
    func request(method: String, path: String, status: Int, duration: Duration) {
        let route = Routes.pattern(forPath: path) ?? "unknown"
        registry.makeDurationHistogram(
            descriptor: Self.name("request_duration", unit: "seconds", "Time from a request's head to its answer."),
            labels: [("route", route), ("method", method), ("status", "\(status / 100)xx")],
            buckets: [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)]
        ).recordNanoseconds(duration.inNanoseconds)
    }

    /// What one upload did with its records.
    func upload(accepted: Int, duplicate: Int, rejected: Int) {
        for (outcome, count) in [("accepted", accepted), ("duplicate", duplicate), ("rejected", rejected)] where count > 0 {
            registry.makeCounter(descriptor: Self.name("records", unit: "total", "Uploaded records, by outcome."),
                                 labels: [("outcome", outcome)]).increment(by: Int64(count))
        }
    }

    /// The metrics in Prometheus' text format.
    public func exposition() -> [UInt8] {
        for gauge in gauges() {
            registry.makeGauge(descriptor: Self.name(gauge.name, unit: "", gauge.help)).set(gauge.value)
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
