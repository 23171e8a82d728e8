import Foundation
import Testing
@testable import HealthModel

private let t0 = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01T00:00:00Z
private let now = Date(timeIntervalSince1970: 1_763_800_000)
private let source = Source(driver: "test")

private func measurement(_ kind: MeasurementKind, _ value: Double, extra: [String: Double] = [:], end: Date? = nil) -> HealthRecord {
    .measurement(Measurement(id: RecordID.derive("m", kind.rawValue, "\(value)"), kind: kind, time: t0, end: end, value: value,
                             extra: extra, source: source))
}

private func workout(span: TimeInterval = 3600, samples: [Sample] = [], rr: [Double] = [], laps: [Lap] = [],
                     version: Int = 1, distance: Double? = nil, avgHR: Int? = nil) -> Workout {
    Workout(id: RecordID.derive("w", "limits"), version: version, sport: "running", start: t0, end: t0.addingTimeInterval(span),
            distanceM: distance, avgHeartRate: avgHR, laps: laps, samples: samples, rrIntervals: rr, source: source)
}

/// `record`'s validation problem, or nil when it passes.
private func problem(_ record: HealthRecord) -> String? {
    do {
        try RecordValidator().validate(record, now: now)
        return nil
    } catch let error as ValidationError {
        return error.reason
    } catch {
        return "\(error)"
    }
}

/// The one set of physical limits, at each boundary: the limit itself passes, a step beyond
/// fails with a reason naming the field.
@Suite struct PhysicalLimitsTests {
    @Test(arguments: MeasurementKind.allCases)
    func measurementValuesAtTheirBounds(_ kind: MeasurementKind) {
        let range = PhysicalLimits.range(of: kind)
        #expect(problem(measurement(kind, range.lowerBound)) == nil)
        #expect(problem(measurement(kind, range.upperBound)) == nil)
        let below = problem(measurement(kind, range.lowerBound.nextDown))
        #expect(below?.contains("\(kind.rawValue) ") == true && below?.contains("is outside") == true, "\(below ?? "passed")")
        #expect(problem(measurement(kind, range.upperBound.nextUp))?.contains("is outside") == true)
        #expect(problem(measurement(kind, .nan))?.contains("not a number") == true)
        #expect(problem(measurement(kind, .infinity)) != nil)
    }

    /// What the tracking server accepted before (each from the issue that found it).
    @Test func valuesNoBodyProduces() {
        #expect(problem(measurement(.weight, -70)) == "weight -70 kg is outside 0.2...700 kg")
        #expect(problem(measurement(.weight, 1e308))?.contains("weight 1e+308 kg is outside") == true)
        #expect(problem(measurement(.heartRate, 100_000)) == "heart_rate 100000 bpm is outside 1...300 bpm")
        #expect(problem(measurement(.spo2, 500)) == "spo2 500 % is outside 0...100 %")
        let lost = Sample(time: t0.addingTimeInterval(60), latitude: 1000, longitude: 0)
        #expect(problem(.workout(workout(samples: [lost]))) == "samples[0]: latitude 1000 is outside -90...90")
        let late = Sample(time: Date(timeIntervalSince1970: 3_786_912_000), heartRate: 120)  // 2090
        #expect(problem(.workout(workout(samples: [late])))?.hasPrefix("samples[0] at 2090-") == true)
        let thirtyYears = Workout(id: RecordID.derive("w", "30y"), sport: "running", start: t0.addingTimeInterval(-30 * 365 * 86400),
                                  end: t0, source: source)
        #expect(problem(.workout(thirtyYears))?.contains("the workout lasts") == true)
        let stage = SleepStageSpan(start: t0.addingTimeInterval(-25 * 365 * 86400), end: t0.addingTimeInterval(60), stage: .deep)
        let sleep = SleepSession(id: RecordID.derive("s", "old"), start: t0, end: t0.addingTimeInterval(8 * 3600), stages: [stage],
                                 source: source)
        #expect(problem(.sleep(sleep))?.contains("stages[0].start at 2000-") == true)
        #expect(problem(.workout(workout(version: 9_007_199_254_740_992)))?.contains("version 9007199254740992 is outside") == true)
        #expect(problem(.workout(workout(version: Int.max))) != nil)
        #expect(problem(.workout(workout(version: 0))) != nil)
    }

    @Test func spansAtTheirBounds() {
        #expect(problem(.workout(workout(span: PhysicalLimits.workoutSpanS))) == nil)
        #expect(problem(.workout(workout(span: PhysicalLimits.workoutSpanS + 1))) != nil)
        func sleep(_ span: TimeInterval) -> HealthRecord {
            .sleep(SleepSession(id: RecordID.derive("s", "\(span)"), start: t0, end: t0.addingTimeInterval(span), source: source))
        }
        #expect(problem(sleep(PhysicalLimits.sleepSpanS)) == nil)
        #expect(problem(sleep(PhysicalLimits.sleepSpanS + 1))?.contains("the sleep session lasts") == true)
        #expect(problem(measurement(.steps, 100, end: t0.addingTimeInterval(PhysicalLimits.measurementSpanS))) == nil)
        #expect(problem(measurement(.steps, 100, end: t0.addingTimeInterval(PhysicalLimits.measurementSpanS + 1))) != nil)
        #expect(problem(.workout(workout(version: 9_007_199_254_740_991))) == nil)
    }

