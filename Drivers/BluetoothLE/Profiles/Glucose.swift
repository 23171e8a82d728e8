/// Glucose Measurement (0x2A18).
///
/// Layout: flags (uint8: bit 0 time offset, bit 1 concentration + type-sample location, bit 2
/// concentration in mol/L rather than kg/L, bit 3 sensor status annunciation, bit 4 context
/// information follows); sequence number (uint16); base time (Date Time); time offset (sint16
/// minutes); concentration (SFLOAT) + type (low nibble) and sample location (high nibble) (uint8);
/// sensor status annunciation (uint16).
public struct GlucoseMeasurement: Hashable, Sendable {
    public enum ConcentrationUnit: Hashable, Sendable { case kilogramsPerLiter, molesPerLiter }

    public enum SampleType: Hashable, Sendable {
        case capillaryWholeBlood, capillaryPlasma, venousWholeBlood, venousPlasma, arterialWholeBlood
        case arterialPlasma, undeterminedWholeBlood, undeterminedPlasma, interstitialFluid, controlSolution
        case reserved(UInt8)
        public init(nibble: UInt8) {
            switch nibble {
            case 1: self = .capillaryWholeBlood
            case 2: self = .capillaryPlasma
            case 3: self = .venousWholeBlood
            case 4: self = .venousPlasma
            case 5: self = .arterialWholeBlood
            case 6: self = .arterialPlasma
            case 7: self = .undeterminedWholeBlood
            case 8: self = .undeterminedPlasma
            case 9: self = .interstitialFluid
            case 10: self = .controlSolution
            default: self = .reserved(nibble)
            }
        }
    }

    public enum SampleLocation: Hashable, Sendable {
        case finger, alternateSiteTest, earlobe, controlSolution, notAvailable
        case reserved(UInt8)
        public init(nibble: UInt8) {
            switch nibble {
            case 1: self = .finger
            case 2: self = .alternateSiteTest
            case 3: self = .earlobe
            case 4: self = .controlSolution
            case 15: self = .notAvailable
            default: self = .reserved(nibble)
            }
        }
    }

    /// Sensor Status Annunciation bits.
    public struct SensorStatus: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let deviceBatteryLow = Self(rawValue: 1 << 0)
        public static let sensorMalfunction = Self(rawValue: 1 << 1)
        public static let sampleSizeInsufficient = Self(rawValue: 1 << 2)
        public static let stripInsertionError = Self(rawValue: 1 << 3)
        public static let stripTypeIncorrect = Self(rawValue: 1 << 4)
        public static let resultTooHigh = Self(rawValue: 1 << 5)
        public static let resultTooLow = Self(rawValue: 1 << 6)
        public static let temperatureTooHigh = Self(rawValue: 1 << 7)
        public static let temperatureTooLow = Self(rawValue: 1 << 8)
        public static let readInterrupted = Self(rawValue: 1 << 9)
        public static let generalDeviceFault = Self(rawValue: 1 << 10)
        public static let timeFault = Self(rawValue: 1 << 11)
    }

    /// Grams per mole of glucose, used to turn kg/L into mmol/L.
    public static let glucoseMolarMass = 180.156

    public var flags: UInt8
    public var sequenceNumber: UInt16
    public var baseTime: GATTDateTime
    /// Minutes to add to `baseTime`.
    public var timeOffsetMinutes: Int16?
    public var concentration: MedicalFloat?
    public var concentrationUnit: ConcentrationUnit
    public var type: SampleType?
    public var sampleLocation: SampleLocation?
    public var sensorStatus: SensorStatus?
    /// A Glucose Measurement Context with the same sequence number follows.
    public var contextFollows: Bool
    public var ignoredTrailingBytes: Int

    /// Concentration in mmol/L: mol/L x 1000, or kg/L x 10^6 / 180.156 g/mol. Nil for NaN/NRes etc.
    public var millimolesPerLiter: Double? {
        guard let value = concentration?.doubleValue else { return nil }
        switch concentrationUnit {
        case .molesPerLiter: return value * 1000
        case .kilogramsPerLiter: return value * 1_000_000 / Self.glucoseMolarMass
        }
    }

    /// Concentration in mg/dL.
    public var milligramsPerDeciliter: Double? {
        guard let value = concentration?.doubleValue else { return nil }
        switch concentrationUnit {
        case .kilogramsPerLiter: return value * 100_000
        case .molesPerLiter: return value * Self.glucoseMolarMass * 100_000 / 1000
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> GlucoseMeasurement {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.glucoseMeasurement)
        let flags = try c.uint8("flags")
        let sequence = try c.uint16("sequence number")
        let base = try c.dateTime("base time")
        let offset = flags & 0x01 != 0 ? try c.sint16("time offset") : nil
        var concentration: MedicalFloat?
        var type: SampleType?
        var location: SampleLocation?
        if flags & 0x02 != 0 {
            concentration = try c.sfloat("glucose concentration")
            let nibbles = try c.uint8("type-sample location")
            type = SampleType(nibble: nibbles & 0x0F)
            location = SampleLocation(nibble: nibbles >> 4)
        }
        let status = flags & 0x08 != 0 ? SensorStatus(rawValue: try c.uint16("sensor status annunciation")) : nil
        return GlucoseMeasurement(flags: flags, sequenceNumber: sequence, baseTime: base, timeOffsetMinutes: offset,
                                  concentration: concentration,
                                  concentrationUnit: flags & 0x04 != 0 ? .molesPerLiter : .kilogramsPerLiter,
                                  type: type, sampleLocation: location, sensorStatus: status,
                                  contextFollows: flags & 0x10 != 0, ignoredTrailingBytes: c.remaining)
    }
}

