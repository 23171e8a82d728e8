import DriverKit
import Foundation
import GadgetbridgeDriver
import GRDB
import HealthModel
import HealthPipeline
import HealthStore
import Testing
import TestSupport

/// Through the import pipeline into a real store: idempotency, a newer export, refusals.
@Suite("Gadgetbridge: import pipeline") struct GadgetbridgePipelineTests {
    func pipeline(_ folder: Folder, transactionWeight: Int = ImportLimits.transactionWeight) async throws -> (ImportPipeline, HealthStore) {
        let store = try await HealthStore(path: folder.path + "/healthgate.sqlite")
        let options = ImportOptions(transactionWeight: transactionWeight)
        return (ImportPipeline(store: store, importers: [GadgetbridgeImporter()], options: options), store)
    }

    /// `minutes` samples of the Amazfit from `start`, one a minute.
    static func addSamples(_ db: Database, start: String, minutes: Int, kind: Int, steps: Int, heartRate: Int) throws {
        let t0 = Int(at(start).timeIntervalSince1970)
        for i in 0..<minutes {
            try db.execute(sql: "INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES (?, 2, 1, 0, ?, ?, ?)",
                           arguments: [t0 + 60 * i, steps, kind, heartRate])
        }
    }

    @Test func importThenReimportThenANewerExport() async throws {
        let folder = try Folder()
        let (pipeline, store) = try await pipeline(folder)
        let first = await pipeline.importFile(fixture)
        #expect(first.status == .imported, "\(first)")
        #expect(first.records == 71 && first.driver == "gadgetbridge")
        var counts = try await store.tableCounts()
        #expect(counts["measurements"] == 65 && counts["sleep_sessions"] == 2 && counts["workouts"] == 4)

        let again = await pipeline.importFile(fixture)
        #expect(again.status == .alreadyImported)

        // The same phone a few days later: the running hour goes on 15 minutes, one more night.
        let newer = try folder.fixtureCopy("Gadgetbridge-newer") { db in
            try Self.addSamples(db, start: "2026-03-03 07:30", minutes: 15, kind: 2, steps: 150, heartRate: 140)
            try Self.addSamples(db, start: "2026-03-04 23:00", minutes: 60, kind: 9, steps: 0, heartRate: 255)
        }
        let report = await pipeline.importFile(newer)
        #expect(report.status == .imported, "\(report)")
        #expect(report.records == 15 + 1 + 1)  // 15 heart rates, the longer hour, the new night
        #expect(report.unchanged == 71 - 1)
        counts = try await store.tableCounts()
        #expect(counts["measurements"] == 65 + 15 && counts["sleep_sessions"] == 3 && counts["workouts"] == 4)
        let hour = try await store.measurements(kind: .steps).filter { $0.time == at("2026-03-03 07:00") }
        #expect(hour.map(\.value) == [6750] && hour.map(\.version) == [45])
    }

    /// A long history commits in several parts and every part's records arrive once.
    @Test func aLargeDatabaseCommitsInParts() async throws {
        let folder = try Folder()
        let rows = 60 * 24 * 30  // thirty days, a sample a minute
        let big = try folder.fixtureCopy { db in
            let t0 = Int(at("2026-04-01 00:00").timeIntervalSince1970)
            let insert = try db.makeStatement(sql: "INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES (?, 2, 1, 0, ?, ?, ?)")
            try db.inTransaction {
                for i in 0..<rows {
                    let minuteOfDay = i % 1440
                    let asleep = minuteOfDay < 420  // 00:00 to 07:00 asleep
                    try insert.execute(arguments: [t0 + 60 * i, asleep ? 0 : 3, asleep ? (minuteOfDay % 90 < 60 ? 9 : 11) : 1,
                                                   60 + i % 40])
                }
                return .commit
            }
        }
        let (pipeline, store) = try await pipeline(folder, transactionWeight: 5_000)
        let report = await pipeline.importFile(big)
        #expect(report.status == .imported, "\(report)")
        // The fixture's 71, a heart rate a minute, steps for the 17 waking hours, a night a day.
        #expect(report.records == 71 + rows + 17 * 30 + 30)
        let counts = try await store.tableCounts()
        #expect(counts["measurements"] == 65 + rows + 17 * 30)
        #expect(counts["sleep_sessions"] == 2 + 30)
        #expect(counts["outbox"] == report.records)
        let nights = try await store.sleepSessions().filter { $0.start >= at("2026-04-01 00:00") }
        #expect(nights.allSatisfy { $0.end.timeIntervalSince($0.start) == 7 * 3600 })
    }

    // MARK: Refusals

    func expectRefused(_ path: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let folder = try Folder()
        let (pipeline, store) = try await pipeline(folder)
        let report = await pipeline.importFile(path)
        #expect(report.status == .failed, "\(report)", sourceLocation: sourceLocation)
        #expect(report.error?.hasPrefix(path + ": ") == true, "\(report.error ?? "")", sourceLocation: sourceLocation)
        #expect(report.error?.contains(message) == true, "\(report.error ?? "")", sourceLocation: sourceLocation)
        let counts = try await store.tableCounts()
        for table in ["measurements", "sleep_sessions", "workouts", "outbox"] {
            #expect(counts[table] == 0, "\(table)", sourceLocation: sourceLocation)
        }
    }

