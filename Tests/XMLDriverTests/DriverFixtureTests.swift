import DriverKit
import Foundation
import GPXDriver
import HealthModel
import TCXDriver
import Testing

/// One expected workout from Fixtures/<driver>/expected/<name>.json.
struct ExpectedWorkout {
    let raw: [String: Any]
    func double(_ key: String) -> Double? { raw[key] as? Double }
    func int(_ key: String) -> Int? { (raw[key] as? NSNumber)?.intValue }
    func string(_ key: String) -> String? { raw[key] as? String }
    var laps: [[String: Any]] { raw["laps"] as? [[String: Any]] ?? [] }
    var samples: [[Any]] { raw["samples"] as? [[Any]] ?? [] }
    var sampleFields: [String] { raw["sample_fields"] as? [String] ?? [] }
}

func expectedDocument(_ relative: String) throws -> (tool: String, workouts: [ExpectedWorkout]) {
    let data = try Data(contentsOf: fixtureURL(relative))
    let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let reference = try #require(json["reference"] as? [String: Any])
    let workouts = try #require(json["workouts"] as? [[String: Any]])
    return ("\(reference["tool"] ?? "?") \(reference["version"] ?? "?")", workouts.map(ExpectedWorkout.init))
}

/// Whether `actual` matches the JSON value `expected` (a number or null) within `tolerance`.
func close(_ actual: Double?, _ expected: Any?, _ tolerance: Double) -> Bool {
    let e = (expected as? NSNumber)?.doubleValue
    switch (actual, e) {
    case (nil, nil): return true
    case (let a?, let e?): return abs(a - e) <= tolerance
    default: return false
    }
}

func sameInt(_ actual: Int?, _ expected: Any?) -> Bool {
    (expected as? NSNumber)?.intValue == actual && ((expected is NSNull || expected == nil) == (actual == nil))
}

