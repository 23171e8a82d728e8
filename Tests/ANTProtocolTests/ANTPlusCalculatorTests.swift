import ANTPlusProfiles
import HealthModel
import Testing

/// The stateful calculators: RR intervals, wheel and crank rates, power from torque, stride and
/// fitness equipment totals, weight measurements. Every rolling counter is taken across its
/// rollover.
@Suite struct ANTPlusCalculatorTests {
    // MARK: - Heart rate

    func hrPage(_ page: UInt8 = 0, count: UInt8, time: UInt16, previous: UInt16 = 0xFFFF, bpm: UInt8 = 70) -> ANTHeartRatePage {
        try! ANTHeartRatePage.decode([page, 0xFF, UInt8(previous & 0xFF), UInt8(previous >> 8), UInt8(time & 0xFF), UInt8(time >> 8),
                                      count, bpm])
    }

    @Test("the notes' strap: page 4 gives RR 0.542 s; its repeat with the previous time overwritten gives nothing")
    func notesStrap() throws {
        var calc = ANTHeartRateCalculator()
        let first = try ANTHeartRatePage.decode([0x84, 0x00, 0x2E, 0x56, 0x59, 0x58, 0x2E, 0x6E])
        let repeatPage = try ANTHeartRatePage.decode([0x04, 0x00, 0x59, 0x58, 0x59, 0x58, 0x2E, 0x6E])
        #expect(first.beatCount == 46 && first.heartRate == 110)
        let rr = calc.update(first, at: 0)
        #expect(rr.count == 1 && abs(rr[0] - 0.542) < 0.0005)
        #expect(rr == [555.0 / 1024])
        #expect(calc.update(repeatPage, at: 0.25).isEmpty)
        #expect(calc.update(repeatPage, at: 0.5).isEmpty)
    }

    @Test("RR from consecutive pages only when the beat count rises by exactly one")
    func rrOnPlusOne() {
        var calc = ANTHeartRateCalculator()
        #expect(calc.update(hrPage(count: 10, time: 1000), at: 0).isEmpty, "the first page is a baseline")
        #expect(calc.update(hrPage(count: 10, time: 1000), at: 0.25).isEmpty, "a repeat")
        #expect(calc.update(hrPage(count: 11, time: 1820), at: 0.8) == [820.0 / 1024])
        #expect(calc.update(hrPage(count: 13, time: 3500), at: 2.5).isEmpty, "two beats: the time covers both")
        #expect(calc.update(hrPage(count: 14, time: 4300), at: 3.2) == [800.0 / 1024])
    }

    @Test("the beat count and the beat time roll over")
    func rrRollover() {
        var calc = ANTHeartRateCalculator()
        _ = calc.update(hrPage(count: 255, time: 65_000), at: 0)
        #expect(calc.update(hrPage(count: 0, time: 364), at: 1) == [900.0 / 1024])
        // Page 4 across the time rollover.
        #expect(calc.update(hrPage(4, count: 1, time: 100, previous: 65_400), at: 2) == [236.0 / 1024])
    }

    @Test("page 4 gives an interval even after missed pages; implausible intervals and long gaps give nothing")
    func rrFilters() {
        var calc = ANTHeartRateCalculator()
        _ = calc.update(hrPage(count: 10, time: 1000), at: 0)
        #expect(calc.update(hrPage(4, count: 13, time: 4000, previous: 3200), at: 3) == [800.0 / 1024])
        #expect(calc.update(hrPage(count: 14, time: 4000 + 4096), at: 7).isEmpty, "4 s: over 3 s")
        #expect(calc.update(hrPage(count: 15, time: 4000 + 4096 + 150), at: 7.2).isEmpty, "0.15 s: under 0.2 s")
        #expect(calc.update(hrPage(count: 16, time: 4000 + 4096 + 150 + 1024), at: 68).isEmpty, "61 s since the last page")
        #expect(calc.update(hrPage(count: 17, time: 4000 + 4096 + 150 + 2048), at: 69) == [1.0])
    }

    // MARK: - Wheel and crank

    /// The tracker as the ANT+ speed decoders use it (16-bit counters, 1/1024 s), giving its rate.
    struct Wheel {
        var tracker = RevolutionRateTracker(counterBits: 16, maximumRevolutionsPerSecond: 40 / 2.096)
        var totalRevolutions: UInt64 { tracker.totalRevolutions }
        mutating func update(count: Int, eventTime: UInt16, at time: Double, stopped: Bool = false) -> Double? {
            tracker.update(count: UInt64(count), eventTime: eventTime, receivedAt: time, stopped: stopped).revolutionsPerSecond
        }
    }