/// Glucose Measurement Context (0x2A34).
///
/// Layout: flags (uint8); sequence number (uint16); extended flags (uint8; bit 7); carbohydrate id
/// (uint8) + carbohydrate (SFLOAT kg) (bit 0); meal (uint8; bit 1); tester (low nibble) and health
/// (high nibble) (uint8; bit 2); exercise duration (uint16 s) + intensity (uint8 %) (bit 3);
/// medication id (uint8) + medication (SFLOAT, kg or litres by bit 5) (bit 4); HbA1c (SFLOAT %;
/// bit 6).
public struct GlucoseMeasurementContext: Hashable, Sendable {
    public enum MedicationUnit: Hashable, Sendable { case kilograms, liters }

    public var flags: UInt8
    public var sequenceNumber: UInt16
    public var extendedFlags: UInt8?
    /// 1 breakfast, 2 lunch, 3 dinner, 4 snack, 5 drink, 6 supper, 7 brunch.
    public var carbohydrateID: UInt8?
    /// Kilograms.
    public var carbohydrate: MedicalFloat?
    /// 1 preprandial, 2 postprandial, 3 fasting, 4 casual, 5 bedtime.
    public var meal: UInt8?
    /// Low nibble: 1 self, 2 health care professional, 3 lab test, 15 not available.
    public var tester: UInt8?
    /// High nibble: 1 minor issues, 2 major, 3 menses, 4 stress, 5 none, 15 not available.
    public var health: UInt8?
    /// Seconds (65535 = overrun).
    public var exerciseDuration: UInt16?
    /// Percent.
    public var exerciseIntensity: UInt8?
    /// 1 rapid acting, 2 short acting, 3 intermediate, 4 long acting, 5 pre-mixed insulin.
    public var medicationID: UInt8?
    public var medication: MedicalFloat?
    public var medicationUnit: MedicationUnit
    /// Percent.
    public var hbA1c: MedicalFloat?
    public var ignoredTrailingBytes: Int

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> GlucoseMeasurementContext {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.glucoseMeasurementContext)
        let flags = try c.uint8("flags")
        func has(_ bit: UInt8) -> Bool { flags & (1 << bit) != 0 }
        var x = GlucoseMeasurementContext(flags: flags, sequenceNumber: try c.uint16("sequence number"),
                                          medicationUnit: has(5) ? .liters : .kilograms)
        if has(7) { x.extendedFlags = try c.uint8("extended flags") }
        if has(0) {
            x.carbohydrateID = try c.uint8("carbohydrate id")
            x.carbohydrate = try c.sfloat("carbohydrate")
        }
        if has(1) { x.meal = try c.uint8("meal") }
        if has(2) {
            let nibbles = try c.uint8("tester-health")
            x.tester = nibbles & 0x0F
            x.health = nibbles >> 4
        }
        if has(3) {
            x.exerciseDuration = try c.uint16("exercise duration")
            x.exerciseIntensity = try c.uint8("exercise intensity")
        }
        if has(4) {
            x.medicationID = try c.uint8("medication id")
            x.medication = try c.sfloat("medication")
        }
        if has(6) { x.hbA1c = try c.sfloat("HbA1c") }
        x.ignoredTrailingBytes = c.remaining
        return x
    }

    init(flags: UInt8, sequenceNumber: UInt16, medicationUnit: MedicationUnit) {
        self.flags = flags
        self.sequenceNumber = sequenceNumber
        self.medicationUnit = medicationUnit
        self.ignoredTrailingBytes = 0
    }
}