    @Test func childrenOfAWorkoutStayInsideIt() {
        let tolerance = PhysicalLimits.childToleranceS
        let edge = Sample(time: t0.addingTimeInterval(-tolerance), heartRate: 100)
        #expect(problem(.workout(workout(samples: [edge]))) == nil)
        let outside = Sample(time: t0.addingTimeInterval(-tolerance - 1), heartRate: 100)
        #expect(problem(.workout(workout(samples: [outside])))?.contains("lies outside the workout") == true)
        let lap = Lap(start: t0, end: t0.addingTimeInterval(3600 + tolerance + 1), elapsedS: 3600)
        #expect(problem(.workout(workout(laps: [lap])))?.contains("laps[0].end") == true)
        #expect(problem(.workout(workout(rr: [0.15, 6]))) == nil)
        #expect(problem(.workout(workout(rr: [0.8, 60])))?.contains("rr_intervals[1] 60 s is outside") == true)
        #expect(problem(.workout(workout(distance: -1)))?.contains("distance_m -1 m") == true)
        #expect(problem(.workout(workout(avgHR: 301)))?.contains("avg_heart_rate 301 bpm") == true)
    }

    @Test(arguments: [
        ("heart_rate", Sample(time: t0, heartRate: 301)), ("cadence", Sample(time: t0, cadence: 1001)),
        ("power_w", Sample(time: t0, powerW: -1)), ("speed_mps", Sample(time: t0, speedMps: 301)),
        ("distance_m", Sample(time: t0, distanceM: .infinity)), ("longitude", Sample(time: t0, longitude: -180.5)),
        ("altitude_m", Sample(time: t0, altitudeM: 20_001)), ("temperature_c", Sample(time: t0, temperatureC: -91)),
    ])
    func everySampleChannelHasItsLimit(_ channel: String, _ sample: Sample) {
        #expect(PhysicalLimits.problem(with: sample)?.hasPrefix(channel + " ") == true)
        let (clean, removed) = PhysicalLimits.cleaned(sample)
        #expect(removed == 1 && PhysicalLimits.problem(with: clean) == nil)
    }

    @Test func extraValuesAreBounded() {
        let many = Dictionary(uniqueKeysWithValues: (0..<PhysicalLimits.extraKeys).map { ("k\($0)", 1.0) })
        #expect(problem(measurement(.bodyFat, 20, extra: many)) == nil)
        var tooMany = many
        tooMany["one more"] = 1
        #expect(problem(measurement(.bodyFat, 20, extra: tooMany)) == "extra has 33 values: at most 32")
        #expect(problem(measurement(.bloodPressure, 120, extra: ["diastolic": 80])) == nil)
        #expect(problem(measurement(.bloodPressure, 120, extra: ["diastolic": 800]))?.contains("extra.diastolic 800 mmHg") == true)
        #expect(problem(measurement(.bodyFat, 20, extra: ["": 1]))?.contains("an extra key is empty") == true)
        #expect(problem(measurement(.bodyFat, 20, extra: ["x": .nan])) == "extra.x is not a number")
    }

    @Test func habitTextAndValues() {
        func habit(_ name: String, value: Double? = 1, note: String? = nil) -> HealthRecord {
            .habit(HabitEvent(id: RecordID.derive("h", name), habit: name, time: t0, value: value, note: note, source: source))
        }
        #expect(problem(habit("water")) == nil)
        #expect(problem(habit("")) == "habit is empty")
        #expect(problem(habit(String(repeating: "x", count: 101)))?.contains("habit has 101 characters") == true)
        #expect(problem(habit("water", value: .infinity)) != nil)
        #expect(problem(habit("water", note: String(repeating: "n", count: 10_000))) == nil)
        #expect(problem(habit("water", note: String(repeating: "n", count: 10_001))) != nil)
    }

