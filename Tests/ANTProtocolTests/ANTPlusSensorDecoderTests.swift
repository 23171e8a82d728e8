import ANTPlusProfiles
import TestSupport
import Testing

/// The driver's entry point: pages of one channel in, readings out; and a randomized property test
/// over every device type.
@Suite struct ANTPlusSensorDecoderTests {
    @Test("heart rate: the notes' frames give 110 bpm with RR 0.542 s, then 110 bpm and no new RR")
    func heartRate() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 120)
        #expect(try decoder.receive([0x84, 0x00, 0x2E, 0x56, 0x59, 0x58, 0x2E, 0x6E], at: 10) == [.heartRate(beatsPerMinute: 110,
            rrSeconds: [555.0 / 1024])])
        #expect(try decoder.receive([0x04, 0x00, 0x59, 0x58, 0x59, 0x58, 0x2E, 0x6E], at: 10.25) == [.heartRate(beatsPerMinute: 110,
            rrSeconds: [])])
        #expect(try decoder.receive([0x00, 0xFF, 0xFF, 0xFF, 0x59, 0x5C, 0x2F, 0x00], at: 10.5) == [], "heart rate 0 is invalid")
    }

    @Test("heart rate device pages once the toggle bit flipped: operating time, battery, manufacturer once pages 2 and 3 were seen")
    func heartRateDevicePages() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 120 | 0x80)
        #expect(decoder.deviceType == 120)
        let tail: [UInt8] = [0x00, 0x04, 0x01, 0x3C]
        // Until the toggle bit flips, bytes 1-3 may be a legacy strap's undefined bytes.
        #expect(try decoder.receive([0x81, 0x10, 0x00, 0x00] + tail, at: -0.25) == [.heartRate(beatsPerMinute: 60, rrSeconds: [])])
        #expect(try decoder.receive([0x01, 0x10, 0x00, 0x00] + tail, at: 0) == [.heartRate(beatsPerMinute: 60, rrSeconds: []),
                                                                                .operatingTime(seconds: 32)])
        #expect(try decoder.receive([0x02, 0x01, 0x34, 0x12] + tail, at: 0.25) == [.heartRate(beatsPerMinute: 60, rrSeconds: [])])
        #expect(try decoder.receive([0x03, 0x05, 0x1A, 0x07] + tail, at: 0.5) == [
            .heartRate(beatsPerMinute: 60, rrSeconds: []), .product(serialNumber: nil, softwareVersion: "26"),
            .manufacturer(manufacturerID: 1, model: 7, hardwareRevision: 5),
        ])
        #expect(try decoder.receive([0x83, 0x05, 0x1A, 0x07] + tail, at: 0.75) == [.heartRate(beatsPerMinute: 60, rrSeconds: [])],
                "reported once")
        #expect(try decoder.receive([0x07, 90, 0x00, 0x23] + tail, at: 1) == [
            .heartRate(beatsPerMinute: 60, rrSeconds: []), .battery(percent: 90, voltage: 3, status: .good),
        ])
    }

    @Test("a legacy sensor whose toggle bit never flips gives no device readings from its undefined bytes 1-3")
    func legacySensor() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 123)
        for i in 0..<12 {
            let readings = try decoder.receive([0x07 & UInt8(i), 0x55, 0x33, 0x11, UInt8(i * 4), 0x00, UInt8(i), 0x00], at: Double(i) / 4)
            #expect(readings.allSatisfy { if case .speed = $0 { true } else { false } }, "\(readings)")
        }
    }

    @Test("speed sensor: speed with the configured circumference, distance since the first page, the stop indicator")
    func speedSensor() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 123, wheelCircumference: 2)
        #expect(try decoder.receive([0x00, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x0A, 0x00], at: 0) == [])
        #expect(try decoder.receive([0x80, 0xFF, 0xFF, 0xFF, 0x00, 0x04, 0x0D, 0x00], at: 1) == [.speed(metersPerSecond: 6,
            distanceMeters: 6)])
        #expect(try decoder.receive([0x05, 0x01, 0xFF, 0xFF, 0x00, 0x04, 0x0D, 0x00], at: 1.25) == [.speed(metersPerSecond: 0,
            distanceMeters: 6)])
        #expect(try decoder.receive([0x04, 0xFF, 0x80, 0x22, 0x00, 0x04, 0x0D, 0x00], at: 1.5) == [
            .speed(metersPerSecond: 0, distanceMeters: 6), .battery(percent: nil, voltage: 2.5, status: .good),
        ])
    }

    @Test("cadence sensor: revolutions per minute")
    func cadenceSensor() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 122)
        _ = try decoder.receive([0x00, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x0A, 0x00], at: 0)
        #expect(try decoder.receive([0x00, 0xFF, 0xFF, 0xFF, 0x00, 0x08, 0x0C, 0x00], at: 2) == [.cadence(revolutionsPerMinute: 60)])
    }

    @Test("combined speed and cadence: every byte is data, whatever byte 0 looks like (no page filter)")
    func combined() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 121)
        #expect(try decoder.receive([0xF0, 0xFF, 0x00, 0x00, 0xF0, 0xFF, 0xFE, 0xFF], at: 0) == [])
        // Cadence: 1 revolution in 1024 ticks across the time rollover; wheel: 4 revolutions across the count rollover.
        #expect(try decoder.receive([0xF0, 0x03, 0x01, 0x00, 0xF0, 0x03, 0x02, 0x00], at: 1) == [
            .speed(metersPerSecond: 4 * 2.096, distanceMeters: 4 * 2.096), .cadence(revolutionsPerMinute: 60),
        ])
    }

    @Test("power meter: readings from 0x10, common pages once, and an unknown page is a typed error that changes nothing")
    func powerMeter() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 11)
        #expect(try decoder.receive([0x10, 10, 0xFF, 90, 0xE8, 0x03, 0xC8, 0x00], at: 0) == [.power(watts: 200, cadence: 90,
                                                                                                    leftRightBalance: nil)])
        #expect(throws: ANTPlusDecodeError(deviceType: 11, .unknownPage(0x30))) { try decoder.receive([0x30, 0, 0, 0, 0, 0, 0, 0],
            at: 0.25) }
        #expect(try decoder.receive([0x10, 12, 0xB2, 92, 0xDC, 0x05, 0xF0, 0x00], at: 0.5) == [.power(watts: 250, cadence: 92,
            leftRightBalance: 50)])
        let manufacturer: [UInt8] = [0x50, 0xFF, 0xFF, 0x02, 0x20, 0x00, 0x10, 0x00]
        #expect(try decoder.receive(manufacturer, at: 1) == [.manufacturer(manufacturerID: 32, model: 16, hardwareRevision: 2)])
        #expect(try decoder.receive(manufacturer, at: 1.25) == [])
        #expect(try decoder.receive([0x51, 0xFF, 0xFF, 0x21, 0x78, 0x56, 0x34, 0x12], at: 1.5) == [.product(serialNumber: 0x1234_5678,
            softwareVersion: "33")])
        #expect(try decoder.receive([0x52, 0xFF, 0xFF, 0x0A, 0x00, 0x00, 0x80, 0x93], at: 1.75) == [
            .battery(percent: nil, voltage: 3.5, status: .new), .operatingTime(seconds: 20),
        ])
        #expect(try decoder.receive([0x01, 0xAC, 0, 0, 0, 0, 0, 0], at: 2) == [])
    }

    @Test("a wheel torque meter also reports speed")
    func wheelTorqueSpeed() throws {
        var decoder = ANTPlusSensorDecoder(deviceType: 11)
        _ = try decoder.receive([0x11, 0, 0, 80, 0, 0, 0, 0], at: 0)
        let readings = try decoder.receive([0x11, 2, 2, 80, 0x00, 0x08, 0x00, 0x04], at: 1)
        #expect(readings == [.power(watts: 128 * Double.pi * 1024 / 2048, cadence: 80, leftRightBalance: nil),
                             .speed(metersPerSecond: 2 * 2.096, distanceMeters: 2 * 2.096)])
    }

    @Test("stride, fitness equipment and weight scale readings")
    func otherProfiles() throws {
        var sdm = ANTPlusSensorDecoder(deviceType: 124)
        #expect(try sdm.receive([0x01, 0, 12, 34, 0x43, 128, 77, 8], at: 0)
            == [.stride(metersPerSecond: 3.5, stepsPerMinute: nil, distanceMeters: 0, strides: 0)])
        #expect(try sdm.receive([0x02, 0xFF, 0xFF, 85, 0x82, 64, 0xFF, 0x11], at: 0.25)
            == [.stride(metersPerSecond: 2.25, stepsPerMinute: 171, distanceMeters: nil, strides: nil)])
        var fe = ANTPlusSensorDecoder(deviceType: 17)
        guard case .fitnessEquipment(let state) = try fe.receive([0x10, 22, 0, 0, 0xB8, 0x0B, 0xFF, 0x30], at: 0).first else {
            Issue.record("no FE state")
            return
        }
        #expect(state.equipmentType == .rower && state.speedMetersPerSecond == 3 && state.heartRate == nil && state.machineState == .inUse)
        #expect(try fe.receive([0x47, 0x31, 1, 0, 0, 0, 0, 0], at: 0.25) == [])
        var scale = ANTPlusSensorDecoder(deviceType: 119)
        #expect(try scale.receive([0x01, 0x05, 0x00, 0x00, 0xFF, 0xFF, 0xFE, 0xFF], at: 0) == [])
        #expect(try scale.receive([0x01, 0x05, 0x00, 0x00, 0xFF, 0xFF, 0x6C, 0x1D], at: 0.25)
            == [.weight(ANTWeightReading(measurement: 1, userProfile: 5, weightKilograms: 75.32))])
        #expect(try scale.receive([0x01, 0x05, 0x00, 0x00, 0xFF, 0xFF, 0x6C, 0x1D], at: 0.5) == [])
    }

    @Test("unsupported device types and wrong lengths are typed errors; a bad circumference falls back to 2.096 m")
    func errors() {
        var unknown = ANTPlusSensorDecoder(deviceType: 40)
        #expect(throws: ANTPlusDecodeError(deviceType: 40, .unsupportedDeviceType)) { try unknown.receive([0, 0, 0, 0, 0, 0, 0, 0], at: 0) }
        var hr = ANTPlusSensorDecoder(deviceType: 120)
        #expect(throws: ANTPlusDecodeError(deviceType: 120, .wrongLength(4))) { try hr.receive([0, 0, 0, 0], at: 0) }
        for bad in [-1, 0, .nan, .infinity, 50] {
            #expect(ANTPlusSensorDecoder(deviceType: 123, wheelCircumference: bad).wheelCircumference == 2.096)
        }
        #expect(ANTPlusSensorDecoder(deviceType: 123, wheelCircumference: 2.2).wheelCircumference == 2.2)
    }

    // MARK: - Property test

    /// Every number a reading carries, and whether it must not be negative.
    func numbers(_ reading: ANTPlusReading) -> [(Double, nonNegative: Bool)] {
        switch reading {
        case .heartRate(let bpm, let rr): return [(Double(bpm), true)] + rr.map { ($0, true) }
        case .speed(let speed, let distance): return [(speed, true), (distance, true)]
        case .cadence(let rpm): return [(rpm, true)]
        case .power(let watts, let cadence, let balance): return [(watts, true)] + [cadence, balance].compactMap { $0 }.map { ($0, true) }
        case .stride(let speed, let steps, let distance, let strides):
            return [speed, steps, distance, strides.map(Double.init)].compactMap { $0 }.map { ($0, true) }
        case .fitnessEquipment(let s):
            let positive = [s.elapsedSeconds, s.distanceMeters, s.speedMetersPerSecond, s.heartRate.map(Double.init), s.powerWatts,
                            s.cadence,
                            s.kilocalories, s.metabolicEquivalents, s.calorieRateKilocaloriesPerHour, s.resistancePercent]
            return positive.compactMap { $0 }.map { ($0, true) } + [s.inclinePercent].compactMap { $0 }.map { ($0, false) }
        case .weight(let w):
            return [w.weightKilograms, w.hydrationPercent, w.bodyFatPercent, w.activeMetabolicRateKilocalories,
                    w.basalMetabolicRateKilocalories,
                    w.muscleMassKilograms, w.boneMassKilograms].compactMap { $0 }.map { ($0, true) }
        case .battery(let percent, let voltage, _): return [percent.map(Double.init), voltage].compactMap { $0 }.map { ($0, true) }
        case .operatingTime(let seconds): return [(seconds, true)]
        case .manufacturer, .product: return []
        }
    }

    @Test("random and slowly changing pages for every device type never trap and never give NaN, infinity or negative values",
          arguments: ANTPlusDeviceType.supported + [0, 200])
    func randomPages(deviceType: UInt8) {
        var rng = SeededGenerator(seed: 0xA17_0000 | UInt64(deviceType))
        var decoder = ANTPlusSensorDecoder(deviceType: deviceType, wheelCircumference: 2.1)
        var page = rng.bytes(8)
        var time = 0.0
        var decoded = 0
        var kinds: [String: Int] = [:]
        var problems: [String] = []
        for i in 0..<6000 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<3:
                page = rng.bytes(8)
            case 3:
                // A page the profile defines, with random fields.
                page[0] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x11, 0x12, 0x13, 0x19, 0x50, 0x51, 0x52].randomElement(using: &rng)!
            default:
                // Counters moving on a little, as a real sensor's do.
                for j in 1..<8 where Bool.random(using: &rng) { page[j] &+= UInt8.random(in: 0...4, using: &rng) }
            }
            time += i % 97 == 0 ? Double.random(in: 0...100, using: &rng) : Double.random(in: 0...0.5, using: &rng)
            guard let readings = try? decoder.receive(page, at: time) else { continue }
            decoded += 1
            for reading in readings {
                kinds[String("\(reading)".prefix { $0 != "(" }), default: 0] += 1
                for (value, nonNegative) in numbers(reading) where !value.isFinite || (nonNegative && value < 0) {
                    if problems.count < 10 { problems.append("\(page) at \(time): \(reading)") }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems)")
        // The loop reaches the calculators: every supported type yields readings of its own kind.
        let own: [UInt8: String] = [11: "power", 17: "fitnessEquipment", 119: "weight", 120: "heartRate", 121: "cadence", 122: "cadence",
                                    123: "speed", 124: "stride"]
        if let kind = own[deviceType] {
            #expect(decoded > 0 && kinds[kind, default: 0] > 0, "\(kinds)")
        } else {
            #expect(decoded == 0)
        }
    }
}
