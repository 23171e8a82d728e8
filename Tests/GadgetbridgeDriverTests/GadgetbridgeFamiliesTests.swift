import DriverKit
import Foundation
import GadgetbridgeDriver
import GRDB
import HealthModel
import HealthPipeline
import HealthStore
import Synchronization
import Testing
import TestSupport

/// Built by `Drivers/Gadgetbridge/tools/make_fixture.py --families`; the expectations below are
/// computed by hand from its rows.
let families = PackagePaths.fixtures + "/gadgetbridge/v151/Gadgetbridge"
let familiesZip = PackagePaths.fixtures + "/gadgetbridge/v151/Gadgetbridge_export.zip"
let zepp = "miband7/E0:00:00:DD:00:04"
let xiaomi = "miband8/C0:00:00:EE:00:05"
let colmi = "colmi_r02/A0:00:00:FF:00:06"

/// Runs `importer` over `path` into `sink`: what it threw, if anything.
func run(_ importer: GadgetbridgeImporter, _ path: String, into sink: some RecordSink) async throws -> (any Error)? {
    let source = try await ImportSource.open(path)
    do {
        try await importer.importFile(source, into: sink)
        return nil
    } catch {
        return error
    }
}

/// A copy of `source` in `folder`, changed by `edit` on a writable connection.
func databaseCopy(of source: String, in folder: Folder, named name: String = "Gadgetbridge",
                  _ edit: (Database) throws -> Void) throws -> String {
    let copy = folder.path + "/" + name
    try FileManager.default.copyItem(atPath: source, toPath: copy)
    let queue = try DatabaseQueue(path: copy)
    try queue.writeWithoutTransaction { try edit($0) }
    try queue.close()
    return copy
}

/// The stages of a session as (start, end, stage) in `HH:mm` of their day.
func stages(_ session: SleepSession) -> [String] {
    let formatter = DateFormatter()
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "HH:mm"
    return session.stages.map { "\(formatter.string(from: $0.start))-\(formatter.string(from: $0.end)) \($0.stage.rawValue)" }
}

