import Testing
import Timing

/// The one backoff: exponential, capped, jittered within its fraction, clamped configuration,
/// and no trap whatever the attempt, the random number or the durations.
@Suite struct BackoffTests {
    @Test func withoutJitterItGrowsByTheMultiplierUpToTheMaximum() {
        let b = Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(30), jitter: 0.2)
        let delays = (1...10).map { b.delay(attempt: $0, random: 0.5) }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16),
                           .seconds(30), .seconds(30), .seconds(30), .seconds(30)])
        let triple = Backoff(initial: .seconds(1), multiplier: 3, maximum: .seconds(100))
        #expect((1...6).map { triple.delay(attempt: $0, random: 0.9) } == [.seconds(1), .seconds(3), .seconds(9), .seconds(27),
                                                                             .seconds(81), .seconds(100)])
    }

    @Test func jitterStaysWithinItsFraction() {
        let b = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(10), jitter: 0.2)
        #expect(b.delay(attempt: 1, random: 0) == .milliseconds(800))
        #expect(b.delay(attempt: 1, random: 1) == .milliseconds(1200))
        #expect(b.delay(attempt: 3, random: 0.25) == .milliseconds(3600))
        #expect(b.delay(attempt: 9, random: 1) == .seconds(12))
        // Out-of-range inputs are clamped; attempt 0 (and below) counts as the first.
        #expect(b.delay(attempt: 0, random: 7) == .milliseconds(1200))
        #expect(b.delay(attempt: Int.min, random: 0.5) == .seconds(1))
        #expect(b.delay(attempt: 2, random: -1) == .milliseconds(1600))
        #expect(b.delay(attempt: 2, random: .nan) == .seconds(2))
        for random in stride(from: 0.0, through: 1, by: 0.01) {
            let d = b.delay(attempt: 4, random: random)
            #expect(d >= .milliseconds(6400) && d <= .milliseconds(9600), "\(random): \(d)")
        }
    }

    @Test func configurationIsClamped() {
        let b = Backoff(initial: .seconds(2), multiplier: 0.5, maximum: .seconds(1), jitter: 3)
        #expect(b.multiplier == 1 && b.maximum == .seconds(2) && b.jitter == 1)
        let odd = Backoff(initial: .seconds(-5), multiplier: .nan, maximum: .seconds(-1), jitter: .nan)
        #expect(odd.initial == .zero && odd.multiplier == 1 && odd.maximum == .zero && odd.jitter == 0)
        #expect(odd.delay(attempt: 5, random: 1) == .zero)
        // Fields set after init are taken as init would take them.
        var later = Backoff(initial: .seconds(1), maximum: .seconds(4))
        later.multiplier = -3
        later.jitter = 9
        #expect(later.delay(attempt: 3, random: 1) == .seconds(2))
    }

    @Test func hugeAttemptsAndDurationsSaturate() {
        let b = Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(300), jitter: 0.2)
        #expect(b.delay(attempt: Int.max, random: 0.5) == .seconds(300))
        #expect(b.delay(attempt: Int.max, random: 1) == .seconds(360))
        let zero = Backoff(initial: .zero, multiplier: 2, maximum: .seconds(10))
        #expect(zero.delay(attempt: Int.max, random: 1) == .zero)  // 0 × 2^huge is not NaN here
        let infinite = Backoff(initial: .seconds(1), multiplier: .infinity, maximum: .seconds(10))
        #expect(infinite.delay(attempt: 2, random: 0.5) == .seconds(10))
        let longest = Backoff(initial: .seconds(Int64.max), multiplier: 10, maximum: .seconds(Int64.max) * 4, jitter: 1)
        #expect(longest.maximum == .longest)
        #expect(longest.delay(attempt: Int.max, random: 1) == .longest)
        #expect(longest.delay(attempt: 1, random: 0) == .zero)
    }
}