    /// A glitching sensor costs the glitch, not the workout: the normalizer drops impossible
    /// sample values and RR intervals (counted), then validates what is left.
    @Test func theNormalizerDropsImpossibleSampleValues() {
        let samples = [Sample(time: t0, heartRate: 120, latitude: 45, longitude: 7),
                       Sample(time: t0.addingTimeInterval(1), heartRate: 100_000, latitude: 1000, longitude: 7),
                       Sample(time: Date(timeIntervalSince1970: 3_786_912_000), heartRate: 130)]
        let outcome = Normalizer().normalize([.workout(workout(samples: samples, rr: [0.8, 0, 70]))], now: now)
        #expect(outcome.rejected.isEmpty && outcome.droppedValues == 5)
        guard case .workout(let w)? = outcome.accepted.first else { Issue.record("no workout"); return }
        #expect(w.samples.count == 2 && w.samples[1].heartRate == nil && w.samples[1].latitude == nil && w.samples[1].longitude == 7)
        #expect(w.rrIntervals == [0.8])

        // A lap that ends hours after its workout (a real multisport file has one) and a sleep
        // stage from another night are dropped too, not the record.
        let stray = Lap(start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(6 * 3600), elapsedS: 600)
        let kept = Lap(start: t0, end: t0.addingTimeInterval(600), elapsedS: 600)
        let laps = Normalizer().normalize([.workout(workout(laps: [kept, stray]))], now: now)
        #expect(laps.rejected.isEmpty && laps.droppedValues == 1)
        if case .workout(let w)? = laps.accepted.first { #expect(w.laps == [kept]) }
        let night = SleepSession(id: RecordID.derive("s", "night"), start: t0, end: t0.addingTimeInterval(8 * 3600),
                                 stages: [SleepStageSpan(start: t0, end: t0.addingTimeInterval(3600), stage: .light),
                                          SleepStageSpan(start: t0.addingTimeInterval(-86_400), end: t0.addingTimeInterval(-80_000), stage: .deep)],
                                 source: source)
        let sleep = Normalizer().normalize([.sleep(night)], now: now)
        #expect(sleep.rejected.isEmpty && sleep.droppedValues == 1)
        if case .sleep(let s)? = sleep.accepted.first { #expect(s.stages.count == 1 && s.stages[0].stage == .light) }
    }

    @Test func calendarDaysAreReal() {
        #expect(ISO8601.parse("2025-02-30") == nil)
        #expect(ISO8601.parse("2025-02-29") == nil)
        #expect(ISO8601.parse("2024-02-29") != nil)
        #expect(ISO8601.parse("2000-02-29") != nil)
        #expect(ISO8601.parse("1900-02-29") == nil)
        #expect(ISO8601.parse("2025-04-31T10:00:00Z") == nil)
        #expect(ISO8601.parse("2025-12-31T23:59:59Z") != nil)
    }
}

@Suite struct NumberConversionTests {
    @Test func saturatingIntegersNeverTrap() {
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: .infinity) == .max && Int(saturating: -.infinity) == .min)
        #expect(Int64(saturating: 1e20) == .max && Int64(saturating: -1e20) == .min)
        #expect(Int64(saturating: 9_223_372_036_854_775_807.0) == .max)
        #expect(UInt8(saturating: 255.9) == 255 && UInt8(saturating: 256) == 255 && UInt8(saturating: -1) == 0)
        #expect(Int(saturating: -2.7) == -2 && Int(saturating: 2.7) == 2)
    }

    @Test func durationsAreClamped() {
        #expect(Duration.clamped(seconds: 1.5, maximum: .seconds(10)) == .milliseconds(1500))
        #expect(Duration.clamped(seconds: 1e20, maximum: .seconds(10)) == .seconds(10))
        #expect(Duration.clamped(seconds: .infinity, maximum: .seconds(10)) == .seconds(10))
        #expect(Duration.clamped(seconds: .nan, maximum: .seconds(10)) == .zero)
        #expect(Duration.clamped(seconds: -3, maximum: .seconds(10)) == .zero)
        #expect(Duration.milliseconds(2500).inSeconds == 2.5)
    }

    @Test func durationsAsPeopleTypeThem() {
        #expect(Durations.seconds("90") == 90)
        #expect(Durations.seconds("1.5") == 1.5)
        #expect(Durations.seconds("10s") == 10)
        #expect(Durations.seconds("250ms") == 0.25)
        #expect(Durations.seconds("5m") == 300)
        #expect(Durations.seconds("1h30m") == 5400)
        #expect(Durations.seconds("2d") == 172_800)
        for bad in ["", "-1", "10x", "m", "1e999", "nan", "inf", "1h-5m", "5 m"] {
            #expect(Durations.seconds(bad) == nil, "\(bad)")
        }
    }
}

@Suite struct DisplayTextTests {
    @Test func controlCharactersAreShownNotObeyed() {
        #expect(DisplayText.safe("\u{1B}[2Jhi\u{07}") == "\\u{1b}[2Jhi\\u{7}")
        #expect(DisplayText.safe("a\r\nb\tc") == "a\\u{d}\\u{a}b\\u{9}c")
        #expect(DisplayText.safe("\u{9B}31m") == "\\u{9b}31m")
        #expect(DisplayText.safe("abc\u{202E}fdp.exe") == "abc\\u{202e}fdp.exe")
        #expect(DisplayText.safe("Zürich 🏃") == "Zürich 🏃")
        #expect(DisplayText.safe(String(repeating: "x", count: 10), limit: 4) == "xxxx…")
    }
}
