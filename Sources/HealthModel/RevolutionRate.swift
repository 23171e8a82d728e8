/// Turns successive readings of one cumulative revolution counter (a wheel's or a crank's) and the
/// event time of its last revolution into a revolution rate: the one implementation behind
/// Bluetooth LE Cycling Speed and Cadence and Cycling Power, and ANT+ speed, cadence and speed and
/// cadence sensors. Pure: the caller passes the time each reading arrived (any monotonic clock, in
/// seconds).
///
/// Rules:
/// - The first reading (and the first after `reset()`) only sets the baseline: no rate.
/// - Counter and event time are modular (`counterModulus`, 65536 event-time units): a counter or
///   time that wraps around yields the right difference.
/// - A repeated reading (no new revolution) keeps the last rate until `stopTimeout` seconds have
///   passed since the last new revolution (or the baseline) arrived, then reports 0: the wheel or
///   crank stopped. Sensors repeat their last event while coasting, so 0 is not reported at once;
///   a sensor that says it stopped (ANT+ speed page 5's flag: `stopped`) reports 0 at once.
/// - New revolutions later than 15/16 of an event-time period after the last ones arrived (60 s
///   of the 64 s at 1/1024 s, 30 s at 1/2048 s; the margin covers when readings arrive) may hide
///   a whole wrap of the event time: the difference is ambiguous and the reading becomes a new
///   baseline.
/// - A counter that moved while the event time did not, or a difference that implies more than
///   `maximumRevolutionsPerSecond` (a counter reset by a battery change or a Set Cumulative Value
///   command looks like a huge forward step modulo the counter size; or a corrupted reading), is a
///   reset: new baseline, and the jump is not counted in `totalRevolutions`.
public struct RevolutionRateTracker: Hashable, Sendable {
    public enum Event: Hashable, Sendable {
        case baseline
        case newRevolutions(UInt32)
        case noNewRevolution
        /// The counter jumped implausibly, or the event-time difference was ambiguous.
        case counterReset
    }

    public struct Update: Hashable, Sendable {
        /// Revolutions per second, nil when there is no rate yet.
        public var revolutionsPerSecond: Double?
        public var event: Event
    }

    public let counterModulus: UInt64
    public let eventTimeUnitsPerSecond: Double
    public var stopTimeout: Double
    public var maximumRevolutionsPerSecond: Double

    private var last: Reading?
    private var lastNewRevolutionAt: Double = 0
    private var lastRate: Double?
    /// Revolutions accepted since the first reading or the last `reset()` (resets of the counter
    /// do not count).
    public private(set) var totalRevolutions: UInt64 = 0

    private struct Reading: Hashable, Sendable {
        var count: UInt64
        var eventTime: UInt16
    }

    public init(counterBits: Int, eventTimeUnitsPerSecond: Double = 1024, stopTimeout: Double = 3,
                maximumRevolutionsPerSecond: Double) {
        counterModulus = UInt64(1) << UInt64(min(max(counterBits, 1), 63))
        self.eventTimeUnitsPerSecond = eventTimeUnitsPerSecond
        self.stopTimeout = stopTimeout
        self.maximumRevolutionsPerSecond = maximumRevolutionsPerSecond
    }

    public mutating func reset() {
        last = nil
        lastRate = nil
        totalRevolutions = 0
    }

    /// Feeds one reading that arrived at `now`; `stopped`: the sensor says it is not moving.
    public mutating func update(count: UInt64, eventTime: UInt16, receivedAt now: Double, stopped: Bool = false) -> Update {
        let count = count % counterModulus
        guard let previous = last else {
            baseline(count, eventTime, now)
            if stopped { lastRate = 0 }
            return Update(revolutionsPerSecond: lastRate, event: .baseline)
        }
        let revolutions = (count &+ counterModulus &- previous.count) % counterModulus
        let ticks = eventTime &- previous.eventTime
        if revolutions == 0 {
            if stopped || now - lastNewRevolutionAt >= stopTimeout { lastRate = 0 }
            return Update(revolutionsPerSecond: lastRate, event: .noNewRevolution)
        }
        let ambiguousAfter = 65536 / eventTimeUnitsPerSecond * 15 / 16
        let rate = ticks == 0 ? Double.infinity : Double(revolutions) / (Double(ticks) / eventTimeUnitsPerSecond)
        let sinceLast = now - lastNewRevolutionAt
        if !(0..<ambiguousAfter).contains(sinceLast) || rate > maximumRevolutionsPerSecond {
            baseline(count, eventTime, now)
            lastRate = nil
            return Update(revolutionsPerSecond: nil, event: .counterReset)
        }
        last = Reading(count: count, eventTime: eventTime)
        lastNewRevolutionAt = now
        lastRate = rate
        totalRevolutions += revolutions
        return Update(revolutionsPerSecond: rate, event: .newRevolutions(UInt32(truncatingIfNeeded: revolutions)))
    }

    private mutating func baseline(_ count: UInt64, _ eventTime: UInt16, _ now: Double) {
        last = Reading(count: count, eventTime: eventTime)
        lastNewRevolutionAt = now
    }
}
