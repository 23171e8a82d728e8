import TestSupport
import Testing
@testable import GATTProfiles

/// For each characteristic: every flags combination, with the value built from the specification's
/// field layout and random field values, decoded and compared field by field (as whole structs);
/// every proper prefix must fail with a truncation error at the cut field's offset.
@Suite struct FlagCombinationTests {
    @Test("Heart Rate Measurement: all 256 flags values")
    func heartRate() throws {
        var rng = SeededGenerator(seed: 0x2A37)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            let wide = flags & 0x01 != 0
            let bpm = wide ? rng.u16() : UInt16(rng.u8())
            if wide { b.u16(bpm) } else { b.u8(UInt8(bpm)) }
            let energy: UInt16? = flags & 0x08 != 0 ? rng.u16() : nil
            if let energy { b.u16(energy) }
            let head = b
            var rr: [UInt16] = []
            var trailing: [UInt8]
            if flags & 0x10 != 0 {
                rr = (0..<Int.random(in: 0...4, using: &rng)).map { _ in rng.u16() }
                for value in rr { b.u16(value) }
                trailing = Bool.random(using: &rng) ? [rng.u8()] : []
            } else {
                trailing = rng.trailing()
            }
            let contact: HeartRateMeasurement.SensorContact = switch (flags >> 1) & 3 {
            case 2: .notDetected
            case 3: .detected
            default: .notSupported
            }
            let expected = HeartRateMeasurement(flags: flags, beatsPerMinute: bpm, isUInt16Format: wide,
                                                sensorContact: contact, energyExpendedKilojoules: energy,
                                                rrIntervalsRaw: rr, ignoredTrailingBytes: trailing.count)
            #expect(try HeartRateMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(head, characteristic: 0x2A37, HeartRateMeasurement.decode)
        }
    }

    @Test("Heart Rate Measurement: a worked vector")
    func heartRateVector() throws {
        // Flags 0x1E: uint8 rate, contact supported and detected, energy, RR intervals.
        let m = try HeartRateMeasurement.decode([0x1E, 0x48, 0x10, 0x27, 0x00, 0x04, 0x00, 0x02, 0x33])
        #expect(m.beatsPerMinute == 72)
        #expect(m.sensorContact == .detected)
        #expect(m.energyExpendedKilojoules == 10000)
        #expect(m.rrIntervals == [1.0, 0.5])
        #expect(m.ignoredTrailingBytes == 1, "the odd byte after the RR intervals is noted")
        let noContact = try HeartRateMeasurement.decode([0x05, 0x2C, 0x01])
        #expect(noContact.beatsPerMinute == 300 && noContact.sensorContact == .notDetected)
        #expect(try HeartRateMeasurement.decode([0x02, 60]).sensorContact == .notSupported)
    }

    @Test("CSC Measurement: all 256 flags values")
    func csc() throws {
        var rng = SeededGenerator(seed: 0x2A5B)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            var wheel: WheelRevolutionData?
            var crank: CrankRevolutionData?
            if flags & 1 != 0 {
                wheel = WheelRevolutionData(cumulativeRevolutions: rng.u32(), lastEventTime: rng.u16())
                b.u32(wheel!.cumulativeRevolutions)
                b.u16(wheel!.lastEventTime)
            }
            if flags & 2 != 0 {
                crank = CrankRevolutionData(cumulativeRevolutions: rng.u16(), lastEventTime: rng.u16())
                b.u16(crank!.cumulativeRevolutions)
                b.u16(crank!.lastEventTime)
            }
            let trailing = rng.trailing()
            #expect(try CSCMeasurement.decode(b.bytes + trailing)
                    == CSCMeasurement(flags: flags, wheel: wheel, crank: crank, ignoredTrailingBytes: trailing.count))
            expectTruncations(b, characteristic: 0x2A5B, CSCMeasurement.decode)
        }
    }

    @Test("RSC Measurement: all 256 flags values")
    func rsc() throws {
        var rng = SeededGenerator(seed: 0x2A53)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            let speed = rng.u16(), cadence = rng.u8()
            b.u16(speed)
            b.u8(cadence)
            let stride: UInt16? = flags & 1 != 0 ? rng.u16() : nil
            if let stride { b.u16(stride) }
            let distance: UInt32? = flags & 2 != 0 ? rng.u32() : nil
            if let distance { b.u32(distance) }
            let trailing = rng.trailing()
            let expected = RSCMeasurement(flags: flags, speedRaw: speed, cadence: cadence, strideLengthCentimeters: stride,
                                          totalDistanceDecimeters: distance, isRunning: flags & 4 != 0,
                                          ignoredTrailingBytes: trailing.count)
            #expect(try RSCMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(b, characteristic: 0x2A53, RSCMeasurement.decode)
        }
        let m = try RSCMeasurement.decode([0x07, 0x00, 0x03, 180, 0x7D, 0x00, 0x10, 0x27, 0x00, 0x00])
        #expect(m.speedMetersPerSecond == 3.0 && m.cadence == 180 && m.strideLengthMeters == 1.25)
        #expect(m.totalDistanceMeters == 1000 && m.isRunning)
    }

    @Test("Cycling Power Measurement: all 8192 combinations of the 13 flags, plus reserved bits")
    func cyclingPower() throws {
        var rng = SeededGenerator(seed: 0x2A63)
        typealias CP = CyclingPowerMeasurement
        for combination in 0..<(1 << 13) {
            let flags = UInt16(combination) | (combination % 97 == 0 ? 0xE000 : 0)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u16(flags)
            let power = rng.s16()
            b.s16(power)
            var e = CP(flags: flags, instantaneousPower: power, pedalPowerBalanceRaw: nil,
                       pedalPowerBalanceReference: has(1) ? .left : .unknown, accumulatedTorqueRaw: nil,
                       accumulatedTorqueSource: has(3) ? .crank : .wheel, wheel: nil, crank: nil, extremeForce: nil,
                       extremeTorqueRaw: nil, extremeAngles: nil, topDeadSpotAngle: nil, bottomDeadSpotAngle: nil,
                       accumulatedEnergyKilojoules: nil, offsetCompensationIndicator: has(12), ignoredTrailingBytes: 0)
            if has(0) { e.pedalPowerBalanceRaw = rng.u8(); b.u8(e.pedalPowerBalanceRaw!) }
            if has(2) { e.accumulatedTorqueRaw = rng.u16(); b.u16(e.accumulatedTorqueRaw!) }
            if has(4) {
                e.wheel = WheelRevolutionData(cumulativeRevolutions: rng.u32(), lastEventTime: rng.u16())
                b.u32(e.wheel!.cumulativeRevolutions)
                b.u16(e.wheel!.lastEventTime)
            }
            if has(5) {
                e.crank = CrankRevolutionData(cumulativeRevolutions: rng.u16(), lastEventTime: rng.u16())
                b.u16(e.crank!.cumulativeRevolutions)
                b.u16(e.crank!.lastEventTime)
            }
            if has(6) {
                e.extremeForce = .init(maximum: rng.s16(), minimum: rng.s16())
                b.s16(e.extremeForce!.maximum)
                b.s16(e.extremeForce!.minimum)
            }
            if has(7) {
                e.extremeTorqueRaw = .init(maximum: rng.s16(), minimum: rng.s16())
                b.s16(e.extremeTorqueRaw!.maximum)
                b.s16(e.extremeTorqueRaw!.minimum)
            }
            if has(8) {
                let maxAngle = rng.u16(below: 4096), minAngle = rng.u16(below: 4096)
                e.extremeAngles = .init(maximum: maxAngle, minimum: minAngle)
                b.u24(UInt32(maxAngle) | UInt32(minAngle) << 12)
            }
            if has(9) { e.topDeadSpotAngle = rng.u16(); b.u16(e.topDeadSpotAngle!) }
            if has(10) { e.bottomDeadSpotAngle = rng.u16(); b.u16(e.bottomDeadSpotAngle!) }
            if has(11) { e.accumulatedEnergyKilojoules = rng.u16(); b.u16(e.accumulatedEnergyKilojoules!) }
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try CP.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2A63, CP.decode)
        }
    }

    @Test("Cycling Power: extreme angles are two 12-bit values, maximum in the low bits")
    func cyclingPowerAngles() throws {
        let m = try CyclingPowerMeasurement.decode([0x00, 0x01, 0xFA, 0x00, 0xBC, 0x3A, 0x12])
        #expect(m.instantaneousPower == 250)
        #expect(m.extremeAngles == .init(maximum: 0xABC, minimum: 0x123))
        let t = try CyclingPowerMeasurement.decode([0x81, 0x00, 0x9C, 0xFF, 0x64, 0x40, 0x00, 0xE0, 0xFF])
        #expect(t.instantaneousPower == -100)
        #expect(t.pedalPowerBalancePercent == 50)
        #expect(t.extremeTorqueNewtonMeters == .init(maximum: 2, minimum: -1))
    }

    @Test("Treadmill Data: all 8192 flags combinations, More Data inverted")
    func treadmill() throws {
        var rng = SeededGenerator(seed: 0x2ACD)
        for combination in 0..<(1 << 13) {
            let flags = UInt16(combination)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u16(flags)
            var e = TreadmillData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
            if !has(0) { e.instantaneousSpeedRaw = rng.u16(); b.u16(e.instantaneousSpeedRaw!) }
            if has(1) { e.averageSpeedRaw = rng.u16(); b.u16(e.averageSpeedRaw!) }
            if has(2) { e.totalDistanceMeters = rng.u24(); b.u24(e.totalDistanceMeters!) }
            if has(3) {
                e.inclinationRaw = rng.s16(); b.s16(e.inclinationRaw!)
                e.rampAngleRaw = rng.s16(); b.s16(e.rampAngleRaw!)
            }
            if has(4) {
                e.positiveElevationGainRaw = rng.u16(); b.u16(e.positiveElevationGainRaw!)
                e.negativeElevationGainRaw = rng.u16(); b.u16(e.negativeElevationGainRaw!)
            }
            if has(5) { e.instantaneousPaceRaw = rng.u8(); b.u8(e.instantaneousPaceRaw!) }
            if has(6) { e.averagePaceRaw = rng.u8(); b.u8(e.averagePaceRaw!) }
            e.common = common(&b, &rng, flags: UInt32(flags), firstBit: 7)
            if has(12) {
                e.forceOnBelt = rng.s16(); b.s16(e.forceOnBelt!)
                e.powerOutput = rng.s16(); b.s16(e.powerOutput!)
            }
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try TreadmillData.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2ACD, TreadmillData.decode)
        }
    }

    @Test("Cross Trainer Data: all 65536 combinations of the 16 defined bits of its 24-bit flags")
    func crossTrainer() throws {
        var rng = SeededGenerator(seed: 0x2ACE)
        for combination in 0..<(1 << 16) {
            let flags = UInt32(combination) | (combination % 251 == 0 ? 0xA5_0000 : 0)
            func has(_ bit: UInt32) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u24(flags)
            var e = CrossTrainerData(flags: flags, moreData: has(0), common: FitnessMachineCommon(),
                                     movingBackward: has(15), ignoredTrailingBytes: 0)
            if !has(0) { e.instantaneousSpeedRaw = rng.u16(); b.u16(e.instantaneousSpeedRaw!) }
            if has(1) { e.averageSpeedRaw = rng.u16(); b.u16(e.averageSpeedRaw!) }
            if has(2) { e.totalDistanceMeters = rng.u24(); b.u24(e.totalDistanceMeters!) }
            if has(3) {
                e.stepsPerMinute = rng.u16(); b.u16(e.stepsPerMinute!)
                e.averageStepRate = rng.u16(); b.u16(e.averageStepRate!)
            }
            if has(4) { e.strideCountRaw = rng.u16(); b.u16(e.strideCountRaw!) }
            if has(5) {
                e.positiveElevationGain = rng.u16(); b.u16(e.positiveElevationGain!)
                e.negativeElevationGain = rng.u16(); b.u16(e.negativeElevationGain!)
            }
            if has(6) {
                e.inclinationRaw = rng.s16(); b.s16(e.inclinationRaw!)
                e.rampAngleRaw = rng.s16(); b.s16(e.rampAngleRaw!)
            }
            if has(7) { e.resistanceLevelRaw = rng.s16(); b.s16(e.resistanceLevelRaw!) }
            if has(8) { e.instantaneousPower = rng.s16(); b.s16(e.instantaneousPower!) }
            if has(9) { e.averagePower = rng.s16(); b.s16(e.averagePower!) }
            e.common = common(&b, &rng, flags: flags, firstBit: 10)
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try CrossTrainerData.decode(b.bytes + trailing) == e)
            if combination % 16 == 0 || combination.nonzeroBitCount >= 14 {
                expectTruncations(b, characteristic: 0x2ACE, CrossTrainerData.decode)
            }
        }
    }

    @Test("Indoor Bike Data: all 8192 flags combinations")
    func indoorBike() throws {
        var rng = SeededGenerator(seed: 0x2AD2)
        for combination in 0..<(1 << 13) {
            let flags = UInt16(combination)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u16(flags)
            var e = IndoorBikeData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
            if !has(0) { e.instantaneousSpeedRaw = rng.u16(); b.u16(e.instantaneousSpeedRaw!) }
            if has(1) { e.averageSpeedRaw = rng.u16(); b.u16(e.averageSpeedRaw!) }
            if has(2) { e.instantaneousCadenceRaw = rng.u16(); b.u16(e.instantaneousCadenceRaw!) }
            if has(3) { e.averageCadenceRaw = rng.u16(); b.u16(e.averageCadenceRaw!) }
            if has(4) { e.totalDistanceMeters = rng.u24(); b.u24(e.totalDistanceMeters!) }
            if has(5) { e.resistanceLevelRaw = rng.s16(); b.s16(e.resistanceLevelRaw!) }
            if has(6) { e.instantaneousPower = rng.s16(); b.s16(e.instantaneousPower!) }
            if has(7) { e.averagePower = rng.s16(); b.s16(e.averagePower!) }
            e.common = common(&b, &rng, flags: UInt32(flags), firstBit: 8)
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try IndoorBikeData.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2AD2, IndoorBikeData.decode)
        }
    }

    @Test("Rower Data: all 8192 flags combinations, More Data gates stroke rate and count")
    func rower() throws {
        var rng = SeededGenerator(seed: 0x2AD1)
        for combination in 0..<(1 << 13) {
            let flags = UInt16(combination)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u16(flags)
            var e = RowerData(flags: flags, moreData: has(0), common: FitnessMachineCommon(), ignoredTrailingBytes: 0)
            if !has(0) {
                e.strokeRateRaw = rng.u8(); b.u8(e.strokeRateRaw!)
                e.strokeCount = rng.u16(); b.u16(e.strokeCount!)
            }
            if has(1) { e.averageStrokeRateRaw = rng.u8(); b.u8(e.averageStrokeRateRaw!) }
            if has(2) { e.totalDistanceMeters = rng.u24(); b.u24(e.totalDistanceMeters!) }
            if has(3) { e.instantaneousPace = rng.u16(); b.u16(e.instantaneousPace!) }
            if has(4) { e.averagePace = rng.u16(); b.u16(e.averagePace!) }
            if has(5) { e.instantaneousPower = rng.s16(); b.s16(e.instantaneousPower!) }
            if has(6) { e.averagePower = rng.s16(); b.s16(e.averagePower!) }
            if has(7) { e.resistanceLevelRaw = rng.s16(); b.s16(e.resistanceLevelRaw!) }
            e.common = common(&b, &rng, flags: UInt32(flags), firstBit: 8)
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try RowerData.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2AD1, RowerData.decode)
        }
    }

    /// The FTMS tail shared by the four machines: energy, heart rate, MET, elapsed and remaining time.
    func common(_ b: inout SpecBytes, _ rng: inout SeededGenerator, flags: UInt32, firstBit: UInt32) -> FitnessMachineCommon {
        func has(_ bit: UInt32) -> Bool { flags & (1 << bit) != 0 }
        var c = FitnessMachineCommon()
        if has(firstBit) {
            let total = rng.u16(), hour = rng.u16(), minute = UInt8.random(in: 0...0xFE, using: &rng)
            b.u16(total)
            b.u16(hour)
            b.u8(minute)
            c.energy = FitnessMachineEnergy(totalKilocalories: total, kilocaloriesPerHour: hour, kilocaloriesPerMinute: minute)
        }
        if has(firstBit + 1) { c.heartRate = rng.u8(); b.u8(c.heartRate!) }
        if has(firstBit + 2) { c.metabolicEquivalentRaw = rng.u8(); b.u8(c.metabolicEquivalentRaw!) }
        if has(firstBit + 3) { c.elapsedTime = rng.u16(); b.u16(c.elapsedTime!) }
        if has(firstBit + 4) { c.remainingTime = rng.u16(); b.u16(c.remainingTime!) }
        return c
    }

    @Test("Fitness machine: worked vectors, units and 'Data Not Available'")
    func fitnessMachineVectors() throws {
        // Indoor bike: speed 25.00 km/h, cadence 90 rpm, power 200 W, heart rate 140.
        let bike = try IndoorBikeData.decode([0x44, 0x02, 0xC4, 0x09, 0xB4, 0x00, 0xC8, 0x00, 0x8C])
        #expect(!bike.moreData)
        #expect(bike.instantaneousSpeedKilometersPerHour == 25)
        #expect(bike.instantaneousCadenceRPM == 90)
        #expect(bike.instantaneousPower == 200)
        #expect(bike.common.heartRate == 140)
        // More Data set: no instantaneous speed, the record continues in the next notification.
        let more = try IndoorBikeData.decode([0x01, 0x08, 0x2C, 0x01])
        #expect(more.moreData && more.instantaneousSpeedRaw == nil && more.common.elapsedTime == 300)
        // Treadmill: inclination/ramp not available, energy partly not available, MET 9.8.
        let tm = try TreadmillData.decode([0x89, 0x02, 0xFF, 0x7F, 0xFF, 0x7F, 0x64, 0x00, 0xFF, 0xFF, 0xFF, 0x62])
        #expect(tm.moreData && tm.instantaneousSpeedRaw == nil)
        #expect(tm.inclinationRaw == nil && tm.rampAngleRaw == nil)
        #expect(tm.common.energy == FitnessMachineEnergy(totalKilocalories: 100, kilocaloriesPerHour: nil, kilocaloriesPerMinute: nil))
        #expect(tm.common.metabolicEquivalent == 9.8)
        let incline = try TreadmillData.decode([0x08, 0x00, 0xE8, 0x03, 0xCE, 0xFF, 0x0F, 0x00])
        #expect(incline.instantaneousSpeedKilometersPerHour == 10 && incline.inclinationPercent == -5 && incline.rampAngleDegrees == 1.5)
        // Cross trainer: 24-bit flags with movement direction backward.
        let ct = try CrossTrainerData.decode([0x01, 0x80, 0x00])
        #expect(ct.moreData && ct.movingBackward && ct.instantaneousSpeedRaw == nil)
        // Rower: stroke rate 0.5/min units.
        let row = try RowerData.decode([0x00, 0x00, 0x39, 0x10, 0x00])
        #expect(row.strokeRatePerMinute == 28.5 && row.strokeCount == 16)
    }

    @Test("Weight Measurement: all 256 flags values")
    func weight() throws {
        var rng = SeededGenerator(seed: 0x2A9D)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            let weight = rng.u16(below: 0xFFFF)
            b.u16(weight)
            let stamp: GATTDateTime? = flags & 2 != 0 ? rng.dateTime() : nil
            if let stamp { b.dateTime(stamp) }
            let user: UInt8? = flags & 4 != 0 ? rng.u8() : nil
            if let user { b.u8(user) }
            var bmi: UInt16?, height: UInt16?
            if flags & 8 != 0 {
                bmi = rng.u16(); b.u16(bmi!)
                height = rng.u16(); b.u16(height!)
            }
            let trailing = rng.trailing()
            let expected = WeightScaleMeasurement(flags: flags, units: flags & 1 != 0 ? .imperial : .si, weightRaw: weight,
                                                  timestamp: stamp, userID: user, bmiRaw: bmi, heightRaw: height,
                                                  ignoredTrailingBytes: trailing.count)
            #expect(try WeightScaleMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(b, characteristic: 0x2A9D, WeightScaleMeasurement.decode)
        }
    }

    @Test("Weight Measurement: units, resolution and 'measurement unsuccessful'")
    func weightUnits() throws {
        let si = try WeightScaleMeasurement.decode([0x08, 0xB0, 0x36, 0xE5, 0x00, 0xA4, 0x06])
        #expect(si.weightKilograms == 70.0)
        #expect(si.bmi == 22.9)
        #expect(si.heightMeters == 1.7)
        let lb = try WeightScaleMeasurement.decode([0x09, 0x48, 0x3C, 0xE5, 0x00, 0xA5, 0x02])
        #expect(lb.units == .imperial)
        #expect(abs(lb.weightKilograms! - 154.32 * 0.45359237) < 1e-9)
        #expect(abs(lb.heightMeters! - 67.7 * 0.0254) < 1e-9)
        let failed = try WeightScaleMeasurement.decode([0x00, 0xFF, 0xFF])
        #expect(failed.weightRaw == nil && failed.weightKilograms == nil)
        let feature = try WeightScaleFeature.decode([0xBF, 0x01, 0x00, 0x00])
        #expect(feature.timeStampSupported && feature.multipleUsersSupported && feature.bmiSupported)
        #expect(feature.weightResolution == 7 && feature.heightResolution == 3)
    }

    @Test("Body Composition Measurement: all 8192 combinations of the 13 flags, plus reserved bits")
    func bodyComposition() throws {
        var rng = SeededGenerator(seed: 0x2A9C)
        for combination in 0..<(1 << 13) {
            let flags = UInt16(combination) | (combination % 89 == 0 ? 0xE000 : 0)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u16(flags)
            let fat = rng.u16(below: 0xFFFF)
            b.u16(fat)
            var e = BodyCompositionMeasurement(flags: flags, units: has(0) ? .imperial : .si, bodyFatPercentageRaw: fat,
                                               isMultiplePacket: has(12), ignoredTrailingBytes: 0)
            if has(1) { e.timestamp = rng.dateTime(); b.dateTime(e.timestamp!) }
            if has(2) { e.userID = rng.u8(); b.u8(e.userID!) }
            let sixteen: [(UInt16, WritableKeyPath<BodyCompositionMeasurement, UInt16?>)] = [
                (3, \.basalMetabolismKilojoules), (4, \.musclePercentageRaw), (5, \.muscleMassRaw),
                (6, \.fatFreeMassRaw), (7, \.softLeanMassRaw), (8, \.bodyWaterMassRaw), (9, \.impedanceRaw),
                (10, \.weightRaw), (11, \.heightRaw),
            ]
            for (bit, path) in sixteen where has(bit) {
                let v = rng.u16()
                e[keyPath: path] = v
                b.u16(v)
            }
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try BodyCompositionMeasurement.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2A9C, BodyCompositionMeasurement.decode)
        }
        let m = try BodyCompositionMeasurement.decode([0x20, 0x10, 0xDC, 0x00, 0x10, 0x27])
        #expect(m.bodyFatPercentage == 22.0 && m.muscleMassKilograms == 50.0 && m.isMultiplePacket)
        #expect(try BodyCompositionMeasurement.decode([0x00, 0x00, 0xFF, 0xFF]).bodyFatPercentage == nil)
    }

    @Test("Blood Pressure Measurement and Intermediate Cuff Pressure: all 256 flags values")
    func bloodPressure() throws {
        var rng = SeededGenerator(seed: 0x2A35)
        for characteristic in [GATTCharacteristic.bloodPressureMeasurement, GATTCharacteristic.intermediateCuffPressure] {
            for flags in UInt8.min...UInt8.max {
                var b = SpecBytes()
                b.u8(flags)
                let (s, sv) = rng.sfloat(), (d, dv) = rng.sfloat(), (a, av) = rng.sfloat()
                b.u16(s); b.u16(d); b.u16(a)
                let stamp: GATTDateTime? = flags & 2 != 0 ? rng.dateTime() : nil
                if let stamp { b.dateTime(stamp) }
                var pulse: MedicalFloat?
                if flags & 4 != 0 { let (p, pv) = rng.sfloat(); b.u16(p); pulse = pv }
                let user: UInt8? = flags & 8 != 0 ? rng.u8() : nil
                if let user { b.u8(user) }
                var status: BloodPressureMeasurement.Status?
                if flags & 16 != 0 { let raw = rng.u16(); b.u16(raw); status = .init(rawValue: raw) }
                let trailing = rng.trailing()
                let expected = BloodPressureMeasurement(flags: flags, unit: flags & 1 != 0 ? .kPa : .mmHg, systolic: sv,
                                                        diastolic: dv, meanArterialPressure: av, timestamp: stamp,
                                                        pulseRate: pulse, userID: user, status: status,
                                                        ignoredTrailingBytes: trailing.count)
                #expect(try BloodPressureMeasurement.decode(b.bytes + trailing, characteristic: characteristic) == expected)
                expectTruncations(b, characteristic: characteristic) { bytes throws(ProfileDecodeError) in
                    try BloodPressureMeasurement.decode(bytes, characteristic: characteristic)
                }
            }
        }
    }

    @Test("Blood Pressure: units, NaN fields and status bits")
    func bloodPressureVector() throws {
        // 120/80 mmHg, MAP 93, pulse 72 bpm, status: irregular pulse, pulse rate above range.
        let m = try BloodPressureMeasurement.decode([0x14, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0x48, 0x00, 0x0C, 0x00])
        #expect(m.systolicMmHg == 120 && m.diastolicMmHg == 80 && m.meanArterialPressureMmHg == 93)
        #expect(m.pulseRate?.doubleValue == 72)
        #expect(m.status?.irregularPulseDetected == true && m.status?.pulseRateRange == .exceedsUpperLimit)
        #expect(m.status?.bodyMovementDetected == false)
        // 16.0 / 10.7 kPa, MAP not available.
        let kpa = try BloodPressureMeasurement.decode([0x01, 0xA0, 0xF0, 0x6B, 0xF0, 0xFF, 0x07])
        #expect(kpa.unit == .kPa)
        #expect(abs(kpa.systolicMmHg! - 16.0 * 7.500615758) < 1e-9)
        #expect(kpa.meanArterialPressure == .nan && kpa.meanArterialPressureMmHg == nil)
        let cuff = try BloodPressureMeasurement.decodeIntermediateCuffPressure([0x00, 0x8C, 0x00, 0xFF, 0x07, 0xFF, 0x07])
        #expect(cuff.systolic.doubleValue == 140 && cuff.diastolic == .nan)
    }

    @Test("Temperature Measurement and Intermediate Temperature: all 256 flags values")
    func temperature() throws {
        var rng = SeededGenerator(seed: 0x2A1C)
        for characteristic in [GATTCharacteristic.temperatureMeasurement, GATTCharacteristic.intermediateTemperature] {
            for flags in UInt8.min...UInt8.max {
                var b = SpecBytes()
                b.u8(flags)
                let raw = rng.u32()
                b.u32(raw)
                let stamp: GATTDateTime? = flags & 2 != 0 ? rng.dateTime() : nil
                if let stamp { b.dateTime(stamp) }
                var type: TemperatureMeasurement.TemperatureType?
                if flags & 4 != 0 { let t = rng.u8(); b.u8(t); type = .init(rawValue: t) }
                let trailing = rng.trailing()
                let expected = TemperatureMeasurement(flags: flags, unit: flags & 1 != 0 ? .fahrenheit : .celsius,
                                                      temperature: MedicalFloat(float: raw), timestamp: stamp,
                                                      temperatureType: type, ignoredTrailingBytes: trailing.count)
                #expect(try TemperatureMeasurement.decode(b.bytes + trailing, characteristic: characteristic) == expected)
                expectTruncations(b, characteristic: characteristic) { bytes throws(ProfileDecodeError) in
                    try TemperatureMeasurement.decode(bytes, characteristic: characteristic)
                }
            }
        }
        let c = try TemperatureMeasurement.decode([0x06, 0x6C, 0x01, 0x00, 0xFF, 0xE8, 0x07, 0x03, 0x0F, 0x08, 0x1E, 0x00, 0x03])
        #expect(c.celsius == 36.4 && c.temperatureType == .ear)
        #expect(c.timestamp == GATTDateTime(year: 2024, month: 3, day: 15, hours: 8, minutes: 30, seconds: 0))
        let f = try TemperatureMeasurement.decodeIntermediate([0x01, 0xDA, 0x03, 0x00, 0xFF])
        #expect(abs(f.celsius! - 37) < 1e-9)
        #expect(try TemperatureMeasurement.decode([0x00, 0xFF, 0xFF, 0x7F, 0x00]).celsius == nil)
    }

    @Test("PLX Spot-Check Measurement: all 256 flags values")
    func plxSpotCheck() throws {
        var rng = SeededGenerator(seed: 0x2A5E)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            let (s, sv) = rng.sfloat(), (p, pv) = rng.sfloat()
            b.u16(s); b.u16(p)
            let stamp: GATTDateTime? = flags & 1 != 0 ? rng.dateTime() : nil
            if let stamp { b.dateTime(stamp) }
            var status: PLXMeasurementStatus?
            if flags & 2 != 0 { let r = rng.u16(); b.u16(r); status = .init(rawValue: r) }
            var device: PLXDeviceAndSensorStatus?
            if flags & 4 != 0 { let r = rng.u24(); b.u24(r); device = .init(rawValue: r) }
            var pai: MedicalFloat?
            if flags & 8 != 0 { let (r, v) = rng.sfloat(); b.u16(r); pai = v }
            let trailing = rng.trailing()
            let expected = PLXSpotCheckMeasurement(flags: flags, reading: .init(spO2: sv, pulseRate: pv), timestamp: stamp,
                                                   measurementStatus: status, deviceAndSensorStatus: device,
                                                   pulseAmplitudeIndex: pai, deviceClockNotSet: flags & 16 != 0,
                                                   ignoredTrailingBytes: trailing.count)
            #expect(try PLXSpotCheckMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(b, characteristic: 0x2A5E, PLXSpotCheckMeasurement.decode)
        }
    }

    @Test("PLX Continuous Measurement: all 256 flags values")
    func plxContinuous() throws {
        var rng = SeededGenerator(seed: 0x2A5F)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            func pair() -> SpO2PulseRate {
                let (s, sv) = rng.sfloat(), (p, pv) = rng.sfloat()
                b.u16(s); b.u16(p)
                return SpO2PulseRate(spO2: sv, pulseRate: pv)
            }
            let normal = pair()
            let fast = flags & 1 != 0 ? pair() : nil
            let slow = flags & 2 != 0 ? pair() : nil
            var status: PLXMeasurementStatus?
            if flags & 4 != 0 { let r = rng.u16(); b.u16(r); status = .init(rawValue: r) }
            var device: PLXDeviceAndSensorStatus?
            if flags & 8 != 0 { let r = rng.u24(); b.u24(r); device = .init(rawValue: r) }
            var pai: MedicalFloat?
            if flags & 16 != 0 { let (r, v) = rng.sfloat(); b.u16(r); pai = v }
            let trailing = rng.trailing()
            let expected = PLXContinuousMeasurement(flags: flags, normal: normal, fast: fast, slow: slow,
                                                    measurementStatus: status, deviceAndSensorStatus: device,
                                                    pulseAmplitudeIndex: pai, ignoredTrailingBytes: trailing.count)
            #expect(try PLXContinuousMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(b, characteristic: 0x2A5F, PLXContinuousMeasurement.decode)
        }
        // SpO2 98 %, PR 62 bpm; status: validated data; device: low perfusion.
        let m = try PLXContinuousMeasurement.decode([0x0C, 0x62, 0x00, 0x3E, 0x00, 0x80, 0x00, 0x20, 0x00, 0x00])
        #expect(m.normal.spO2.doubleValue == 98 && m.normal.pulseRate.doubleValue == 62)
        #expect(m.measurementStatus == .validatedData && m.deviceAndSensorStatus == .lowPerfusionDetected)
    }

    @Test("Glucose Measurement: all 256 flags values")
    func glucose() throws {
        var rng = SeededGenerator(seed: 0x2A18)
        for flags in UInt8.min...UInt8.max {
            var b = SpecBytes()
            b.u8(flags)
            let sequence = rng.u16()
            b.u16(sequence)
            let base = rng.dateTime()
            b.dateTime(base)
            let offset: Int16? = flags & 1 != 0 ? rng.s16() : nil
            if let offset { b.s16(offset) }
            var concentration: MedicalFloat?
            var type: GlucoseMeasurement.SampleType?
            var location: GlucoseMeasurement.SampleLocation?
            if flags & 2 != 0 {
                let (r, v) = rng.sfloat()
                b.u16(r)
                concentration = v
                let nibbles = rng.u8()
                b.u8(nibbles)
                type = .init(nibble: nibbles & 0x0F)
                location = .init(nibble: nibbles >> 4)
            }
            var status: GlucoseMeasurement.SensorStatus?
            if flags & 8 != 0 { let r = rng.u16(); b.u16(r); status = .init(rawValue: r) }
            let trailing = rng.trailing()
            let expected = GlucoseMeasurement(flags: flags, sequenceNumber: sequence, baseTime: base,
                                              timeOffsetMinutes: offset, concentration: concentration,
                                              concentrationUnit: flags & 4 != 0 ? .molesPerLiter : .kilogramsPerLiter,
                                              type: type, sampleLocation: location, sensorStatus: status,
                                              contextFollows: flags & 16 != 0, ignoredTrailingBytes: trailing.count)
            #expect(try GlucoseMeasurement.decode(b.bytes + trailing) == expected)
            expectTruncations(b, characteristic: 0x2A18, GlucoseMeasurement.decode)
        }
    }

    @Test("Glucose: kg/L and mol/L to mmol/L, nibbles, special values")
    func glucoseVector() throws {
        // Sequence 5, 2024-01-02 07:08:09, offset -30 min, 100 mg/dL = 1.00e-3 kg/L (mantissa 100,
        // exponent -5), capillary whole blood from a finger, battery low.
        let m = try GlucoseMeasurement.decode([0x0B, 0x05, 0x00, 0xE8, 0x07, 0x01, 0x02, 0x07, 0x08, 0x09,
                                               0xE2, 0xFF, 0x64, 0xB0, 0x11, 0x01, 0x00])
        #expect(m.sequenceNumber == 5 && m.timeOffsetMinutes == -30)
        #expect(m.concentration == .value(mantissa: 100, exponent: -5))
        #expect(abs(m.millimolesPerLiter! - 1_000 / 180.156) < 1e-9)
        #expect(abs(m.milligramsPerDeciliter! - 100) < 1e-9)
        #expect(m.type == .capillaryWholeBlood && m.sampleLocation == .finger && m.sensorStatus == .deviceBatteryLow)
        // 5.6 mmol/L sent as mol/L: mantissa 56, exponent -4 (0xC038).
        let mol = try GlucoseMeasurement.decode([0x06, 0x01, 0x00, 0xE8, 0x07, 0x01, 0x02, 0x07, 0x08, 0x09,
                                                 0x38, 0xC0, 0xF9])
        #expect(abs(mol.millimolesPerLiter! - 5.6) < 1e-12)
        #expect(mol.type == .interstitialFluid && mol.sampleLocation == .notAvailable)
        // A NaN concentration never becomes a number.
        let nan = try GlucoseMeasurement.decode([0x02, 0x01, 0x00, 0xE8, 0x07, 0x01, 0x02, 0x07, 0x08, 0x09,
                                                 0xFF, 0x07, 0x11])
        #expect(nan.concentration == .nan && nan.millimolesPerLiter == nil && nan.milligramsPerDeciliter == nil)
    }

    @Test("Glucose Measurement Context: all 256 flags values")
    func glucoseContext() throws {
        var rng = SeededGenerator(seed: 0x2A34)
        for flags in UInt8.min...UInt8.max {
            func has(_ bit: UInt8) -> Bool { flags & (1 << bit) != 0 }
            var b = SpecBytes()
            b.u8(flags)
            let sequence = rng.u16()
            b.u16(sequence)
            var e = GlucoseMeasurementContext(flags: flags, sequenceNumber: sequence, medicationUnit: has(5) ? .liters : .kilograms)
            if has(7) { e.extendedFlags = rng.u8(); b.u8(e.extendedFlags!) }
            if has(0) {
                e.carbohydrateID = rng.u8(); b.u8(e.carbohydrateID!)
                let (r, v) = rng.sfloat(); b.u16(r); e.carbohydrate = v
            }
            if has(1) { e.meal = rng.u8(); b.u8(e.meal!) }
            if has(2) { let n = rng.u8(); b.u8(n); e.tester = n & 0x0F; e.health = n >> 4 }
            if has(3) {
                e.exerciseDuration = rng.u16(); b.u16(e.exerciseDuration!)
                e.exerciseIntensity = rng.u8(); b.u8(e.exerciseIntensity!)
            }
            if has(4) {
                e.medicationID = rng.u8(); b.u8(e.medicationID!)
                let (r, v) = rng.sfloat(); b.u16(r); e.medication = v
            }
            if has(6) { let (r, v) = rng.sfloat(); b.u16(r); e.hbA1c = v }
            let trailing = rng.trailing()
            e.ignoredTrailingBytes = trailing.count
            #expect(try GlucoseMeasurementContext.decode(b.bytes + trailing) == e)
            expectTruncations(b, characteristic: 0x2A34, GlucoseMeasurementContext.decode)
        }
    }
}
