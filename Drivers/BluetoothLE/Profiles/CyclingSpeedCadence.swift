public import HealthModel

/// Cumulative wheel revolution data: the revolution counter and the time of the last revolution.
public struct WheelRevolutionData: Hashable, Sendable {
    public var cumulativeRevolutions: UInt32
    /// Time of the last wheel event, in 1/1024 s (CSC) or 1/2048 s (Cycling Power); rolls over.
    public var lastEventTime: UInt16
    public init(cumulativeRevolutions: UInt32, lastEventTime: UInt16) {
        self.cumulativeRevolutions = cumulativeRevolutions
        self.lastEventTime = lastEventTime
    }
}

/// Cumulative crank revolution data: the counter and the time of the last revolution (1/1024 s).
public struct CrankRevolutionData: Hashable, Sendable {
    public var cumulativeRevolutions: UInt16
    public var lastEventTime: UInt16
    public init(cumulativeRevolutions: UInt16, lastEventTime: UInt16) {
        self.cumulativeRevolutions = cumulativeRevolutions
        self.lastEventTime = lastEventTime
    }
}

/// CSC Measurement (0x2A5B).
///
/// Layout: flags (uint8); when bit 0: cumulative wheel revolutions (uint32) and last wheel event
/// time (uint16, 1/1024 s); when bit 1: cumulative crank revolutions (uint16) and last crank event
/// time (uint16, 1/1024 s).
public struct CSCMeasurement: Hashable, Sendable {
    public var flags: UInt8
    public var wheel: WheelRevolutionData?
    public var crank: CrankRevolutionData?
    public var ignoredTrailingBytes: Int

    public init(flags: UInt8, wheel: WheelRevolutionData?, crank: CrankRevolutionData?, ignoredTrailingBytes: Int = 0) {
        self.flags = flags
        self.wheel = wheel
        self.crank = crank
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> CSCMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.cscMeasurement)
        let flags = try c.uint8("flags")
        var wheel: WheelRevolutionData?
        var crank: CrankRevolutionData?
        if flags & 0x01 != 0 {
            wheel = WheelRevolutionData(cumulativeRevolutions: try c.uint32("cumulative wheel revolutions"),
                                        lastEventTime: try c.uint16("last wheel event time"))
        }
        if flags & 0x02 != 0 {
            crank = CrankRevolutionData(cumulativeRevolutions: try c.uint16("cumulative crank revolutions"),
                                        lastEventTime: try c.uint16("last crank event time"))
        }
        return CSCMeasurement(flags: flags, wheel: wheel, crank: crank, ignoredTrailingBytes: c.remaining)
    }
}

