import ANTPlusProfiles
import Testing

/// Every page of every profile, built byte by byte from its field layout and decoded back.
@Suite struct ANTPlusPageTests {
    // MARK: - Heart rate

    /// A heart rate page: page byte, bytes 1-3, beat time 0x5859, count 46, 110 bpm.
    func hr(_ page: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) -> [UInt8] { [page, b1, b2, b3, 0x59, 0x58, 0x2E, 0x6E] }

    @Test("heart rate pages 0-7: the common beat fields on every page, the toggle bit, each page's bytes 1-3")
    func heartRatePages() throws {
        let cases: [([UInt8], ANTHeartRatePage.Content)] = [
            (hr(0x00, 0xFF, 0xFF, 0xFF), .default),
            (hr(0x01, 0x10, 0x20, 0x03), .cumulativeOperatingTime(seconds: Double(0x03_2010) * 2)),
            (hr(0x02, 0x01, 0x34, 0x12), .manufacturerInfo(manufacturerID: 1, serialNumberHigh: 0x1234)),
            (hr(0x03, 0x05, 0x1A, 0x07), .productInfo(hardwareVersion: 5, softwareVersion: 26, modelNumber: 7)),
            (hr(0x04, 0x00, 0x2E, 0x56), .previousHeartBeat(manufacturerSpecific: 0, eventTime: 0x562E)),
            (hr(0x05, 120, 150, 110), .swimIntervalSummary(intervalAverage: 120, intervalMaximum: 150, sessionAverage: 110)),
            (hr(0x06, 0xFF, 0x07, 0x01), .capabilities(supported: 7, enabled: 1)),
            (hr(0x07, 85, 0x80, 0x32), .batteryStatus(level: 85, voltage: 2.5, status: .ok)),
            (hr(0x07, 0xFF, 0x00, 0x7F), .batteryStatus(level: nil, voltage: nil, status: .invalid)),
            (hr(0x09, 1, 2, 3), .other([1, 2, 3])),
        ]
        for (bytes, content) in cases {
            let page = try ANTHeartRatePage.decode(bytes)
            #expect(page.content == content)
            #expect(page.pageNumber == bytes[0] && !page.toggle)
            #expect(page.beatEventTime == 0x5859 && page.beatCount == 46 && page.heartRate == 110)
        }
        let toggled = try ANTHeartRatePage.decode(hr(0x84, 0x00, 0x2E, 0x56))
        #expect(toggled.toggle && toggled.pageNumber == 4)
    }

    // MARK: - Speed, cadence

    func bike(_ page: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) -> [UInt8] { [page, b1, b2, b3, 0x00, 0x04, 0x10, 0x27] }

    @Test("speed-only and cadence-only pages 0-5: event time and revolutions in bytes 4-7 on every page")
    func speedOrCadencePages() throws {
        let cases: [([UInt8], ANTSpeedOrCadencePage.Content)] = [
            (bike(0x00, 0xFF, 0xFF, 0xFF), .default),
            (bike(0x81, 0x01, 0x00, 0x00), .cumulativeOperatingTime(seconds: 2)),
            (bike(0x02, 0x59, 0x02, 0x01), .manufacturerInfo(manufacturerID: 89, serialNumberHigh: 0x0102)),
            (bike(0x83, 0x01, 0x02, 0x03), .productInfo(hardwareVersion: 1, softwareVersion: 2, modelNumber: 3)),
            (bike(0x04, 0xFF, 0x40, 0x23), .batteryStatus(voltage: 3.25, status: .good)),
            (bike(0x05, 0x01, 0xFF, 0xFF), .motion(stopped: true)),
            (bike(0x05, 0x00, 0xFF, 0xFF), .motion(stopped: false)),
            (bike(0x3C, 9, 8, 7), .other([9, 8, 7])),
        ]
        for (bytes, content) in cases {
            let page = try ANTSpeedOrCadencePage.decode(bytes)
            #expect(page.content == content)
            #expect(page.pageNumber == bytes[0] & 0x7F && page.toggle == (bytes[0] & 0x80 != 0))
            #expect(page.eventTime == 1024 && page.revolutionCount == 10_000)
        }
    }

