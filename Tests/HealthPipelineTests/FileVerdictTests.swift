import DriverKit
import HealthModel
import HealthStore
import Testing
@testable import HealthPipeline

/// The pure verdict on a decoded file: its status, its error and the ledger status its last
/// commit records, for every way a file can end.
@Suite struct FileVerdictTests {
    func outcome(handedOver: Int = 10, accepted: Int = 10, outOfRange: Int = 0, rejected: Int = 0, parts: Int = 0,
                 stored: Int = 0, decodeError: String? = nil, storeError: String? = nil) -> DecodeOutcome {
        var rejections = Rejections()
        rejections.add((0..<rejected).map { ValidationError(recordID: RecordID.derive("v", String($0)), reason: "bad") })
        return DecodeOutcome(handedOver: handedOver, accepted: accepted, outOfRange: outOfRange, rejected: rejections, parts: parts,
                             stored: WriteResult(inserted: stored), decodeError: decodeError, storeError: storeError)
    }

    func decide(_ o: DecodeOutcome, resumeAfter: Int = 0, dryRun: Bool = false) -> (FileReport.Status, String?, ImportStatus?) {
        let (report, ledger) = FileVerdict.decide(path: "a.fit", driver: "fit", o, resumeAfter: resumeAfter, dryRun: dryRun)
        return (report.status, report.error, ledger)
    }

    @Test func everyEnding() {
        // Read whole: imported.
        #expect(decide(outcome()) == (.imported, nil, .imported))
        // A date range left records out: the ledger keeps the file open.
        #expect(decide(outcome(accepted: 6, outOfRange: 4)) == (.imported, nil, .filtered))
        // Damaged part-way: what came before is stored.
        #expect(decide(outcome(decodeError: "a.fit: byte 12: bad")) == (.partial, "a.fit: byte 12: bad", .partial))
        // Damaged before the first record: failed.
        #expect(decide(outcome(handedOver: 0, accepted: 0, decodeError: "a.fit: byte 0: bad")) == (.failed, "a.fit: byte 0: bad", .failed))
        // Some records refused: partial, the count as the error; all refused: failed.
        #expect(decide(outcome(accepted: 7, rejected: 3)) == (.partial, "3 record(s) rejected", .partial))
        #expect(decide(outcome(accepted: 0, rejected: 10)) == (.failed, "10 record(s) rejected", .failed))
        // All refused on a resumed import: the parts before stored, so partial.
        #expect(decide(outcome(accepted: 0, rejected: 10), resumeAfter: 40) == (.partial, "10 record(s) rejected", .partial))
        // A part failed to commit: nothing more is committed, and the error says what stays.
        #expect(decide(outcome(storeError: "a.fit: database: disk full")) == (.failed, "a.fit: database: disk full; nothing stored for this file", nil))
        #expect(decide(outcome(parts: 2, stored: 20, storeError: "a.fit: interrupted"))
                == (.failed, "a.fit: interrupted; 20 record(s) stored before it stay, importing the file again resumes after them", nil))
        // A dry run commits nothing.
        #expect(decide(outcome(), dryRun: true) == (.wouldImport, nil, nil))
        #expect(decide(outcome(accepted: 7, rejected: 3), dryRun: true) == (.partial, "3 record(s) rejected", nil))
    }

    @Test func aFailedStoreKeepsItsCounts() {
        let (report, ledger) = FileVerdict.decide(path: "a.fit", driver: "fit", outcome(parts: 3, stored: 30, storeError: "a.fit: database: full"),
                                                  resumeAfter: 0, dryRun: false)
        #expect(report.notStored && report.records == 30 && ledger == nil)
    }
}
