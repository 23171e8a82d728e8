/// The one conversion between `Duration` and numbers of seconds or smaller units. Swift's
/// `Duration.seconds(_: Double)` and `Int64(_: Double)` stop the process on NaN, infinity or a
/// value out of range; these never do: they saturate.
extension Duration {
    /// The longest duration these conversions give: 2^63 - 1 seconds (longer ones have no
    /// `components`).
    public static let longest: Duration = .seconds(Int64.max)

    /// The duration in seconds.
    public var inSeconds: Double {
        let (seconds, attoseconds) = Swift.min(Swift.max(self, .zero - .longest), .longest).components
        return Double(seconds) + Double(attoseconds) / 1e18  // 1e18 is exact: correctly rounded
    }

    /// Whole milliseconds, rounded toward zero, clamped to `Int64`'s range.
    public var inMilliseconds: Int64 { whole(unitsPerSecond: 1_000, attosecondsPerUnit: 1_000_000_000_000_000) }

    /// Whole nanoseconds, rounded toward zero, clamped to `Int64`'s range (about 292 years).
    public var inNanoseconds: Int64 { whole(unitsPerSecond: 1_000_000_000, attosecondsPerUnit: 1_000_000_000) }

    private func whole(unitsPerSecond: Int64, attosecondsPerUnit: Int64) -> Int64 {
        let (seconds, attoseconds) = Swift.min(Swift.max(self, .zero - .longest), .longest).components
        let (units, overflow) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = units.addingReportingOverflow(attoseconds / attosecondsPerUnit)
        if overflow2 { return attoseconds < 0 ? .min : .max }
        return sum
    }

    /// `seconds` as a duration, clamped to `0...maximum`: NaN and negative values give zero,
    /// infinite and huge ones `maximum`. Nanosecond resolution.
    public static func clamped(seconds: Double, maximum: Duration = .longest) -> Duration {
        let maximum = Swift.min(Swift.max(maximum, .zero), .longest)
        guard seconds > 0 else { return .zero }  // NaN and -infinity too
        guard seconds < maximum.inSeconds else { return maximum }  // +infinity too
        // Below `maximum`, so below 2^63 seconds: the whole seconds fit in an Int64.
        let whole = seconds.rounded(.towardZero)
        let nanoseconds = ((seconds - whole) * 1e9).rounded()
        return Swift.min(.seconds(Int64(whole)) + .nanoseconds(Int64(nanoseconds)), maximum)
    }
}
