import TestSupport
import Testing
@testable import GATTProfiles
import HealthModel

@Suite struct CSCCalculatorTests {
    func wheel(_ revs: UInt32, _ time: UInt16) -> CSCMeasurement {
        CSCMeasurement(flags: 1, wheel: .init(cumulativeRevolutions: revs, lastEventTime: time), crank: nil)
    }
    func crank(_ revs: UInt16, _ time: UInt16) -> CSCMeasurement {
        CSCMeasurement(flags: 2, wheel: nil, crank: .init(cumulativeRevolutions: revs, lastEventTime: time))
    }

    @Test("the first reading is a baseline; then speed = revolutions x circumference / time")
    func speed() {
        var calc = CSCCalculator()
        let first = calc.update(wheel(100, 1000), receivedAt: 0)
        #expect(first.speed == nil && first.wheelEvent == .baseline && first.distance == 0)
        let second = calc.update(wheel(105, 2024), receivedAt: 1)
        #expect(second.speed == 5 * 2.096)
        #expect(second.wheelEvent == .newRevolutions(5))
        #expect(abs(second.distance - 5 * 2.096) < 1e-12)
        #expect(second.cadence == nil && second.crankEvent == nil)
    }

    @Test("the circumference is configurable")
    func circumference() {
        var calc = CSCCalculator(configuration: .init(wheelCircumference: 2.0))
        _ = calc.update(wheel(0, 0), receivedAt: 0)
        #expect(calc.update(wheel(4, 2048), receivedAt: 2).speed == 4.0)
    }

    @Test("the 16-bit event time rolls over")
    func eventTimeRollover() {
        var calc = CSCCalculator()
        _ = calc.update(wheel(10, 65_000), receivedAt: 0)
        // 65000 + 1024 = 66024 -> 488 after the wrap: one second later.
        #expect(calc.update(wheel(13, 488), receivedAt: 1).speed == 3 * 2.096)
    }

    @Test("the 32-bit wheel counter rolls over")
    func wheelCounterRollover() {
        var calc = CSCCalculator()
        _ = calc.update(wheel(0xFFFF_FFFE, 100), receivedAt: 0)
        let out = calc.update(wheel(3, 100 + 2048), receivedAt: 2)
        #expect(out.wheelEvent == .newRevolutions(5))
        #expect(out.speed == 2.5 * 2.096)
    }

    @Test("the 16-bit crank counter and its event time roll over together")
    func crankRollover() {
        var calc = CSCCalculator()
        #expect(calc.update(crank(65_534, 64_000), receivedAt: 0).cadence == nil)
        // 3 revolutions in 2048/1024 = 2 s -> 90 rpm.
        let out = calc.update(crank(1, 64_000 &+ 2048), receivedAt: 2)
        #expect(out.crankEvent == .newRevolutions(3))
        #expect(out.cadence == 90)
    }

    @Test("a repeated event keeps the last value until the stop timeout, then reports 0")
    func repeatedEvent() {
        var calc = CSCCalculator()
        _ = calc.update(crank(10, 0), receivedAt: 0)
        #expect(calc.update(crank(11, 1024), receivedAt: 1).cadence == 60)
        let repeated = calc.update(crank(11, 1024), receivedAt: 2)
        #expect(repeated.cadence == 60 && repeated.crankEvent == .noNewRevolution)
        #expect(calc.update(crank(11, 1024), receivedAt: 3.9).cadence == 60)
        #expect(calc.update(crank(11, 1024), receivedAt: 4).cadence == 0, "3 s after the last revolution")
        // Pedalling again: a rate from the new event against the last one.
        #expect(calc.update(crank(12, 1024 + 5120), receivedAt: 6).cadence == 12)
    }

    @Test("a sensor that never moves reports 0 after the timeout, not nil forever")
    func stationary() {
        var calc = CSCCalculator()
        _ = calc.update(wheel(7, 10), receivedAt: 0)
        #expect(calc.update(wheel(7, 10), receivedAt: 1).speed == nil)
        #expect(calc.update(wheel(7, 10), receivedAt: 3).speed == 0)
    }

