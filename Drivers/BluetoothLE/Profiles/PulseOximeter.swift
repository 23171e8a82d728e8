/// A pair of SpO2 (%) and pulse rate (bpm) readings, both SFLOAT.
public struct SpO2PulseRate: Hashable, Sendable {
    public var spO2: MedicalFloat
    public var pulseRate: MedicalFloat
    public init(spO2: MedicalFloat, pulseRate: MedicalFloat) {
        self.spO2 = spO2
        self.pulseRate = pulseRate
    }

    static func read(_ c: inout ByteCursor, _ name: String) throws(ProfileDecodeError) -> SpO2PulseRate {
        SpO2PulseRate(spO2: try c.sfloat("\(name) SpO2"), pulseRate: try c.sfloat("\(name) pulse rate"))
    }
}

/// PLX Measurement Status (uint16). Bits 0-4 are reserved.
public struct PLXMeasurementStatus: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let measurementOngoing = Self(rawValue: 1 << 5)
    public static let earlyEstimatedData = Self(rawValue: 1 << 6)
    public static let validatedData = Self(rawValue: 1 << 7)
    public static let fullyQualifiedData = Self(rawValue: 1 << 8)
    public static let dataFromMeasurementStorage = Self(rawValue: 1 << 9)
    public static let dataForDemonstration = Self(rawValue: 1 << 10)
    public static let dataForTesting = Self(rawValue: 1 << 11)
    public static let calibrationOngoing = Self(rawValue: 1 << 12)
    public static let measurementUnavailable = Self(rawValue: 1 << 13)
    public static let questionableMeasurementDetected = Self(rawValue: 1 << 14)
    public static let invalidMeasurementDetected = Self(rawValue: 1 << 15)
}

/// PLX Device and Sensor Status (uint24). Bits 16-23 are reserved.
public struct PLXDeviceAndSensorStatus: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let extendedDisplayUpdateOngoing = Self(rawValue: 1 << 0)
    public static let equipmentMalfunctionDetected = Self(rawValue: 1 << 1)
    public static let signalProcessingIrregularityDetected = Self(rawValue: 1 << 2)
    public static let inadequateSignalDetected = Self(rawValue: 1 << 3)
    public static let poorSignalDetected = Self(rawValue: 1 << 4)
    public static let lowPerfusionDetected = Self(rawValue: 1 << 5)
    public static let erraticSignalDetected = Self(rawValue: 1 << 6)
    public static let nonpulsatileSignalDetected = Self(rawValue: 1 << 7)
    public static let questionablePulseDetected = Self(rawValue: 1 << 8)
    public static let signalAnalysisOngoing = Self(rawValue: 1 << 9)
    public static let sensorInterferenceDetected = Self(rawValue: 1 << 10)
    public static let sensorUnconnectedToUser = Self(rawValue: 1 << 11)
    public static let unknownSensorConnected = Self(rawValue: 1 << 12)
    public static let sensorDisplaced = Self(rawValue: 1 << 13)
    public static let sensorMalfunctioning = Self(rawValue: 1 << 14)
    public static let sensorDisconnected = Self(rawValue: 1 << 15)
}

/// PLX Spot-Check Measurement (0x2A5E).
///
/// Layout: flags (uint8: bit 0 timestamp, bit 1 measurement status, bit 2 device and sensor
/// status, bit 3 pulse amplitude index, bit 4 device clock is not set); SpO2 + PR (SFLOAT each);
/// timestamp (Date Time); measurement status (uint16); device and sensor status (uint24); pulse
/// amplitude index (SFLOAT %).
public struct PLXSpotCheckMeasurement: Hashable, Sendable {
    public var flags: UInt8
    public var reading: SpO2PulseRate
    public var timestamp: GATTDateTime?
    public var measurementStatus: PLXMeasurementStatus?
    public var deviceAndSensorStatus: PLXDeviceAndSensorStatus?
    /// Percent.
    public var pulseAmplitudeIndex: MedicalFloat?
    /// The device's clock was not set: its timestamp is not wall-clock time.
    public var deviceClockNotSet: Bool
    public var ignoredTrailingBytes: Int

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> PLXSpotCheckMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.plxSpotCheckMeasurement)
        let flags = try c.uint8("flags")
        let reading = try SpO2PulseRate.read(&c, "spot-check")
        let timestamp = flags & 0x01 != 0 ? try c.dateTime("timestamp") : nil
        let status = flags & 0x02 != 0 ? PLXMeasurementStatus(rawValue: try c.uint16("measurement status")) : nil
        let device = flags & 0x04 != 0 ? PLXDeviceAndSensorStatus(rawValue: try c.uint24("device and sensor status")) : nil
        let pai = flags & 0x08 != 0 ? try c.sfloat("pulse amplitude index") : nil
        return PLXSpotCheckMeasurement(flags: flags, reading: reading, timestamp: timestamp, measurementStatus: status,
                                       deviceAndSensorStatus: device, pulseAmplitudeIndex: pai,
                                       deviceClockNotSet: flags & 0x10 != 0, ignoredTrailingBytes: c.remaining)
    }
}

/// PLX Continuous Measurement (0x2A5F).
///
/// Layout: flags (uint8: bit 0 SpO2PR-Fast, bit 1 SpO2PR-Slow, bit 2 measurement status, bit 3
/// device and sensor status, bit 4 pulse amplitude index); SpO2PR-Normal (2 SFLOAT); SpO2PR-Fast;
/// SpO2PR-Slow; measurement status (uint16); device and sensor status (uint24); pulse amplitude
/// index (SFLOAT %).
public struct PLXContinuousMeasurement: Hashable, Sendable {
    public var flags: UInt8
    public var normal: SpO2PulseRate
    public var fast: SpO2PulseRate?
    public var slow: SpO2PulseRate?
    public var measurementStatus: PLXMeasurementStatus?
    public var deviceAndSensorStatus: PLXDeviceAndSensorStatus?
    public var pulseAmplitudeIndex: MedicalFloat?
    public var ignoredTrailingBytes: Int

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> PLXContinuousMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.plxContinuousMeasurement)
        let flags = try c.uint8("flags")
        let normal = try SpO2PulseRate.read(&c, "normal")
        let fast = flags & 0x01 != 0 ? try SpO2PulseRate.read(&c, "fast") : nil
        let slow = flags & 0x02 != 0 ? try SpO2PulseRate.read(&c, "slow") : nil
        let status = flags & 0x04 != 0 ? PLXMeasurementStatus(rawValue: try c.uint16("measurement status")) : nil
        let device = flags & 0x08 != 0 ? PLXDeviceAndSensorStatus(rawValue: try c.uint24("device and sensor status")) : nil
        let pai = flags & 0x10 != 0 ? try c.sfloat("pulse amplitude index") : nil
        return PLXContinuousMeasurement(flags: flags, normal: normal, fast: fast, slow: slow, measurementStatus: status,
                                        deviceAndSensorStatus: device, pulseAmplitudeIndex: pai,
                                        ignoredTrailingBytes: c.remaining)
    }
}