/// Record Access Control Point (0x2A52), as the Glucose profile uses it to download stored
/// records. Only the read-side procedures are built (report records, report the number of
/// records, abort): HealthGate never deletes records on a device.
public enum RecordAccessControlPoint {
    public enum OpCode: UInt8, Sendable {
        case reportStoredRecords = 1
        case deleteStoredRecords = 2
        case abortOperation = 3
        case reportNumberOfStoredRecords = 4
        case numberOfStoredRecordsResponse = 5
        case responseCode = 6
    }

    public enum Operator: UInt8, Sendable {
        case null = 0
        case allRecords = 1
        case lessThanOrEqualTo = 2
        case greaterThanOrEqualTo = 3
        case withinRangeOf = 4
        case firstRecord = 5
        case lastRecord = 6
    }

    public enum ResponseCode: Hashable, Sendable {
        case success, opCodeNotSupported, invalidOperator, operatorNotSupported, invalidOperand
        case noRecordsFound, abortUnsuccessful, procedureNotCompleted, operandNotSupported
        case other(UInt8)
        public init(rawValue: UInt8) {
            switch rawValue {
            case 1: self = .success
            case 2: self = .opCodeNotSupported
            case 3: self = .invalidOperator
            case 4: self = .operatorNotSupported
            case 5: self = .invalidOperand
            case 6: self = .noRecordsFound
            case 7: self = .abortUnsuccessful
            case 8: self = .procedureNotCompleted
            case 9: self = .operandNotSupported
            default: self = .other(rawValue)
            }
        }
    }

    public enum Response: Hashable, Sendable {
        case numberOfStoredRecords(UInt16)
        case responseCode(request: UInt8, code: ResponseCode)
    }

    /// Filter type 0x01: the operand is a sequence number.
    static let sequenceNumberFilter: UInt8 = 0x01

    /// Report every stored record.
    public static func reportAllRecords() -> [UInt8] {
        [OpCode.reportStoredRecords.rawValue, Operator.allRecords.rawValue]
    }

    /// Report the records whose sequence number is >= `sequenceNumber` (the backlog since the last sync).
    public static func reportRecords(fromSequenceNumber sequenceNumber: UInt16) -> [UInt8] {
        [OpCode.reportStoredRecords.rawValue, Operator.greaterThanOrEqualTo.rawValue, sequenceNumberFilter,
         UInt8(sequenceNumber & 0xFF), UInt8(sequenceNumber >> 8)]
    }

    public static func reportNumberOfAllRecords() -> [UInt8] {
        [OpCode.reportNumberOfStoredRecords.rawValue, Operator.allRecords.rawValue]
    }

    public static func reportNumberOfRecords(fromSequenceNumber sequenceNumber: UInt16) -> [UInt8] {
        [OpCode.reportNumberOfStoredRecords.rawValue, Operator.greaterThanOrEqualTo.rawValue, sequenceNumberFilter,
         UInt8(sequenceNumber & 0xFF), UInt8(sequenceNumber >> 8)]
    }

    public static func abortOperation() -> [UInt8] {
        [OpCode.abortOperation.rawValue, Operator.null.rawValue]
    }

    /// Decodes an indication from the control point.
    public static func decodeResponse(_ bytes: [UInt8]) throws(ProfileDecodeError) -> Response {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.recordAccessControlPoint)
        let opCode = try c.uint8("op code")
        _ = try c.uint8("operator")
        switch opCode {
        case OpCode.numberOfStoredRecordsResponse.rawValue:
            return .numberOfStoredRecords(try c.uint16("number of records"))
        case OpCode.responseCode.rawValue:
            let request = try c.uint8("request op code")
            return .responseCode(request: request, code: ResponseCode(rawValue: try c.uint8("response code value")))
        default:
            throw c.invalid("op code", Int(opCode), at: 0)
        }
    }
}