/// Compares a decoded workout with the reference, field by field (times to the millisecond).
func compare(_ w: Workout, _ e: ExpectedWorkout, tool: String, sampleValues: (Sample) -> [String: Any?]) {
    let t = 1e-3
    #expect(w.sport == e.string("sport"), "sport (\(tool))")
    #expect(w.subSport == e.string("sub_sport"), "sub_sport")
    #expect(w.source.device == e.string("device"), "device")
    #expect(close(w.start.timeIntervalSince1970, e.raw["start"], t), "start \(w.start)")
    #expect(close(w.end.timeIntervalSince1970, e.raw["end"], t), "end \(w.end)")
    #expect(close(w.elapsedS, e.raw["elapsed_s"], t), "elapsed_s \(w.elapsedS)")
    #expect(close(w.timerS, e.raw["timer_s"], t), "timer_s \(String(describing: w.timerS))")
    #expect(close(w.distanceM, e.raw["distance_m"], 1e-6), "distance_m \(String(describing: w.distanceM))")
    #expect(close(w.energyKcal, e.raw["energy_kcal"], 1e-9), "energy_kcal")
    #expect(w.energySource == (w.energyKcal == nil ? nil : .device))
    #expect(sameInt(w.avgHeartRate, e.raw["avg_hr"]), "avg_hr \(String(describing: w.avgHeartRate))")
    #expect(sameInt(w.maxHeartRate, e.raw["max_hr"]), "max_hr \(String(describing: w.maxHeartRate))")
    #expect(close(w.ascentM, e.raw["ascent_m"], 1e-6), "ascent_m \(String(describing: w.ascentM))")
    #expect(close(w.descentM, e.raw["descent_m"], 1e-6), "descent_m \(String(describing: w.descentM))")

    #expect(w.laps.count == e.laps.count, "lap count")
    for (i, (lap, el)) in zip(w.laps, e.laps).enumerated() {
        #expect(close(lap.start.timeIntervalSince1970, el["start"], t), "lap \(i) start")
        #expect(close(lap.end.timeIntervalSince1970, el["end"], t), "lap \(i) end")
        #expect(close(lap.elapsedS, el["elapsed_s"], t), "lap \(i) elapsed")
        #expect(close(lap.timerS, el["timer_s"], t), "lap \(i) timer")
        #expect(close(lap.distanceM, el["distance_m"], 1e-6), "lap \(i) distance")
        #expect(close(lap.energyKcal, el["energy_kcal"], 1e-9), "lap \(i) energy")
        #expect(sameInt(lap.avgHeartRate, el["avg_hr"]), "lap \(i) avg hr")
        #expect(sameInt(lap.maxHeartRate, el["max_hr"]), "lap \(i) max hr")
    }

    #expect(w.samples.count == e.samples.count, "sample count")
    let fields = e.sampleFields
    var mismatches: [String] = []
    for (i, (sample, row)) in zip(w.samples, e.samples).enumerated() {
        let values = sampleValues(sample)
        for (field, expected) in zip(fields, row) {
            let actual = values[field] ?? nil
            let ok: Bool
            switch actual {
            case let v as Int: ok = sameInt(v, expected)
            case let v as Double: ok = close(v, expected, field == "time" ? t : 1e-9)
            default: ok = expected is NSNull
            }
            if !ok { mismatches.append("sample \(i) \(field): \(String(describing: actual)) vs \(expected)") }
        }
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
}

/// Decodes a fixture through the driver's `importFile` (as the pipeline does) and returns the workouts.
func importWorkouts(_ importer: some FileImporter, _ relative: String) async throws -> [Workout] {
    let sink = CollectingSink()
    try await importer.importFile(try await ImportSource.open(fixtureURL(relative).path), into: sink)
    return sink.records.compactMap { if case .workout(let w) = $0 { w } else { nil } }
}

@Suite("TCX driver: fixtures")
struct TCXFixtureTests {
    static let fixtures = ["garmin-forerunner410-run", "garmin-vivoactivehr-sup", "mapmyride-biking-no-hr"]

    /// Compares each TCX fixture with Fixtures/tcx/expected/<name>.json, written by
    /// Drivers/TCX/tools/tcx_reference.py from tcxreader 0.4.11 (plus xml.etree for the lap fields
    /// tcxreader does not read).
    @Test(arguments: fixtures)
    func matchesTheTcxreaderReference(_ name: String) async throws {
        let workouts = try await importWorkouts(TCXImporter(), "tcx/\(name).tcx")
        let (tool, expected) = try expectedDocument("tcx/expected/\(name).json")
        #expect(workouts.count == expected.count)
        for (w, e) in zip(workouts, expected) {
            compare(w, e, tool: tool) { s in
                ["time": s.time.timeIntervalSince1970, "latitude": s.latitude, "longitude": s.longitude,
                 "altitude_m": s.altitudeM, "distance_m": s.distanceM, "heart_rate": s.heartRate,
                 "cadence": s.cadence, "speed_mps": s.speedMps, "power_w": s.powerW]
            }
            #expect(w.source == Source(driver: "tcx", device: w.source.device, file: fixtureURL("tcx/\(name).tcx").path))
            #expect(w.id == RecordID.derive("workout", "tcx", w.source.device ?? "",
                                            String(Int(w.start.timeIntervalSince1970)), w.sport))
        }
    }

    @Test func identityAndProvenanceOfTheForerunnerRun() throws {
        let bytes = try fixtureBytes("tcx/garmin-forerunner410-run.tcx")
        let w = try #require(try TCXImporter.decode(bytes, path: "run.tcx").first)
        #expect(w.source == Source(driver: "tcx", device: "garmin forerunner 410/3854007508", file: "run.tcx"))
        #expect(w.id == RecordID.derive("workout", "tcx", "garmin forerunner 410/3854007508", "1356557393", "running"))
        #expect(w.id.description == RecordID.derive("workout", "tcx", "garmin forerunner 410/3854007508", "1356557393", "running").description)
        // Decoding is deterministic: the same bytes give the same identity.
        #expect(try TCXImporter.decode(bytes, path: "elsewhere.tcx").first?.id == w.id)
    }

    @Test func sportMappingKeepsInformativeNames() throws {
        func sport(_ attribute: String) throws -> (String, String?) {
            let xml = """
                <TrainingCenterDatabase><Activities><Activity Sport="\(attribute)"><Id>2020-01-01T00:00:00Z</Id>
                <Lap StartTime="2020-01-01T00:00:00Z"><TotalTimeSeconds>60</TotalTimeSeconds></Lap></Activity></Activities></TrainingCenterDatabase>
                """
            let w = try #require(try TCXImporter.decode(Array(xml.utf8)).first)
            return (w.sport, w.subSport)
        }
        #expect(try sport("Running") == ("running", nil))
        #expect(try sport("Biking") == ("cycling", nil))
        #expect(try sport("Other") == ("other", nil))
        #expect(try sport("Mountain Biking") == ("cycling", "mountain_biking"))
        #expect(try sport("Kitesurfing") == ("other", "kitesurfing"))
    }

    @Test func extensionsLapFallbacksAndIgnoredSections() throws {
        // No lap distance or HR: distance comes from the last trackpoint, avg HR from trackpoints;
        // TPX Speed/Watts/RunCadence land in the samples; Courses are ignored; 0 bpm is no reading.
        let xml = """
            <?xml version="1.0"?>
            <TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2"
              xmlns:ax="http://www.garmin.com/xmlschemas/ActivityExtension/v2">
             <Activities><Activity Sport="Running"><Id>2021-05-01T10:00:00Z</Id>
              <Lap StartTime="2021-05-01T10:00:00Z"><TotalTimeSeconds>10</TotalTimeSeconds><Calories>0</Calories><Track>
               <Trackpoint><Time>2021-05-01T10:00:00Z</Time><DistanceMeters>0</DistanceMeters><HeartRateBpm><Value>100</Value></HeartRateBpm>
                <Extensions><ax:TPX><ax:Speed>3.5</ax:Speed><ax:RunCadence>88</ax:RunCadence><ax:Watts>250</ax:Watts></ax:TPX></Extensions></Trackpoint>
               <Trackpoint><Time>2021-05-01T10:00:12Z</Time><DistanceMeters>40.5</DistanceMeters><HeartRateBpm><Value>0</Value></HeartRateBpm></Trackpoint>
               <Trackpoint><Time>2021-05-01T10:00:13Z</Time><HeartRateBpm><Value>111</Value></HeartRateBpm><Cadence>90</Cadence></Trackpoint>
              </Track></Lap>
              <Creator><Name>Polar Vantage</Name><UnitId>0</UnitId><ProductID>0</ProductID></Creator>
             </Activity></Activities>
             <Courses><Course><Name>c</Name><Track><Trackpoint><Time>2000-01-01T00:00:00Z</Time></Trackpoint></Track></Course></Courses>
            </TrainingCenterDatabase>
            """
        let workouts = try TCXImporter.decode(Array(xml.utf8), path: "x.tcx")
        #expect(workouts.count == 1)
        let w = try #require(workouts.first)
        #expect(w.distanceM == 40.5)
        #expect(w.avgHeartRate == 106 && w.maxHeartRate == 111)
        #expect(w.energyKcal == nil && w.energySource == nil)
        #expect(w.timerS == 10 && w.elapsedS == 13)
        #expect(w.samples.count == 3)
        #expect(w.samples[0].speedMps == 3.5 && w.samples[0].powerW == 250 && w.samples[0].cadence == 88)
        #expect(w.samples[1].heartRate == nil)
        #expect(w.samples[2].cadence == 90)
        #expect(w.source.device == "polar vantage")
        #expect(w.laps.count == 1 && w.laps[0].avgHeartRate == 106 && w.laps[0].end == w.end)
    }
}

