import Foundation
import HealthModel
import Testing
@testable import SyncProtocol

/// The wire format, byte for byte: one record of each type (with every field, and with only the
/// required ones), a pulled version and a tombstone, encoded by both encoders and compared with
/// the JSON committed here; the same text decodes to the same records; bad `data` gives the same
/// problems. A change here changes what servers store and what clients send: existing databases
/// and servers depend on these bytes.
@Suite struct GoldenJSONTests {
    static let t0 = Date(timeIntervalSince1970: 1_763_800_000.25)
    static let source = Source(driver: "fit", device: "garmin/fenix5/3921234567", file: "/data/in/ride.fit")

    static let workout = Workout(
        id: RecordID.derive("golden", "workout"), version: 3, sport: "cycling", subSport: "indoor_cycling", start: t0,
        end: t0.addingTimeInterval(3600.5), timerS: 3500.125, distanceM: 30_000.5, energyKcal: 700, energySource: .estimated,
        avgHeartRate: 140, maxHeartRate: 172, ascentM: 12.25, descentM: 11, multisportID: RecordID.derive("golden", "multisport"),
        laps: [Lap(start: t0, end: t0.addingTimeInterval(1800), elapsedS: 1800, timerS: 1750, distanceM: 15_000,
                   energyKcal: 350, avgHeartRate: 138, maxHeartRate: 170),
               Lap(start: t0.addingTimeInterval(1800), end: t0.addingTimeInterval(3600.5), elapsedS: 1800.5)],
        samples: [Sample(time: t0.addingTimeInterval(0.125), heartRate: 120, cadence: 88.5, powerW: 210, speedMps: 8.25,
                         distanceM: 1, latitude: 52.5, longitude: 13.4, altitudeM: -3.5, temperatureC: 21.5),
                  Sample(time: t0.addingTimeInterval(1), heartRate: 121)],
        rrIntervals: [0.5, 0.498],
        lengths: [SwimLength(start: t0, elapsedS: 30, kind: "active", strokes: 14, stroke: "freestyle"),
                  SwimLength(start: t0.addingTimeInterval(30), elapsedS: 15, kind: "idle")],
        source: source)
    static let habit = HabitEvent(id: RecordID.derive("golden", "habit"), habit: "hydration", time: t0, value: 0.25,
                                  category: "water", unit: "l", label: "glass", note: "after the \"ride\" / ü", source: source)

