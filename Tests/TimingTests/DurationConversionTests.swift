import Testing
import Timing

/// Duration <-> numbers: exact for ordinary values, saturating (never trapping) for NaN,
/// infinities and values out of range.
@Suite struct DurationConversionTests {
    @Test func secondsFromDoubles() {
        #expect(Duration.clamped(seconds: 1.5, maximum: .seconds(10)) == .milliseconds(1500))
        #expect(Duration.clamped(seconds: 0.000_000_25, maximum: .seconds(10)) == .nanoseconds(250))
        #expect(Duration.clamped(seconds: 3.6, maximum: .seconds(10)) == .milliseconds(3600))
        #expect(Duration.clamped(seconds: 9.999_999_999_9, maximum: .seconds(10)) == .seconds(10))
        #expect(Duration.clamped(seconds: 1e20, maximum: .seconds(10)) == .seconds(10))
        #expect(Duration.clamped(seconds: .infinity, maximum: .seconds(10)) == .seconds(10))
        #expect(Duration.clamped(seconds: .nan, maximum: .seconds(10)) == .zero)
        #expect(Duration.clamped(seconds: -3, maximum: .seconds(10)) == .zero)
        #expect(Duration.clamped(seconds: -.infinity, maximum: .seconds(10)) == .zero)
        #expect(Duration.clamped(seconds: 5, maximum: .seconds(-1)) == .zero)
        // Without a maximum: up to 2^63 - 1 seconds.
        #expect(Duration.clamped(seconds: 86_400.5) == .seconds(86_400) + .milliseconds(500))
        #expect(Duration.clamped(seconds: 1e300) == .longest)
        #expect(Duration.clamped(seconds: 9.2e18) == .seconds(9_200_000_000_000_000_000))
        #expect(Duration.clamped(seconds: .infinity, maximum: .longest * 8) == .longest)
    }

    @Test func secondsAndWholeUnitsFromDurations() {
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect(Duration.nanoseconds(250).inSeconds == 0.000_000_25)
        #expect(Duration.seconds(-2).inSeconds == -2)
        #expect(Duration.milliseconds(1999).inMilliseconds == 1999)
        #expect(Duration.microseconds(1999).inMilliseconds == 1)
        #expect(Duration.microseconds(1999).inNanoseconds == 1_999_000)
        #expect(Duration.milliseconds(-1500).inMilliseconds == -1500)
        #expect(Duration.seconds(86_400).inNanoseconds == 86_400_000_000_000)
        // Out of Int64's range: saturated, never trapping.
        #expect(Duration.seconds(Int64.max).inMilliseconds == .max)
        #expect(Duration.seconds(Int64.min).inMilliseconds == .min)
        #expect(Duration.seconds(10_000_000_000).inNanoseconds == .max)
        #expect((Duration.longest * 16).inNanoseconds == .max)
        #expect((Duration.longest * 16).inSeconds == Duration.longest.inSeconds)
        #expect((Duration.zero - Duration.longest * 16).inMilliseconds == .min)
    }

    @Test func roundTrips() {
        for ms in [0, 1, 499, 500, 1000, 86_400_000, 31_536_000_000] as [Int64] {
            let d = Duration.milliseconds(ms)
            #expect(Duration.clamped(seconds: d.inSeconds) == d, "\(ms) ms")
            #expect(d.inMilliseconds == ms)
        }
    }
}
