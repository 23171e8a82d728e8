import DriverKit
import Foundation
import HealthModel
import HealthStore
import TestSupport
import Testing
@testable import HealthPipeline

/// A file importer for these tests: a `.steps` file holds one step count per line; each line is
/// a measurement whose id derives from its line number and value (the same bytes give the same
/// records in the same order, as DriverKit's rule asks). Reads in small chunks and hands over ten
/// records at a time. `cancelAfter`: cancels the importing task (as the daemon's stop does) once
/// that many records were handed over.
struct StepLinesImporter: FileImporter {
    static let id = "steps_test"
    var cancelAfter: Int?

    init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("steps_test")) {}
    init(cancelAfter: Int?) { self.cancelAfter = cancelAfter }

    static func canImport(_ probe: FileProbe) -> Bool { probe.fileExtension == "steps" }

    func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        var text: [UInt8] = []
        for try await chunk in file.chunks(of: 64) { text += chunk }
        let lines = text.split(separator: UInt8(ascii: "\n"))
        var batch: [HealthRecord] = []
        var handedOver = 0
        for (number, line) in lines.enumerated() {
            let value = String(decoding: line, as: UTF8.self)
            let time = Date(timeIntervalSince1970: 1_763_800_000 + Double(number) * 60)
            batch.append(.measurement(HealthModel.Measurement(id: RecordID.derive("steps", "\(number)", value), kind: .steps,
                                                              time: time, value: Double(value) ?? 0,
                                                              source: Source(driver: Self.id, file: file.path))))
            if batch.count == 10 {
                try await sink.emit(batch)
                handedOver += 10
                batch = []
                if let cancelAfter, handedOver >= cancelAfter { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        if !batch.isEmpty { try await sink.emit(batch) }
    }
}

/// A large file is committed in several transactions and an interrupted import resumes where its
/// committed parts end: nothing stored twice, nothing lost (DriverKit's ``FileImporter`` rule).
@Suite struct LargeFileImportTests {
    /// 100 step counts, one per line.
    func stepsFile(_ scratch: Scratch) throws -> String {
        try scratch.file("day.steps", Array((0..<100).map { "\(1000 + $0)" }.joined(separator: "\n").utf8))
    }

    @Test func anInterruptedImportResumesAfterItsCommittedParts() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let path = try stepsFile(scratch)
        let options = ImportOptions(transactionWeight: 25)

        // Told to stop after 50 records: it stops after the part that ends at 60.
        let stopped = await Task {
            await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: 50)], options: options).importFile(path)
        }.value
        #expect(stopped.status == .failed && stopped.records == 60, "\(stopped)")
        #expect(stopped.error?.contains("interrupted") == true, "\(stopped.error ?? "")")
        #expect(stopped.error?.contains("importing the file again resumes") == true, "\(stopped.error ?? "")")
        let entry = try #require(try await store.ledger().first)
        #expect(entry.status == .inProgress && entry.handedOver == 60 && entry.records == 60)
        #expect(try await store.measurements().count == 60)
        #expect(try await store.outboxDepth() == 60)

        // Imported again: the first 60 are skipped (not even compared), the other 40 stored.
        let resumed = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)], options: options)
            .importFile(path)
        #expect(resumed.status == .imported && resumed.records == 40 && resumed.unchanged == 0, "\(resumed)")
        let measurements = try await store.measurements()
        #expect(measurements.count == 100 && Set(measurements.map(\.id)).count == 100)
        #expect(Set(measurements.map(\.value)) == Set((0..<100).map { Double(1000 + $0) }))
        #expect(try await store.outboxDepth() == 100)
        let done = try #require(try await store.ledger().first)
        #expect(done.status == .imported && done.records == 100)

        // And a third time: nothing to do.
        let again = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)], options: options)
            .importFile(path)
        #expect(again.status == .alreadyImported)
    }

    /// Without the ledger's progress, a resumed import would compare every record again; with a
    /// date range it must: the records the interrupted run filtered out were never stored.
    @Test func aDateRangeImportRecordsNoProgressToSkip() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let path = try stepsFile(scratch)
        // The first 80 minutes only: records 0-79. Told to stop after 50, it stops after the
        // part that ends at 60.
        let range = DateRange(until: Date(timeIntervalSince1970: 1_763_800_000 + 80 * 60))
        let stopped = await Task {
            await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: 50)],
                                 options: ImportOptions(range: range, transactionWeight: 25)).importFile(path)
        }.value
        #expect(stopped.status == .failed && stopped.records == 60, "\(stopped)")
        let entry = try #require(try await store.ledger().first)
        #expect(entry.status == .inProgress && entry.handedOver == 0)

        let whole = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)],
                                         options: ImportOptions(transactionWeight: 25)).importFile(path)
        #expect(whole.status == .imported && whole.records == 40 && whole.unchanged == 60, "\(whole)")
        #expect(try await store.measurements().count == 100)
        #expect(try await store.outboxDepth() == 100)
    }

    /// A part that cannot be committed (here a trigger stands in for a full disk) fails the import
    /// after the parts before it, even when it fails while the importer has already handed over
    /// the rest (a part commits while the next is read): they stay, the ledger's count ends with
    /// them, and the next import resumes after them, storing the rest once.
    @Test func aPartThatCannotBeCommittedKeepsThePartsBefore() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let path = try stepsFile(scratch)
        let options = ImportOptions(transactionWeight: 25)
        // Record 75 (value 1075) is in the part that ends at 90, the third.
        let trigger = """
            CREATE TRIGGER full_disk BEFORE INSERT ON measurements WHEN NEW.value = 1075
            BEGIN SELECT RAISE(ABORT, 'database or disk is full (simulated)'); END;
            """
        let created = try await Tool.run("/usr/bin/env", ["sqlite3", scratch.dbPath, trigger])
        #expect(created.status == 0, "\(created.stderr)")

        let failed = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)], options: options)
            .importFile(path)
        #expect(failed.status == .failed && failed.records == 60, "\(failed)")
        #expect(failed.error?.contains("disk is full (simulated)") == true, "\(failed.error ?? "")")
        #expect(failed.error?.contains("60 record(s) stored before it stay") == true, "\(failed.error ?? "")")
        let entry = try #require(try await store.ledger().first)
        #expect(entry.status == .inProgress && entry.handedOver == 60 && entry.records == 60, "\(entry)")
        #expect(try await store.measurements().count == 60)
        #expect(try await store.outboxDepth() == 60)

        let dropped = try await Tool.run("/usr/bin/env", ["sqlite3", scratch.dbPath, "DROP TRIGGER full_disk;"])
        #expect(dropped.status == 0, "\(dropped.stderr)")
        let resumed = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)], options: options)
            .importFile(path)
        #expect(resumed.status == .imported && resumed.records == 40 && resumed.unchanged == 0, "\(resumed)")
        let measurements = try await store.measurements()
        #expect(measurements.count == 100 && Set(measurements.map(\.id)).count == 100)
        #expect(try await store.outboxDepth() == 100)
    }

    /// A small file is one transaction, to the end even when told to stop half-way (it is soon
    /// done); a part is committed only past the weight.
    @Test func aFileBelowTheWeightIsOneTransaction() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let path = try stepsFile(scratch)
        let report = await Task {
            await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: 50)],
                                 options: ImportOptions(transactionWeight: 1000)).importFile(path)
        }.value
        #expect(report.status == .imported && report.records == 100, "\(report)")
        #expect(try await store.ledger().map(\.status) == [.imported])
    }

    /// A dry run of a large file keeps counts, not records.
    @Test func aDryRunCountsWithoutKeeping() async throws {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let path = try stepsFile(scratch)
        let report = await ImportPipeline(store: store, importers: [StepLinesImporter(cancelAfter: nil)],
                                          options: ImportOptions(dryRun: true, transactionWeight: 25)).importFile(path)
        #expect(report.status == .wouldImport && report.records == 100)
        #expect(try await store.tableCounts()["measurements"] == 0)
        #expect(try await store.ledger().isEmpty)
    }
}
