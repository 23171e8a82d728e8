/// Heart Rate Measurement (0x2A37).
///
/// Layout: flags (uint8); heart rate (uint8, or uint16 when flags bit 0 is set); energy expended
/// (uint16 kJ, when bit 3); RR intervals (uint16 each, 1/1024 s, when bit 4, filling the rest).
/// Bits 1-2 are the sensor contact status: bit 2 = feature supported, bit 1 = contact detected.
public struct HeartRateMeasurement: Hashable, Sendable {
    public enum SensorContact: Hashable, Sendable {
        /// The sensor does not report contact (status 0 or 1).
        case notSupported
        /// Supported, and contact is not detected: the reading is probably not a heart rate.
        case notDetected
        case detected
    }

    public var flags: UInt8
    /// Beats per minute.
    public var beatsPerMinute: UInt16
    /// True when the value was sent as uint16.
    public var isUInt16Format: Bool
    public var sensorContact: SensorContact
    /// Accumulated energy expended in kilojoules since the last reset (saturates at 65535).
    public var energyExpendedKilojoules: UInt16?
    /// RR intervals in the order received, raw units of 1/1024 s.
    public var rrIntervalsRaw: [UInt16]
    /// Bytes after the last whole field (an odd byte after the RR intervals, for instance).
    public var ignoredTrailingBytes: Int

    /// RR intervals in seconds (raw / 1024).
    public var rrIntervals: [Double] { rrIntervalsRaw.map { Double($0) / 1024 } }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> HeartRateMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.heartRateMeasurement)
        let flags = try c.uint8("flags")
        let wide = flags & 0x01 != 0
        let bpm = wide ? try c.uint16("heart rate") : UInt16(try c.uint8("heart rate"))
        let contact: SensorContact
        switch (flags >> 1) & 0x03 {
        case 2: contact = .notDetected
        case 3: contact = .detected
        default: contact = .notSupported
        }
        let energy = flags & 0x08 != 0 ? try c.uint16("energy expended") : nil
        var rr: [UInt16] = []
        if flags & 0x10 != 0 {
            while c.remaining >= 2 { rr.append(try c.uint16("RR interval")) }
        }
        return HeartRateMeasurement(flags: flags, beatsPerMinute: bpm, isUInt16Format: wide,
                                    sensorContact: contact, energyExpendedKilojoules: energy,
                                    rrIntervalsRaw: rr, ignoredTrailingBytes: c.remaining)
    }
}

/// Body Sensor Location (0x2A38).
public enum BodySensorLocation: Hashable, Sendable {
    case other, chest, wrist, finger, hand, earLobe, foot
    case reserved(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .other
        case 1: self = .chest
        case 2: self = .wrist
        case 3: self = .finger
        case 4: self = .hand
        case 5: self = .earLobe
        case 6: self = .foot
        default: self = .reserved(rawValue)
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> BodySensorLocation {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.bodySensorLocation)
        return BodySensorLocation(rawValue: try c.uint8("body sensor location"))
    }
}

/// Battery Level (0x2A19): percent, 0...100.
public struct BatteryLevel: Hashable, Sendable {
    public var percent: UInt8
    public var ignoredTrailingBytes: Int

    /// Throws for values above 100 (reserved by the specification).
    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> BatteryLevel {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.batteryLevel)
        let level = try c.uint8("battery level")
        guard level <= 100 else { throw c.invalid("battery level", Int(level), at: 0) }
        return BatteryLevel(percent: level, ignoredTrailingBytes: c.remaining)
    }
}
