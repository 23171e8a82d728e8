/// The unit system a Weight Scale or Body Composition measurement is in (flags bit 0).
public enum MeasurementUnitSystem: Hashable, Sendable {
    /// Mass in 0.005 kg, height in 0.001 m.
    case si
    /// Mass in 0.01 lb, height in 0.1 in.
    case imperial

    static let kilogramsPerPound = 0.45359237
    static let metersPerInch = 0.0254

    /// Kilograms from a raw uint16 mass field.
    public func kilograms(_ raw: UInt16) -> Double {
        self == .si ? Double(raw) / 200 : Double(raw) / 100 * Self.kilogramsPerPound
    }
    /// Metres from a raw uint16 height field.
    public func meters(_ raw: UInt16) -> Double {
        self == .si ? Double(raw) / 1000 : Double(raw) / 10 * Self.metersPerInch
    }
}

/// Weight Measurement (0x2A9D).
///
/// Layout: flags (uint8: bit 0 imperial, bit 1 time stamp, bit 2 user id, bit 3 BMI and height);
/// weight (uint16; 0.005 kg or 0.01 lb; 0xFFFF = measurement unsuccessful); time stamp (Date
/// Time); user id (uint8, 0xFF = unknown user); BMI (uint16, 0.1 kg/m²) + height (uint16, 0.001 m
/// or 0.1 in).
public struct WeightScaleMeasurement: Hashable, Sendable {
    public var flags: UInt8
    public var units: MeasurementUnitSystem
    /// Raw mass units; nil when the scale reports "measurement unsuccessful" (0xFFFF).
    public var weightRaw: UInt16?
    public var timestamp: GATTDateTime?
    /// 0xFF means "unknown user".
    public var userID: UInt8?
    /// Raw 0.1 kg/m².
    public var bmiRaw: UInt16?
    /// Raw height units.
    public var heightRaw: UInt16?
    public var ignoredTrailingBytes: Int

    public var weightKilograms: Double? { weightRaw.map(units.kilograms) }
    public var bmi: Double? { bmiRaw.map { Double($0) / 10 } }
    public var heightMeters: Double? { heightRaw.map(units.meters) }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> WeightScaleMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.weightMeasurement)
        let flags = try c.uint8("flags")
        let weight = try c.uint16("weight")
        let timestamp = flags & 0x02 != 0 ? try c.dateTime("time stamp") : nil
        let user = flags & 0x04 != 0 ? try c.uint8("user id") : nil
        var bmi: UInt16?
        var height: UInt16?
        if flags & 0x08 != 0 {
            bmi = try c.uint16("BMI")
            height = try c.uint16("height")
        }
        return WeightScaleMeasurement(flags: flags, units: flags & 0x01 != 0 ? .imperial : .si,
                                      weightRaw: weight == 0xFFFF ? nil : weight, timestamp: timestamp,
                                      userID: user, bmiRaw: bmi, heightRaw: height, ignoredTrailingBytes: c.remaining)
    }
}

/// Weight Scale Feature (0x2A9E).
public struct WeightScaleFeature: Hashable, Sendable {
    public var rawValue: UInt32
    public var timeStampSupported: Bool { rawValue & 0x01 != 0 }
    public var multipleUsersSupported: Bool { rawValue & 0x02 != 0 }
    public var bmiSupported: Bool { rawValue & 0x04 != 0 }
    /// Weight resolution code (bits 3-6): 0 not specified, 1 = 0.5 kg / 1 lb ... 7 = 0.005 kg / 0.01 lb.
    public var weightResolution: UInt8 { UInt8((rawValue >> 3) & 0x0F) }
    /// Height resolution code (bits 7-9): 0 not specified, 1 = 0.01 m / 1 in, 2 = 0.005 m / 0.5 in, 3 = 0.001 m / 0.1 in.
    public var heightResolution: UInt8 { UInt8((rawValue >> 7) & 0x07) }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> WeightScaleFeature {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.weightScaleFeature)
        return WeightScaleFeature(rawValue: try c.uint32("weight scale feature"))
    }
}