    func wheel() -> Wheel { Wheel() }

    @Test("the first reading is a baseline; then revolutions per second over the event time")
    func revolutionRate() {
        var calc = wheel()
        #expect(calc.update(count: 100, eventTime: 1000, at: 0) == nil)
        #expect(calc.update(count: 105, eventTime: 2024, at: 1) == 5)
        #expect(calc.update(count: 107, eventTime: 2024 + 512, at: 1.5) == 4)
        #expect(calc.totalRevolutions == 7)
    }

    @Test("the 16-bit event time rolls over (65535 to a small value)")
    func eventTimeRollover() {
        var calc = wheel()
        _ = calc.update(count: 10, eventTime: 65_535, at: 0)
        #expect(calc.update(count: 13, eventTime: 1023, at: 1) == 3)
    }

    @Test("the 16-bit revolution count rolls over (65535 to a small value)")
    func countRollover() {
        var calc = wheel()
        _ = calc.update(count: 65_534, eventTime: 100, at: 0)
        #expect(calc.update(count: 1, eventTime: 100 + 1024, at: 1) == 3)
        #expect(calc.totalRevolutions == 3)
    }

    @Test("a repeated event keeps the last rate for 3 s, then reports 0 (stopped)")
    func stopRule() {
        var calc = wheel()
        _ = calc.update(count: 10, eventTime: 0, at: 0)
        #expect(calc.update(count: 11, eventTime: 1024, at: 1) == 1)
        #expect(calc.update(count: 11, eventTime: 1024, at: 2) == 1)
        #expect(calc.update(count: 11, eventTime: 1024, at: 3.9) == 1)
        #expect(calc.update(count: 11, eventTime: 1024, at: 4) == 0, "3 s after the last revolution")
        // Moving again: the new event against the last one (5 s for one revolution).
        #expect(calc.update(count: 12, eventTime: 1024 + 5120, at: 6) == 0.2)
    }

    @Test("a sensor that says it stopped reports 0 at once; one that never moves reports 0 after 3 s")
    func stoppedSensor() {
        var calc = wheel()
        _ = calc.update(count: 10, eventTime: 0, at: 0)
        _ = calc.update(count: 12, eventTime: 1024, at: 1)
        #expect(calc.update(count: 12, eventTime: 1024, at: 1.25, stopped: true) == 0)
        var idle = wheel()
        #expect(idle.update(count: 7, eventTime: 10, at: 0) == nil)
        #expect(idle.update(count: 7, eventTime: 10, at: 1) == nil)
        #expect(idle.update(count: 7, eventTime: 10, at: 3) == 0)
    }

    @Test("an implausible jump, an unchanged event time or a gap over 60 s starts a new baseline and adds no distance")
    func implausible() {
        var calc = wheel()
        _ = calc.update(count: 10, eventTime: 0, at: 0)
        #expect(calc.update(count: 1000, eventTime: 1024, at: 1) == nil, "990 revolutions in a second")
        #expect(calc.update(count: 1005, eventTime: 2048, at: 2) == 5)
        #expect(calc.update(count: 1006, eventTime: 2048, at: 2.25) == nil, "a revolution without time")
        #expect(calc.update(count: 1007, eventTime: 3072, at: 3.25) == 1)
        #expect(calc.update(count: 1008, eventTime: 4096, at: 64) == nil, "61 s later: the time may have wrapped")
        #expect(calc.update(count: 1009, eventTime: 5120, at: 65) == 1)
        #expect(calc.totalRevolutions == 7)
    }

    // MARK: - Power

    func standard(_ count: UInt8, _ accumulated: UInt16, _ instant: UInt16, cadence: UInt8 = 90, pedal: UInt8 = 0xB4) -> ANTPowerPage {
        .standardPower(ANTStandardPowerPage(eventCount: count, pedalPower: pedal, instantaneousCadence: cadence,
                                            accumulatedPower: accumulated,
                                            instantaneousPower: instant))
    }

    func crank(_ count: UInt8, _ period: UInt16, _ torque: UInt16) -> ANTPowerPage {
        .crankTorque(ANTTorquePage(eventCount: count, ticks: count, instantaneousCadence: 0xFF, period: period, accumulatedTorque: torque))
    }

