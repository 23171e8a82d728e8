import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

/// Compares the driver's output for every real fixture with `Fixtures/fit/expected/<name>.json`,
/// which `Drivers/FIT/tools/fit_reference.py` computed with an independent decoder
/// (fitdecode 0.11.x) by the same normalization rules.
@Suite struct FITReferenceTests {
    struct Expected: Decodable {
        struct Group: Decodable {
            var device: String?
            var file_type: String?
            var workouts: [ExpectedWorkout]
            var monitoring: Monitoring
            var sleep_levels: Int
            var weights: [Weight]
        }
        struct ExpectedWorkout: Decodable {
            var fit_sport: String?
            var sub_sport: String?
            var start: String
            var end: String
            var elapsed_s: Double
            var timer_s: Double?
            var distance_m: Double?
            var energy_kcal: Double?
            var avg_hr: Int?
            var max_hr: Int?
            var ascent_m: Double?
            var descent_m: Double?
            var laps: [ExpectedLap]
            var samples: SampleDigest
            var rr: RRDigest
            var lengths: [ExpectedLength]
            var multisport: Bool
        }
        /// Times in seconds since 1970.
        struct ExpectedLap: Decodable {
            var start: Double
            var end: Double
            var elapsed_s: Double
            var timer_s: Double?
            var distance_m: Double?
            var energy_kcal: Double?
            var avg_hr: Int?
            var max_hr: Int?
        }
        struct ExpectedLength: Decodable {
            var start: Double
            var elapsed_s: Double
            var kind: String
            var strokes: Int?
            var stroke: String?
        }
        /// Present values of one channel: how many, their sum, min and max.
        struct ChannelDigest: Decodable, Equatable {
            var present: Int
            var sum: Double?
            var min: Double?
            var max: Double?
        }
        /// Samples: per-channel digests and some rows in full (`[index] + values in fields order`);
        /// `time` is seconds after the workout's start.
        struct SampleDigest: Decodable {
            var count: Int
            var fields: [String]
            var channels: [String: ChannelDigest]
            var probes: [[Double?]]
        }
        struct RRDigest: Decodable {
            var count: Int
            var sum: Double?
            var min: Double?
            var max: Double?
            var probes: [[Double]]
        }
        struct Monitoring: Decodable {
            struct Day: Decodable { var day_start: String; var end: String; var steps: Double; var energy_kcal: Double }
            var heart_rate: Int
            var days: [Day]
        }
        struct Weight: Decodable {
            var time: String
            var user_profile_index: Int?
            var values: [String: Double]
        }
        var tool: String
        var file: String
        var message_counts: [String: Int]
        var groups: [Group]
    }

    static let names: [String] = Fixtures.fitFileNames()

    func expected(_ name: String) throws -> Expected {
        let url = Fixtures.fit.appendingPathComponent("expected/\(name.dropLast(4)).json")
        return try JSONDecoder().decode(Expected.self, from: Data(contentsOf: url))
    }