@Suite("Gadgetbridge: Zepp OS, Xiaomi and Colmi families (schema 151)") struct GadgetbridgeFamiliesTests {
    func measurements(_ records: [HealthRecord], _ device: String, _ kind: MeasurementKind) -> [HealthModel.Measurement] {
        records.compactMap { if case .measurement(let m) = $0, m.source.device == device, m.kind == kind { m } else { nil } }
    }

    func sleep(_ records: [HealthRecord], _ device: String) -> [SleepSession] {
        records.compactMap { if case .sleep(let s) = $0, s.source.device == device { s } else { nil } }
    }

    @Test func everyRecordOfTheFixture() async throws {
        let (records, error) = try await decode(families)
        #expect(error == nil, "\(String(describing: error))")
        #expect(records.count == 197)
        #expect(Set(records.compactMap(\.source.device)) == [zepp, xiaomi, colmi])  // the Garmin's tables are not read

        // Zepp OS: RAW_KIND 120 with the REM / deep columns; heart rates 255 and 0 are no reading.
        #expect(measurements(records, zepp, .heartRate).count == 115)
        #expect(measurements(records, zepp, .steps).map { [$0.time, $0.value, Double($0.version)] as [AnyHashable] }
            == [[at("2026-03-10 22:00"), 120.0, 60.0], [at("2026-03-11 07:00"), 3000.0, 30.0]])
        let zeppNight = try #require(sleep(records, zepp).first)
        #expect(sleep(records, zepp).count == 1)
        #expect(zeppNight.start == at("2026-03-10 22:10") && zeppNight.end == at("2026-03-10 23:45") && zeppNight.version == 95)
        #expect(stages(zeppNight) == ["22:10-22:30 light", "22:30-23:00 deep", "23:00-23:15 rem", "23:15-23:20 awake", "23:20-23:45 light"])
        #expect(zeppNight.id == RecordID.derive("sleep", "gadgetbridge", zepp, "HUAMI_EXTENDED_ACTIVITY_SAMPLE",
                                                String(Int(at("2026-03-10 22:10").timeIntervalSince1970))))

        // Xiaomi: the night from its sleep time row, stages by the last stage row, light before the first.
        #expect(measurements(records, xiaomi, .heartRate).count == 60)
        #expect(measurements(records, xiaomi, .steps).map(\.value) == [3000])
        let xiaomiNights = sleep(records, xiaomi)
        #expect(xiaomiNights.count == 1)  // the three-minute nap is dropped
        let night = try #require(xiaomiNights.first)
        #expect(night.start == at("2026-03-11 23:00") && night.end == at("2026-03-12 06:00") && night.version == 420)
        #expect(stages(night) == ["23:00-23:30 light", "23:30-00:30 deep", "00:30-01:30 light", "01:30-02:00 rem", "02:00-02:10 awake",
                                  "02:10-04:00 light", "04:00-04:05 awake", "04:05-06:00 deep"])
        #expect(night.id == RecordID.derive("sleep", "gadgetbridge", xiaomi, "XIAOMI_SLEEP_TIME_SAMPLE",
                                            String(Int(at("2026-03-11 23:00").timeIntervalSince1970))))

        // Colmi: heart rates from their own table (ms), steps per quarter hour, stages with durations.
        let colmiRates = measurements(records, colmi, .heartRate)
        #expect(colmiRates.map(\.value) == (80...91).map(Double.init))
        #expect(colmiRates.first?.id == RecordID.derive("measurement", "gadgetbridge", colmi, "COLMI_HEART_RATE_SAMPLE", "heart_rate",
                                                        String(Int(at("2026-03-13 09:00").timeIntervalSince1970))))
        #expect(measurements(records, colmi, .steps).map { [$0.value, Double($0.version)] } == [[1000, 4]])
        let ring = sleep(records, colmi)
        #expect(ring.count == 1)  // the three minutes at 06:00, three hours later, are dropped
        #expect(ring.first.map(stages) == ["23:10-23:50 light", "23:50-00:50 deep", "00:50-01:10 rem", "01:10-01:20 awake", "01:20-03:00 light"])
        #expect(ring.first?.end == at("2026-03-13 03:00") && ring.first?.version == 230)

        // Workouts with the heart rates of each family's table.
        let workouts = records.compactMap { if case .workout(let w) = $0 { w } else { nil } }
        #expect(workouts.map(\.sport) == ["running", "walking", "cycling"])
        #expect(workouts.map(\.samples.count) == [30, 30, 6])
        #expect(workouts.map(\.avgHeartRate) == [130, 90, 83] && workouts.map(\.maxHeartRate) == [130, 90, 85])
        #expect(workouts.map(\.source.device) == [zepp, xiaomi, colmi])
    }

    /// Pages of any size give the same records.
    @Test func pagesGiveTheSameRecords() async throws {
        let whole = try await decode(families).records
        for size in [1, 7, 100] {
            let paged = try await decode(families, pageSize: size)
            #expect(paged.error == nil && paged.records.sorted { $0.id < $1.id } == whole.sorted { $0.id < $1.id }, "page \(size)")
        }
    }

    @Test func familyCodesAtTheirLimits() {
        #expect(FamilySleepCodes.huamiExtended(rawKind: 120, deepSleep: 43, remSleep: 55) == .deep)
        #expect(FamilySleepCodes.huamiExtended(rawKind: 120, deepSleep: 42, remSleep: 56) == .rem)
        #expect(FamilySleepCodes.huamiExtended(rawKind: 120, deepSleep: 42 | 128, remSleep: 55 | 128) == .light)
        #expect(FamilySleepCodes.huamiExtended(rawKind: 120, deepSleep: nil, remSleep: nil) == .light)
        #expect([64, 115, 118, 121, 0, -1].allSatisfy { FamilySleepCodes.huamiExtended(rawKind: $0, deepSleep: 99, remSleep: 99) == .awake })
        #expect((0...6).map(FamilySleepCodes.colmi) == [.awake, .awake, .light, .deep, .rem, .awake, .awake])
        #expect((0...6).map(FamilySleepCodes.xiaomi) == [.awake, .awake, .deep, .light, .rem, .awake, .awake])
    }

    @Test func stageMinutes() {
        #expect(StageMinutes.colmi(timestampMs: 90_500, durationMinutes: 2, stage: 3)?.map(\.time) == [60, 120])
        #expect(StageMinutes.colmi(timestampMs: 0, durationMinutes: 0, stage: 2) == nil)
        #expect(StageMinutes.colmi(timestampMs: 0, durationMinutes: 24 * 60 + 1, stage: 2) == nil)
        #expect(StageMinutes.colmi(timestampMs: 0, durationMinutes: Int(Int32.max), stage: 2) == nil)
        #expect(StageMinutes.colmi(timestampMs: -60_000, durationMinutes: 1, stage: 2) == nil)
        let night = StageMinutes.xiaomi(startMs: 30_000, wakeupMs: 240_000, stages: [(120_000, 2), (150_000, 4)])
        #expect(night?.map(\.time) == [0, 60, 120, 180])
        #expect(night?.map(\.kind) == [.light, .light, .deep, .rem])  // 150 s is inside the third minute: the fourth takes it
        #expect(StageMinutes.xiaomi(startMs: 60_000, wakeupMs: 60_000, stages: []) == nil)
        #expect(StageMinutes.xiaomi(startMs: 0, wakeupMs: 24 * 3_600_000 + 1, stages: []) == nil)
    }

    // MARK: Schema versions

    @Test func schemaVersions() {
        var all: [String: Set<String>] = [:]
        for (table, columns) in GadgetbridgeSchema.required { all[table] = Set(columns.map { $0.uppercased() }) }
        all["DEVICE"]!.insert("TYPE_NAME")
        #expect(GadgetbridgeSchema.problem(userVersion: 151, tables: all) == nil)
        #expect(GadgetbridgeSchema.problem(userVersion: 400, tables: all) == nil)
        // Known versions: family tables may be absent (older files), never incomplete.
        let old = all.filter { ["DEVICE", "BASE_ACTIVITY_SUMMARY", "MI_BAND_ACTIVITY_SAMPLE"].contains($0.key) }
        #expect(GadgetbridgeSchema.problem(userVersion: 93, tables: old) == nil)
        var incomplete = all
        incomplete["COLMI_SLEEP_STAGE_SAMPLE"]!.remove("DURATION")
        #expect(GadgetbridgeSchema.problem(userVersion: 120, tables: incomplete)
            == "Gadgetbridge schema version 120 not recognized: COLMI_SLEEP_STAGE_SAMPLE lacks DURATION; nothing read")
        // Newer than checked: read only with every table and column there.
        #expect(GadgetbridgeSchema.problem(userVersion: 152, tables: old)
            == "Gadgetbridge schema version 152 is newer than the newest checked (151) and lacks what is read: "
            + "table HUAMI_EXTENDED_ACTIVITY_SAMPLE; table XIAOMI_ACTIVITY_SAMPLE; table COLMI_ACTIVITY_SAMPLE; "
            + "table COLMI_HEART_RATE_SAMPLE; table COLMI_SLEEP_STAGE_SAMPLE; table XIAOMI_SLEEP_TIME_SAMPLE; "
            + "table XIAOMI_SLEEP_STAGE_SAMPLE; nothing read")
    }

    /// Schema 93 to 151, checked: the version 92 fixture relabelled 93 reads as before (the old
    /// importer refused anything above 92).
    @Test func aCheckedNewerVersionIsRead() async throws {
        let folder = try Folder()
        let path = try folder.fixtureCopy { try $0.execute(sql: "PRAGMA user_version = 151") }
        let (records, error) = try await decode(path)
        #expect(error == nil, "\(String(describing: error))")
        #expect(records.count == 71)
    }

    /// An unknown newer version with every table and column: read, the same records.
    @Test func anUnknownVersionWithEverythingIsRead() async throws {
        let folder = try Folder()
        let path = try databaseCopy(of: families, in: folder) { try $0.execute(sql: "PRAGMA user_version = 200") }
        let (records, error) = try await decode(path)
        #expect(error == nil, "\(String(describing: error))")
        #expect(records.count == 197)
    }

    func pipeline(_ folder: Folder, _ importer: GadgetbridgeImporter = GadgetbridgeImporter()) async throws -> (ImportPipeline, HealthStore) {
        let store = try await HealthStore(path: folder.path + "/healthgate.sqlite")
        return (ImportPipeline(store: store, importers: [importer]), store)
    }

    /// Refused whole: the report names the file and `text`; nothing stored.
    func expectRefused(_ path: String, _ text: String, importer: GadgetbridgeImporter = GadgetbridgeImporter(),
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let folder = try Folder()
        let (pipeline, store) = try await pipeline(folder, importer)
        let report = await pipeline.importFile(path)
        #expect(report.status == .failed, "\(report)", sourceLocation: sourceLocation)
        #expect(report.error?.contains(path) == true && report.error?.contains(text) == true, "\(report.error ?? "")",
                sourceLocation: sourceLocation)
        let counts = try await store.tableCounts()
        #expect(counts["measurements"] == 0 && counts["sleep_sessions"] == 0 && counts["workouts"] == 0 && counts["outbox"] == 0,
                sourceLocation: sourceLocation)
    }

    /// An unknown newer version lacking a table read, or a column: refused, naming them.
    @Test func anUnknownVersionLackingATableIsRefused() async throws {
        let folder = try Folder()
        let lacking = try databaseCopy(of: families, in: folder) { db in
            try db.execute(sql: "PRAGMA user_version = 200")
            try db.execute(sql: "DROP TABLE XIAOMI_SLEEP_STAGE_SAMPLE")
        }
        try await expectRefused(lacking, "Gadgetbridge schema version 200 is newer than the newest checked (151) and lacks what is read: "
            + "table XIAOMI_SLEEP_STAGE_SAMPLE; nothing read")
        let column = try databaseCopy(of: families, in: folder, named: "Gadgetbridge-2") { db in
            try db.execute(sql: "PRAGMA user_version = 200")
            try db.execute(sql: "ALTER TABLE COLMI_HEART_RATE_SAMPLE RENAME COLUMN HEART_RATE TO BPM")
        }
        try await expectRefused(column, "lacks what is read: COLMI_HEART_RATE_SAMPLE lacks HEART_RATE; nothing read")
        // The version 92 fixture called 152: none of the newer families' tables.
        let old = try folder.fixtureCopy("Gadgetbridge-3") { try $0.execute(sql: "PRAGMA user_version = 152") }
        try await expectRefused(old, "schema version 152 is newer than the newest checked (151) and lacks what is read: table HUAMI_EXTENDED")
    }

    /// A table of a known version lacking a column read: refused, nothing stored.
    @Test func aTableWithMissingColumnsIsRefused() async throws {
        let folder = try Folder()
        let path = try databaseCopy(of: families, in: folder) { db in
            try db.execute(sql: "ALTER TABLE HUAMI_EXTENDED_ACTIVITY_SAMPLE DROP COLUMN REM_SLEEP")
        }
        try await expectRefused(path, "Gadgetbridge schema version 151 not recognized: HUAMI_EXTENDED_ACTIVITY_SAMPLE lacks REM_SLEEP; nothing read")
    }

    /// Stage rows no night can be made of: counted in the error, the rest stored (partial).
    @Test func absurdStageRowsAreCounted() async throws {
        let folder = try Folder()
        let path = try databaseCopy(of: families, in: folder) { db in
            try db.execute(sql: "INSERT INTO COLMI_SLEEP_STAGE_SAMPLE VALUES (1773500000000, 3, 1, 2147483647, 2)")
            try db.execute(sql: "INSERT INTO COLMI_SLEEP_STAGE_SAMPLE VALUES (1773600000000, 3, 1, 0, 2)")
            try db.execute(sql: "INSERT INTO XIAOMI_SLEEP_TIME_SAMPLE (TIMESTAMP, DEVICE_ID, USER_ID, WAKEUP_TIME) VALUES (1773500000000, 2, 1, NULL)")
            try db.execute(sql: "INSERT INTO COLMI_HEART_RATE_SAMPLE VALUES (-5, 3, 1, 70)")
        }
        let (pipeline, store) = try await pipeline(folder)
        let report = await pipeline.importFile(path)
        #expect(report.status == .partial, "\(report)")
        #expect(report.records == 197)
        #expect(report.error == "\(path): start of file: skipped 1 COLMI_HEART_RATE_SAMPLE row(s) whose TIMESTAMP is not a time, "
            + "2 COLMI_SLEEP_STAGE_SAMPLE row(s) whose DURATION is not 1...1440 minutes, "
            + "1 XIAOMI_SLEEP_TIME_SAMPLE row(s) whose WAKEUP_TIME is not within a day after TIMESTAMP")
        #expect(try await store.tableCounts()["sleep_sessions"] == 3)
    }

    /// Re-import adds nothing; records are keyed by address: the same bands under other local
    /// `_id`s (another phone) give the same ids.
    @Test func keyedByAddressNotRowID() async throws {
        let folder = try Folder()
        let renumbered = try databaseCopy(of: families, in: folder) { db in
            for table in ["DEVICE"] { try db.execute(sql: "UPDATE \(table) SET _id = _id + 40") }
            for table in ["HUAMI_EXTENDED_ACTIVITY_SAMPLE", "XIAOMI_ACTIVITY_SAMPLE", "XIAOMI_SLEEP_TIME_SAMPLE", "XIAOMI_SLEEP_STAGE_SAMPLE",
                          "COLMI_ACTIVITY_SAMPLE", "COLMI_HEART_RATE_SAMPLE", "COLMI_SLEEP_STAGE_SAMPLE", "BASE_ACTIVITY_SUMMARY"] {
                try db.execute(sql: "UPDATE \(table) SET DEVICE_ID = DEVICE_ID + 40")
            }
        }
        let (pipeline, store) = try await pipeline(folder)
        let first = await pipeline.importFile(families)
        #expect(first.status == .imported && first.records == 197, "\(first)")
        let other = await pipeline.importFile(renumbered)
        #expect(other.status == .imported && other.records == 0 && other.unchanged == 197, "\(other)")
        #expect(try await store.tableCounts()["measurements"] == 115 + 2 + 60 + 1 + 12 + 1)
    }
}

