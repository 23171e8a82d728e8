import Crypto
import Foundation
import Testing
@testable import HealthModel

@Suite struct IdentityTests {
    @Test func sha1MatchesKnownVectors() {
        // FIPS 180-4 example vectors.
        let abc = SHA1.hash(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(abc == "a9993e364706816aba3e25717850c26c9cd0d89d")
        let empty = SHA1.hash([]).map { String(format: "%02x", $0) }.joined()
        #expect(empty == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let long = SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(long == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    /// Every message length from 0 to 300 bytes (both padding cases: the length fits the last
    /// block or needs one more, and the block boundaries) against swift-crypto's SHA-1.
    @Test func sha1MatchesAnIndependentImplementation() {
        for length in 0...300 {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ length) }
            #expect(SHA1.hash(message) == Array(Insecure.SHA1.hash(data: message)), "length \(length)")
        }
    }

    @Test func hexIsTwoLowerCaseDigitsPerByte() {
        #expect(Hex.lowercase([0x00, 0x0f, 0xab, 0xff, 0x10]) == "000fabff10")
        #expect(Hex.lowercase([UInt8]()) == "")
        #expect(Hex.lowercase((0...255).map { UInt8($0) }).count == 512)
    }

    @Test func derivedIDsAreStableVersion5UUIDs() {
        let a = RecordID.derive("workout", "fit", "garmin/fenix5/1", "1495129762", "running")
        let b = RecordID.derive("workout", "fit", "garmin/fenix5/1", "1495129762", "running")
        let c = RecordID.derive("workout", "fit", "garmin/fenix5/1", "1495129763", "running")
        #expect(a == b)
        #expect(a != c)
        let text = a.description
        #expect(text == text.lowercased())
        #expect(Array(text)[14] == "5")  // version nibble
        #expect("89ab".contains(Array(text)[19]))  // RFC 4122 variant
        #expect(RecordID(string: text) == a)
    }

    /// The id's own text form and parser agree with Foundation's `UUID` on every id, and refuse
    /// what `UUID(uuidString:)` refuses.
    @Test func idTextAgreesWithFoundation() {
        for _ in 0..<500 {
            let uuid = UUID()
            let id = RecordID(uuid)
            #expect(id.description == uuid.uuidString.lowercased())
            #expect(RecordID(string: uuid.uuidString) == id)
            #expect(RecordID(string: uuid.uuidString.lowercased()) == id)
        }
        let good = "6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93"
        let bad = ["", "6f1c0d8e3b5a4c1e9a572f4d8b6e1a93", String(good.dropLast()), good + "0", "6f1c0d8e-3b5a-4c1e-9a57_2f4d8b6e1a93",
                   "6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a9g", "6f1c0d8-e3b5a-4c1e-9a57-2f4d8b6e1a93", "6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1aé"]
        #expect(RecordID(string: good) != nil)
        for text in bad {
            #expect(RecordID(string: text) == nil, "\(text)")
            #expect(UUID(uuidString: text) == nil, "\(text)")
        }
        // Stricter than `sscanf`, which reads a leading space as part of a digit group.
        #expect(RecordID(string: " 6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a9") == nil)
    }
}

