import Testing
@testable import GATTProfiles

@Suite struct MedicalFloatTests {
    @Test("SFLOAT special values keep their meaning", arguments: [
        (UInt16(0x07FF), MedicalFloat.nan), (0x0800, .nres), (0x07FE, .positiveInfinity),
        (0x0802, .negativeInfinity), (0x0801, .reserved),
        // A reserved mantissa with a non-zero exponent is still not a number.
        (0x17FF, .nan), (0xF800, .nres), (0x27FE, .positiveInfinity), (0x8802, .negativeInfinity),
    ])
    func sfloatSpecials(raw: UInt16, expected: MedicalFloat) {
        let value = MedicalFloat(sfloat: raw)
        #expect(value == expected)
        #expect(value.doubleValue == nil)
        #expect(!value.isNumber)
    }

    @Test("SFLOAT numbers: positive and negative mantissas and exponents", arguments: [
        (UInt16(0x0000), Int32(0), Int8(0), 0.0),
        (0x0072, 114, 0, 114.0),
        (0xF48C, 1164, -1, 116.4),
        (0x0FFF, -1, 0, -1.0),
        (0xEFFE, -2, -2, -0.02),
        (0x87FD, 2045, -8, 0.000_020_45),
        (0x77FD, 2045, 7, 20_450_000_000.0),
        (0x0803, -2045, 0, -2045.0),
        (0x7803, -2045, 7, -20_450_000_000.0),
        (0xF7FD, 2045, -1, 204.5),
        (0xFF9C, -100, -1, -10.0),
        (0x2001, 1, 2, 100.0),
    ])
    func sfloatNumbers(raw: UInt16, mantissa: Int32, exponent: Int8, value: Double) {
        let decoded = MedicalFloat(sfloat: raw)
        #expect(decoded == .value(mantissa: mantissa, exponent: exponent))
        #expect(decoded.doubleValue == value)
    }

    @Test("FLOAT special values keep their meaning", arguments: [
        (UInt32(0x007F_FFFF), MedicalFloat.nan), (0x0080_0000, .nres), (0x007F_FFFE, .positiveInfinity),
        (0x0080_0002, .negativeInfinity), (0x0080_0001, .reserved), (0xFF7F_FFFF, .nan), (0x0180_0000, .nres),
    ])
    func floatSpecials(raw: UInt32, expected: MedicalFloat) {
        #expect(MedicalFloat(float: raw) == expected)
        #expect(MedicalFloat(float: raw).doubleValue == nil)
    }

    @Test("FLOAT numbers", arguments: [
        (UInt32(0x0000_0000), Int32(0), Int8(0), 0.0),
        (0xFF00_016C, 364, -1, 36.4),
        (0xFE00_0E2D, 3629, -2, 36.29),
        (0xFDFF_FFFF, -1, -3, -0.001),
        (0x00FF_FFF6, -10, 0, -10.0),
        (0x0200_0003, 3, 2, 300.0),
        (0x007F_FFFD, 8_388_605, 0, 8_388_605.0),
        (0x0080_0003, -8_388_605, 0, -8_388_605.0),
    ])
    func floatNumbers(raw: UInt32, mantissa: Int32, exponent: Int8, value: Double) {
        let decoded = MedicalFloat(float: raw)
        #expect(decoded == .value(mantissa: mantissa, exponent: exponent))
        #expect(decoded.doubleValue == value)
    }

    @Test("FLOAT extreme exponents stay finite numbers")
    func floatExtremeExponents() throws {
        let tiny = try #require(MedicalFloat(float: 0x8000_0001).doubleValue)
        #expect(MedicalFloat(float: 0x8000_0001) == .value(mantissa: 1, exponent: -128))
        #expect(abs(tiny / 1e-128 - 1) < 1e-12)
        let huge = try #require(MedicalFloat(float: 0x7F00_0001).doubleValue)
        #expect(abs(huge / 1e127 - 1) < 1e-12)
    }

    @Test("every SFLOAT bit pattern decodes, specials exactly for the five reserved mantissas")
    func everySFloat() {
        for raw in UInt16.min...UInt16.max {
            let v = MedicalFloat(sfloat: raw)
            let special = [0x07FF, 0x0800, 0x07FE, 0x0802, 0x0801].contains(Int(raw & 0x0FFF))
            #expect(v.isNumber != special)
            if case .value(let m, let e) = v {
                #expect((-2045...2045).contains(m) && (-8...7).contains(e))
            }
        }
    }
}

