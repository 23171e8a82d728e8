import DriverKit
import DriverRegistry
import Foundation
import Testing
import HealthModel
@testable import HealthStore
@testable import HealthPipeline
import TestSupport


/// Every fixture that is a valid FIT, TCX or GPX file (the `corrupt` folder excluded).
func validFixtures() throws -> [String] {
    try ImportPipeline.discover([PackagePaths.fixtures + "/fit", PackagePaths.fixtures + "/tcx", PackagePaths.fixtures + "/gpx"]).map(\.path)
        .filter { !$0.contains("/corrupt/") && !$0.contains("/expected/") && ["fit", "tcx", "gpx"].contains(($0 as NSString).pathExtension) }
}

@Suite struct ImportPipelineTests {
    @Test func importsEveryFixtureThenReimportAddsNothing() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        let files = try validFixtures()
        #expect(files.count == 29)  // 22 FIT, 3 TCX, 4 GPX

        var reports: [FileReport] = []
        let totals = try await pipeline.run(files, done: { reports.append($0) })
        for report in reports {
            #expect(report.status == .imported, "\(report.path): \(report.status) \(report.error ?? "")")
        }
        #expect(totals.files == files.count && totals.failed == 0)
        let counts = try await store.tableCounts()
        #expect(counts["imports"] == files.count)
        #expect(counts["outbox"] == totals.records)
        #expect(try await store.workouts().count == counts["workouts"])
        #expect((counts["workouts"] ?? 0) > 30)
        #expect((counts["samples"] ?? 0) > 50_000)