@Suite struct TimeTests {
    @Test func formatsUTC() {
        #expect(ISO8601.string(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1_495_129_762.25)) == "2017-05-18T17:49:22.250Z")
        // Milliseconds that round up to a whole second carry into it.
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1_495_129_759.9996)) == "2017-05-18T17:49:20Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1_495_129_759.9994)) == "2017-05-18T17:49:19.999Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }

    @Test func parsesDatesTimesAndOffsets() {
        #expect(ISO8601.parse("2017-05-18")?.timeIntervalSince1970 == 1_495_065_600)
        #expect(ISO8601.parse("2017-05-18T17:49:22Z")?.timeIntervalSince1970 == 1_495_129_762)
        #expect(ISO8601.parse("2017-05-18T19:49:22+02:00")?.timeIntervalSince1970 == 1_495_129_762)
        #expect(ISO8601.parse("2017-05-18T12:49:22-0500")?.timeIntervalSince1970 == 1_495_129_762)
        #expect(ISO8601.parse("2017-05-18T17:49:22.500Z")?.timeIntervalSince1970 == 1_495_129_762.5)
        #expect(ISO8601.parse("2017-05-18T17:49Z")?.timeIntervalSince1970 == 1_495_129_740)
        for bad in ["", "2017", "2017-13-01", "2017-05-18T25:00:00Z", "2017-05-18T17:49:22Zjunk", "yesterday"] {
            #expect(ISO8601.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func roundTrips() {
        for t in [0.0, 631_065_600, 1_495_129_762, 1_800_000_000.125] {
            let d = Date(timeIntervalSince1970: t)
            #expect(ISO8601.parse(ISO8601.string(d)) == d)
        }
    }
}

@Suite struct ValidationTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    func workout(start: Double, end: Double, distance: Double? = nil) -> HealthRecord {
        .workout(Workout(id: RecordID.derive("w", "\(start)"), sport: "running", start: Date(timeIntervalSince1970: start),
                         end: Date(timeIntervalSince1970: end), distanceM: distance, source: Source(driver: "test")))
    }

    @Test func rejectsFutureDatedRecords() throws {
        let v = RecordValidator()
        let error = #expect(throws: ValidationError.self) { try v.validate(workout(start: 1_700_001_000, end: 1_700_002_000), now: now) }
        #expect(error?.reason.contains("future-dated") == true)
        // A workout still running into the future by more than the tolerance is refused too.
        #expect(throws: ValidationError.self) { try v.validate(workout(start: 1_699_999_000, end: 1_700_001_000), now: now) }
        // Within the clock-skew tolerance it is accepted.
        try v.validate(workout(start: 1_699_999_000, end: 1_700_000_100), now: now)
    }

    @Test func rejectsImpossibleValues() {
        let v = RecordValidator()
        #expect(throws: ValidationError.self) { try v.validate(workout(start: 1_600_000_000, end: 1_500_000_000), now: now) }
        #expect(throws: ValidationError.self) { try v.validate(workout(start: 1_600_000_000, end: 1_600_000_100, distance: -5), now: now) }
        #expect(throws: ValidationError.self) { try v.validate(workout(start: 100, end: 200), now: now) }
    }

    @Test func normalizerFiltersRangeAndEstimatesEnergy() {
        let normalizer = Normalizer(energy: EnergyEstimator(bodyWeightKg: 80),
                                    since: Date(timeIntervalSince1970: 1_600_000_000),
                                    until: Date(timeIntervalSince1970: 1_650_000_000))
        let records = [workout(start: 1_500_000_000, end: 1_500_003_600), workout(start: 1_600_000_000, end: 1_600_003_600),
                       workout(start: 1_650_000_000, end: 1_650_003_600), workout(start: 1_800_000_000, end: 1_800_003_600)]
        let outcome = normalizer.normalize(records, now: now)
        #expect(outcome.accepted.count == 1)
        #expect(outcome.outOfRange == 3)
        guard case .workout(let w) = outcome.accepted.first else { Issue.record("no workout"); return }
        // Running MET 9.8 x 80 kg x 1 h.
        #expect(w.energyKcal == 784)
        #expect(w.energySource == .estimated)
    }

    @Test func sportNames() {
        #expect(Sport.normalize("Biking") == .cycling)
        #expect(Sport.normalize("Running") == .running)
        #expect(Sport.normalize("fitness_equipment") == .fitnessEquipment)
        #expect(Sport.normalize("SUP") == .paddling)
        #expect(Sport.normalize("9") == .other)
    }
}

