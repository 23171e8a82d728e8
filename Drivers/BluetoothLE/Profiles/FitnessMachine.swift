// Fitness Machine Service (0x1826) data characteristics: Treadmill Data (0x2ACD), Cross Trainer
// Data (0x2ACE), Rower Data (0x2AD1), Indoor Bike Data (0x2AD2), and Fitness Machine Feature
// (0x2ACC). Field formats follow the Bluetooth SIG characteristic definitions (FTMS v1.0).
//
// Conventions shared by all four data characteristics:
// - Bit 0 of the flags is "More Data" and is inverted: when it is 0 the first field
//   (instantaneous speed, or stroke rate + stroke count for a rower) IS present; when it is 1 that
//   field is absent and the data record continues in a following notification (`moreData`).
// - Every other flag bit set to 1 means its field(s) are present, in the documented order.
// - Fields that are present but carry the specification's "Data Not Available" value (0x7FFF for
//   inclination, ramp angle, force on belt and power output; 0xFFFF for total energy and energy
//   per hour; 0xFF for energy per minute) decode to nil.
// - Speeds are in 0.01 km/h, distances in metres (uint24), times in seconds, energy in kcal,
//   heart rate in bpm, MET in 0.1.

/// Expended energy (flags' "Expended Energy Present" bit): three fields, each nil when the machine
/// sends "Data Not Available".
public struct FitnessMachineEnergy: Hashable, Sendable {
    /// Kilocalories since the session started.
    public var totalKilocalories: UInt16?
    /// Kilocalories per hour (average rate).
    public var kilocaloriesPerHour: UInt16?
    /// Kilocalories per minute (average rate).
    public var kilocaloriesPerMinute: UInt8?

    public init(totalKilocalories: UInt16?, kilocaloriesPerHour: UInt16?, kilocaloriesPerMinute: UInt8?) {
        self.totalKilocalories = totalKilocalories
        self.kilocaloriesPerHour = kilocaloriesPerHour
        self.kilocaloriesPerMinute = kilocaloriesPerMinute
    }

    static func read(_ c: inout ByteCursor) throws(ProfileDecodeError) -> FitnessMachineEnergy {
        let total = try c.uint16("total energy")
        let hour = try c.uint16("energy per hour")
        let minute = try c.uint8("energy per minute")
        return FitnessMachineEnergy(totalKilocalories: total == 0xFFFF ? nil : total,
                                    kilocaloriesPerHour: hour == 0xFFFF ? nil : hour,
                                    kilocaloriesPerMinute: minute == 0xFF ? nil : minute)
    }
}

/// The fields every FTMS data characteristic ends with, in this order.
public struct FitnessMachineCommon: Hashable, Sendable {
    public var energy: FitnessMachineEnergy?
    /// Beats per minute.
    public var heartRate: UInt8?
    /// Metabolic equivalent, raw 0.1 MET.
    public var metabolicEquivalentRaw: UInt8?
    /// Seconds since the session started.
    public var elapsedTime: UInt16?
    /// Seconds left in the selected session.
    public var remainingTime: UInt16?

    public var metabolicEquivalent: Double? { metabolicEquivalentRaw.map { Double($0) / 10 } }

    /// `firstBit`: the flag bit of "Expended Energy Present"; the next four bits follow it.
    static func read(_ c: inout ByteCursor, flags: UInt32, firstBit: UInt32) throws(ProfileDecodeError) -> FitnessMachineCommon {
        func has(_ bit: UInt32) -> Bool { flags & (1 << bit) != 0 }
        var common = FitnessMachineCommon()
        if has(firstBit) { common.energy = try FitnessMachineEnergy.read(&c) }
        if has(firstBit + 1) { common.heartRate = try c.uint8("heart rate") }
        if has(firstBit + 2) { common.metabolicEquivalentRaw = try c.uint8("metabolic equivalent") }
        if has(firstBit + 3) { common.elapsedTime = try c.uint16("elapsed time") }
        if has(firstBit + 4) { common.remainingTime = try c.uint16("remaining time") }
        return common
    }
}