    func close(_ a: Double?, _ b: Double?, _ tolerance: Double = 0.01) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let x?, let y?): abs(x - y) <= tolerance * max(1, abs(y)) * 0.01 + tolerance
        default: false
        }
    }

    /// Whether `a` is `b` within `absolute` plus `relative` of the larger magnitude (both nil also matches).
    func near(_ a: Double?, _ b: Double?, absolute: Double = 1e-9, relative: Double = 1e-9) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let x?, let y?): abs(x - y) <= absolute + relative * max(abs(x), abs(y))
        default: false
        }
    }

    func compareLaps(_ laps: [Lap], _ expected: [Expected.ExpectedLap], workout: String) {
        #expect(laps.count == expected.count, "\(workout): lap count")
        for (i, (lap, x)) in zip(laps, expected).enumerated() {
            let at = "\(workout) lap \(i)"
            #expect(near(lap.start.timeIntervalSince1970, x.start, absolute: 1e-3), "\(at) start")
            #expect(near(lap.end.timeIntervalSince1970, x.end, absolute: 1e-3), "\(at) end")
            #expect(near(lap.elapsedS, x.elapsed_s, absolute: 1e-6), "\(at) elapsed \(lap.elapsedS)")
            #expect(near(lap.timerS, x.timer_s, absolute: 1e-6), "\(at) timer \(String(describing: lap.timerS))")
            #expect(near(lap.distanceM, x.distance_m), "\(at) distance \(String(describing: lap.distanceM))")
            #expect(near(lap.energyKcal, x.energy_kcal), "\(at) energy \(String(describing: lap.energyKcal))")
            #expect(lap.avgHeartRate == x.avg_hr, "\(at) avg hr")
            #expect(lap.maxHeartRate == x.max_hr, "\(at) max hr")
        }
    }

    func compareLengths(_ lengths: [SwimLength], _ expected: [Expected.ExpectedLength], workout: String) {
        #expect(lengths.count == expected.count, "\(workout): length count")
        var mismatches: [String] = []
        for (i, (l, x)) in zip(lengths, expected).enumerated() {
            if !near(l.start.timeIntervalSince1970, x.start, absolute: 1e-3) || !near(l.elapsedS, x.elapsed_s, absolute: 1e-6)
                || l.kind != x.kind || l.strokes != x.strokes || l.stroke != x.stroke {
                mismatches.append("length \(i): \(l) vs \(x)")
            }
        }
        #expect(mismatches.isEmpty, "\(workout): \(mismatches.prefix(5))")
    }

    /// The sample channels the reference digests; time is seconds after the workout's `start`.
    static let channelNames: Set<String> = ["time", "heart_rate", "cadence", "power_w", "speed_mps", "distance_m",
                                            "latitude", "longitude", "altitude_m", "temperature_c"]

    static func channel(_ field: String, _ s: Sample, start: Date) -> Double? {
        switch field {
        case "time": s.time.timeIntervalSince(start)
        case "heart_rate": s.heartRate.map(Double.init)
        case "cadence": s.cadence
        case "power_w": s.powerW
        case "speed_mps": s.speedMps
        case "distance_m": s.distanceM
        case "latitude": s.latitude
        case "longitude": s.longitude
        case "altitude_m": s.altitudeM
        case "temperature_c": s.temperatureC
        default: nil
        }
    }

    func compareSamples(_ samples: [Sample], start: Date, _ x: Expected.SampleDigest, workout: String) {
        #expect(samples.count == x.count, "\(workout): sample count")
        #expect(Set(x.fields) == Self.channelNames && x.fields.count == Self.channelNames.count, "\(x.fields)")
        #expect(Set(x.channels.keys) == Self.channelNames)
        for (field, expected) in x.channels {
            let values = samples.compactMap { Self.channel(field, $0, start: start) }
            // Times go through Date (about 1e-7 s of rounding each); values are computed alike.
            let tolerance = field == "time" ? 1e-6 : 1e-9
            let ok = values.count == expected.present
                && near(values.isEmpty ? nil : values.reduce(0, +), expected.sum, absolute: tolerance * Double(max(1, values.count)))
                && near(values.min(), expected.min, absolute: tolerance) && near(values.max(), expected.max, absolute: tolerance)
            #expect(ok, "\(workout) \(field): \(values.count) present, sum \(values.reduce(0, +)), min \(String(describing: values.min())), max \(String(describing: values.max())); expected \(expected)")
        }
        var mismatches: [String] = []
        for probe in x.probes {
            guard let index = probe.first.flatMap({ $0 }).map(Int.init), samples.indices.contains(index) else {
                mismatches.append("no sample \(probe.first as Any)"); continue
            }
            for (field, value) in zip(x.fields, probe.dropFirst()) {
                let actual = Self.channel(field, samples[index], start: start)
                if !near(actual, value, absolute: field == "time" ? 1e-6 : 1e-9) {
                    mismatches.append("sample \(index) \(field): \(String(describing: actual)) vs \(String(describing: value))")
                }
            }
        }
        #expect(!x.probes.isEmpty || x.count == 0)
        #expect(mismatches.isEmpty, "\(workout): \(mismatches.prefix(10))")
    }

    func compareRR(_ rr: [Double], _ x: Expected.RRDigest, workout: String) {
        #expect(rr.count == x.count, "\(workout): RR count")
        #expect(near(rr.isEmpty ? nil : rr.reduce(0, +), x.sum, absolute: 1e-9 * Double(max(1, rr.count))), "\(workout): RR sum")
        #expect(near(rr.min(), x.min) && near(rr.max(), x.max), "\(workout): RR min/max")
        var mismatches: [String] = []
        for probe in x.probes {
            let index = Int(probe[0])
            if !rr.indices.contains(index) || !near(rr[index], probe[1]) {
                mismatches.append("rr \(index): \(rr.indices.contains(index) ? String(rr[index]) : "none") vs \(probe[1])")
            }
        }
        #expect(!x.probes.isEmpty || x.count == 0)
        #expect(mismatches.isEmpty, "\(workout): \(mismatches.prefix(10))")
    }

    /// The parameterised tests below run once per fixture: the list must hold every fixture and
    /// only fixtures (see `Fixtures.fitFileNames`).
    @Test("the fixture list is complete and every fixture has an expected file")
    func fixtureListIsComplete() throws {
        #expect(Self.names.count == 22, "\(Self.names)")
        let expected = try FileManager.default.contentsOfDirectory(atPath: Fixtures.fit.appendingPathComponent("expected").path)
        #expect(Set(expected.map { String($0.dropLast(5)) + ".fit" }) == Set(Self.names))
    }

    @Test("every fixture has a reference produced by fitdecode", arguments: names)
    func referenceExists(_ name: String) throws {
        let e = try expected(name)
        #expect(e.tool.hasPrefix("fitdecode 0.11"))
        #expect(e.file == name)
    }

    @Test("message counts match fitdecode", arguments: names)
    func messageCounts(_ name: String) throws {
        let e = try expected(name)
        let counts = try FITInspector.messageCounts(Fixtures.data(name))
        let ours = Dictionary(uniqueKeysWithValues: counts.map { ($0.name, $0.count) })
        #expect(ours == e.message_counts)
    }

    @Test("normalized records match the reference", arguments: names)
    func records(_ name: String) async throws {
        let e = try expected(name)
        let (records, error) = await Fixtures.importRecords(try Fixtures.data(name), path: name)
        #expect(error == nil)
        let workouts = Fixtures.workoutsOf(records)
        let expectedWorkouts = e.groups.flatMap { g in g.workouts.map { (g.device, $0) } }
        #expect(workouts.count == expectedWorkouts.count)
        for (w, (device, x)) in zip(workouts, expectedWorkouts) {
            #expect(w.source.device == device)
            #expect(w.source.driver == "fit")
            #expect(w.source.file == name)
            #expect(w.sport == Sport.normalize(x.fit_sport ?? "other").rawValue)
            #expect(w.subSport == x.sub_sport)
            #expect(ISO8601.string(w.start) == x.start)
            #expect(ISO8601.string(w.end) == x.end)
            #expect(close(w.elapsedS, x.elapsed_s))
            #expect(close(w.timerS, x.timer_s))
            #expect(close(w.distanceM, x.distance_m))
            #expect(close(w.energyKcal, x.energy_kcal))
            #expect(w.energySource == (x.energy_kcal == nil ? nil : .device))
            #expect(w.avgHeartRate == x.avg_hr)
            #expect(w.maxHeartRate == x.max_hr)
            #expect(close(w.ascentM, x.ascent_m))
            #expect(close(w.descentM, x.descent_m))
            compareLaps(w.laps, x.laps, workout: x.start)
            compareLengths(w.lengths, x.lengths, workout: x.start)
            compareSamples(w.samples, start: w.start, x.samples, workout: x.start)
            compareRR(w.rrIntervals, x.rr, workout: x.start)
            #expect((w.multisportID != nil) == x.multisport)
            #expect(w.id == RecordID.derive("workout", "fit", device ?? "unknown",
                                            String(Int(w.start.timeIntervalSince1970)), w.sport))
        }
        let measurements = Fixtures.measurements(records)
        let heartRates = measurements.filter { $0.kind == .heartRate }
        #expect(heartRates.count == e.groups.reduce(0) { $0 + $1.monitoring.heart_rate })
        let days = e.groups.flatMap(\.monitoring.days)
        let steps = measurements.filter { $0.kind == .steps }
        let energy = measurements.filter { $0.kind == .energy }
        #expect(steps.count == days.filter { $0.steps > 0 }.count)
        #expect(energy.count == days.filter { $0.energy_kcal > 0 }.count)
        for (m, day) in zip(steps, days.filter { $0.steps > 0 }) {
            #expect(ISO8601.string(m.time) == day.day_start)
            #expect(m.end.map(ISO8601.string) == day.end)
            #expect(m.value == day.steps)
        }
        for (m, day) in zip(energy, days.filter { $0.energy_kcal > 0 }) {
            #expect(ISO8601.string(m.time) == day.day_start)
            #expect(close(m.value, day.energy_kcal))
        }
        let weightKinds: [String: MeasurementKind] = [
            "weight": .weight, "percent_fat": .bodyFat, "percent_hydration": .bodyWater, "bone_mass": .boneMass,
            "muscle_mass": .muscleMass, "basal_met": .basalMetabolicRate, "visceral_fat_rating": .visceralFat, "bmi": .bmi,
        ]
        let bodyMeasurements = measurements.filter { weightKinds.values.contains($0.kind) }
        let expectedBody = e.groups.flatMap(\.weights).flatMap { w in
            w.values.map { (time: w.time, user: w.user_profile_index, kind: weightKinds[$0.key]!, value: $0.value) }
        }
        #expect(bodyMeasurements.count == expectedBody.count)
        for x in expectedBody {
            let match = bodyMeasurements.first { ISO8601.string($0.time) == x.time && $0.kind == x.kind }
            #expect(match.map { close($0.value, x.value) } == true, "\(x)")
            #expect(match?.extra["user_profile_index"] == x.user.map(Double.init))
        }
        #expect(Fixtures.sleeps(records).count == e.groups.filter { $0.sleep_levels > 0 }.count)
    }
}