/// Observes the importer's temporary folder each time records arrive.
final class TemporaryFolderSink: RecordSink {
    let folder: String
    let inner = CollectingSink()
    /// What the folder held at each batch: (entry name, mode) of the folder made inside it and of its file.
    let seen = Mutex<[[String]]>([])
    let failAfter: Int?
    let batches = Mutex(0)

    init(folder: String, failAfter: Int? = nil) {
        self.folder = folder
        self.failAfter = failAfter
    }

    func emit(_ batch: [HealthRecord]) async throws {
        var found: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let dir = folder + "/" + name
            let mode = ((try? FileManager.default.attributesOfItem(atPath: dir))?[.posixPermissions] as? Int) ?? -1
            found.append("\(name.hasPrefix("healthgate-gadgetbridge-") ? "healthgate-gadgetbridge-*" : name) \(String(mode, radix: 8))")
            for file in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                let fileMode = ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + file))?[.posixPermissions] as? Int) ?? -1
                found.append("\(file) \(String(fileMode, radix: 8))")
            }
        }
        seen.withLock { $0.append(found) }
        let count = batches.withLock { $0 += 1; return $0 }
        if let failAfter, count > failAfter { throw CancellationError() }
        try await inner.emit(batch)
    }

    func emit(_ batch: LiveBatch) async throws { try await inner.emit(batch) }
}