func notAvailable(_ value: Int16) -> Int16? { value == 0x7FFF ? nil : value }

/// Treadmill Data (0x2ACD), 16-bit flags.
///
/// Order: instantaneous speed (uint16 0.01 km/h; bit 0 == 0), average speed (bit 1), total
/// distance (uint24 m; bit 2), inclination (sint16 0.1 %) + ramp angle setting (sint16 0.1 deg)
/// (bit 3), positive + negative elevation gain (uint16 0.1 m each; bit 4), instantaneous pace
/// (uint8 0.1 km/min; bit 5), average pace (uint8 0.1 km/min; bit 6), expended energy (bit 7),
/// heart rate (bit 8), MET (bit 9), elapsed time (bit 10), remaining time (bit 11), force on
/// belt (sint16 N) + power output (sint16 W) (bit 12).
public struct TreadmillData: Hashable, Sendable {
    public var flags: UInt16
    public var moreData: Bool
    /// Raw 0.01 km/h.
    public var instantaneousSpeedRaw: UInt16?
    public var averageSpeedRaw: UInt16?
    public var totalDistanceMeters: UInt32?
    /// Raw 0.1 %; nil also when "Data Not Available".
    public var inclinationRaw: Int16?
    /// Raw 0.1 degree; nil also when "Data Not Available".
    public var rampAngleRaw: Int16?
    /// Raw 0.1 m.
    public var positiveElevationGainRaw: UInt16?
    public var negativeElevationGainRaw: UInt16?
    /// Raw 0.1 km/min (the FTMS v1.0 definition).
    public var instantaneousPaceRaw: UInt8?
    public var averagePaceRaw: UInt8?
    public var common: FitnessMachineCommon
    /// Newtons; nil also when "Data Not Available".
    public var forceOnBelt: Int16?
    /// Watts; nil also when "Data Not Available".
    public var powerOutput: Int16?
    public var ignoredTrailingBytes: Int