    @Test func anotherAppsDatabaseIsRefused() async throws {
        let folder = try Folder()
        let path = folder.path + "/Gadgetbridge"
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE Notes (id INTEGER PRIMARY KEY, text TEXT)")
            try db.execute(sql: "CREATE TABLE Tags (note INTEGER, tag TEXT)")
        }
        try queue.close()
        // Chosen by its tables, not its name: no driver reads it, and the report says whose are read.
        try await expectRefused(path, "an SQLite database no driver reads (Gadgetbridge's has a DEVICE table, a Loop Habit Tracker "
            + "backup Habits and Repetitions; its tables: NOTES, TAGS)")
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let folder = try Folder()
        let path = try folder.fixtureCopy { try $0.execute(sql: "PRAGMA user_version = 152") }
        try await expectRefused(path, "Gadgetbridge schema version 152 is newer than the newest checked (151) and lacks what is read: table")
    }

    @Test func aMissingColumnIsRefused() async throws {
        let folder = try Folder()
        let path = try folder.fixtureCopy {
            try $0.execute(sql: "ALTER TABLE DEVICE DROP COLUMN TYPE_NAME")
            try $0.execute(sql: "ALTER TABLE DEVICE DROP COLUMN TYPE")
        }
        try await expectRefused(path, "Gadgetbridge schema version 92 not recognized: DEVICE lacks TYPE_NAME (or TYPE)")
    }

    /// Cut at several places: refused whole (quick_check or the first read fails), nothing stored.
    @Test func aTruncatedDatabaseIsRefused() async throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture))
        for cut in [100, 4096, bytes.count / 2, bytes.count - 4096] {
            let folder = try Folder()
            let path = folder.path + "/Gadgetbridge"
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: path))
            let (pipeline, store) = try await pipeline(folder)
            let report = await pipeline.importFile(path)
            #expect(report.status == .failed, "cut at \(cut): \(report)")
            #expect(report.error?.contains(path) == true)
            #expect(report.error?.contains("SQLite database") == true || report.error?.contains("damaged") == true, "\(report.error ?? "")")
            #expect(try await store.tableCounts()["outbox"] == 0)
        }
    }

    /// Negative steps, heart rate 255, a sample and a workout in 2100, timestamps that are no
    /// time, a sample of no device: the rest is stored, each refused record is in the report,
    /// the skipped rows are counted in its error.
    @Test func absurdValuesAreCountedNotStored() async throws {
        let folder = try Folder()
        let path = try folder.fixtureCopy { db in
            try Self.addSamples(db, start: "2026-03-06 10:00", minutes: 1, kind: 1, steps: -5, heartRate: 255)
            try Self.addSamples(db, start: "2100-01-01 00:00", minutes: 1, kind: 1, steps: 10, heartRate: 70)
            try db.execute(sql: "INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES ('yesterday', 2, 1, 0, 5, 1, 70)")
            try db.execute(sql: "INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES (99999999999999, 2, 1, 0, 5, 1, 70)")
            try db.execute(sql: "INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES (1772900000, 77, 1, 0, 5, 1, 70)")
            let workout = "INSERT INTO BASE_ACTIVITY_SUMMARY (START_TIME, END_TIME, ACTIVITY_KIND, DEVICE_ID, USER_ID)"
            try db.execute(sql: workout + " VALUES ('soon', 0, 16, 2, 1)")
            try db.execute(sql: workout + " VALUES (4102444800000, 4102446600000, 16, 2, 1)")
        }
        let (pipeline, store) = try await pipeline(folder)
        let report = await pipeline.importFile(path)
        #expect(report.status == .partial, "\(report)")
        #expect(report.records == 71)
        #expect(report.rejected.count == 4, "\(report.rejected)")  // -5 steps; 2100: heart rate, hour of steps, workout
        #expect(report.rejected.filter { $0.contains("future-dated") }.count == 3)
        #expect(report.rejected.filter { $0.hasSuffix(": steps -5 steps is outside 0...1000000 steps") }.count == 1, "\(report.rejected)")
        #expect(report.error == "\(path): start of file: skipped 2 MI_BAND_ACTIVITY_SAMPLE row(s) whose TIMESTAMP is not a time, "
            + "1 MI_BAND_ACTIVITY_SAMPLE row(s) of no DEVICE row, "
            + "1 BASE_ACTIVITY_SUMMARY row(s) whose START_TIME or END_TIME is not a time")
        let counts = try await store.tableCounts()
        #expect(counts["measurements"] == 65 && counts["workouts"] == 4 && counts["sleep_sessions"] == 2)
    }

    /// The user's file is opened immutable: not a byte changes and nothing appears next to it,
    /// even for a database in WAL mode (a plain read-only open makes -wal and -shm files there).
    @Test func theFileAndItsFolderAreLeftAlone() async throws {
        let folder = try Folder()
        let exports = folder.path + "/exports"
        try FileManager.default.createDirectory(atPath: exports, withIntermediateDirectories: true)
        let path = exports + "/Gadgetbridge"
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        let queue = try DatabaseQueue(path: path)
        _ = try await queue.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: exports) == ["Gadgetbridge"])
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(before[18] == 2 && before[19] == 2)  // WAL mode in the header

        let (records, error) = try await decode(path)
        #expect(error == nil && records.count == 71)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: exports) == ["Gadgetbridge"])
    }

    /// Names with characters a URI gives meaning to.
    @Test func oddFileNames() async throws {
        let folder = try Folder()
        for name in ["Gadget bridge", "Gadget?bridge", "Gadget#bridge", "100%Gadgetbridge"] {
            let path = folder.path + "/" + name
            try FileManager.default.copyItem(atPath: fixture, toPath: path)
            let (records, error) = try await decode(path)
            #expect(error == nil && records.count == 71, "\(name): \(String(describing: error))")
        }
    }
}
