/// Cycling Power Measurement (0x2A63).
///
/// Layout: flags (uint16); instantaneous power (sint16 W); then, in this order, each when its flag
/// is set: pedal power balance (uint8, 1/2 %; bit 0, bit 1 = reference is the left pedal);
/// accumulated torque (uint16, 1/32 N·m; bit 2, bit 3 = crank based rather than wheel based);
/// wheel revolutions (uint32) + last wheel event time (uint16, 1/2048 s) (bit 4);
/// crank revolutions (uint16) + last crank event time (uint16, 1/1024 s) (bit 5);
/// maximum + minimum force (sint16 N each; bit 6); maximum + minimum torque (sint16, 1/32 N·m;
/// bit 7); maximum + minimum angle (two uint12 packed in 3 bytes, degrees; bit 8); top dead spot
/// angle (uint16 degrees; bit 9); bottom dead spot angle (uint16 degrees; bit 10); accumulated
/// energy (uint16 kJ; bit 11). Bit 12 is the offset compensation indicator; bits 13-15 reserved.
///
/// The specification lets a sensor send force or torque magnitudes, not both; if both flags are
/// set anyway, both are decoded in flag order.
public struct CyclingPowerMeasurement: Hashable, Sendable {
    public enum PedalPowerBalanceReference: Hashable, Sendable { case unknown, left }
    public enum AccumulatedTorqueSource: Hashable, Sendable { case wheel, crank }

    public struct Extremes<Value: Hashable & Sendable>: Hashable, Sendable {
        public var maximum: Value
        public var minimum: Value
    }

    public var flags: UInt16
    /// Watts (may be negative).
    public var instantaneousPower: Int16
    /// Raw, 1/2 percent.
    public var pedalPowerBalanceRaw: UInt8?
    public var pedalPowerBalanceReference: PedalPowerBalanceReference
    /// Raw, 1/32 N·m.
    public var accumulatedTorqueRaw: UInt16?
    public var accumulatedTorqueSource: AccumulatedTorqueSource
    /// Wheel event time is in 1/2048 s here (unlike CSC's 1/1024 s).
    public var wheel: WheelRevolutionData?
    public var crank: CrankRevolutionData?
    /// Newtons.
    public var extremeForce: Extremes<Int16>?
    /// Raw, 1/32 N·m.
    public var extremeTorqueRaw: Extremes<Int16>?
    /// Degrees, 12 bits each.
    public var extremeAngles: Extremes<UInt16>?
    public var topDeadSpotAngle: UInt16?
    public var bottomDeadSpotAngle: UInt16?
    public var accumulatedEnergyKilojoules: UInt16?
    public var offsetCompensationIndicator: Bool
    public var ignoredTrailingBytes: Int

    public var pedalPowerBalancePercent: Double? { pedalPowerBalanceRaw.map { Double($0) / 2 } }
    public var accumulatedTorqueNewtonMeters: Double? { accumulatedTorqueRaw.map { Double($0) / 32 } }
    public var extremeTorqueNewtonMeters: Extremes<Double>? {
        extremeTorqueRaw.map { Extremes(maximum: Double($0.maximum) / 32, minimum: Double($0.minimum) / 32) }
    }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> CyclingPowerMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.cyclingPowerMeasurement)
        let flags = try c.uint16("flags")
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        let power = try c.sint16("instantaneous power")
        let balance = has(0) ? try c.uint8("pedal power balance") : nil
        let torque = has(2) ? try c.uint16("accumulated torque") : nil
        var wheel: WheelRevolutionData?
        if has(4) {
            wheel = WheelRevolutionData(cumulativeRevolutions: try c.uint32("cumulative wheel revolutions"),
                                        lastEventTime: try c.uint16("last wheel event time"))
        }
        var crank: CrankRevolutionData?
        if has(5) {
            crank = CrankRevolutionData(cumulativeRevolutions: try c.uint16("cumulative crank revolutions"),
                                        lastEventTime: try c.uint16("last crank event time"))
        }
        var force: Extremes<Int16>?
        if has(6) {
            force = Extremes(maximum: try c.sint16("maximum force magnitude"),
                             minimum: try c.sint16("minimum force magnitude"))
        }
        var torqueExtremes: Extremes<Int16>?
        if has(7) {
            torqueExtremes = Extremes(maximum: try c.sint16("maximum torque magnitude"),
                                      minimum: try c.sint16("minimum torque magnitude"))
        }
        var angles: Extremes<UInt16>?
        if has(8) {
            let packed = try c.uint24("extreme angles")
            angles = Extremes(maximum: UInt16(packed & 0x0FFF), minimum: UInt16(packed >> 12))
        }
        let top = has(9) ? try c.uint16("top dead spot angle") : nil
        let bottom = has(10) ? try c.uint16("bottom dead spot angle") : nil
        let energy = has(11) ? try c.uint16("accumulated energy") : nil
        return CyclingPowerMeasurement(
            flags: flags, instantaneousPower: power, pedalPowerBalanceRaw: balance,
            pedalPowerBalanceReference: has(1) ? .left : .unknown, accumulatedTorqueRaw: torque,
            accumulatedTorqueSource: has(3) ? .crank : .wheel, wheel: wheel, crank: crank,
            extremeForce: force, extremeTorqueRaw: torqueExtremes, extremeAngles: angles,
            topDeadSpotAngle: top, bottomDeadSpotAngle: bottom, accumulatedEnergyKilojoules: energy,
            offsetCompensationIndicator: has(12), ignoredTrailingBytes: c.remaining)
    }
}

/// Cycling Power Feature (0x2A65): the raw 32-bit feature mask with the commonly needed bits named.
public struct CyclingPowerFeature: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let pedalPowerBalance = CyclingPowerFeature(rawValue: 1 << 0)
    public static let accumulatedTorque = CyclingPowerFeature(rawValue: 1 << 1)
    public static let wheelRevolutionData = CyclingPowerFeature(rawValue: 1 << 2)
    public static let crankRevolutionData = CyclingPowerFeature(rawValue: 1 << 3)
    public static let extremeMagnitudes = CyclingPowerFeature(rawValue: 1 << 4)
    public static let extremeAngles = CyclingPowerFeature(rawValue: 1 << 5)
    public static let topAndBottomDeadSpotAngles = CyclingPowerFeature(rawValue: 1 << 6)
    public static let accumulatedEnergy = CyclingPowerFeature(rawValue: 1 << 7)
    public static let offsetCompensationIndicator = CyclingPowerFeature(rawValue: 1 << 8)

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> CyclingPowerFeature {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.cyclingPowerFeature)
        return CyclingPowerFeature(rawValue: try c.uint32("cycling power feature"))
    }
}