    public var instantaneousSpeedKilometersPerHour: Double? { instantaneousSpeedRaw.map { Double($0) / 100 } }
    public var averageSpeedKilometersPerHour: Double? { averageSpeedRaw.map { Double($0) / 100 } }
    public var inclinationPercent: Double? { inclinationRaw.map { Double($0) / 10 } }
    public var rampAngleDegrees: Double? { rampAngleRaw.map { Double($0) / 10 } }
    public var positiveElevationGainMeters: Double? { positiveElevationGainRaw.map { Double($0) / 10 } }
    public var negativeElevationGainMeters: Double? { negativeElevationGainRaw.map { Double($0) / 10 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> TreadmillData {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.treadmillData)
        let flags = try c.uint16("flags")
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        var d = TreadmillData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
        if !has(0) { d.instantaneousSpeedRaw = try c.uint16("instantaneous speed") }
        if has(1) { d.averageSpeedRaw = try c.uint16("average speed") }
        if has(2) { d.totalDistanceMeters = try c.uint24("total distance") }
        if has(3) {
            d.inclinationRaw = notAvailable(try c.sint16("inclination"))
            d.rampAngleRaw = notAvailable(try c.sint16("ramp angle setting"))
        }
        if has(4) {
            d.positiveElevationGainRaw = try c.uint16("positive elevation gain")
            d.negativeElevationGainRaw = try c.uint16("negative elevation gain")
        }
        if has(5) { d.instantaneousPaceRaw = try c.uint8("instantaneous pace") }
        if has(6) { d.averagePaceRaw = try c.uint8("average pace") }
        d.common = try FitnessMachineCommon.read(&c, flags: UInt32(flags), firstBit: 7)
        if has(12) {
            d.forceOnBelt = notAvailable(try c.sint16("force on belt"))
            d.powerOutput = notAvailable(try c.sint16("power output"))
        }
        d.ignoredTrailingBytes = c.remaining
        return d
    }

    init(flags: UInt16, moreData: Bool, common: FitnessMachineCommon, ignoredTrailingBytes: Int) {
        self.flags = flags
        self.moreData = moreData
        self.common = common
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }
}

/// Cross Trainer Data (0x2ACE), 24-bit flags.
///
/// Order: instantaneous speed (bit 0 == 0), average speed (bit 1), total distance (uint24 m;
/// bit 2), steps per minute + average step rate (uint16 each; bit 3), stride count (uint16,
/// 0.1 stride resolution per FTMS v1.0; bit 4), positive + negative elevation gain (uint16 m each;
/// bit 5), inclination + ramp angle setting (sint16 0.1 % / 0.1 deg; bit 6), resistance level
/// (sint16; bit 7), instantaneous power (sint16 W; bit 8), average power (sint16 W; bit 9),
/// expended energy (bit 10), heart rate (bit 11), MET (bit 12), elapsed time (bit 13), remaining
/// time (bit 14). Bit 15 is the movement direction (0 forward, 1 backward); bits 16-23 reserved.
public struct CrossTrainerData: Hashable, Sendable {
    public var flags: UInt32
    public var moreData: Bool
    public var instantaneousSpeedRaw: UInt16?
    public var averageSpeedRaw: UInt16?
    public var totalDistanceMeters: UInt32?
    public var stepsPerMinute: UInt16?
    public var averageStepRate: UInt16?
    /// Raw stride count as sent (resolution 0.1 per FTMS v1.0).
    public var strideCountRaw: UInt16?
    /// Metres.
    public var positiveElevationGain: UInt16?
    public var negativeElevationGain: UInt16?
    public var inclinationRaw: Int16?
    public var rampAngleRaw: Int16?
    /// Raw, unitless: the scale differs between specification revisions and machines.
    public var resistanceLevelRaw: Int16?
    public var instantaneousPower: Int16?
    public var averagePower: Int16?
    public var common: FitnessMachineCommon
    public var movingBackward: Bool
    public var ignoredTrailingBytes: Int

    public var instantaneousSpeedKilometersPerHour: Double? { instantaneousSpeedRaw.map { Double($0) / 100 } }
    public var averageSpeedKilometersPerHour: Double? { averageSpeedRaw.map { Double($0) / 100 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> CrossTrainerData {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.crossTrainerData)
        let flags = try c.uint24("flags")
        func has(_ bit: UInt32) -> Bool { flags & (1 << bit) != 0 }
        var d = CrossTrainerData(flags: flags, moreData: has(0), common: FitnessMachineCommon(),
                                 movingBackward: has(15), ignoredTrailingBytes: 0)
        if !has(0) { d.instantaneousSpeedRaw = try c.uint16("instantaneous speed") }
        if has(1) { d.averageSpeedRaw = try c.uint16("average speed") }
        if has(2) { d.totalDistanceMeters = try c.uint24("total distance") }
        if has(3) {
            d.stepsPerMinute = try c.uint16("steps per minute")
            d.averageStepRate = try c.uint16("average step rate")
        }
        if has(4) { d.strideCountRaw = try c.uint16("stride count") }
        if has(5) {
            d.positiveElevationGain = try c.uint16("positive elevation gain")
            d.negativeElevationGain = try c.uint16("negative elevation gain")
        }
        if has(6) {
            d.inclinationRaw = notAvailable(try c.sint16("inclination"))
            d.rampAngleRaw = notAvailable(try c.sint16("ramp angle setting"))
        }
        if has(7) { d.resistanceLevelRaw = try c.sint16("resistance level") }
        if has(8) { d.instantaneousPower = try c.sint16("instantaneous power") }
        if has(9) { d.averagePower = try c.sint16("average power") }
        d.common = try FitnessMachineCommon.read(&c, flags: flags, firstBit: 10)
        d.ignoredTrailingBytes = c.remaining
        return d
    }

    init(flags: UInt32, moreData: Bool, common: FitnessMachineCommon, movingBackward: Bool, ignoredTrailingBytes: Int) {
        self.flags = flags
        self.moreData = moreData
        self.common = common
        self.movingBackward = movingBackward
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }
}

/// Indoor Bike Data (0x2AD2), 16-bit flags.
///
/// Order: instantaneous speed (bit 0 == 0), average speed (bit 1), instantaneous cadence (uint16
/// 0.5 rpm; bit 2), average cadence (uint16 0.5 rpm; bit 3), total distance (uint24 m; bit 4),
/// resistance level (sint16; bit 5), instantaneous power (sint16 W; bit 6), average power (sint16
/// W; bit 7), expended energy (bit 8), heart rate (bit 9), MET (bit 10), elapsed time (bit 11),
/// remaining time (bit 12).
public struct IndoorBikeData: Hashable, Sendable {
    public var flags: UInt16
    public var moreData: Bool
    public var instantaneousSpeedRaw: UInt16?
    public var averageSpeedRaw: UInt16?
    /// Raw 0.5 rpm.
    public var instantaneousCadenceRaw: UInt16?
    public var averageCadenceRaw: UInt16?
    public var totalDistanceMeters: UInt32?
    /// Raw, unitless: the scale differs between specification revisions and machines.
    public var resistanceLevelRaw: Int16?
    public var instantaneousPower: Int16?
    public var averagePower: Int16?
    public var common: FitnessMachineCommon
    public var ignoredTrailingBytes: Int