        // The same files again: nothing decoded, nothing written, each says so.
        var again: [FileReport] = []
        let second = try await pipeline.run(files, done: { again.append($0) })
        #expect(second.alreadyImported == files.count && second.records == 0)
        #expect(again.allSatisfy { $0.status == .alreadyImported })
        #expect(try await store.tableCounts() == counts)
    }

    /// The ledger's content hash is SHA-256 of the file's bytes as hex, as before swift-crypto
    /// replaced the hand-written one (a re-import into an existing database must still find the
    /// file); the digests here are `sha256sum`'s.
    @Test func contentHashesAreTheFilesSHA256() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        let files = ["fit/fitsdk-Settings.fit": "dcf0cc53deddc77925052529dc1bbfc529dec41600833568473af98e986bfdbe",
                     "gpx/garmin-connect-9266323613-hr.gpx": "9383cd5f65e2dc7f0f59410c5b791cc8e6723edd6bf18f75eebf751829fa008d"]
        for (file, digest) in files {
            let report = await pipeline.importFile(PackagePaths.fixtures + "/" + file)
            #expect(report.status == .imported, "\(file): \(report.error ?? "")")
            #expect(try await store.ledgerEntry(contentHash: digest)?.path == PackagePaths.fixtures + "/" + file)
        }
    }

    @Test func folderImportSkipsUnknownFilesAndWalksSubfolders() async throws {
        let scratch = try Scratch()
        let pipeline = ImportPipeline(store: try await scratch.store(), importers: Registry.fileImporters())
        var reports: [FileReport] = []
        let totals = try await pipeline.run([PackagePaths.fixtures + "/gpx"], done: { reports.append($0) })
        #expect(reports.contains { $0.path.hasSuffix("edge-cases/garmin-hr0-empty-atemp-nonstandard-alt.gpx") })
        #expect(totals.failed == 0)
        // The expected-output JSON files next to the fixtures are not GPX: skipped, not failed.
        #expect(reports.filter { $0.path.hasSuffix(".json") }.allSatisfy { $0.status == .skipped })
    }

    @Test func namedFileWithoutDriverFails() async throws {
        let scratch = try Scratch()
        let path = try scratch.file("notes.txt", Array("hello".utf8))
        let report = await ImportPipeline(store: try await scratch.store(), importers: Registry.fileImporters()).importFile(path)
        #expect(report.status == .failed)
        #expect(report.error?.contains("notes.txt") == true)
    }

    @Test func hostileFilesFailWithPositionAndWriteNothingWhileOthersImport() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let good = PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"
        let billionLaughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
            <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
            <gpx version="1.1" creator="x"><trk><name>&lol3;</name></trk></gpx>
            """
        let xxe = """
            <?xml version="1.0"?>
            <!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <TrainingCenterDatabase><Activities><Activity Sport="Running"><Id>&xxe;</Id></Activity></Activities></TrainingCenterDatabase>
            """
        let hostile = [
            try scratch.file("empty.fit", []),
            try scratch.file("text.fit", Array("this is not a FIT file at all, just text".utf8)),
            try scratch.file("absurd-header.fit", [200, 0x10, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F] + Array(".FIT".utf8) + [0, 0]),
            try scratch.file("laughs.gpx", Array(billionLaughs.utf8)),
            try scratch.file("xxe.tcx", Array(xxe.utf8)),
        ]
        var reports: [FileReport] = []
        let totals = try await ImportPipeline(store: store, importers: Registry.fileImporters()).run(hostile + [good], done: { reports.append($0) })
        #expect(totals.failed == hostile.count)
        #expect(totals.imported == 1)
        for report in reports where report.path != good {
            #expect(report.status == .failed)
            let error = try #require(report.error)
            #expect(error.contains((report.path as NSString).lastPathComponent), "\(error)")
            #expect(error.contains("byte") || error.contains("line") || error.contains("start of file"), "\(error)")
        }
        #expect(try await store.workouts().count == 1)
        #expect(try await store.workouts()[0].source.file == good)
        // Failed files are in the ledger as failed, with no records.
        let ledger = try await store.ledger()
        #expect(ledger.filter { $0.status == .failed }.count == hostile.count)
        #expect(ledger.filter { $0.status == .failed }.allSatisfy { $0.records == 0 })
    }

    @Test func damagedFitKeepsWhatPrecedesTheDamage() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let report = await ImportPipeline(store: store, importers: Registry.fileImporters()).importFile(PackagePaths.fixtures + "/fit/corrupt/activity-unexpected-eof.fit")
        #expect(report.status == .partial)
        #expect(report.error?.contains("activity-unexpected-eof.fit") == true)
        #expect(report.error?.contains("byte") == true)
        let workouts = try await store.workouts()
        #expect(workouts.count == 1)
        #expect(workouts.first?.samples == 14)
        #expect(try await store.ledger().first?.status == .partial)
        // Reported as already imported the second time, not retried.
        #expect(await ImportPipeline(store: store, importers: Registry.fileImporters()).importFile(PackagePaths.fixtures + "/fit/corrupt/activity-unexpected-eof.fit").status == .alreadyImported)
    }

    @Test func dryRunWritesNothing() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let before = try await store.tableCounts()
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters(), options: ImportOptions(dryRun: true))
        let report = await pipeline.importFile(PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit")
        #expect(report.status == .wouldImport)
        #expect(report.records == 1)
        #expect(try await store.tableCounts() == before)
    }

    @Test func dateRangeLimitsWhatIsStored() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        // The fenix 2 multisport file holds several sessions on one day; keep only those after its second start.
        let all = try await {
            let s = try Scratch()
            let st = try await s.store()
            _ = await ImportPipeline(store: st, importers: Registry.fileImporters()).importFile(PackagePaths.fixtures + "/fit/garmin-fenix2-multisport.fit")
            return try await st.workouts()
        }()
        #expect(all.count >= 3)
        let cut = try #require(ISO8601.parse(all[1].start))
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters(), options: ImportOptions(range: DateRange(since: cut)))
        let report = await pipeline.importFile(PackagePaths.fixtures + "/fit/garmin-fenix2-multisport.fit")
        #expect(report.status == .imported)
        #expect(report.outOfRange == 1)
        #expect(try await store.workouts().count == all.count - 1)
        #expect(try await store.ledger().first?.status == .filtered)

        // Imported again without the range: the rest is stored, then the file is complete.
        let rest = await ImportPipeline(store: store, importers: Registry.fileImporters()).importFile(PackagePaths.fixtures + "/fit/garmin-fenix2-multisport.fit")
        #expect(rest.status == .imported)
        #expect(rest.records == 1 && rest.unchanged == all.count - 1)
        #expect(try await store.workouts().count == all.count)
        #expect(try await store.ledger().first?.status == .imported)
        #expect(try await store.ledger().first?.records == all.count)
        #expect(await ImportPipeline(store: store, importers: Registry.fileImporters()).importFile(PackagePaths.fixtures + "/fit/garmin-fenix2-multisport.fit").status == .alreadyImported)
    }
}

/// A file a driver fetched from a device, handed to the pipeline with the driver's checkpoint
/// (DriverKit's `FileSink.importFile(_:checkpoints:)`): the checkpoint lands with the file's
/// ledger entry, also when the content was imported before or is unreadable, and not at all
/// when nothing could be stored.
@Suite struct FileCheckpointTests {
    struct Fetched: DriverCheckpoint {
        static let driver = "test-watch"
        var files: [String]
    }

    @Test func aFilesCheckpointIsStoredWithItsLedgerEntry() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        let sink = StoreSink(store: store)
        let fit = PackagePaths.fixtures + "/fit/antfs-dump-63.fit"
        let first = await pipeline.importFile(fit, checkpoint: Fetched(files: ["63"]), device: "3871234567")
        #expect(first.status == .imported && first.records > 0)
        #expect(try await sink.checkpoint(Fetched.self, device: "3871234567") == Fetched(files: ["63"]))
        // The same content again (another copy of the file): already imported, checkpoint moved.
        let copy = try scratch.file("copy.fit", Array(try Data(contentsOf: URL(fileURLWithPath: fit))))
        let again = await pipeline.importFile(copy, checkpoint: Fetched(files: ["63", "64"]), device: "3871234567")
        #expect(again.status == .alreadyImported)
        #expect(try await sink.checkpoint(Fetched.self, device: "3871234567") == Fetched(files: ["63", "64"]))
        // An unreadable file is recorded as failed, and fetched.
        let broken = try scratch.file("broken.fit", [0x0E, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2E, 0x46, 0x49, 0x54, 0x00, 0x00])
        let failed = await pipeline.importFile(broken, checkpoint: Fetched(files: ["63", "64", "65"]), device: "3871234567")
        #expect(failed.status == .failed && !failed.notStored)
        #expect(try await sink.checkpoint(Fetched.self, device: "3871234567") == Fetched(files: ["63", "64", "65"]))
        // Another device's checkpoint is its own; a checkpoint of another shape reads as none.
        #expect(try await sink.checkpoint(Fetched.self, device: "other") == nil)
        struct Other: DriverCheckpoint {
            static let driver = "test-watch"
            var count: Int
        }
        #expect(try await sink.checkpoint(Other.self, device: "3871234567") == nil)
    }

    @Test func nothingIsStoredWhenTheDatabaseRefusesTheFile() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        // A trigger stands in for a full disk: the ledger cannot be written.
        try await store.writing { db in
            try db.execute(sql: "CREATE TRIGGER no_imports BEFORE INSERT ON imports BEGIN SELECT RAISE(FAIL, 'disk full'); END")
        }
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        let report = await pipeline.importFile(PackagePaths.fixtures + "/fit/antfs-dump-63.fit", checkpoint: Fetched(files: ["63"]), device: "w")
        // Said in the report's type, for a driver that keeps what it fetched (ANT-FS): not stored.
        #expect(report.status == .failed && report.notStored)
        #expect(try await StoreSink(store: store).checkpoint(Fetched.self, device: "w") == nil)
        #expect(try await store.checkpoints(driver: "test-watch").isEmpty)
    }
}