@Suite("GPX driver: fixtures")
struct GPXFixtureTests {
    static let fixtures = ["apple-health-workout-route", "garmin-connect-9266323613-hr",
                           "runkeeper-garmin-trackpointext-hr", "edge-cases/garmin-hr0-empty-atemp-nonstandard-alt"]

    /// Compares each GPX fixture with Fixtures/gpx/expected/<name>.json, written by
    /// Drivers/GPX/tools/gpx_reference.py from gpxpy 1.6.2.
    @Test(arguments: fixtures)
    func matchesTheGpxpyReference(_ name: String) async throws {
        let workouts = try await importWorkouts(GPXImporter(), "gpx/\(name).gpx")
        let base = name.split(separator: "/").last!
        let (tool, expected) = try expectedDocument("gpx/expected/\(base).json")
        #expect(workouts.count == expected.count)
        for (w, e) in zip(workouts, expected) {
            compare(w, e, tool: tool) { s in
                ["time": s.time.timeIntervalSince1970, "latitude": s.latitude, "longitude": s.longitude,
                 "altitude_m": s.altitudeM, "heart_rate": s.heartRate, "cadence": s.cadence,
                 "temperature_c": s.temperatureC, "power_w": s.powerW, "speed_mps": s.speedMps]
            }
            #expect(w.id == RecordID.derive("workout", "gpx", w.source.device ?? "",
                                            String(Int(w.start.timeIntervalSince1970)), w.sport))
            // Cross-check with gpxpy's own length_2d: it uses a 6378.137 km radius (and a flat
            // approximation below 0.2 degrees), ours 6371 km; after scaling by the radius ratio the
            // remaining difference is the flat approximation's, well under 0.01 %.
            let gpxpyLength = try #require(e.double("gpxpy_length_2d_m") ?? (e.raw["gpxpy_length_2d_m"] as? NSNumber)?.doubleValue)
            let scaled = gpxpyLength * GPXImporter.earthRadiusM / 6_378_137
            #expect(abs((w.distanceM ?? 0) - scaled) <= max(1e-9, scaled * 1e-4), "ours \(w.distanceM ?? 0) vs gpxpy \(gpxpyLength)")
        }
    }

    @Test func theRunkeeperFileHasOnlyAWaypointAndGivesNoWorkout() throws {
        #expect(try GPXImporter.decode(fixtureBytes("gpx/runkeeper-garmin-trackpointext-hr.gpx")).isEmpty)
    }

    @Test func edgeCaseHeartRateZeroEmptyTemperatureAndNonStandardAltitude() throws {
        let w = try #require(try GPXImporter.decode(fixtureBytes("gpx/edge-cases/garmin-hr0-empty-atemp-nonstandard-alt.gpx")).first)
        let s = try #require(w.samples.first)
        #expect(s.heartRate == nil)  // <ns3:hr>0</ns3:hr>
        #expect(s.temperatureC == nil)  // <ns3:atemp/>
        #expect(s.altitudeM == 568)  // <ele>, not the non-standard <alt>628.0</alt>
        #expect(w.source.device == nil && w.elapsedS == 0 && w.sport == "other")
    }

    @Test func segmentsGapsTypesAndPower() throws {
        let xml = """
            <gpx version="1.1" creator="Test Device 1" xmlns="http://www.topografix.com/GPX/1/1"
                 xmlns:tp="http://www.garmin.com/xmlschemas/TrackPointExtension/v2">
             <trk><name>ride</name><type>9</type>
              <trkseg>
               <trkpt lat="0" lon="0"><ele>10</ele><time>2020-01-01T00:00:00Z</time>
                <extensions><power>200</power><tp:TrackPointExtension><tp:hr>120</tp:hr><tp:cad>85</tp:cad></tp:TrackPointExtension></extensions></trkpt>
               <trkpt lat="0" lon="0.001"><ele>15</ele><time>2020-01-01T00:01:00Z</time></trkpt>
              </trkseg>
              <trkseg>
               <trkpt lat="0" lon="0.002"><ele>12</ele><time>2020-01-01T00:11:00Z</time></trkpt>
               <trkpt lat="0" lon="0.003"><ele>13</ele><time>2020-01-01T00:12:00Z</time><extensions><tp:TrackPointExtension><tp:hr>130</tp:hr></tp:TrackPointExtension></extensions></trkpt>
              </trkseg>
             </trk>
             <trk><type>Mountain Biking</type><trkseg/></trk>
             <trk><type>Hiking</type><trkseg><trkpt lat="1" lon="1"><time>2020-01-02T00:00:00Z</time></trkpt></trkseg></trk>
            </gpx>
            """
        let workouts = try GPXImporter.decode(Array(xml.utf8), path: "t.gpx")
        #expect(workouts.count == 2)  // the empty track is skipped
        let ride = workouts[0]
        #expect(ride.sport == "other" && ride.subSport == nil)  // numeric type
        #expect(ride.elapsedS == 720 && ride.timerS == 120)  // the 10-minute gap between segments is not timed
        // Two 0.001-degree steps on the equator, none across the segment gap.
        let step = 2 * .pi * 6_371_000 * 0.001 / 360
        #expect(abs((ride.distanceM ?? 0) - 2 * step) < 1e-6)
        #expect(ride.ascentM == 6 && ride.descentM == 0)  // +5 in segment 1, +1 in segment 2; not across
        #expect(ride.avgHeartRate == 125 && ride.maxHeartRate == 130)
        #expect(ride.samples[0].powerW == 200 && ride.samples[0].cadence == 85)
        #expect(ride.source.device == "test device 1")
        #expect(workouts[1].sport == "hiking" && workouts[1].subSport == nil)
    }

    @Test func aTrackWithoutTimestampsFailsTheFile() throws {
        let xml = "<gpx>\n <trk><name>untimed</name><trkseg><trkpt lat=\"1\" lon=\"2\"/></trkseg></trk>\n</gpx>"
        #expect(throws: DecodeError(at: .line(2, column: 2),
                                    "track 'untimed' has 1 points but no <time>: a workout needs timestamps")) {
            try GPXImporter.decode(Array(xml.utf8))
        }
    }
}

@Suite("Driver probes")
struct ProbeTests {
    @Test func canImportByExtensionOrRootElement() {
        let tcxHead = Array("\u{FEFF}<?xml version=\"1.0\"?>\n<TrainingCenterDatabase xmlns=\"x\">".utf8)
        let gpxHead = Array("<?xml version=\"1.0\"?><gpx version=\"1.1\">".utf8)
        #expect(TCXImporter.canImport(FileProbe(fileExtension: "tcx", head: [])))
        #expect(TCXImporter.canImport(FileProbe(fileExtension: "xml", head: tcxHead)))
        #expect(!TCXImporter.canImport(FileProbe(fileExtension: "xml", head: gpxHead)))
        #expect(GPXImporter.canImport(FileProbe(fileExtension: "gpx", head: [])))
        #expect(GPXImporter.canImport(FileProbe(fileExtension: "xml", head: gpxHead)))
        #expect(!GPXImporter.canImport(FileProbe(fileExtension: "fit", head: [0x0E, 0x10])))
        #expect(TCXImporter.id == "tcx" && GPXImporter.id == "gpx")
    }
}