    public var instantaneousSpeedKilometersPerHour: Double? { instantaneousSpeedRaw.map { Double($0) / 100 } }
    public var averageSpeedKilometersPerHour: Double? { averageSpeedRaw.map { Double($0) / 100 } }
    public var instantaneousCadenceRPM: Double? { instantaneousCadenceRaw.map { Double($0) / 2 } }
    public var averageCadenceRPM: Double? { averageCadenceRaw.map { Double($0) / 2 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> IndoorBikeData {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.indoorBikeData)
        let flags = try c.uint16("flags")
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        var d = IndoorBikeData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
        if !has(0) { d.instantaneousSpeedRaw = try c.uint16("instantaneous speed") }
        if has(1) { d.averageSpeedRaw = try c.uint16("average speed") }
        if has(2) { d.instantaneousCadenceRaw = try c.uint16("instantaneous cadence") }
        if has(3) { d.averageCadenceRaw = try c.uint16("average cadence") }
        if has(4) { d.totalDistanceMeters = try c.uint24("total distance") }
        if has(5) { d.resistanceLevelRaw = try c.sint16("resistance level") }
        if has(6) { d.instantaneousPower = try c.sint16("instantaneous power") }
        if has(7) { d.averagePower = try c.sint16("average power") }
        d.common = try FitnessMachineCommon.read(&c, flags: UInt32(flags), firstBit: 8)
        d.ignoredTrailingBytes = c.remaining
        return d
    }

    init(flags: UInt16, moreData: Bool, common: FitnessMachineCommon, ignoredTrailingBytes: Int) {
        self.flags = flags
        self.moreData = moreData
        self.common = common
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }
}

/// Rower Data (0x2AD1), 16-bit flags.
///
/// Order: stroke rate (uint8 0.5 /min) + stroke count (uint16) (bit 0 == 0), average stroke rate
/// (uint8 0.5 /min; bit 1), total distance (uint24 m; bit 2), instantaneous pace (uint16 s per
/// 500 m; bit 3), average pace (uint16 s per 500 m; bit 4), instantaneous power (sint16 W; bit 5),
/// average power (sint16 W; bit 6), resistance level (sint16; bit 7), expended energy (bit 8),
/// heart rate (bit 9), MET (bit 10), elapsed time (bit 11), remaining time (bit 12).
public struct RowerData: Hashable, Sendable {
    public var flags: UInt16
    public var moreData: Bool
    /// Raw 0.5 strokes per minute.
    public var strokeRateRaw: UInt8?
    public var strokeCount: UInt16?
    public var averageStrokeRateRaw: UInt8?
    public var totalDistanceMeters: UInt32?
    /// Seconds per 500 m.
    public var instantaneousPace: UInt16?
    public var averagePace: UInt16?
    public var instantaneousPower: Int16?
    public var averagePower: Int16?
    /// Raw, unitless: the scale differs between specification revisions and machines.
    public var resistanceLevelRaw: Int16?
    public var common: FitnessMachineCommon
    public var ignoredTrailingBytes: Int