    @Test("0x10: instantaneous power first, then the average of accumulated power over events, across both rollovers")
    func standardPower() {
        var calc = ANTPowerCalculator()
        #expect(calc.update(standard(10, 1000, 200), at: 0) == .init(watts: 200, cadence: 90, rightPedalPercent: 52))
        #expect(calc.update(standard(12, 1500, 240), at: 0.5)?.watts == 250)
        _ = calc.update(standard(255, 65_500, 300), at: 1)
        #expect(calc.update(standard(1, 564, 310), at: 1.5)?.watts == 300, "2 events, 600 W·events across 65535")
        #expect(calc.update(standard(1, 564, 310), at: 2)?.watts == 300, "a repeat keeps the value")
        #expect(calc.update(standard(1, 564, 310), at: 4.5) == .init(watts: 0, cadence: 0, rightPedalPercent: 52), "3 s without an event")
    }

    @Test("0x12 crank torque: P = 128π·Δtorque/Δperiod and cadence = 60·2048·Δcount/Δperiod, across rollovers")
    func crankTorquePower() throws {
        var calc = ANTPowerCalculator()
        #expect(calc.update(crank(254, 64_000, 65_000), at: 0) == nil)
        // 2 revolutions in 2458/2048 s with 40 N·m average torque (2560/32/2), counters wrapping.
        let outResult = calc.update(crank(0, 922, 2024), at: 1.2)
        let out = try #require(outResult)
        let angularVelocity = 2 * Double.pi * 2 / (2458.0 / 2048)
        let torque = 2560.0 / (32 * 2)
        #expect(abs(out.watts - torque * angularVelocity) < 1e-9)
        #expect(abs(out.watts - 418.82) < 0.01)
        let cadence: Double = 60 * 2 * 2048 / 2458.0
        #expect(abs(try #require(out.cadence) - cadence) < 1e-9)
        // The notes' form: π·(Δtorque/(32·Δcount))·(2048·60·Δcount/Δperiod)/30.
        let notesForm = Double.pi * torque * cadence / 30
        #expect(abs(out.watts - notesForm) < 1e-9)
        // Events without rotation: the crank stands still.
        #expect(calc.update(crank(1, 922, 2024), at: 1.5) == .init(watts: 0, cadence: 0))
    }

    @Test("0x11 wheel torque gives power, speed from the period and distance from the wheel ticks")
    func wheelTorque() throws {
        var calc = ANTPowerCalculator(wheelCircumference: 2.096)
        let first = ANTTorquePage(eventCount: 250, ticks: 250, instantaneousCadence: 85, period: 65_000, accumulatedTorque: 100)
        #expect(calc.update(.wheelTorque(first), at: 0) == nil)
        let next = ANTTorquePage(eventCount: 254, ticks: 254, instantaneousCadence: 85, period: 65_000 &+ 2048, accumulatedTorque: 1380)
        let outResult = calc.update(.wheelTorque(next), at: 1)
        let out = try #require(outResult)
        #expect(abs(out.watts - 128 * Double.pi * 1280 / 2048) < 1e-9)
        #expect(abs(try #require(out.speed) - 4 * 2.096) < 1e-12)
        #expect(abs(try #require(out.distance) - 4 * 2.096) < 1e-12)
        #expect(out.cadence == 85)
        #expect(calc.update(.wheelTorque(next), at: 4.5)?.speed == 0, "stopped after 3 s")
    }

    @Test("0x10 pages do not double the power stream of a torque meter, but give it the balance")
    func torquePreferred() {
        var calc = ANTPowerCalculator()
        _ = calc.update(crank(0, 0, 0), at: 0)
        #expect(calc.update(standard(5, 100, 150, pedal: 0x80 | 48), at: 0.25) == nil)
        #expect(calc.update(crank(1, 2048, 1024), at: 1)?.rightPedalPercent == 48)
        #expect(calc.update(standard(6, 200, 150), at: 7) != nil, "no torque page for 6 s")
    }

    @Test("an implausible torque step is dropped and becomes the new baseline")
    func implausibleTorque() {
        var calc = ANTPowerCalculator()
        _ = calc.update(crank(0, 0, 0), at: 0)
        #expect(calc.update(crank(1, 100, 60_000), at: 1) == nil)
        #expect(calc.update(crank(2, 2148, 61_024), at: 2)?.watts == 128 * Double.pi * 1024 / 2048)
    }

    // MARK: - Stride