/// Speed, cadence and distance from successive CSC Measurements (a pure state machine).
///
/// Speed = wheel revolutions x circumference / elapsed event time; cadence = crank revolutions x
/// 60 / elapsed event time. See `RevolutionRateTracker` for rollover, repeats, stops and resets.
public struct CSCCalculator: Hashable, Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Metres per wheel revolution (2.096 m: a 700x23C road tyre).
        public var wheelCircumference: Double = 2.096
        /// Seconds without a new revolution after which speed or cadence is reported as 0.
        public var stopTimeout: Double = 3
        /// Faster than this (m/s) is treated as a counter reset.
        public var maximumSpeed: Double = 40
        /// Faster than this (rpm) is treated as a counter reset.
        public var maximumCadence: Double = 300
        public init() {}
        public init(wheelCircumference: Double) { self.wheelCircumference = wheelCircumference }
    }

    public struct Output: Hashable, Sendable {
        /// Metres per second; nil until two wheel readings were seen.
        public var speed: Double?
        /// Revolutions per minute; nil until two crank readings were seen.
        public var cadence: Double?
        /// Metres ridden since the first reading or the last `reset()`.
        public var distance: Double
        public var wheelEvent: RevolutionRateTracker.Event?
        public var crankEvent: RevolutionRateTracker.Event?
    }

    public let configuration: Configuration
    public private(set) var wheel: RevolutionRateTracker
    public private(set) var crank: RevolutionRateTracker

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        wheel = RevolutionRateTracker(counterBits: 32, eventTimeUnitsPerSecond: 1024,
                                      stopTimeout: configuration.stopTimeout,
                                      maximumRevolutionsPerSecond: configuration.maximumSpeed / configuration.wheelCircumference)
        crank = RevolutionRateTracker(counterBits: 16, eventTimeUnitsPerSecond: 1024,
                                      stopTimeout: configuration.stopTimeout,
                                      maximumRevolutionsPerSecond: configuration.maximumCadence / 60)
    }

    public mutating func reset() {
        wheel.reset()
        crank.reset()
    }

    /// Feeds one measurement that arrived at `receivedAt` (seconds on a monotonic clock).
    public mutating func update(_ measurement: CSCMeasurement, receivedAt: Double) -> Output {
        var output = Output(speed: nil, cadence: nil, distance: 0, wheelEvent: nil, crankEvent: nil)
        if let w = measurement.wheel {
            let u = wheel.update(count: UInt64(w.cumulativeRevolutions), eventTime: w.lastEventTime, receivedAt: receivedAt)
            output.speed = u.revolutionsPerSecond.map { $0 * configuration.wheelCircumference }
            output.wheelEvent = u.event
        }
        if let k = measurement.crank {
            let u = crank.update(count: UInt64(k.cumulativeRevolutions), eventTime: k.lastEventTime, receivedAt: receivedAt)
            output.cadence = u.revolutionsPerSecond.map { $0 * 60 }
            output.crankEvent = u.event
        }
        output.distance = Double(wheel.totalRevolutions) * configuration.wheelCircumference
        return output
    }
}

/// CSC Feature (0x2A5C).
public struct CSCFeature: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let wheelRevolutionData = CSCFeature(rawValue: 1 << 0)
    public static let crankRevolutionData = CSCFeature(rawValue: 1 << 1)
    public static let multipleSensorLocations = CSCFeature(rawValue: 1 << 2)

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> CSCFeature {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.cscFeature)
        return CSCFeature(rawValue: try c.uint16("CSC feature"))
    }
}

/// RSC Measurement (0x2A53).
///
/// Layout: flags (uint8); instantaneous speed (uint16, 1/256 m/s); instantaneous cadence (uint8,
/// steps per minute); stride length (uint16 cm, when bit 0); total distance (uint32 dm, when bit 1).
/// Bit 2 is the walking (0) or running (1) status.
public struct RSCMeasurement: Hashable, Sendable {
    public var flags: UInt8
    /// Raw 1/256 m/s.
    public var speedRaw: UInt16
    /// Steps per minute (not strides: a runner at 90 strides/min reports 180).
    public var cadence: UInt8
    /// Centimetres.
    public var strideLengthCentimeters: UInt16?
    /// Decimetres since the sensor started.
    public var totalDistanceDecimeters: UInt32?
    public var isRunning: Bool
    public var ignoredTrailingBytes: Int

    public var speedMetersPerSecond: Double { Double(speedRaw) / 256 }
    public var strideLengthMeters: Double? { strideLengthCentimeters.map { Double($0) / 100 } }
    public var totalDistanceMeters: Double? { totalDistanceDecimeters.map { Double($0) / 10 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> RSCMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.rscMeasurement)
        let flags = try c.uint8("flags")
        let speed = try c.uint16("instantaneous speed")
        let cadence = try c.uint8("instantaneous cadence")
        let stride = flags & 0x01 != 0 ? try c.uint16("instantaneous stride length") : nil
        let distance = flags & 0x02 != 0 ? try c.uint32("total distance") : nil
        return RSCMeasurement(flags: flags, speedRaw: speed, cadence: cadence, strideLengthCentimeters: stride,
                              totalDistanceDecimeters: distance, isRunning: flags & 0x04 != 0,
                              ignoredTrailingBytes: c.remaining)
    }
}
