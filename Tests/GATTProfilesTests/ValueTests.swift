import Testing
@testable import GATTProfiles

@Suite struct SimpleValueTests {
    @Test("Battery Level: 0...100 accepted, above 100 rejected, empty truncated")
    func battery() throws {
        #expect(try BatteryLevel.decode([0]).percent == 0)
        #expect(try BatteryLevel.decode([100]).percent == 100)
        #expect(try BatteryLevel.decode([57, 1]) == BatteryLevel(percent: 57, ignoredTrailingBytes: 1))
        #expect(throws: ProfileDecodeError(characteristic: 0x2A19, offset: 0, reason: .invalidValue(field: "battery level", value: 101))) {
            try BatteryLevel.decode([101])
        }
        #expect(throws: ProfileDecodeError(characteristic: 0x2A19, offset: 0,
                                           reason: .truncated(field: "battery level", needed: 1, available: 0))) {
            try BatteryLevel.decode([])
        }
    }

    @Test("Device Information strings: UTF-8, trailing NULs trimmed, invalid bytes repaired, length capped")
    func strings() {
        #expect(DeviceInformation.string(Array("Polar".utf8) + [0, 0, 0]) == "Polar")
        #expect(DeviceInformation.string(Array("Zürich HR".utf8)) == "Zürich HR")
        #expect(DeviceInformation.string([]) == "")
        #expect(DeviceInformation.string([0, 0]) == "")
        #expect(DeviceInformation.string([0x41, 0x00, 0x42, 0x00]) == "A\u{0}B", "only trailing NULs go")
        #expect(DeviceInformation.string([0x41, 0xFF, 0x42]) == "A\u{FFFD}B")
        #expect(DeviceInformation.string([UInt8](repeating: 0x61, count: 600)).utf8.count == 512)
    }

    @Test("System ID and PnP ID")
    func ids() throws {
        let id = try SystemID.decode([0x01, 0x02, 0x03, 0x04, 0x05, 0xAA, 0xBB, 0xCC])
        #expect(id.manufacturerIdentifier == 0x05_0403_0201)
        #expect(id.organizationallyUniqueIdentifier == 0xCCBBAA)
        #expect(id.eui64 == 0xCCBBAA_0504030201)
        #expect(throws: ProfileDecodeError(characteristic: 0x2A23, offset: 5,
                                           reason: .truncated(field: "organizationally unique identifier", needed: 3, available: 2))) {
            try SystemID.decode([1, 2, 3, 4, 5, 6, 7])
        }
        let pnp = try PnPID.decode([0x01, 0x6B, 0x00, 0x34, 0x12, 0x00, 0x01])
        #expect(pnp.vendorIDSource == 1 && pnp.vendorID == 0x006B && pnp.productID == 0x1234 && pnp.productVersion == 0x0100)
    }

    @Test("Body Sensor Location and features")
    func smallOnes() throws {
        #expect(try BodySensorLocation.decode([1]) == .chest)
        #expect(try BodySensorLocation.decode([6]) == .foot)
        #expect(try BodySensorLocation.decode([9]) == .reserved(9))
        #expect(try CSCFeature.decode([0x03, 0x00]) == [.wheelRevolutionData, .crankRevolutionData])
        #expect(try CyclingPowerFeature.decode([0x0C, 0x00, 0x00, 0x00]) == [.wheelRevolutionData, .crankRevolutionData])
        let ftms = try FitnessMachineFeature.decode([0x06, 0x56, 0x00, 0x00, 0x0C, 0x00, 0x00, 0x00])
        #expect(ftms.features.contains([.cadence, .totalDistance, .expendedEnergy, .heartRateMeasurement, .powerMeasurement]))
        #expect(!ftms.features.contains(.averageSpeed))
        #expect(ftms.targetSettingFeatures == 0x0C)
    }

    @Test("Record Access Control Point: read-only requests and their responses")
    func racp() throws {
        #expect(RecordAccessControlPoint.reportAllRecords() == [0x01, 0x01])
        #expect(RecordAccessControlPoint.reportRecords(fromSequenceNumber: 0x1234) == [0x01, 0x03, 0x01, 0x34, 0x12])
        #expect(RecordAccessControlPoint.reportNumberOfAllRecords() == [0x04, 0x01])
        #expect(RecordAccessControlPoint.reportNumberOfRecords(fromSequenceNumber: 7) == [0x04, 0x03, 0x01, 0x07, 0x00])
        #expect(RecordAccessControlPoint.abortOperation() == [0x03, 0x00])
        #expect(try RecordAccessControlPoint.decodeResponse([0x05, 0x00, 0x2A, 0x00]) == .numberOfStoredRecords(42))
        #expect(try RecordAccessControlPoint.decodeResponse([0x06, 0x00, 0x01, 0x01]) == .responseCode(request: 1, code: .success))
        #expect(try RecordAccessControlPoint.decodeResponse([0x06, 0x00, 0x01, 0x06]) == .responseCode(request: 1, code: .noRecordsFound))
        #expect(try RecordAccessControlPoint.decodeResponse([0x06, 0x00, 0x04, 0x42]) == .responseCode(request: 4, code: .other(0x42)))
        #expect(throws: ProfileDecodeError(characteristic: 0x2A52, offset: 0, reason: .invalidValue(field: "op code", value: 1))) {
            try RecordAccessControlPoint.decodeResponse([0x01, 0x01])
        }
    }

    @Test("the dispatcher maps every supported characteristic to its decoder, unknown ones to nil")
    func dispatcher() throws {
        #expect(try GATTProfileDecoder.decode(characteristic: 0x2A37, [0x00, 0x50]) == .heartRate(try HeartRateMeasurement.decode([0x00, 0x50])))
        #expect(try GATTProfileDecoder.decode(characteristic: 0x2A19, [0x64]) == .batteryLevel(BatteryLevel(percent: 100, ignoredTrailingBytes: 0)))
        #expect(try GATTProfileDecoder.decode(characteristic: 0x2A29, Array("Acme\0".utf8))
                == .deviceInformation(characteristic: 0x2A29, value: "Acme"))
        #expect(try GATTProfileDecoder.decode(characteristic: 0x2A36, [0x00, 0x8C, 0x00, 0xFF, 0x07, 0xFF, 0x07])
                == .intermediateCuffPressure(try BloodPressureMeasurement.decodeIntermediateCuffPressure([0x00, 0x8C, 0x00, 0xFF, 0x07, 0xFF, 0x07])))
        #expect(try GATTProfileDecoder.decode(characteristic: 0x2A00, [0x41]) == nil)
        // Each supported characteristic, given a long all-zero value, decodes to something.
        for uuid in GATTProfileDecoder.supportedCharacteristics where uuid != GATTCharacteristic.recordAccessControlPoint {
            #expect(try GATTProfileDecoder.decode(characteristic: uuid, [UInt8](repeating: 0, count: 64)) != nil)
        }
    }
}
