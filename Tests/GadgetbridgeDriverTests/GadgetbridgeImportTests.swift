import DriverKit
import Foundation
import GadgetbridgeDriver
import GRDB
import HealthModel
import HealthPipeline
import HealthStore
import LoopHabitsDriver
import Testing
import TestSupport

/// Built by Drivers/Gadgetbridge/tools/make_fixture.py; the expectations below are computed by
/// hand from its rows.
let fixture = PackagePaths.fixtures + "/gadgetbridge/Gadgetbridge"

let miBand1 = "miband/C8:0F:10:AA:00:01"
let amazfit = "amazfitbip/F4:00:00:BB:00:02"
let garmin = "garmin_forerunner_255/D0:00:00:CC:00:03"

/// `2026-03-01 22:00` (UTC).
func at(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    return formatter.date(from: text.replacingOccurrences(of: " ", with: "T") + ":00Z")!
}

/// Runs the importer over `path` into a collecting sink: what it emitted and what it threw.
func decode(_ path: String, pageSize: Int = 10_000) async throws -> (records: [HealthRecord], error: (any Error)?) {
    var importer = GadgetbridgeImporter()
    importer.pageSize = pageSize
    let sink = CollectingSink()
    let source = try await ImportSource.open(path)
    do {
        try await importer.importFile(source, into: sink)
        return (sink.records, nil)
    } catch {
        return (sink.records, error)
    }
}

/// A temporary folder, removed at the end of the test.
final class Folder {
    let path = NSTemporaryDirectory() + "healthgate-gadgetbridge-" + UUID().uuidString
    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A copy of the fixture, changed by `edit` (run on a writable connection), named `name`.
    func fixtureCopy(_ name: String = "Gadgetbridge", _ edit: (Database) throws -> Void = { _ in }) throws -> String {
        let copy = path + "/" + name
        try FileManager.default.copyItem(atPath: fixture, toPath: copy)
        let queue = try DatabaseQueue(path: copy)
        try queue.writeWithoutTransaction { try edit($0) }
        try queue.close()
        return copy
    }
}

@Suite("Gadgetbridge: the fixture database") struct GadgetbridgeFixtureTests {
    func measurements(_ records: [HealthRecord], _ kind: MeasurementKind, device: String) -> [HealthModel.Measurement] {
        records.compactMap { if case .measurement(let m) = $0, m.kind == kind, m.source.device == device { m } else { nil } }
    }

    @Test func countsByType() async throws {
        let (records, error) = try await decode(fixture)
        #expect(error == nil)
        #expect(records.count == 71)
        #expect(records.filter { $0.type == .workout }.count == 4)
        #expect(records.filter { $0.type == .sleep }.count == 2)
        #expect(measurements(records, .heartRate, device: amazfit).count == 59)
        #expect(measurements(records, .heartRate, device: miBand1).isEmpty)  // no heart rate on a Mi Band 1 (-1)
        #expect(Set(records.map(\.id)).count == records.count)
        #expect(records.allSatisfy { $0.source.driver == "gadgetbridge" && $0.source.file == fixture })
    }

