import AppleHealthDriver
import DriverKit
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Testing
import TestSupport

/// The repository's root.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
func fixture(_ name: String) -> String { root + "/Fixtures/apple-health/" + name }

/// `2024-01-01 01:01:36 +0200` as an instant.
func date(_ text: String) -> Date {
    var t = text
    t.remove(at: t.lastIndex(of: " ")!)
    return ISO8601.parse(t)!
}

/// Every record the importer emits for the file at `path` (through `importFile`, chunks of 512
/// bytes for a bare XML so that elements are cut everywhere).
func importRecords(_ path: String) async throws -> [HealthRecord] {
    var source = try await ImportSource.open(path)
    source.chunkSize = 512
    let sink = CollectingSink()
    try await AppleHealthImporter().importFile(source, into: sink)
    return sink.records
}

func measurements(_ records: [HealthRecord], _ kind: MeasurementKind) -> [HealthModel.Measurement] {
    records.compactMap { if case .measurement(let m) = $0, m.kind == kind { m } else { nil } }
}
func sleeps(_ records: [HealthRecord]) -> [SleepSession] { records.compactMap { if case .sleep(let s) = $0 { s } else { nil } } }
func workouts(_ records: [HealthRecord]) -> [Workout] { records.compactMap { if case .workout(let w) = $0 { w } else { nil } } }
func habits(_ records: [HealthRecord], _ habit: String) -> [HabitEvent] {
    records.compactMap { if case .habit(let h) = $0, h.habit == habit { h } else { nil } }
}

/// Counts and values below are the ones `healthkit-to-sqlite` (PyPI, 1.0.1) stores for the same
/// files: `Drivers/AppleHealth/tools/cross_check.py` runs it and checks them.
@Suite("Apple Health driver: real exports")
struct AppleHealthFixtureTests {
    @Test("apple-health-parser's export.xml: heart rate, active energy, two sleep sources; stand and exercise skipped")
    func appleHealthParserXML() async throws {
        let records = try await importRecords(fixture("apple-health-parser-export.xml"))
        try checkAppleHealthParser(records)
        let (_, parser) = try AppleHealthImporter.decode(Array(try Data(contentsOf: URL(fileURLWithPath: fixture("apple-health-parser-export.xml")))))
        #expect(parser.skipped == ["HKQuantityTypeIdentifierAppleExerciseTime": 1, "HKQuantityTypeIdentifierAppleStandTime": 1])
    }

    @Test("the same export zipped on macOS (__MACOSX junk, .DS_Store) reads the same")
    func appleHealthParserZip() async throws {
        try checkAppleHealthParser(try await importRecords(fixture("apple-health-parser-export.zip")))
    }

    func checkAppleHealthParser(_ records: [HealthRecord]) throws {
        #expect(records.count == 6)
        let hr = measurements(records, .heartRate)
        #expect(hr.map(\.value) == [74, 75])
        #expect(hr.first?.time == date("2024-01-01 01:01:36 +0200") && hr.first?.end == nil)
        #expect(hr.first?.source.device == "Alexandre's Apple Watch 10.2 (Apple Watch Watch6,7), UTC+02:00")
        let energy = measurements(records, .energy)
        #expect(energy.map(\.value) == [0.12, 0.08])
        #expect(energy.first?.end == date("2024-01-01 01:02:58 +0200"))
        let sleep = sleeps(records)
        #expect(sleep.count == 2)
        // The iPhone's InBed: a session over the time in bed, its one stage unknown; the Watch's AsleepCore: light sleep.
        #expect(sleep.contains {
            $0.stages.map(\.stage) == [.unknown] && $0.start == date("2024-01-01 00:55:28 +0200") && $0.source.device == "Alexandre's iPhone 17.2.1, UTC+02:00"
        })
        #expect(sleep.contains { $0.stages.map(\.stage) == [.light] && $0.end == date("2024-01-01 03:40:23 +0200") })
    }

    @Test("healthkit-to-sqlite's export.xml: BMI, heart rate, a run with its inline route; activity summaries skipped")
    func healthkitToSqliteXML() async throws {
        let records = try await importRecords(fixture("healthkit-to-sqlite-export.xml"))
        #expect(records.count == 3)
        #expect(measurements(records, .bmi).map(\.value) == [22.5312])
        #expect(measurements(records, .bmi).first?.source.device == "Health Mate 2160040, UTC-07:00")
        #expect(measurements(records, .heartRate).map(\.value) == [72])
        // The source name has a no-break space (as written by the phone); the device's name a plain one.
        #expect(measurements(records, .heartRate).first?.source.device == "Apple\u{00A0}Watch 4.3.1 (Apple Watch Watch2,4), UTC-07:00")
        let run = try #require(workouts(records).first)
        #expect(run.sport == "running" && run.start == date("2016-11-14 07:25:41 -0700") && run.end == date("2016-11-14 07:30:52 -0700"))
        #expect(abs((run.timerS ?? 0) - 5.19412346680959 * 60) < 1e-6)
        #expect(abs((run.distanceM ?? 0) - 0.4971749504535062 * 1609.344) < 1e-6)
        #expect(abs((run.energyKcal ?? 0) - 48.745) < 1e-9)
        #expect(run.samples.count == 2)
        #expect(run.samples.first?.latitude == 37.7777 && run.samples.first?.speedMps == 2.48034)
    }

    @Test("healthkit-to-sqlite's zip layout: the run's route read from workout-routes/*.gpx through its FileReference")
    func healthkitToSqliteZip() async throws {
        let records = try await importRecords(fixture("healthkit-to-sqlite-export.zip"))
        #expect(records.count == 3)
        let run = try #require(workouts(records).first)
        #expect(run.samples.count == 3)
        #expect(run.samples.allSatisfy { $0.latitude != nil && $0.longitude != nil })
    }

    /// Python's expat says "mismatched tag: line 153, column 3" for the same tag (its column
    /// counts from 0 and points after the '<'); the '<' is the line's second character.
    @Test("the malformed 2017 export: the 17 glucose readings before the stray tag at line 153 stored, the file partial")
    func malformed() async throws {
        let scratch = try temporaryFolder("apple-malformed")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let store = try await HealthStore(path: scratch + "/db.sqlite")
        let pipeline = ImportPipeline(store: store, importers: [AppleHealthImporter()])
        let path = fixture("malformed/hkimport-exportSmall-2017-stray-close-tag.xml")
        let report = await pipeline.importFile(path)
        #expect(report.status == .partial, "\(report)")
        #expect(report.error?.contains("\(path): line 153, column 2: mismatched end tag") == true, "\(report.error ?? "")")
        #expect(report.records == 17)
        let glucose = try await store.measurements(kind: .glucose)
        #expect(glucose.count == 17)
        #expect(glucose.allSatisfy { $0.source.driver == "apple-health" })
    }
}