@Suite struct PlaceholderTests {
    @Test func zeroHeartRateAndZeroEnergyBecomeAbsent() {
        let t0 = Date(timeIntervalSince1970: 1_600_000_000)
        let w = Workout(id: RecordID.derive("z"), sport: "cycling", start: t0, end: t0.addingTimeInterval(1800), timerS: 1800,
                        energyKcal: 0, avgHeartRate: 0, maxHeartRate: 0,
                        laps: [Lap(start: t0, end: t0.addingTimeInterval(1800), elapsedS: 1800, avgHeartRate: 0)],
                        samples: [Sample(time: t0, heartRate: 0), Sample(time: t0.addingTimeInterval(1), heartRate: 98)],
                        source: Source(driver: "fit"))
        let outcome = Normalizer().normalize([.workout(w)], now: t0.addingTimeInterval(86400))
        guard case .workout(let n) = outcome.accepted.first else { Issue.record("no workout"); return }
        #expect(n.avgHeartRate == nil && n.maxHeartRate == nil && n.laps[0].avgHeartRate == nil)
        #expect(n.samples.map(\.heartRate) == [nil, 98])
        #expect(n.energySource == .estimated)
        #expect(n.energyKcal == 262.5)  // cycling MET 7.5 x 70 kg x 0.5 h

        // A 4-second transition really can burn 0 kcal: kept as the device said.
        let short = Workout(id: RecordID.derive("t"), sport: "transition", start: t0, end: t0.addingTimeInterval(4),
                            energyKcal: 0, source: Source(driver: "fit"))
        guard case .workout(let s) = Normalizer().normalize([.workout(short)], now: t0.addingTimeInterval(86400)).accepted.first
        else { Issue.record("no workout"); return }
        #expect(s.energyKcal == 0 && s.energySource == .device)
    }
}

@Suite struct PreciseTimeTests {
    @Test func preciseStringsReadBackAsTheSameDate() throws {
        var rng = SystemRandomNumberGenerator()
        let fixed: [Double] = [0, 1_495_129_762, 1_495_129_762.25, 1_497_361_350 + 5.0 / 1024, 1_763_800_000.000001,
                               1_763_800_000 + 1e-5, -0.75, 1_763_800_000.123456789]
        let random = (0..<5000).map { _ in Double.random(in: 0...2_000_000_000, using: &rng) }
        for t in fixed + random {
            let date = Date(timeIntervalSince1970: t)
            let text = ISO8601.preciseString(date)
            #expect(ISO8601.parse(text) == date, "\(t) -> \(text)")
        }
        #expect(ISO8601.preciseString(Date(timeIntervalSince1970: 1_495_129_762)) == "2017-05-18T17:49:22Z")
        #expect(ISO8601.preciseString(Date(timeIntervalSince1970: 1_495_129_762.25)) == "2017-05-18T17:49:22.25Z")
        // A time logged at .32 s prints as .32, not the binary fraction's 0.3200000524520874...,
        // and still reads back as the same Date; record ids keep the exact form.
        let logged = try #require(ISO8601.parse("2026-11-28T18:26:47.32Z"))
        #expect(ISO8601.preciseString(logged) == "2026-11-28T18:26:47.32Z")
        #expect(ISO8601.exactString(logged) == "2026-11-28T18:26:47.3200000524520874Z")
        #expect(ISO8601.parse(ISO8601.exactString(logged)) == logged)
        for t in fixed + random {
            let date = Date(timeIntervalSince1970: t)
            #expect(ISO8601.parse(ISO8601.exactString(date)) == date, "\(t)")
            // Never more than a nanosecond's digits but within 2^23 s (97 days) of 2001-01-01,
            // where a Double's seconds are finer.
            let fraction = ISO8601.preciseString(date).split(separator: ".").dropFirst().first.map { $0.dropLast().count } ?? 0
            #expect(abs(date.timeIntervalSinceReferenceDate) < 8_388_608 || fraction <= 9, "\(t) -> \(ISO8601.preciseString(date))")
        }
    }
}