    @Test("combined speed and cadence: four little-endian fields and no page number")
    func speedCadencePage() throws {
        let page = try ANTSpeedCadencePage.decode([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08])
        #expect(page == ANTSpeedCadencePage(cadenceEventTime: 0x0201, cadenceRevolutions: 0x0403, speedEventTime: 0x0605,
                                            wheelRevolutions: 0x0807))
    }

    // MARK: - Power

    @Test("power 0x10: event count, pedal power with the right-pedal bit, cadence, accumulated and instantaneous power")
    func standardPower() throws {
        guard case .standardPower(let p) = try ANTPowerPage.decode([0x10, 0x2A, 0xB4, 0x5A, 0x10, 0x27, 0xFA, 0x00]) else {
            Issue.record("not standard power")
            return
        }
        #expect(p.eventCount == 42 && p.instantaneousCadence == 90 && p.accumulatedPower == 10_000 && p.instantaneousPower == 250)
        #expect(p.pedalPowerPercent == 52 && p.rightPedalPercent == 52)
        let unknownPedal = ANTStandardPowerPage(eventCount: 0, pedalPower: 0x34, instantaneousCadence: nil, accumulatedPower: 0,
                                                instantaneousPower: 0)
        #expect(unknownPedal.pedalPowerPercent == 52 && unknownPedal.rightPedalPercent == nil)
        let notUsed = ANTStandardPowerPage(eventCount: 0, pedalPower: 0xFF, instantaneousCadence: nil, accumulatedPower: 0,
                                           instantaneousPower: 0)
        #expect(notUsed.pedalPowerPercent == nil && notUsed.rightPedalPercent == nil)
        guard case .standardPower(let q) = try ANTPowerPage.decode([0x10, 0, 0xFF, 0xFF, 0, 0, 0, 0]) else { return }
        #expect(q.instantaneousCadence == nil)
    }

    @Test("power 0x11 and 0x12: event count, ticks, cadence, period (1/2048 s) and torque (1/32 N·m)")
    func torquePages() throws {
        let bytes: [UInt8] = [0x12, 0x05, 0x07, 0x5F, 0x00, 0x08, 0x00, 0x0A]
        let expected = ANTTorquePage(eventCount: 5, ticks: 7, instantaneousCadence: 95, period: 0x0800, accumulatedTorque: 0x0A00)
        #expect(try ANTPowerPage.decode(bytes) == .crankTorque(expected))
        var wheel = bytes
        wheel[0] = 0x11
        wheel[3] = 0xFF
        var expectedWheel = expected
        expectedWheel.instantaneousCadence = nil
        #expect(try ANTPowerPage.decode(wheel) == .wheelTorque(expectedWheel))
    }

    @Test("power 0x13: torque effectiveness and pedal smoothness in 0.5 % units, 0xFE combined, 0xFF invalid")
    func torqueEffectiveness() throws {
        #expect(try ANTPowerPage.decode([0x13, 0x01, 0xC8, 0xB4, 0x40, 0x3C, 0xFF, 0xFF]) == .torqueEffectivenessAndPedalSmoothness(
            ANTTorqueEffectivenessPage(eventCount: 1, leftTorqueEffectiveness: 100, rightTorqueEffectiveness: 90, leftPedalSmoothness: 32,
                                       rightPedalSmoothness: 30, combinedPedalSmoothness: false)))
        #expect(try ANTPowerPage.decode([0x13, 0x02, 0xFF, 0xFF, 0x50, 0xFE, 0xFF, 0xFF]) == .torqueEffectivenessAndPedalSmoothness(
            ANTTorqueEffectivenessPage(eventCount: 2, leftTorqueEffectiveness: nil, rightTorqueEffectiveness: nil, leftPedalSmoothness: 40,
                                       rightPedalSmoothness: nil, combinedPedalSmoothness: true)))
    }

    @Test("power 0x20 crank torque frequency reads its fields big-endian")
    func crankTorqueFrequency() throws {
        #expect(try ANTPowerPage.decode([0x20, 0x09, 0x01, 0x2C, 0x12, 0x34, 0xAB, 0xCD])
            == .crankTorqueFrequency(ANTCrankTorqueFrequencyPage(eventCount: 9, slope: 300, timeStamp: 0x1234, torqueTicksStamp: 0xABCD)))
    }

    @Test("power 0x01-0x03 are identified; common pages decode; other pages are a typed error")
    func otherPowerPages() throws {
        let calibration: [UInt8] = [0x01, 0xAC, 0, 0, 0, 0, 0x10, 0x00]
        #expect(try ANTPowerPage.decode(calibration) == .calibration(calibrationID: 0xAC, bytes: calibration))
        #expect(try ANTPowerPage.decode([0x02, 0x01, 0, 0, 0, 0, 0, 0]) == .parameters(subpage: 1, bytes: [0x02, 0x01, 0, 0, 0, 0, 0, 0]))
        #expect(try ANTPowerPage.decode([0x03, 0, 0, 0, 0, 0, 0, 0]) == .measurementOutput(bytes: [0x03, 0, 0, 0, 0, 0, 0, 0]))
        if case .common(.manufacturerInfo) = try ANTPowerPage.decode([0x50, 0xFF, 0xFF, 1, 0x20, 0x00, 0x01, 0x00]) {} else {
            Issue.record("0x50 is a common page")
        }
        #expect(throws: ANTPlusDecodeError(deviceType: 11, .unknownPage(0x30))) { try ANTPowerPage.decode([0x30, 0, 0, 0, 0, 0, 0, 0]) }
        #expect(throws: ANTPlusDecodeError(deviceType: 11, .wrongLength(7))) { try ANTPowerPage.decode([0x10, 0, 0, 0, 0, 0, 0]) }
    }

    // MARK: - Common pages

    @Test("common pages 0x50 manufacturer, 0x51 product, 0x52 battery, 0x46 request")
    func commonPages() {
        #expect(ANTPlusCommonPage.decode([0x50, 0xFF, 0xFF, 0x03, 0x01, 0x00, 0x2A, 0x04])
            == .manufacturerInfo(ANTManufacturerInfoPage(hardwareRevision: 3, manufacturerID: 1, modelNumber: 0x042A)))
        let product = ANTPlusCommonPage.decode([0x51, 0xFF, 0x0C, 0x03, 0x78, 0x56, 0x34, 0x12])
        #expect(product == .productInfo(ANTProductInfoPage(softwareSupplemental: 12, softwareMain: 3, serialNumber: 0x1234_5678)))
        if case .productInfo(let p) = product { #expect(p.softwareVersion == "3.12") }
        let noSerial = ANTProductInfoPage(softwareSupplemental: nil, softwareMain: 40, serialNumber: nil)
        #expect(ANTPlusCommonPage.decode([0x51, 0xFF, 0xFF, 0x28, 0xFF, 0xFF, 0xFF, 0xFF]) == .productInfo(noSerial))
        #expect(noSerial.softwareVersion == "40")
        // 2 batteries, identifier 1; 0x000100 units of 2 s; 3 + 0x40/256 V; status low (4); 2 s resolution.
        #expect(ANTPlusCommonPage.decode([0x52, 0xFF, 0x12, 0x00, 0x01, 0x00, 0x40, 0xC3])
            == .batteryStatus(ANTBatteryStatusPage(batteryCount: 2, batteryIdentifier: 1, operatingTime: 512, voltage: 3.25, status: .low)))
        #expect(ANTPlusCommonPage.decode([0x52, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x7F])
            == .batteryStatus(ANTBatteryStatusPage(batteryCount: nil, batteryIdentifier: nil, operatingTime: 16, voltage: nil,
                                                   status: .invalid)))
        #expect(ANTPlusCommonPage.decode([0x46, 0xFF, 0xFF, 0xFF, 0xFF, 0x04, 0x50, 0x01])
            == .requestDataPage(ANTRequestDataPage(requestedPage: 0x50, requestedTransmission: 4, commandType: 1)))
        #expect(ANTPlusCommonPage.decode([0x53, 0, 0, 0, 0, 0, 0, 0]) == nil)
        #expect(ANTPlusCommonPage.decode([0x50]) == nil)
    }

    @Test("battery status values")
    func batteryStatus() {
        let expected: [ANTBatteryStatus] = [.reserved(0), .new, .good, .ok, .low, .critical, .reserved(6), .invalid]
        #expect((0...7).map { ANTBatteryStatus(UInt8($0)) } == expected)
        #expect(ANTBatteryStatus(0x0C) == .low, "only 3 bits count")
        #expect(expected.map(\.description) == ["reserved (0)", "new", "good", "ok", "low", "critical", "reserved (6)", "invalid"])
    }

    // MARK: - Stride

    @Test("stride page 1: time, distance and speed with their fractions, strides, latency")
    func strideSpeedDistance() throws {
        // 12.5 s (100/200), 34.25 m (4/16), 3.5 m/s (128/256), 77 strides, latency 0.25 s (8/32).
        #expect(try ANTStridePage.decode([0x01, 100, 12, 34, 0x43, 128, 77, 8]) == .speedDistance(
            ANTStrideSpeedDistancePage(time: 12.5, distance: 34.25, speed: 3.5, strideCount: 77, updateLatency: 0.25)))
    }

    @Test("stride pages 2-15: cadence, speed and status; page 3 adds calories")
    func strideCadence() throws {
        // 85.5 strides/min (8/16), 2.25 m/s (64/256), status: active, ok, battery good, laces.
        let expected = ANTStrideCadencePage(cadence: 85.5, speed: 2.25, status: ANTStrideStatus(rawValue: 0x11))
        #expect(try ANTStridePage.decode([0x02, 0xFF, 0xFF, 85, 0x82, 64, 0xFF, 0x11]) == .cadence(page: 2, expected))
        #expect(try ANTStridePage.decode([0x0F, 0xFF, 0xFF, 85, 0x82, 64, 0xFF, 0x11]) == .cadence(page: 15, expected))
        #expect(try ANTStridePage.decode([0x03, 0xFF, 0xFF, 85, 0x82, 64, 200, 0x11]) == .calories(expected, kilocalories: 200))
        #expect(expected.status.isActive && expected.status.health == 0 && expected.status.battery == 1 && expected.status.location == 0)
        let status = ANTStrideStatus(rawValue: 0xE6)
        #expect(!status.isActive && status.health == 1 && status.battery == 2 && status.location == 3)
    }

    @Test("stride pages 16 and 22, common pages, and unknown pages")
    func otherStridePages() throws {
        #expect(try ANTStridePage.decode([0x10, 0x10, 0x27, 0x00, 0x00, 0x01, 0x00, 0x00])
            == .distanceAndStridesSinceReset(strides: 10_000, distance: 1))
        #expect(try ANTStridePage.decode([0x16, 0x3F, 0, 0, 0, 0, 0, 0]) == .capabilities(0x3F))
        if case .common(.batteryStatus) = try ANTStridePage.decode([0x52, 0xFF, 0xFF, 0, 0, 0, 0, 0x10]) {} else { Issue.record("0x52") }
        for page: UInt8 in [0x00, 0x11, 0x80] {
            #expect(throws: ANTPlusDecodeError(deviceType: 124, .unknownPage(page))) { try ANTStridePage.decode([page, 0, 0, 0, 0, 0, 0,
                0]) }
        }
    }

    // MARK: - Fitness equipment

    @Test("FE 0x10 general: type, elapsed, distance, speed in mm/s, heart rate, flags, and the state read as (b & 0x70) >> 4")
    func feGeneral() throws {
        // 0x35: flags 5 (ANT+ HR source, distance enabled), state 3 (in use). openant's
        // `b & 0x70 >> 4` would read 5.
        guard case .general(let p) = try ANTFitnessEquipmentPage.decode([0x10, 25, 90, 200, 0x88, 0x13, 150, 0x35]) else {
            Issue.record("not general")
            return
        }
        #expect(p.equipmentType == .trainer && p.elapsedTime == 22.5 && p.distance == 200 && p.speed == 5 && p.heartRate == 150)
        #expect(p.status.state == .inUse && p.status.flags == 5 && !p.status.lapToggle)
        #expect(p.heartRateSource == 1 && p.distanceEnabled && !p.virtualSpeed)
        guard case .general(let q) = try ANTFitnessEquipmentPage.decode([0x10, 19, 0, 0, 0xFF, 0xFF, 0xFF, 0xA8]) else { return }
        #expect(q.equipmentType == .treadmill && q.speed == nil && q.heartRate == nil && q.status.state == .ready && q.status.lapToggle)
        #expect(q.virtualSpeed && !q.distanceEnabled)
    }

    @Test("FE equipment types and machine states")
    func feEnums() {
        let types: [(UInt8, ANTFitnessEquipmentType)] = [
            (16, .general), (19, .treadmill), (20, .elliptical), (21, .stationaryBike), (22, .rower), (23, .climber), (24, .nordicSkier),
            (25, .trainer), (17, .other(17)), (0xF9, .trainer),
        ]
        for (raw, type) in types { #expect(ANTFitnessEquipmentType(raw) == type) }
        #expect(ANTFitnessEquipmentType.nordicSkier.description == "nordic skier")
        let states: [ANTFitnessEquipmentMachineState] = [.reserved(0), .asleep, .ready, .inUse, .finished, .reserved(5), .reserved(6),
                                                         .reserved(7)]
        #expect((0...7).map { ANTFitnessEquipmentMachineState(UInt8($0)) } == states)
    }

    @Test("FE 0x11 settings and 0x12 metabolic")
    func feSettingsAndMetabolic() throws {
        // Cycle length 1.5 m, incline −2.5 % (0xFF06), resistance 40 % (80 × 0.5).
        #expect(try ANTFitnessEquipmentPage.decode([0x11, 0xFF, 0xFF, 150, 0x06, 0xFF, 80, 0x30]) == .generalSettings(
            ANTFEGeneralSettingsPage(cycleLength: 1.5, incline: -2.5, resistance: 40, status: ANTFitnessEquipmentStatus(0x30))))
        #expect(try ANTFitnessEquipmentPage.decode([0x11, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0x30]) == .generalSettings(
            ANTFEGeneralSettingsPage(cycleLength: nil, incline: nil, resistance: nil, status: ANTFitnessEquipmentStatus(0x30))))
        // 8.5 METs, 650.0 kcal/h, 123 kcal, calories enabled.
        guard case .metabolic(let m) = try ANTFitnessEquipmentPage.decode([0x12, 0xFF, 0x52, 0x03, 0x64, 0x19, 123, 0x31]) else { return }
        #expect(m.metabolicEquivalents == 8.5 && m.calorieRate == 650 && m.accumulatedCalories == 123 && m.caloriesEnabled)
    }

    @Test("FE 0x13-0x18: cadence, power and counts of each kind of equipment")
    func feEquipmentPages() throws {
        let status = ANTFitnessEquipmentStatus(0x30)
        #expect(try ANTFitnessEquipmentPage.decode([0x13, 0xFF, 0xFF, 0xFF, 170, 3, 12, 0x30])
            == .treadmill(ANTFEEquipmentPage(cadence: 170, power: nil, count: nil, positiveVerticalDistance: 12,
                                             negativeVerticalDistance: 3,
                                             status: status)))
        #expect(try ANTFitnessEquipmentPage.decode([0x14, 0xFF, 5, 40, 60, 0xC8, 0x00, 0x30])
            == .elliptical(ANTFEEquipmentPage(cadence: 60, power: 200, count: 40, positiveVerticalDistance: 5, status: status)))
        #expect(try ANTFitnessEquipmentPage.decode([0x15, 0xFF, 0xFF, 0xFF, 80, 0x2C, 0x01, 0x30])
            == .stationaryBike(ANTFEEquipmentPage(cadence: 80, power: 300, status: status)))
        #expect(try ANTFitnessEquipmentPage.decode([0x16, 0xFF, 0xFF, 17, 28, 0xFF, 0xFF, 0x30])
            == .rower(ANTFEEquipmentPage(cadence: 28, power: nil, count: 17, status: status)))
        #expect(try ANTFitnessEquipmentPage.decode([0x17, 0xFF, 0xFF, 9, 0xFF, 0x64, 0x00, 0x30])
            == .climber(ANTFEEquipmentPage(cadence: nil, power: 100, count: 9, status: status)))
        #expect(try ANTFitnessEquipmentPage.decode([0x18, 0xFF, 0xFF, 3, 50, 0x96, 0x00, 0x30])
            == .nordicSkier(ANTFEEquipmentPage(cadence: 50, power: 150, count: 3, status: status)))
    }

    @Test("FE 0x19 trainer: 12-bit instantaneous power and the trainer status nibble; 0x1A trainer torque")
    func feTrainer() throws {
        // 250 W = 0x0FA; byte 6 = 0x70 | 0x0 (calibration and configuration required bits 4-6).
        guard case .trainer(let t) = try ANTFitnessEquipmentPage.decode([0x19, 7, 90, 0x10, 0x27, 0xFA, 0x70, 0x31]) else { return }
        #expect(t.eventCount == 7 && t.cadence == 90 && t.accumulatedPower == 10_000 && t.instantaneousPower == 250 && t.trainerStatus == 7)
        #expect(t.status.flags == 1 && t.status.state == .inUse)
        guard case .trainer(let u) = try ANTFitnessEquipmentPage.decode([0x19, 7, 0xFF, 0, 0, 0xFF, 0x0F, 0x30]) else { return }
        #expect(u.cadence == nil && u.instantaneousPower == nil && u.trainerStatus == 0)
        #expect(try ANTFitnessEquipmentPage.decode([0x1A, 4, 9, 0x00, 0x08, 0x40, 0x06, 0x30])
            == .trainerTorque(ANTFETorquePage(eventCount: 4, wheelTicks: 9, wheelPeriod: 2048, accumulatedTorque: 0x0640,
                                              status: ANTFitnessEquipmentStatus(0x30))))
    }

    @Test("FE control pages 0x30-0x33, 0x36, 0x37, 0x47 and calibration pages")
    func feControlPages() throws {
        #expect(try ANTFitnessEquipmentPage.decode([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 100]) == .basicResistance(percent: 50))
        #expect(try ANTFitnessEquipmentPage.decode([0x31, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x20, 0x03]) == .targetPower(watts: 200))
        #expect(try ANTFitnessEquipmentPage.decode([0x32, 0xFF, 0xFF, 0xFF, 0xFF, 51, 137, 100])
            == .windResistance(coefficient: 0.51, windSpeed: 10, draftingFactor: 1))
        #expect(try ANTFitnessEquipmentPage.decode([0x32, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
            == .windResistance(coefficient: nil, windSpeed: nil, draftingFactor: nil))
        // Grade 20250 × 0.01 − 200 = 2.5 %; rolling resistance 80 × 5e-5 = 0.004.
        guard case .trackResistance(let grade?, let crr?) = try ANTFitnessEquipmentPage.decode([0x33, 0xFF, 0xFF, 0xFF, 0xFF, 0x1A, 0x4F,
                                                                                                80])
        else {
            Issue.record("track resistance")
            return
        }
        #expect(abs(grade - 2.5) < 1e-9 && abs(crr - 0.004) < 1e-12)
        #expect(try ANTFitnessEquipmentPage.decode([0x33, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF]) == .trackResistance(grade: nil,
            rollingResistance: nil))
        #expect(try ANTFitnessEquipmentPage.decode([0x36, 0xFF, 0xFF, 0xFF, 0xFF, 0xE8, 0x03, 0x07])
            == .capabilities(maximumResistance: 1000, supportedModes: 7))
        let config: [UInt8] = [0x37, 0x1C, 0x1D, 0xFF, 0x5F, 0x0C, 70, 0]
        #expect(try ANTFitnessEquipmentPage.decode(config) == .userConfiguration(bytes: config))
        #expect(try ANTFitnessEquipmentPage.decode([0x47, 0x31, 4, 0, 0xFF, 0xFF, 0x20, 0x03])
            == .commandStatus(lastCommand: 0x31, sequence: 4, status: 0, data: [0xFF, 0xFF, 0x20, 0x03]))
        #expect(try ANTFitnessEquipmentPage.decode([0x01, 0x40, 0, 0, 0, 0, 0, 0]) == .calibration(page: 1, bytes: [0x01, 0x40, 0, 0, 0,
            0, 0, 0]))
        #expect(throws: ANTPlusDecodeError(deviceType: 17, .unknownPage(0x20))) { try ANTFitnessEquipmentPage.decode([0x20, 0, 0, 0, 0,
            0, 0, 0]) }
    }

    // MARK: - Weight scale

    @Test("weight page 1: user profile, capabilities, weight in 0.01 kg with computing and invalid markers")
    func weightPage() throws {
        #expect(try ANTWeightScalePage.decode([0x01, 0x05, 0x00, 0x81, 0xFF, 0xFF, 0x6C, 0x1D])
            == .bodyWeight(userProfile: 5, capabilities: 0x81, weight: .value(75.32)))
        #expect(try ANTWeightScalePage.decode([0x01, 0xFF, 0xFF, 0x00, 0xFF, 0xFF, 0xFE, 0xFF])
            == .bodyWeight(userProfile: 0xFFFF, capabilities: 0, weight: .computing))
        #expect(try ANTWeightScalePage.decode([0x01, 0x05, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF])
            == .bodyWeight(userProfile: 5, capabilities: 0, weight: .invalid))
        #expect(ANTScaleValue.computing.number == nil && ANTScaleValue.value(1.5).number == 1.5)
    }

    @Test("weight pages 2-4 and 58: body composition, metabolic rates, masses, user profile")
    func bodyCompositionPages() throws {
        // Hydration 55.55 %, fat 20.10 %.
        #expect(try ANTWeightScalePage.decode([0x02, 0x05, 0x00, 0xFF, 0xB3, 0x15, 0xDA, 0x07])
            == .bodyComposition(userProfile: 5, hydration: .value(55.55), bodyFat: .value(20.1)))
        // Active 2500 kcal (10000 × 0.25), basal 1750 kcal (7000 × 0.25).
        #expect(try ANTWeightScalePage.decode([0x03, 0x05, 0x00, 0xFF, 0x10, 0x27, 0x58, 0x1B])
            == .metabolicInformation(userProfile: 5, activeMetabolicRate: .value(2500), basalMetabolicRate: .value(1750)))
        // Muscle 30.00 kg at bytes 5-6, bone 3.2 kg at byte 7.
        #expect(try ANTWeightScalePage.decode([0x04, 0x05, 0x00, 0xFF, 0xFF, 0xB8, 0x0B, 32])
            == .bodyMass(userProfile: 5, muscleMass: .value(30), boneMass: .value(3.2)))
        #expect(try ANTWeightScalePage.decode([0x04, 0x05, 0x00, 0xFF, 0xFF, 0xFE, 0xFF, 0xFE])
            == .bodyMass(userProfile: 5, muscleMass: .computing, boneMass: .computing))
        #expect(try ANTWeightScalePage.decode([0x3A, 0x05, 0x00, 0x01, 0xFF, 0xA8, 180, 0x83]) == .userProfile(
            ANTWeightScaleUserProfile(userProfile: 5, capabilities: 1, male: true, age: 40, heightCentimeters: 180, athlete: true,
                                      activityLevel: 3)))
        #expect(throws: ANTPlusDecodeError(deviceType: 119, .unknownPage(5))) { try ANTWeightScalePage.decode([5, 0, 0, 0, 0, 0, 0, 0]) }
    }

    // MARK: - Dispatch

    @Test("pages dispatch by device type; the pairing bit is ignored; other types and lengths are typed errors")
    func dispatch() throws {
        let bytes: [UInt8] = [0x00, 0xFF, 0xFF, 0xFF, 0x00, 0x04, 0x10, 0x00]
        if case .heartRate = try ANTPlusPage.decode(bytes, deviceType: 120 | 0x80) {} else { Issue.record("heart rate") }
        if case .speedOrCadence = try ANTPlusPage.decode(bytes, deviceType: 123) {} else { Issue.record("speed") }
        if case .speedOrCadence = try ANTPlusPage.decode(bytes, deviceType: 122) {} else { Issue.record("cadence") }
        if case .speedCadence = try ANTPlusPage.decode(bytes, deviceType: 121) {} else { Issue.record("speed and cadence") }
        #expect(throws: ANTPlusDecodeError(deviceType: 11, .unknownPage(0))) { try ANTPlusPage.decode(bytes, deviceType: 11) }
        #expect(throws: ANTPlusDecodeError(deviceType: 1, .unsupportedDeviceType)) { try ANTPlusPage.decode(bytes, deviceType: 1) }
        for type in ANTPlusDeviceType.supported {
            #expect(throws: ANTPlusDecodeError(deviceType: type, .wrongLength(9))) { try ANTPlusPage.decode(bytes + [0], deviceType: type) }
            #expect(throws: ANTPlusDecodeError(deviceType: type, .wrongLength(0))) { try ANTPlusPage.decode([], deviceType: type) }
        }
        #expect(ANTPlusDecodeError(deviceType: 11, .unknownPage(0x30)).description == "device type 11: unknown data page 48 (0x30)")
        #expect(ANTPlusDecodeError(deviceType: 9, .unsupportedDeviceType).description == "device type 9 is not supported")
        #expect(ANTPlusDecodeError(deviceType: 9, .wrongLength(3)).description.contains("not 3"))
    }
}
