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
            var laps: Int
            var samples: Int
            var rr: Int
            var lengths: Int
            var multisport: Bool
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

    static let names: [String] = (try? Fixtures.fitFiles()) ?? []

    func expected(_ name: String) throws -> Expected {
        let url = Fixtures.fit.appendingPathComponent("expected/\(name.dropLast(4)).json")
        return try JSONDecoder().decode(Expected.self, from: Data(contentsOf: url))
    }

    func close(_ a: Double?, _ b: Double?, _ tolerance: Double = 0.01) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (x?, y?): abs(x - y) <= tolerance * max(1, abs(y)) * 0.01 + tolerance
        default: false
        }
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
            #expect(w.laps.count == x.laps)
            #expect(w.samples.count == x.samples)
            #expect(w.rrIntervals.count == x.rr)
            #expect(w.lengths.count == x.lengths)
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