    @Test("stride distance and strides roll over at 256; cadence is reported in steps per minute")
    func stride() {
        var calc = ANTStrideCalculator()
        let p1 = ANTStrideSpeedDistancePage(time: 10, distance: 250.5, speed: 3, strideCount: 250, updateLatency: 0)
        #expect(calc.update(.speedDistance(p1), at: 0) == .init(speed: 3, distance: 0, strides: 0))
        let p2 = ANTStrideSpeedDistancePage(time: 13, distance: 5.25, speed: 3.5, strideCount: 4, updateLatency: 0)
        #expect(calc.update(.speedDistance(p2), at: 3) == .init(speed: 3.5, distance: 10.75, strides: 10))
        let cadence = ANTStrideCadencePage(cadence: 85.5, speed: 3.25, status: ANTStrideStatus(rawValue: 1))
        #expect(calc.update(.cadence(page: 2, cadence), at: 3.25) == .init(speed: 3.25, stepsPerMinute: 171))
        #expect(calc.update(.calories(cadence, kilocalories: 9), at: 3.5) == .init(speed: 3.25, stepsPerMinute: 171))
        let late = ANTStrideSpeedDistancePage(time: 40, distance: 100, speed: 3, strideCount: 40, updateLatency: 0)
        #expect(calc.update(.speedDistance(late), at: 30) == .init(speed: 3, distance: 10.75, strides: 10), "27 s gap: a new baseline")
        #expect(calc.update(.capabilities(1), at: 31) == nil)
    }

    // MARK: - Fitness equipment

    func general(_ elapsed: UInt8, _ distance: UInt8, state: UInt8 = 0x34, speed: UInt16 = 5000,
                 hr: UInt8 = 150) -> ANTFitnessEquipmentPage {
        .general(ANTFEGeneralPage(equipmentType: .trainer, elapsedTime: Double(elapsed) / 4, distance: distance,
                                  speed: speed
                                      == 0xFFFF ? nil : Double(speed) / 1000, heartRate: hr, status: ANTFitnessEquipmentStatus(state)))
    }

    @Test("FE elapsed time (64 s) and distance (256 m) roll over; speed in m/s, heart rate, type")
    func feTotals() throws {
        var calc = ANTFitnessEquipmentCalculator()
        let firstResult = calc.update(general(255, 250), at: 0)
        let first = try #require(firstResult)
        #expect(first.elapsedSeconds == 0 && first.distanceMeters == 0 && first.speedMetersPerSecond == 5 && first.heartRate == 150)
        #expect(first.equipmentType == .trainer && first.machineState == .inUse)
        let secondResult = calc.update(general(2, 4), at: 1)
        let second = try #require(secondResult)
        #expect(second.elapsedSeconds == 0.75 && second.distanceMeters == 10)
    }

    @Test("FE counters count only while the machine stays in use; a new session does not count as progress")
    func feStates() throws {
        var calc = ANTFitnessEquipmentCalculator()
        _ = calc.update(general(0, 0), at: 0)
        _ = calc.update(general(8, 10), at: 2)
        #expect(calc.state.elapsedSeconds == 2 && calc.state.distanceMeters == 10)
        _ = calc.update(general(10, 12, state: 0x44), at: 3)
        _ = calc.update(general(0, 0, state: 0x24), at: 4)
        _ = calc.update(general(2, 1, state: 0x34), at: 5)
        #expect(calc.state.elapsedSeconds == 2 && calc.state.distanceMeters == 10, "finished, ready, in use: no counting across changes")
        let outResult = calc.update(general(6, 4), at: 6)
        let out = try #require(outResult)
        #expect(out.elapsedSeconds == 3 && out.distanceMeters == 13)
        #expect(calc.update(general(8, 6), at: 25)?.distanceMeters == 13, "19 s since the last page: distance may have wrapped")
    }

    @Test("FE trainer power is the average over events (with rollovers); metabolic calories roll over at 256")
    func feTrainerAndCalories() throws {
        var calc = ANTFitnessEquipmentCalculator()
        let status = ANTFitnessEquipmentStatus(0x30)
        func trainer(_ count: UInt8, _ accumulated: UInt16) -> ANTFitnessEquipmentPage {
            .trainer(ANTFETrainerPage(eventCount: count, cadence: 88, accumulatedPower: accumulated, instantaneousPower: 190,
                                      trainerStatus: 0,
                                      status: status))
        }
        #expect(calc.update(trainer(250, 65_000), at: 0)?.powerWatts == 190)
        let outResult = calc.update(trainer(2, 1064), at: 1)
        let out = try #require(outResult)
        #expect(out.powerWatts == 200 && out.cadence == 88)
        func metabolic(_ kcal: UInt8) -> ANTFitnessEquipmentPage {
            .metabolic(ANTFEMetabolicPage(metabolicEquivalents: 8.5, calorieRate: 650, accumulatedCalories: kcal,
                                          status: ANTFitnessEquipmentStatus(0x31)))
        }
        #expect(calc.update(metabolic(250), at: 2)?.kilocalories == 0)
        let burntResult = calc.update(metabolic(4), at: 30)
        let burnt = try #require(burntResult)
        #expect(burnt.kilocalories == 10 && burnt.metabolicEquivalents == 8.5 && burnt.calorieRateKilocaloriesPerHour == 650)
        let rower = ANTFEEquipmentPage(cadence: 28, power: 150, count: 3, status: status)
        let rowingResult = calc.update(.rower(rower), at: 31)
        let rowing = try #require(rowingResult)
        #expect(rowing.cadence == 28 && rowing.powerWatts == 150)
        #expect(calc.update(.targetPower(watts: 200), at: 32) == nil)
    }