    static let cases: [(name: String, record: WireRecord, json: String)] = [
        ("workout, every field", WireRecord(.workout(workout)),
         #"{"data":{"ascent_m":12.25,"avg_heart_rate":140,"descent_m":11,"distance_m":30000.5,"elapsed_s":3600.5,"end":"2025-11-22T09:26:40.75Z","energy_kcal":700,"energy_source":"estimated","id":"b62ca79b-00f3-5a2e-bd15-c66f06b5c0b8","laps":[{"avg_heart_rate":138,"distance_m":15000,"elapsed_s":1800,"end":"2025-11-22T08:56:40.25Z","energy_kcal":350,"max_heart_rate":170,"start":"2025-11-22T08:26:40.25Z","timer_s":1750},{"elapsed_s":1800.5,"end":"2025-11-22T09:26:40.75Z","start":"2025-11-22T08:56:40.25Z"}],"lengths":[{"elapsed_s":30,"kind":"active","start":"2025-11-22T08:26:40.25Z","stroke":"freestyle","strokes":14},{"elapsed_s":15,"kind":"idle","start":"2025-11-22T08:27:10.25Z"}],"max_heart_rate":172,"multisport_id":"373b7d67-1ea5-5155-a5e7-fc9ba13cf23e","rr_intervals":[0.5,0.498],"samples":[{"altitude_m":-3.5,"cadence":88.5,"distance_m":1,"heart_rate":120,"latitude":52.5,"longitude":13.4,"power_w":210,"speed_mps":8.25,"temperature_c":21.5,"time":"2025-11-22T08:26:40.375Z"},{"heart_rate":121,"time":"2025-11-22T08:26:41.25Z"}],"source":{"device":"garmin/fenix5/3921234567","driver":"fit","file":"/data/in/ride.fit"},"sport":"cycling","start":"2025-11-22T08:26:40.25Z","sub_sport":"indoor_cycling","timer_s":3500.125,"version":3},"id":"b62ca79b-00f3-5a2e-bd15-c66f06b5c0b8","type":"workout","version":3}"#),
        ("workout, required fields only", WireRecord(.workout(Workout(
            id: RecordID.derive("golden", "bare workout"), sport: "running", start: t0, end: t0.addingTimeInterval(60),
            energyKcal: 5, source: Source(driver: "tcx")))),
         #"{"data":{"elapsed_s":60,"end":"2025-11-22T08:27:40.25Z","energy_kcal":5,"energy_source":"device","id":"86faac16-8992-55ce-bad7-e6151c771355","laps":[],"lengths":[],"rr_intervals":[],"samples":[],"source":{"driver":"tcx"},"sport":"running","start":"2025-11-22T08:26:40.25Z","version":1},"id":"86faac16-8992-55ce-bad7-e6151c771355","type":"workout","version":1}"#),
        ("sleep", WireRecord(.sleep(SleepSession(
            id: RecordID.derive("golden", "sleep"), version: 2, start: t0, end: t0.addingTimeInterval(28_800),
            stages: [SleepStageSpan(start: t0, end: t0.addingTimeInterval(600), stage: .awake),
                     SleepStageSpan(start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(28_800), stage: .rem)],
            assessment: SleepAssessment(score: 81, awakenings: 3), source: Source(driver: "fit", device: "garmin/venu/1")))),
         #"{"data":{"assessment":{"awakenings":3,"score":81},"end":"2025-11-22T16:26:40.25Z","id":"aa1236dd-dde5-5d53-b890-1c2917442daa","source":{"device":"garmin/venu/1","driver":"fit"},"stages":[{"end":"2025-11-22T08:36:40.25Z","stage":"awake","start":"2025-11-22T08:26:40.25Z"},{"end":"2025-11-22T16:26:40.25Z","stage":"rem","start":"2025-11-22T08:36:40.25Z"}],"start":"2025-11-22T08:26:40.25Z","version":2},"id":"aa1236dd-dde5-5d53-b890-1c2917442daa","type":"sleep","version":2}"#),
        ("sleep, no stages", WireRecord(.sleep(SleepSession(
            id: RecordID.derive("golden", "bare sleep"), start: t0, end: t0.addingTimeInterval(3600), source: Source(driver: "exec")))),
         #"{"data":{"end":"2025-11-22T09:26:40.25Z","id":"b08525e9-08e0-5ecf-8d02-c3eda3529a65","source":{"driver":"exec"},"stages":[],"start":"2025-11-22T08:26:40.25Z","version":1},"id":"b08525e9-08e0-5ecf-8d02-c3eda3529a65","type":"sleep","version":1}"#),
        ("habit, every field", WireRecord(.habit(habit)),
         #"{"data":{"category":"water","habit":"hydration","id":"9af14a9a-5576-5e28-9a53-7ae4bc6fdd50","label":"glass","note":"after the \"ride\" / ü","source":{"device":"garmin/fenix5/3921234567","driver":"fit","file":"/data/in/ride.fit"},"time":"2025-11-22T08:26:40.25Z","unit":"l","value":0.25,"version":1},"id":"9af14a9a-5576-5e28-9a53-7ae4bc6fdd50","type":"habit","version":1}"#),
        ("habit, required fields only", WireRecord(.habit(HabitEvent(
            id: RecordID.derive("golden", "bare habit"), habit: "vaping", time: t0, source: Source(driver: "exec")))),
         #"{"data":{"habit":"vaping","id":"7e36ac77-f363-54a9-b0fe-c0b38f2467e2","source":{"driver":"exec"},"time":"2025-11-22T08:26:40.25Z","version":1},"id":"7e36ac77-f363-54a9-b0fe-c0b38f2467e2","type":"habit","version":1}"#),
        ("measurement, every field", WireRecord(.measurement(HealthModel.Measurement(
            id: RecordID.derive("golden", "measurement"), version: 7, kind: .bloodPressure, time: t0, end: t0.addingTimeInterval(30),
            value: 121, extra: ["diastolic": 79.5, "mean_arterial": 93, "pulseRate": 61], source: source))),
         #"{"data":{"end":"2025-11-22T08:27:10.25Z","extra":{"diastolic":79.5,"mean_arterial":93,"pulseRate":61},"id":"d99937a2-6646-5c12-be95-9d7fcb539ce2","kind":"blood_pressure","source":{"device":"garmin/fenix5/3921234567","driver":"fit","file":"/data/in/ride.fit"},"time":"2025-11-22T08:26:40.25Z","value":121,"version":7},"id":"d99937a2-6646-5c12-be95-9d7fcb539ce2","type":"measurement","version":7}"#),
        ("measurement, required fields only", WireRecord(.measurement(HealthModel.Measurement(
            id: RecordID.derive("golden", "bare measurement"), kind: .steps, time: t0, value: 1e-7, source: Source(driver: "ble")))),
         #"{"data":{"extra":{},"id":"0b4420e7-0bae-53d6-8f64-d1c6c0fdede2","kind":"steps","source":{"driver":"ble"},"time":"2025-11-22T08:26:40.25Z","value":1e-07,"version":1},"id":"0b4420e7-0bae-53d6-8f64-d1c6c0fdede2","type":"measurement","version":1}"#),
        ("a pulled version", WireRecord(.habit(habit), deviceId: "9b1f3c6e-0000-4000-8000-000000000001", seq: 4_503_599_627_370_497),
         #"{"data":{"category":"water","habit":"hydration","id":"9af14a9a-5576-5e28-9a53-7ae4bc6fdd50","label":"glass","note":"after the \"ride\" / ü","source":{"device":"garmin/fenix5/3921234567","driver":"fit","file":"/data/in/ride.fit"},"time":"2025-11-22T08:26:40.25Z","unit":"l","value":0.25,"version":1},"device_id":"9b1f3c6e-0000-4000-8000-000000000001","id":"9af14a9a-5576-5e28-9a53-7ae4bc6fdd50","seq":4503599627370497,"type":"habit","version":1}"#),
        ("a tombstone", {
            var tombstone = WireRecord(.habit(habit), deviceId: "9b1f3c6e-0000-4000-8000-000000000001", seq: 12)
            tombstone.version = 4
            tombstone.deleted = true
            tombstone.data = nil
            return tombstone
        }(),
         #"{"deleted":true,"device_id":"9b1f3c6e-0000-4000-8000-000000000001","id":"9af14a9a-5576-5e28-9a53-7ae4bc6fdd50","seq":12,"type":"habit","version":4}"#),
    ]

    @Test(arguments: 0..<cases.count) func encodesToTheCommittedBytes(_ index: Int) throws {
        let (name, record, json) = Self.cases[index]
        let own = String(decoding: try SyncJSONEncoder().encode(record), as: UTF8.self)
        #expect(own == json, "\(name): SyncJSONEncoder wrote\n\(own)")
        let reference = String(decoding: try SyncAPI.encoder().encode(record), as: UTF8.self)
        #expect(reference == json, "\(name): JSONEncoder wrote\n\(reference)")
    }

    @Test(arguments: 0..<cases.count) func decodesToTheSameRecords(_ index: Int) throws {
        let (name, record, json) = Self.cases[index]
        let own = try SyncJSONDecoder().decode(WireRecord.self, from: Array(json.utf8))
        #expect(own == record, "\(name)")
        let reference = try SyncAPI.decoder().decode(WireRecord.self, from: Data(json.utf8))
        #expect(reference == record, "\(name)")
    }

    /// A bad `data` is a problem kept with the record (the server rejects that one record with it):
    /// the first missing or wrong key, in the order the record's fields come.
    static let problems: [(data: String, type: String, problem: String)] = [
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1}"#, "workout",
         "data is not a valid workout: missing key 'sport' at data"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"sport":"running","start":"2026-01-01T00:00:00Z","end":"2026-01-01T01:00:00Z","elapsed_s":3600,"laps":[],"samples":[{"heart_rate":80}],"rr_intervals":[],"lengths":[],"source":{"driver":"x"}}"#, "workout",
         "data is not a valid workout: missing key 'time' at data.samples.[0]"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"sport":"running","start":"2026-01-01T00:00:00Z","end":"2026-01-01T01:00:00Z","elapsed_s":3600,"energy_source":"guessed","laps":[],"samples":[],"rr_intervals":[],"lengths":[],"source":{"driver":"x"}}"#, "workout",
         "data is not a valid workout: Cannot initialize EnergySource from invalid String value guessed at data.energy_source"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"start":"2026-01-01T00:00:00Z","end":"2026-01-01T08:00:00Z","stages":[{"start":"2026-01-01T00:00:00Z","end":"2026-01-01T08:00:00Z","stage":"nap"}],"source":{"driver":"x"}}"#, "sleep",
         "data is not a valid sleep: Cannot initialize SleepStage from invalid String value nap at data.stages.[0].stage"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"habit":"water","time":"2026-01-01T00:00:00Z","value":"a lot","source":{"driver":"x"}}"#, "habit",
         "data is not a valid habit: expected Double at data.value"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"habit":"water","time":"2026-01-01T00:00:00Z","source":{"device":"y"}}"#, "habit",
         "data is not a valid habit: missing key 'driver' at data.source"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"kind":"weight","time":"2026-01-01T00:00:00Z","value":null,"extra":{},"source":{"driver":"x"}}"#, "measurement",
         "data is not a valid measurement: null where Double is required at data.value"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"kind":"weight","time":"2026-01-01T00:00:00Z","value":70,"extra":{"fat":"x"},"source":{"driver":"x"}}"#, "measurement",
         "data is not a valid measurement: expected Double at data.extra.fat"),
        (#"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"kind":"weight","time":"2026-01-01T00:00:00Z","value":70,"source":{"driver":"x"}}"#, "measurement",
         "data is not a valid measurement: missing key 'extra' at data"),
    ]

    @Test(arguments: 0..<problems.count) func badDataGivesTheSameProblem(_ index: Int) throws {
        let (data, type, problem) = Self.problems[index]
        let json = #"{"id":"6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93","version":1,"type":""# + type + #"","data":"# + data + "}"
        let wire = try SyncJSONDecoder().decode(WireRecord.self, from: Array(json.utf8))
        #expect(wire.data == nil)
        #expect(wire.problem == problem, "\(index): \(wire.problem ?? "no problem")")
    }
}
