#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Retry delays: exponential from `initial` by `multiplier` up to `maximum`, each delay moved by
/// up to ±`jitter` (a fraction of it) so that many clients do not retry in step. Pure: the
/// caller counts the attempts and supplies the random number.
///
/// The one backoff of the project: the forwarder's retries, the BLE reconnects, the restarts of
/// drivers and of the exec driver's program use it with their own values.
public struct Backoff: Equatable, Sendable {
    public var initial: Duration
    public var multiplier: Double
    public var maximum: Duration
    public var jitter: Double

    /// Out-of-range values are clamped: `initial` at least zero, `multiplier` at least 1,
    /// `maximum` at least `initial`, `jitter` within 0...1, durations at most ``Duration/longest``.
    public init(initial: Duration, multiplier: Double = 2, maximum: Duration, jitter: Double = 0) {
        self.initial = Swift.min(Swift.max(initial, .zero), .longest)
        self.multiplier = multiplier >= 1 ? multiplier : 1  // NaN too
        self.maximum = Swift.min(Swift.max(self.initial, maximum), .longest)
        self.jitter = jitter > 0 ? Swift.min(jitter, 1) : 0  // NaN too
    }

    /// The delay before attempt `attempt` (1 = the first retry; lower counts as 1); `random` in
    /// 0...1 moves it by the jitter (0.5 = not at all; outside 0...1 and NaN are clamped). Never
    /// traps, whatever the attempt or the durations: at most twice `maximum`.
    public func delay(attempt: Int, random: Double) -> Duration {
        // Fields may have been set after init: take them as init would.
        let b = Backoff(initial: initial, multiplier: multiplier, maximum: maximum, jitter: jitter)
        let exponent = attempt > 1 ? Double(attempt - 1) : 0
        let start = b.initial.inSeconds, cap = b.maximum.inSeconds
        // 0 × infinity would be NaN: a zero start stays zero.
        let base = start == 0 ? 0 : Swift.min(cap, start * pow(b.multiplier, exponent))
        let r = random.isNaN ? 0.5 : Swift.min(Swift.max(random, 0), 1)
        let factor = 1 + b.jitter * (2 * r - 1)
        return .clamped(seconds: base * factor, maximum: b.maximum < .longest / 2 ? b.maximum * 2 : .longest)
    }
}
