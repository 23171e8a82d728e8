import Foundation
public import Prometheus

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