    /// Readings 10...250 only: 255 and 0 are "no reading".
    @Test func heartRates() async throws {
        let (records, _) = try await decode(fixture)
        let hr = measurements(records, .heartRate, device: amazfit)
        let expected: [(String, Double)] = (0..<10).map { ("2026-03-02 22:5\($0)", 70 + Double($0)) }
            + [("2026-03-02 23:00", 60), ("2026-03-02 23:30", 52), ("2026-03-03 00:30", 58)]
            + (0..<15).map { (String(format: "2026-03-03 01:%02d", $0), 66) }
            + [("2026-03-03 02:00", 80)]
            + (0..<30).map { (String(format: "2026-03-03 07:%02d", $0), 140) }
        #expect(hr.map(\.time) == expected.map { at($0.0) })
        #expect(hr.map(\.value) == expected.map(\.1))
        let first = try #require(hr.first)
        #expect(first.id == RecordID.derive("measurement", "gadgetbridge", amazfit, "MI_BAND_ACTIVITY_SAMPLE", "heart_rate",
                                            String(Int(at("2026-03-02 22:50").timeIntervalSince1970))))
        #expect(first.end == nil && first.version == 1)
    }

    /// Steps summed per clock hour (UTC), only hours with steps; the version is the number of
    /// samples summed.
    @Test func stepsPerHour() async throws {
        let (records, _) = try await decode(fixture)
        let expected: [(String, String, Double, Int)] = [
            (miBand1, "2026-03-01 21:00", 100, 10), (miBand1, "2026-03-01 23:00", 50, 60), (miBand1, "2026-03-02 08:00", 1200, 30),
            (amazfit, "2026-03-02 22:00", 200, 10), (amazfit, "2026-03-03 02:00", 30, 1), (amazfit, "2026-03-03 07:00", 4500, 30),
        ]
        let steps = measurements(records, .steps, device: miBand1) + measurements(records, .steps, device: amazfit)
        #expect(steps.count == expected.count)
        for (m, e) in zip(steps, expected) {
            #expect(m.source.device == e.0 && m.time == at(e.1) && m.value == e.2 && m.version == e.3, "\(m)")
            #expect(m.end == at(e.1).addingTimeInterval(3600))
        }
    }

    func sleep(_ records: [HealthRecord], device: String) throws -> SleepSession {
        let all = records.compactMap { if case .sleep(let s) = $0, s.source.device == device { s } else { nil } }
        #expect(all.count == 1)
        return try #require(all.first)
    }

    func stages(_ spec: [(String, String, SleepStage)]) -> [SleepStageSpan] {
        spec.map { SleepStageSpan(start: at($0.0), end: at($0.1), stage: $0.2) }
    }

    /// Mi Band 1 codes: 5 light, 4 deep, -1 and 3 awake. The 110 minutes awake (not worn, then no
    /// samples) stay in the night; the four minutes 130 minutes later are a session too short.
    @Test func miBand1Night() async throws {
        let night = try sleep(try await decode(fixture).records, device: miBand1)
        #expect(night.start == at("2026-03-01 22:00") && night.end == at("2026-03-02 02:40"))
        #expect(night.stages == stages([
            ("2026-03-01 22:00", "2026-03-01 22:30", .light), ("2026-03-01 22:30", "2026-03-01 23:30", .deep),
            ("2026-03-01 23:30", "2026-03-01 23:40", .awake), ("2026-03-01 23:40", "2026-03-02 00:40", .light),
            ("2026-03-02 00:40", "2026-03-02 02:30", .awake), ("2026-03-02 02:30", "2026-03-02 02:40", .light),
        ]))
        #expect(night.version == 280)
        #expect(night.totalSleepS == 160 * 60)
        #expect(night.id == RecordID.derive("sleep", "gadgetbridge", miBand1, "MI_BAND_ACTIVITY_SAMPLE",
                                            String(Int(at("2026-03-01 22:00").timeIntervalSince1970))))
    }

    /// Huami codes: 0 and 10 carry the previous kind, 0x19 and 0x29 are 9 (light) masked, 12
    /// (wake-up) is awake.
    @Test func amazfitNight() async throws {
        let night = try sleep(try await decode(fixture).records, device: amazfit)
        #expect(night.start == at("2026-03-02 23:00") && night.end == at("2026-03-03 03:30"))
        #expect(night.stages == stages([
            ("2026-03-02 23:00", "2026-03-02 23:30", .light), ("2026-03-02 23:30", "2026-03-03 00:30", .deep),
            ("2026-03-03 00:30", "2026-03-03 01:00", .light), ("2026-03-03 01:00", "2026-03-03 01:15", .awake),
            ("2026-03-03 01:15", "2026-03-03 02:00", .deep), ("2026-03-03 02:00", "2026-03-03 03:00", .awake),
            ("2026-03-03 03:00", "2026-03-03 03:30", .light),
        ]))
        #expect(night.version == 270)
    }

    @Test func workouts() async throws {
        let workouts = try await decode(fixture).records.compactMap { if case .workout(let w) = $0 { w } else { nil } }
        let expected: [(String, String?, String, String, String)] = [
            ("running", nil, "2026-03-03 07:00", "2026-03-03 07:30", amazfit),
            ("cycling", "indoor_cycling", "2026-03-03 18:00", "2026-03-03 19:00", amazfit),
            ("other", "yoga", "2026-03-04 06:00", "2026-03-04 06:45", garmin),
            ("other", "gadgetbridge_67108869", "2026-03-05 12:00", "2026-03-05 12:20", amazfit),
        ]
        #expect(workouts.count == expected.count)
        for (w, e) in zip(workouts, expected) {
            #expect(w.sport == e.0 && w.subSport == e.1 && w.start == at(e.2) && w.end == at(e.3) && w.source.device == e.4, "\(w)")
        }
        // The run's heart rates are the band's minutes from 07:00 to 07:29 (the end is exclusive).
        let run = try #require(workouts.first)
        #expect(run.samples.map(\.time) == (0..<30).map { at("2026-03-03 07:00").addingTimeInterval(Double($0) * 60) })
        #expect(run.samples.allSatisfy { $0.heartRate == 140 } && run.avgHeartRate == 140 && run.maxHeartRate == 140)
        #expect(workouts.dropFirst().allSatisfy { $0.samples.isEmpty && $0.avgHeartRate == nil && $0.maxHeartRate == nil })
        #expect(workouts.first?.id == RecordID.derive("workout", "gadgetbridge", amazfit, "BASE_ACTIVITY_SUMMARY",
                                                      String(Int(at("2026-03-03 07:00").timeIntervalSince1970) * 1000)))
    }

    /// Pages of 7 rows (a night, an hour and the workouts cut at many places) give the same
    /// records in the same order as one page.
    @Test func pagesDoNotChangeTheRecords() async throws {
        let whole = try await decode(fixture).records
        for size in [1, 7, 59, 474, 475, 476] {
            #expect(try await decode(fixture, pageSize: size).records == whole, "page size \(size)")
        }
    }

    /// An SQLite file is Gadgetbridge's by its tables (a `DEVICE` table), whatever its name or
    /// schema version; Loop Habit Tracker's backup (`Habits` and `Repetitions`) is not, even
    /// without a name. Only a file whose tables were not read falls back to its name.
    @Test func probe() throws {
        let head = Array(try Data(contentsOf: URL(fileURLWithPath: fixture)).prefix(512))
        let gadgetbridge: Set<String> = ["DEVICE", "USER", "MI_BAND_ACTIVITY_SAMPLE"], loop: Set<String> = ["HABITS", "REPETITIONS"]
        for name in ["", "db", "sqlite"] {
            #expect(GadgetbridgeImporter.canImport(FileProbe(fileExtension: name, head: head, sqliteTables: gadgetbridge)), "\(name)")
            #expect(!GadgetbridgeImporter.canImport(FileProbe(fileExtension: name, head: head, sqliteTables: loop)), "\(name)")
            #expect(!LoopImporter.canImport(FileProbe(fileExtension: name, head: head, sqliteTables: gadgetbridge)), "\(name)")
            #expect(LoopImporter.canImport(FileProbe(fileExtension: name, head: head, sqliteTables: loop)), "\(name)")
        }
        #expect(GadgetbridgeImporter.canImport(FileProbe(fileExtension: "", head: head)))
        #expect(!GadgetbridgeImporter.canImport(FileProbe(fileExtension: "db", head: head)))
        #expect(LoopImporter.canImport(FileProbe(fileExtension: "db", head: head)))
        #expect(!GadgetbridgeImporter.canImport(FileProbe(fileExtension: "", head: Array("SQLite format 2".utf8))))
        #expect(!GadgetbridgeImporter.canImport(FileProbe(fileExtension: "", head: Array(head.prefix(50)))))
    }
}