@Suite struct ByteCursorTests {
    @Test("reads little-endian integers, SFLOAT, FLOAT and Date Time")
    func reads() throws {
        var c = ByteCursor([0x01, 0x34, 0x12, 0x56, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 0xFE, 0xFF,
                            0x72, 0x00, 0x6C, 0x01, 0x00, 0xFF, 0xE8, 0x07, 0x02, 0x1D, 0x17, 0x3B, 0x3A],
                           characteristic: 0x2A37)
        #expect(try c.uint8("a") == 0x01)
        #expect(try c.uint16("b") == 0x1234)
        #expect(try c.uint24("c") == 0x123456)
        #expect(try c.uint32("d") == 0x1234_5678)
        #expect(try c.sint16("e") == -2)
        #expect(try c.sfloat("f") == .value(mantissa: 114, exponent: 0))
        #expect(try c.float("g") == .value(mantissa: 364, exponent: -1))
        let dt = try c.dateTime("h")
        #expect(dt == GATTDateTime(year: 2024, month: 2, day: 29, hours: 23, minutes: 59, seconds: 58))
        #expect(dt.isValid)
        #expect(dt.description == "2024-02-29T23:59:58")
        #expect(c.isAtEnd)
    }

    @Test("a short read names the characteristic, the field and its offset")
    func shortRead() {
        var c = ByteCursor([0x10, 0x48], characteristic: GATTCharacteristic.heartRateMeasurement)
        _ = try? c.uint8("flags")
        do {
            _ = try c.uint16("heart rate")
            Issue.record("no error")
        } catch {
            #expect(error == ProfileDecodeError(characteristic: 0x2A37, offset: 1,
                                                reason: .truncated(field: "heart rate", needed: 2, available: 1)))
            #expect(error.description == "Heart Rate Measurement (0x2A37): truncated at byte 1: heart rate needs 2 byte(s), 1 left")
        }
        #expect(c.offset == 1, "a failed read consumes nothing")
    }

    @Test("Date Time validity")
    func dateTimeValidity() {
        #expect(!GATTDateTime(year: 0, month: 0, day: 0, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(!GATTDateTime(year: 2023, month: 2, day: 29, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(GATTDateTime(year: 2000, month: 2, day: 29, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(!GATTDateTime(year: 1900, month: 2, day: 29, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(!GATTDateTime(year: 2024, month: 13, day: 1, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(!GATTDateTime(year: 2024, month: 4, day: 31, hours: 0, minutes: 0, seconds: 0).isValid)
        #expect(!GATTDateTime(year: 2024, month: 4, day: 30, hours: 24, minutes: 0, seconds: 0).isValid)
    }
}

@Suite struct GATTNamesTests {
    @Test("services and characteristics have display names")
    func names() {
        #expect(GATTNames.service(0x180D) == "Heart Rate")
        #expect(GATTNames.service(0x1826) == "Fitness Machine")
        #expect(GATTNames.service(0x1822) == "Pulse Oximeter")
        #expect(GATTNames.service(0x1234) == nil)
        #expect(GATTNames.characteristic(0x2A37) == "Heart Rate Measurement")
        #expect(GATTNames.characteristic(0x2AD2) == "Indoor Bike Data")
        #expect(GATTNames.characteristic(0x2A52) == "Record Access Control Point")
        #expect(GATTNames.describeCharacteristic(0x2A19) == "Battery Level (0x2A19)")
        #expect(GATTNames.describeCharacteristic(0x00AB) == "0x00AB")
    }

    @Test("the numbers match the assigned numbers")
    func numbers() {
        #expect(GATTService.heartRate == 0x180D && GATTService.battery == 0x180F && GATTService.deviceInformation == 0x180A)
        #expect(GATTService.cyclingSpeedAndCadence == 0x1816 && GATTService.runningSpeedAndCadence == 0x1814)
        #expect(GATTService.cyclingPower == 0x1818 && GATTService.fitnessMachine == 0x1826)
        #expect(GATTService.weightScale == 0x181D && GATTService.bodyComposition == 0x181B)
        #expect(GATTService.bloodPressure == 0x1810 && GATTService.healthThermometer == 0x1809)
        #expect(GATTService.pulseOximeter == 0x1822 && GATTService.glucose == 0x1808)
        typealias C = GATTCharacteristic
        #expect([C.manufacturerName, C.modelNumber, C.serialNumber, C.firmwareRevision, C.hardwareRevision,
                 C.softwareRevision, C.systemID] == [0x2A29, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A23])
        #expect([C.treadmillData, C.crossTrainerData, C.rowerData, C.indoorBikeData, C.fitnessMachineFeature]
                == [0x2ACD, 0x2ACE, 0x2AD1, 0x2AD2, 0x2ACC])
        #expect([C.plxSpotCheckMeasurement, C.plxContinuousMeasurement, C.glucoseMeasurement,
                 C.glucoseMeasurementContext, C.recordAccessControlPoint] == [0x2A5E, 0x2A5F, 0x2A18, 0x2A34, 0x2A52])
        for uuid in GATTProfileDecoder.supportedCharacteristics {
            #expect(GATTNames.characteristic(uuid) != nil, "\(uuid) has no name")
        }
    }
}