    // MARK: - Weight

    func weight(_ raw: UInt16, profile: UInt16 = 5) -> ANTWeightScalePage {
        try! ANTWeightScalePage.decode([1, UInt8(profile & 0xFF), UInt8(profile >> 8), 0, 0xFF, 0xFF, UInt8(raw & 0xFF), UInt8(raw >> 8)])
    }

    func fat(_ raw: UInt16, profile: UInt16 = 5) -> ANTWeightScalePage {
        try! ANTWeightScalePage.decode([2, UInt8(profile & 0xFF), UInt8(profile >> 8), 0xFF, 0xB3, 0x15, UInt8(raw & 0xFF),
                                        UInt8(raw >> 8)])
    }

    @Test("a weight is reported once when final; computing and invalid pages report nothing")
    func weightOnce() {
        var tracker = ANTWeightScaleTracker()
        #expect(tracker.update(weight(0xFFFE), at: 0) == nil)
        #expect(tracker.update(weight(0xFFFF), at: 0.25) == nil)
        #expect(tracker.update(weight(7532), at: 0.5) == ANTWeightReading(measurement: 1, userProfile: 5, weightKilograms: 75.32))
        #expect(tracker.update(weight(7532), at: 0.75) == nil)
        #expect(tracker.update(weight(7532), at: 20) == nil, "repeats of the same measurement")
    }

    @Test("a new measurement: after computing, on another value, another profile, or after the scale slept")
    func newMeasurements() {
        var tracker = ANTWeightScaleTracker()
        _ = tracker.update(weight(7532), at: 0)
        _ = tracker.update(weight(0xFFFE), at: 1)
        #expect(tracker.update(weight(7532), at: 2)?.measurement == 2)
        #expect(tracker.update(weight(7540), at: 3)?.measurement == 3)
        #expect(tracker.update(weight(7540, profile: 0xFFFF), at: 4) == ANTWeightReading(measurement: 4, weightKilograms: 75.4))
        #expect(tracker.update(weight(7540, profile: 0xFFFF), at: 40)?.measurement == 5, "36 s without page 1")
    }

    @Test("body composition values are reported once each, with their measurement's number; early ones go out with the weight")
    func composition() {
        var tracker = ANTWeightScaleTracker()
        #expect(tracker.update(fat(0xFFFE), at: 0) == nil)
        #expect(tracker.update(fat(2010), at: 0.25) == nil, "no weight yet: held")
        #expect(tracker.update(weight(7532), at: 0.5)
            == ANTWeightReading(measurement: 1, userProfile: 5, weightKilograms: 75.32, hydrationPercent: 55.55, bodyFatPercent: 20.1))
        #expect(tracker.update(fat(2010), at: 0.75) == nil)
        #expect(tracker.update(fat(2020), at: 1) == ANTWeightReading(measurement: 1, userProfile: 5, bodyFatPercent: 20.2))
        let mass = try? ANTWeightScalePage.decode([0x04, 0x05, 0x00, 0xFF, 0xFF, 0xB8, 0x0B, 32])
        #expect(tracker.update(mass!, at: 1.25) == ANTWeightReading(measurement: 1, userProfile: 5, muscleMassKilograms: 30,
                                                                    boneMassKilograms: 3.2))
        let metabolic = try? ANTWeightScalePage.decode([0x03, 0x05, 0x00, 0xFF, 0x10, 0x27, 0xFE, 0xFF])
        #expect(tracker.update(metabolic!, at: 1.5) == ANTWeightReading(measurement: 1, userProfile: 5,
                                                                        activeMetabolicRateKilocalories: 2500))
        #expect(tracker.update(fat(2100, profile: 6), at: 1.75) == nil, "another user's page")
    }
}
