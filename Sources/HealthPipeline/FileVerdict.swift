import DriverKit
import HealthModel
import HealthStore

/// What a file's decoding came to: what the importer handed over and the committer made of it,
/// and what went wrong decoding or storing.
struct DecodeOutcome: Sendable, Equatable {
    var handedOver: Int
    var accepted: Int
    var outOfRange: Int
    var rejected: Rejections
    /// Parts committed before the end, and what they stored.
    var parts: Int
    var stored: WriteResult
    var decodeError: String?
    var storeError: String?
}

/// The verdict on a decoded file, pure: its report, and the ledger status its last commit
/// records (nil: nothing more is committed — a part failed to commit or the import was stopped,
/// or it was a dry run).
enum FileVerdict {
    static func decide(path: String, driver: String, _ outcome: DecodeOutcome, resumeAfter: Int,
                       dryRun: Bool) -> (report: FileReport, ledger: ImportStatus?) {
        var report = FileReport(path: path, status: .imported, driver: driver, outOfRange: outcome.outOfRange,
                                rejected: outcome.rejected.kept.map(\.description), rejectedCount: outcome.rejected.count,
                                error: outcome.decodeError)
        if let storeError = outcome.storeError {
            // A part failed to commit (disk full ...), or the import was told to stop between two
            // parts: the parts before stay, and the ledger says where the next import resumes.
            report.status = .failed
            report.notStored = true
            report.records = outcome.stored.stored
            report.error = storeError + "; " + whatStays(parts: outcome.parts, stored: outcome.stored.stored)
            return (report, nil)
        }
        if outcome.handedOver == 0, outcome.decodeError != nil {
            report.status = .failed
        } else if outcome.decodeError != nil || !outcome.rejected.isEmpty {
            // Nothing kept of a file read in full before: failed; else what was read is stored.
            report.status = outcome.accepted == 0 && outcome.outOfRange == 0 && resumeAfter == 0 ? .failed : .partial
            if report.error == nil { report.error = "\(outcome.rejected.count) record(s) rejected" }
        }
        if dryRun {
            if report.status == .imported { report.status = .wouldImport }
            report.records = outcome.accepted
            return (report, nil)
        }
        // A file imported with a date range stays open: importing it again stores the rest.
        let ledger: ImportStatus = report.status == .failed ? .failed
            : outcome.outOfRange > 0 ? .filtered
            : report.status == .partial ? .partial : .imported
        return (report, ledger)
    }

    /// What a failed commit leaves: nothing, or the parts committed before it (and where the
    /// next import resumes).
    static func whatStays(parts: Int, stored: Int) -> String {
        parts == 0 ? "nothing stored for this file"
            : "\(stored) record(s) stored before it stay, importing the file again resumes after them"
    }
}