@Suite("Gadgetbridge: the export zip") struct GadgetbridgeZipTests {
    func importer(_ tmp: String, maxBytes: Int? = nil) -> GadgetbridgeImporter {
        var importer = GadgetbridgeImporter()
        importer.temporaryDirectory = tmp
        if let maxBytes { importer.maxDatabaseBytes = maxBytes }
        return importer
    }

    func temporary(_ folder: Folder) throws -> String {
        let tmp = folder.path + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        return tmp
    }

    @Test func theZipGivesTheDatabasesRecords() async throws {
        let folder = try Folder()
        let tmp = try temporary(folder)
        let probe = try await ImportSource.open(familiesZip).probe
        #expect(GadgetbridgeImporter.canImport(probe))
        let sink = TemporaryFolderSink(folder: tmp)
        let error = try await run(importer(tmp), familiesZip, into: sink)
        #expect(error == nil, "\(String(describing: error))")
        let direct = try await decode(families).records
        #expect(sink.inner.records.count == 197)
        #expect(sink.inner.records.map(\.id).sorted() == direct.map(\.id).sorted())
        #expect(sink.inner.records.allSatisfy { $0.source.file == familiesZip + ":database/Gadgetbridge" })
        // While reading: one private folder (0700) holding the database (0600); afterwards nothing.
        #expect(sink.seen.withLock { $0 }.allSatisfy { $0 == ["healthgate-gadgetbridge-* 700", "Gadgetbridge 600"] })
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])
    }

    /// Into a store: the zip, then the database itself, add nothing new.
    @Test func zipThenDatabaseIsIdempotent() async throws {
        let folder = try Folder()
        let store = try await HealthStore(path: folder.path + "/healthgate.sqlite")
        let pipeline = ImportPipeline(store: store, importers: [importer(try temporary(folder))])
        let zipped = await pipeline.importFile(familiesZip)
        #expect(zipped.status == .imported && zipped.records == 197, "\(zipped)")
        let plain = await pipeline.importFile(families)
        #expect(plain.status == .imported && plain.records == 0 && plain.unchanged == 197, "\(plain)")
    }

    /// Every way out removes the copy: a sink error (as a cancellation), a refused database, a
    /// cancelled task.
    @Test func theCopyIsRemovedOnEveryPath() async throws {
        let folder = try Folder()
        let tmp = try temporary(folder)
        let failing = TemporaryFolderSink(folder: tmp, failAfter: 1)
        let error = try await run(importer(tmp), familiesZip, into: failing)
        #expect(error is CancellationError, "\(String(describing: error))")
        #expect(failing.seen.withLock { $0 }.first == ["healthgate-gadgetbridge-* 700", "Gadgetbridge 600"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])

        // A database the checks refuse, in a zip.
        let refused = try databaseCopy(of: families, in: folder) { db in
            try db.execute(sql: "PRAGMA user_version = 300")
            try db.execute(sql: "DROP TABLE COLMI_ACTIVITY_SAMPLE")
        }
        let zip = folder.path + "/refused.zip"
        try makeZip(zip, entries: [("preferences/global.json", "{}"), ("database/Gadgetbridge", refused)])
        let sink = CollectingSink()
        let refusal = try await run(importer(tmp), zip, into: sink)
        #expect("\(String(describing: refusal))".contains(zip + ":database/Gadgetbridge"))
        #expect("\(String(describing: refusal))".contains("schema version 300 is newer than the newest checked (151) and lacks what is read: table COLMI_ACTIVITY_SAMPLE"))
        #expect(sink.records.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])

        // A task cancelled while it imports.
        let slow = TemporaryFolderSink(folder: tmp)
        let task = Task { try await run(importer(tmp), familiesZip, into: slow) }
        task.cancel()
        _ = try await task.value
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])
    }

    @Test func aDatabaseOverTheLimitIsRefused() async throws {
        let folder = try Folder()
        let tmp = try temporary(folder)
        let sink = CollectingSink()
        let error = try await run(importer(tmp, maxBytes: 64 * 1024), familiesZip, into: sink)
        #expect("\(String(describing: error))".contains("database/Gadgetbridge inflates to 90112 bytes: more than the 65536 allowed"))
        #expect(sink.records.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])
    }

    /// 64 MiB of zeros deflated to 64 KB: ZipStream stops it by ratio; nothing is kept.
    @Test func aZipBombIsRefused() async throws {
        let folder = try Folder()
        let tmp = try temporary(folder)
        let bomb = PackagePaths.fixtures + "/gadgetbridge/v151/hostile-bomb.zip"
        #expect(GadgetbridgeImporter.canImport(try await ImportSource.open(bomb).probe))
        let (pipeline, store) = try await GadgetbridgeFamiliesTests().pipeline(folder, importer(tmp))
        let report = await pipeline.importFile(bomb)
        #expect(report.status == .failed && report.error?.contains("zip bomb") == true, "\(report)")
        #expect(try await store.tableCounts()["outbox"] == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])
    }

    /// The database only under names that escape the archive: never read, nothing written
    /// outside the private folder.
    @Test func escapingNamesAreNotRead() async throws {
        let folder = try Folder()
        let tmp = try temporary(folder)
        let traversal = PackagePaths.fixtures + "/gadgetbridge/v151/hostile-traversal.zip"
        let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let (pipeline, store) = try await GadgetbridgeFamiliesTests().pipeline(folder, importer(tmp))
        let report = await pipeline.importFile(traversal)
        #expect(report.status == .failed, "\(report)")
        #expect(report.error?.contains("no Gadgetbridge database in this zip (database/Gadgetbridge); 2 entries whose names escape the archive (absolute or ../) not read") == true,
                "\(report.error ?? "")")
        #expect(try await store.tableCounts()["outbox"] == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp) == [])
        let after = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix("healthgate.sqlite") }
        #expect(after.sorted() == before.sorted())
    }
}

/// Writes a zip with Python's zipfile (deflated): `entries` are (name, text or path of a file).
func makeZip(_ path: String, entries: [(String, String)]) throws {
    let script = """
        import sys, zipfile, os
        out = sys.argv[1]
        args = sys.argv[2:]
        with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
            for name, value in zip(args[0::2], args[1::2]):
                if os.path.isfile(value):
                    z.write(value, name)
                else:
                    z.writestr(name, value)
        """
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script, path] + entries.flatMap { [$0.0, $0.1] }
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
}
