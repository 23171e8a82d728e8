import Foundation
import HealthModel
import Testing
@testable import SyncProtocol

@Suite struct WireTests {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000.25)

    func workout() -> Workout {
        Workout(id: RecordID.derive("w", "1"), version: 2, sport: "cycling", subSport: "indoor_cycling", start: t0,
                end: t0.addingTimeInterval(3600), timerS: 3500, distanceM: 30_000.5, energyKcal: 700, energySource: .device,
                avgHeartRate: 140, maxHeartRate: 172, ascentM: 12, descentM: 11, multisportID: RecordID.derive("m", "1"),
                laps: [Lap(start: t0, end: t0.addingTimeInterval(1800), elapsedS: 1800, timerS: 1750, distanceM: 15_000,
                           energyKcal: 350, avgHeartRate: 138, maxHeartRate: 170)],
                samples: [Sample(time: t0.addingTimeInterval(0.125), heartRate: 120, cadence: 88.5, powerW: 210, speedMps: 8.25,
                                 distanceM: 1, latitude: 52.5, longitude: 13.4, altitudeM: 34, temperatureC: 21.5)],
                rrIntervals: [0.5, 0.498], lengths: [SwimLength(start: t0, elapsedS: 30, kind: "active", strokes: 14, stroke: "freestyle")],
                source: Source(driver: "ble", device: "C0:4E:47:00:00:01", file: nil))
    }

    func roundTrip(_ record: HealthRecord) throws -> WireRecord {
        let data = try SyncAPI.encoder().encode(UploadRequest(records: [WireRecord(record)]))
        return try #require(try SyncAPI.decoder().decode(UploadRequest.self, from: data).records.first)
    }

    @Test func everyRecordKindSurvivesTheWire() throws {
        let m = HealthModel.Measurement(id: RecordID.derive("m", "2"), kind: .bloodPressure, time: t0, value: 120,
                                        extra: ["diastolic": 80, "pulse_rate": 61, "meanArterial": 93],
                                        source: Source(driver: "ble", device: "cuff"))
        let sleep = SleepSession(id: RecordID.derive("s", "1"), start: t0, end: t0.addingTimeInterval(28_800),
                                 stages: [SleepStageSpan(start: t0, end: t0.addingTimeInterval(600), stage: .light)],
                                 source: Source(driver: "fit", device: nil, file: "sleep.fit"))
        let habit = HabitEvent(id: RecordID.derive("h", "1"), habit: "water", time: t0, value: 250, category: "hydration",
                               unit: "ml", label: "glass", note: "after run", source: Source(driver: "csv"))
        let goal = Definition(name: "Reading", time: t0, body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages",
                                                                                    target: HabitTarget(amount: 20, period: .week, direction: .atLeast))),
                              source: Source(driver: "manual"))
        let definitions: [HealthRecord] = [
            .definition(goal),
            .definition(Definition(name: "mood", time: t0, body: .habit(HabitDefinition(valueKind: .categorical, categories: ["a", "b"])),
                                   source: Source(driver: "manual"))),
            .definition(Definition(name: "doomscrolling", time: t0, body: .trigger, source: Source(driver: "manual"))),
            .definition(Definition(name: "porridge", time: t0, body: .meal(SavedMeal(kcal: 350, ingredients: [.init(name: "oats", kcal: 300)])),
                                   source: Source(driver: "manual"))),
            .definition(Definition(name: "profile", time: t0, body: .profile(BodyProfile(weightKg: 71.5)), source: Source(driver: "manual"))),
            .definition(Definition(name: "profile", time: t0, body: .profile(BodyProfile(weightKg: 71.5, goalWeightKg: 68)),
                                   source: Source(driver: "manual"))),
            .definition(Definition(name: "preferences", time: t0, body: .preferences(Preferences(volume: .flOz, mass: .lb)),
                                   source: Source(driver: "manual"))),
            .definition(Definition(name: "preferences", time: t0, body: .preferences(Preferences(dayStartMinutes: 270)),
                                   source: Source(driver: "manual"))),
        ]
        for record in [HealthRecord.workout(workout()), .measurement(m), .sleep(sleep), .habit(habit)] + definitions {
            let back = try roundTrip(record)
            #expect(back.problem == nil)
            #expect(try back.record() == record)  // times here are whole milliseconds
        }
        // The definition's spelling on the wire.
        let json = String(decoding: try SyncAPI.encoder().encode(goal), as: UTF8.self)
        #expect(json.contains("\"kind\":\"habit\"") && json.contains("\"value_kind\":\"numeric\"")
                    && json.contains("\"target\":{\"amount\":20,\"direction\":\"at_least\",\"period\":\"week\"}"), "\(json)")
    }

    /// A day start is `"day_start":"04:30"`, written only when the day does not start at
    /// midnight (preferences of earlier versions read and write as before); a bad one is refused.
    @Test func theDayStartOnTheWire() throws {
        let encoder = SyncAPI.encoder()
        #expect(String(decoding: try encoder.encode(Preferences(dayStartMinutes: 270)), as: UTF8.self).contains("\"day_start\":\"04:30\""))
        #expect(!String(decoding: try encoder.encode(Preferences()), as: UTF8.self).contains("day_start"))
        let decoder = JSONDecoder()
        #expect(try decoder.decode(Preferences.self, from: Data(#"{"volume":"ml","mass":"kg"}"#.utf8)).dayStartMinutes == 0)
        for bad in ["12:00", "4", "25:00", "04:61"] {
            #expect(throws: DecodingError.self) { try decoder.decode(Preferences.self, from: Data(#"{"volume":"ml","mass":"kg","day_start":"\#(bad)"}"#.utf8)) }
        }
    }

    @Test func keysAreSnakeCaseAndExtraKeysAreKept() throws {
        let json = String(decoding: try SyncAPI.encoder().encode(WireRecord(.workout(workout()))), as: UTF8.self)
        for key in ["\"sub_sport\"", "\"elapsed_s\"", "\"avg_heart_rate\"", "\"multisport_id\"", "\"rr_intervals\"",
                    "\"heart_rate\"", "\"speed_mps\"", "\"energy_source\"", "\"2025-11-22T08:26:40.25Z\""] {
            #expect(json.contains(key), "\(key) in \(json)")
        }
        #expect(!json.contains("subSport") && !json.contains("avgHeartRate"))
    }

    @Test func aBadRecordIsAProblemNotAFailedBatch() throws {
        let body = """
            {"records":[
              {"id":"a","version":1,"type":"workout","data":{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93"}},
              {"id":"b","version":1,"type":"steps","data":{}},
              {"id":"c","version":1,"type":"habit","data":{"id":"not-a-uuid","version":1,"habit":"w","time":"2026-01-01T00:00:00Z","source":{"driver":"x"}}}
            ]}
            """
        let request = try SyncAPI.decoder().decode(UploadRequest.self, from: Data(body.utf8))
        #expect(request.records.count == 3)
        #expect(request.records[0].problem?.contains("missing key") == true)
        #expect(request.records[1].problem?.contains("unknown record type 'steps'") == true)
        #expect(request.records[2].problem?.contains("not a UUID") == true)
        #expect(throws: WireRecordError.self) { try request.records[0].record() }
    }

    @Test func envelopeMustAgreeWithTheData() throws {
        var wire = WireRecord(.workout(workout()))
        wire.version = 3
        #expect(throws: WireRecordError.self) { try wire.record() }
        wire = WireRecord(.workout(workout()))
        wire.id = RecordID.derive("other").description
        #expect(throws: WireRecordError.self) { try wire.record() }
    }
}
