/// Blood Pressure Measurement (0x2A35) and Intermediate Cuff Pressure (0x2A36, same layout: the
/// systolic field carries the current cuff pressure, diastolic and MAP are NaN).
///
/// Layout: flags (uint8: bit 0 kPa rather than mmHg, bit 1 time stamp, bit 2 pulse rate, bit 3
/// user id, bit 4 measurement status); systolic, diastolic, mean arterial pressure (SFLOAT each);
/// time stamp (Date Time); pulse rate (SFLOAT bpm); user id (uint8); measurement status (uint16).
public struct BloodPressureMeasurement: Hashable, Sendable {
    public enum PressureUnit: Hashable, Sendable { case mmHg, kPa }

    /// Measurement Status bits.
    public struct Status: Hashable, Sendable {
        public enum PulseRateRange: Hashable, Sendable { case withinRange, exceedsUpperLimit, belowLowerLimit, reserved }
        public var rawValue: UInt16
        public var bodyMovementDetected: Bool { rawValue & 0x01 != 0 }
        public var cuffTooLoose: Bool { rawValue & 0x02 != 0 }
        public var irregularPulseDetected: Bool { rawValue & 0x04 != 0 }
        public var pulseRateRange: PulseRateRange {
            switch (rawValue >> 3) & 0x03 {
            case 0: return .withinRange
            case 1: return .exceedsUpperLimit
            case 2: return .belowLowerLimit
            default: return .reserved
            }
        }
        public var improperMeasurementPosition: Bool { rawValue & 0x20 != 0 }
        public init(rawValue: UInt16) { self.rawValue = rawValue }
    }

    public static let millimetersOfMercuryPerKilopascal = 7.500_615_758

    public var flags: UInt8
    public var unit: PressureUnit
    public var systolic: MedicalFloat
    public var diastolic: MedicalFloat
    public var meanArterialPressure: MedicalFloat
    public var timestamp: GATTDateTime?
    /// Beats per minute.
    public var pulseRate: MedicalFloat?
    public var userID: UInt8?
    public var status: Status?
    public var ignoredTrailingBytes: Int

    func mmHg(_ v: MedicalFloat) -> Double? {
        v.doubleValue.map { unit == .mmHg ? $0 : $0 * Self.millimetersOfMercuryPerKilopascal }
    }
    public var systolicMmHg: Double? { mmHg(systolic) }
    public var diastolicMmHg: Double? { mmHg(diastolic) }
    public var meanArterialPressureMmHg: Double? { mmHg(meanArterialPressure) }

    public static func decode(_ bytes: [UInt8], characteristic: UInt16 = GATTCharacteristic.bloodPressureMeasurement)
        throws(ProfileDecodeError) -> BloodPressureMeasurement {
        var c = ByteCursor(bytes, characteristic: characteristic)
        let flags = try c.uint8("flags")
        let systolic = try c.sfloat(characteristic == GATTCharacteristic.intermediateCuffPressure ? "current cuff pressure" : "systolic")
        let diastolic = try c.sfloat("diastolic")
        let map = try c.sfloat("mean arterial pressure")
        let timestamp = flags & 0x02 != 0 ? try c.dateTime("time stamp") : nil
        let pulse = flags & 0x04 != 0 ? try c.sfloat("pulse rate") : nil
        let user = flags & 0x08 != 0 ? try c.uint8("user id") : nil
        let status = flags & 0x10 != 0 ? Status(rawValue: try c.uint16("measurement status")) : nil
        return BloodPressureMeasurement(flags: flags, unit: flags & 0x01 != 0 ? .kPa : .mmHg, systolic: systolic,
                                        diastolic: diastolic, meanArterialPressure: map, timestamp: timestamp,
                                        pulseRate: pulse, userID: user, status: status, ignoredTrailingBytes: c.remaining)
    }

    /// Intermediate Cuff Pressure (0x2A36).
    public static func decodeIntermediateCuffPressure(_ bytes: [UInt8]) throws(ProfileDecodeError) -> BloodPressureMeasurement {
        try decode(bytes, characteristic: GATTCharacteristic.intermediateCuffPressure)
    }
}

/// Temperature Measurement (0x2A1C) and Intermediate Temperature (0x2A1E).
///
/// Layout: flags (uint8: bit 0 Fahrenheit, bit 1 time stamp, bit 2 temperature type); temperature
/// (32-bit FLOAT); time stamp (Date Time); temperature type (uint8).
public struct TemperatureMeasurement: Hashable, Sendable {
    public enum TemperatureUnit: Hashable, Sendable { case celsius, fahrenheit }

    /// Temperature Type (0x2A1D) values.
    public enum TemperatureType: Hashable, Sendable {
        case armpit, body, ear, finger, gastrointestinalTract, mouth, rectum, toe, tympanum
        case reserved(UInt8)
        public init(rawValue: UInt8) {
            switch rawValue {
            case 1: self = .armpit
            case 2: self = .body
            case 3: self = .ear
            case 4: self = .finger
            case 5: self = .gastrointestinalTract
            case 6: self = .mouth
            case 7: self = .rectum
            case 8: self = .toe
            case 9: self = .tympanum
            default: self = .reserved(rawValue)
            }
        }
    }

    public var flags: UInt8
    public var unit: TemperatureUnit
    public var temperature: MedicalFloat
    public var timestamp: GATTDateTime?
    public var temperatureType: TemperatureType?
    public var ignoredTrailingBytes: Int

    public var celsius: Double? {
        temperature.doubleValue.map { unit == .celsius ? $0 : ($0 - 32) * 5 / 9 }
    }

    public static func decode(_ bytes: [UInt8], characteristic: UInt16 = GATTCharacteristic.temperatureMeasurement)
        throws(ProfileDecodeError) -> TemperatureMeasurement {
        var c = ByteCursor(bytes, characteristic: characteristic)
        let flags = try c.uint8("flags")
        let value = try c.float("temperature")
        let timestamp = flags & 0x02 != 0 ? try c.dateTime("time stamp") : nil
        let type = flags & 0x04 != 0 ? TemperatureType(rawValue: try c.uint8("temperature type")) : nil
        return TemperatureMeasurement(flags: flags, unit: flags & 0x01 != 0 ? .fahrenheit : .celsius,
                                      temperature: value, timestamp: timestamp, temperatureType: type,
                                      ignoredTrailingBytes: c.remaining)
    }

    /// Intermediate Temperature (0x2A1E).
    public static func decodeIntermediate(_ bytes: [UInt8]) throws(ProfileDecodeError) -> TemperatureMeasurement {
        try decode(bytes, characteristic: GATTCharacteristic.intermediateTemperature)
    }
}