    @Test("a counter that goes backwards (reset by the sensor) starts a new baseline")
    func counterReset() {
        var calc = CSCCalculator()
        _ = calc.update(wheel(5000, 100), receivedAt: 0)
        _ = calc.update(wheel(5002, 1124), receivedAt: 1)
        let reset = calc.update(wheel(0, 2148), receivedAt: 2)
        #expect(reset.wheelEvent == .counterReset && reset.speed == nil)
        #expect(abs(reset.distance - 2 * 2.096) < 1e-12, "distance does not jump")
        let next = calc.update(wheel(3, 3172), receivedAt: 3)
        #expect(next.speed == 3 * 2.096)
        #expect(abs(next.distance - 5 * 2.096) < 1e-12)
    }

    @Test("revolutions with an unchanged event time are a reset, not infinite speed")
    func zeroTime() {
        var calc = CSCCalculator()
        _ = calc.update(crank(1, 500), receivedAt: 0)
        let out = calc.update(crank(2, 500), receivedAt: 1)
        #expect(out.crankEvent == .counterReset && out.cadence == nil)
    }

    @Test("more than one event-time period between revolutions is ambiguous: new baseline")
    func longGap() {
        var calc = CSCCalculator()
        _ = calc.update(wheel(1, 0), receivedAt: 0)
        _ = calc.update(wheel(2, 1024), receivedAt: 1)
        let out = calc.update(wheel(3, 2048), receivedAt: 70)
        #expect(out.wheelEvent == .counterReset && out.speed == nil)
        #expect(calc.update(wheel(4, 3072), receivedAt: 71).speed == 2.096)
    }

    @Test("reset() forgets the baseline and the distance")
    func resetAll() {
        var calc = CSCCalculator()
        _ = calc.update(CSCMeasurement(flags: 3, wheel: .init(cumulativeRevolutions: 1, lastEventTime: 0),
                                       crank: .init(cumulativeRevolutions: 1, lastEventTime: 0)), receivedAt: 0)
        let both = calc.update(CSCMeasurement(flags: 3, wheel: .init(cumulativeRevolutions: 3, lastEventTime: 1024),
                                              crank: .init(cumulativeRevolutions: 2, lastEventTime: 1024)), receivedAt: 1)
        #expect(both.speed == 2 * 2.096 && both.cadence == 60)
        calc.reset()
        let after = calc.update(wheel(10, 0), receivedAt: 2)
        #expect(after.wheelEvent == .baseline && after.distance == 0 && after.speed == nil)
    }

    @Test("the tracker works at the Cycling Power wheel resolution of 1/2048 s")
    func cyclingPowerResolution() {
        var tracker = RevolutionRateTracker(counterBits: 32, eventTimeUnitsPerSecond: 2048, stopTimeout: 3,
                                            maximumRevolutionsPerSecond: 20)
        _ = tracker.update(count: 10, eventTime: 0, receivedAt: 0)
        #expect(tracker.update(count: 14, eventTime: 2048, receivedAt: 1).revolutionsPerSecond == 4)
        // 32 s is a whole event-time period at this resolution.
        #expect(tracker.update(count: 15, eventTime: 4096, receivedAt: 40).event == .counterReset)
    }

    @Test("random measurement streams never give a negative, infinite or NaN value")
    func randomStreams() {
        var rng = SeededGenerator(seed: 0xC5C)
        var calc = CSCCalculator()
        var now = 0.0
        for _ in 0..<50_000 {
            now += Double.random(in: 0...5, using: &rng)
            let m = CSCMeasurement(flags: 3,
                                   wheel: .init(cumulativeRevolutions: rng.u32() % 8, lastEventTime: rng.u16() % 4096),
                                   crank: .init(cumulativeRevolutions: rng.u16() % 8, lastEventTime: rng.u16() % 4096))
            let out = calc.update(m, receivedAt: now)
            for v in [out.speed, out.cadence].compactMap({ $0 }) {
                #expect(v.isFinite && v >= 0)
                #expect(v <= 300)
            }
            #expect(out.distance.isFinite && out.distance >= 0)
            if Int.random(in: 0..<1000, using: &rng) == 0 { calc.reset() }
        }
    }
}