    public var strokeRatePerMinute: Double? { strokeRateRaw.map { Double($0) / 2 } }
    public var averageStrokeRatePerMinute: Double? { averageStrokeRateRaw.map { Double($0) / 2 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> RowerData {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.rowerData)
        let flags = try c.uint16("flags")
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        var d = RowerData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
        if !has(0) {
            d.strokeRateRaw = try c.uint8("stroke rate")
            d.strokeCount = try c.uint16("stroke count")
        }
        if has(1) { d.averageStrokeRateRaw = try c.uint8("average stroke rate") }
        if has(2) { d.totalDistanceMeters = try c.uint24("total distance") }
        if has(3) { d.instantaneousPace = try c.uint16("instantaneous pace") }
        if has(4) { d.averagePace = try c.uint16("average pace") }
        if has(5) { d.instantaneousPower = try c.sint16("instantaneous power") }
        if has(6) { d.averagePower = try c.sint16("average power") }
        if has(7) { d.resistanceLevelRaw = try c.sint16("resistance level") }
        d.common = try FitnessMachineCommon.read(&c, flags: UInt32(flags), firstBit: 8)
        d.ignoredTrailingBytes = c.remaining
        return d
    }

    init(flags: UInt16, moreData: Bool, common: FitnessMachineCommon, ignoredTrailingBytes: Int) {
        self.flags = flags
        self.moreData = moreData
        self.common = common
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }
}

/// Fitness Machine Feature (0x2ACC): fitness machine features (uint32) and target setting
/// features (uint32).
public struct FitnessMachineFeature: Hashable, Sendable {
    public struct Features: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let averageSpeed = Features(rawValue: 1 << 0)
        public static let cadence = Features(rawValue: 1 << 1)
        public static let totalDistance = Features(rawValue: 1 << 2)
        public static let inclination = Features(rawValue: 1 << 3)
        public static let elevationGain = Features(rawValue: 1 << 4)
        public static let pace = Features(rawValue: 1 << 5)
        public static let stepCount = Features(rawValue: 1 << 6)
        public static let resistanceLevel = Features(rawValue: 1 << 7)
        public static let strideCount = Features(rawValue: 1 << 8)
        public static let expendedEnergy = Features(rawValue: 1 << 9)
        public static let heartRateMeasurement = Features(rawValue: 1 << 10)
        public static let metabolicEquivalent = Features(rawValue: 1 << 11)
        public static let elapsedTime = Features(rawValue: 1 << 12)
        public static let remainingTime = Features(rawValue: 1 << 13)
        public static let powerMeasurement = Features(rawValue: 1 << 14)
        public static let forceOnBeltAndPowerOutput = Features(rawValue: 1 << 15)
        public static let userDataRetention = Features(rawValue: 1 << 16)
    }

    public var features: Features
    /// Target setting features, raw (this module never writes targets).
    public var targetSettingFeatures: UInt32
    public var ignoredTrailingBytes: Int

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> FitnessMachineFeature {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.fitnessMachineFeature)
        return FitnessMachineFeature(features: Features(rawValue: try c.uint32("fitness machine features")),
                                     targetSettingFeatures: try c.uint32("target setting features"),
                                     ignoredTrailingBytes: c.remaining)
    }
}