/// Body Composition Measurement (0x2A9C).
///
/// Layout: flags (uint16); body fat percentage (uint16, 0.1 %; 0xFFFF = unsuccessful); then each
/// when its flag is set: time stamp (bit 1), user id (bit 2), basal metabolism (uint16 kJ; bit
/// 3), muscle percentage (uint16 0.1 %; bit 4), muscle mass (bit 5), fat free mass (bit 6), soft
/// lean mass (bit 7), body water mass (bit 8), impedance (uint16 0.1 ohm; bit 9), weight (bit 10),
/// height (bit 11). Masses are uint16 in 0.005 kg or 0.01 lb (bit 0), height 0.001 m or 0.1 in.
/// Bit 12: the measurement is split over several notifications (`isMultiplePacket`); the driver
/// merges them.
public struct BodyCompositionMeasurement: Hashable, Sendable {
    public var flags: UInt16
    public var units: MeasurementUnitSystem
    /// Raw 0.1 %; nil when the device reports "measurement unsuccessful" (0xFFFF).
    public var bodyFatPercentageRaw: UInt16?
    public var timestamp: GATTDateTime?
    public var userID: UInt8?
    public var basalMetabolismKilojoules: UInt16?
    /// Raw 0.1 %.
    public var musclePercentageRaw: UInt16?
    /// Raw mass units (see `units`).
    public var muscleMassRaw: UInt16?
    public var fatFreeMassRaw: UInt16?
    public var softLeanMassRaw: UInt16?
    public var bodyWaterMassRaw: UInt16?
    /// Raw 0.1 ohm.
    public var impedanceRaw: UInt16?
    public var weightRaw: UInt16?
    public var heightRaw: UInt16?
    public var isMultiplePacket: Bool
    public var ignoredTrailingBytes: Int

    public var bodyFatPercentage: Double? { bodyFatPercentageRaw.map { Double($0) / 10 } }
    public var musclePercentage: Double? { musclePercentageRaw.map { Double($0) / 10 } }
    public var muscleMassKilograms: Double? { muscleMassRaw.map(units.kilograms) }
    public var fatFreeMassKilograms: Double? { fatFreeMassRaw.map(units.kilograms) }
    public var softLeanMassKilograms: Double? { softLeanMassRaw.map(units.kilograms) }
    public var bodyWaterMassKilograms: Double? { bodyWaterMassRaw.map(units.kilograms) }
    public var impedanceOhms: Double? { impedanceRaw.map { Double($0) / 10 } }
    public var weightKilograms: Double? { weightRaw.map(units.kilograms) }
    public var heightMeters: Double? { heightRaw.map(units.meters) }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> BodyCompositionMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.bodyCompositionMeasurement)
        let flags = try c.uint16("flags")
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        let fat = try c.uint16("body fat percentage")
        var m = BodyCompositionMeasurement(flags: flags, units: has(0) ? .imperial : .si,
                                           bodyFatPercentageRaw: fat == 0xFFFF ? nil : fat,
                                           isMultiplePacket: has(12), ignoredTrailingBytes: 0)
        if has(1) { m.timestamp = try c.dateTime("time stamp") }
        if has(2) { m.userID = try c.uint8("user id") }
        if has(3) { m.basalMetabolismKilojoules = try c.uint16("basal metabolism") }
        if has(4) { m.musclePercentageRaw = try c.uint16("muscle percentage") }
        if has(5) { m.muscleMassRaw = try c.uint16("muscle mass") }
        if has(6) { m.fatFreeMassRaw = try c.uint16("fat free mass") }
        if has(7) { m.softLeanMassRaw = try c.uint16("soft lean mass") }
        if has(8) { m.bodyWaterMassRaw = try c.uint16("body water mass") }
        if has(9) { m.impedanceRaw = try c.uint16("impedance") }
        if has(10) { m.weightRaw = try c.uint16("weight") }
        if has(11) { m.heightRaw = try c.uint16("height") }
        m.ignoredTrailingBytes = c.remaining
        return m
    }

    init(flags: UInt16, units: MeasurementUnitSystem, bodyFatPercentageRaw: UInt16?, isMultiplePacket: Bool,
         ignoredTrailingBytes: Int) {
        self.flags = flags
        self.units = units
        self.bodyFatPercentageRaw = bodyFatPercentageRaw
        self.isMultiplePacket = isMultiplePacket
        self.ignoredTrailingBytes = ignoredTrailingBytes
    }
}
