import Foundation
import GRDB
public import HealthModel

/// How an imported file ended up.
public enum ImportStatus: String, Codable, Sendable {
    /// Every record in the file was read.
    case imported
    /// The file was damaged part-way; the records before the damage were stored.
    case partial
    /// Imported with a date range: records outside it were not stored. Importing the file
    /// again (with another range or none) stores the rest.
    case filtered
    /// Nothing could be read; nothing was stored.
    case failed
    /// A large file being committed in several transactions, or one whose import was
    /// interrupted between two: importing it again resumes after ``LedgerEntry/handedOver``.
    case inProgress = "in_progress"
}

/// One row of the import ledger: a file remembered by the hash of its contents.
public struct LedgerEntry: Sendable, Equatable, Codable {
    public var contentHash: String
    public var path: String
    public var sizeBytes: Int
    public var driver: String
    public var status: ImportStatus
    public var records: Int
    public var error: String?
    public var importedAt: String
    /// For an import in progress: the records the importer had handed over by its last commit,
    /// every one stored (or refused); a resumed import skips that many.
    public var handedOver: Int

    /// True when importing the same content again has nothing to add.
    public var isComplete: Bool { status == .imported || status == .partial }

    init(row: Row) {
        contentHash = row["content_hash"]
        path = row["path"]
        sizeBytes = row["size_bytes"]
        driver = row["driver"]
        status = ImportStatus(rawValue: row["status"]) ?? .failed
        records = row["records"]
        error = row["error"]
        importedAt = row["imported_at"]
        handedOver = row["handed_over"]
    }
}

/// A decoded file, or the next part of a large one, ready to be committed as one transaction.
public struct FileImport: Sendable {
    public var contentHash: String
    public var path: String
    public var sizeBytes: Int
    public var driver: String
    /// The normalized records to store (empty for a failed file).
    public var records: [HealthRecord]
    /// ``ImportStatus/inProgress`` for a part of a large file; the final status with its last part.
    public var status: ImportStatus
    public var error: String?
    /// With a part: the records the importer has handed over so far, all in this or earlier
    /// parts (0 when a resumed import may not skip them: one with a date range).
    public var handedOver: Int
    /// Driver checkpoints stored with the file's ledger entry (DriverKit's `FileSink`): also when
    /// the ledger already holds the content.
    public var checkpoints: [CheckpointKey: String] = [:]

    public init(contentHash: String, path: String, sizeBytes: Int, driver: String, records: [HealthRecord],
                status: ImportStatus, error: String? = nil, handedOver: Int = 0) {
        self.contentHash = contentHash
        self.path = path
        self.sizeBytes = sizeBytes
        self.driver = driver
        self.records = records
        self.status = status
        self.error = error
        self.handedOver = handedOver
    }
}

/// What committing a file did.
public enum CommitOutcome: Sendable, Equatable {
    /// The ledger already held this content: nothing was written.
    case alreadyImported(LedgerEntry)
    /// The file's (or part's) records, outbox rows and ledger entry were written in one transaction.
    case committed(WriteResult)
}

extension HealthStore {
    /// The ledger entry for a file's content hash, if the file was seen before.
    public func ledgerEntry(contentHash: String) async throws -> LedgerEntry? {
        try await reading { db in
            try Row.fetchOne(db, sql: "SELECT * FROM imports WHERE content_hash = ?", arguments: [contentHash])
                .map(LedgerEntry.init(row:))
        }
    }

    /// Every ledger entry, newest first.
    public func ledger() async throws -> [LedgerEntry] {
        try await reading { db in
            try Row.fetchAll(db, sql: "SELECT * FROM imports ORDER BY imported_at DESC, path").map(LedgerEntry.init(row:))
        }
    }

    /// Commits one file, or one part of a large file, in one transaction: its records with their
    /// outbox rows, and its ledger entry. A file already imported (or partially imported) is left
    /// alone; a file that failed, was imported with a date range or was interrupted before is
    /// imported again and its entry updated.
    public func commit(_ file: FileImport) async throws -> CommitOutcome {
        try await writing { db in
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM imports WHERE content_hash = ?",
                                          arguments: [file.contentHash]) {
                let entry = LedgerEntry(row: row)
                if entry.isComplete {
                    try RecordWriter(db: db).writeCheckpoints(file.checkpoints)
                    return .alreadyImported(entry)
                }
            }
            // The ledger row first: records reference it.
            try db.execute(sql: """
                INSERT INTO imports (content_hash, path, size_bytes, driver, status, records, error, imported_at, handed_over)
                VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)
                ON CONFLICT (content_hash) DO UPDATE SET path = excluded.path, status = excluded.status,
                    error = excluded.error, imported_at = excluded.imported_at, handed_over = excluded.handed_over
                """, arguments: [file.contentHash, file.path, file.sizeBytes, file.driver, file.status.rawValue,
                                 file.error, ISO8601.string(Date()), file.handedOver])
            let writer = RecordWriter(db: db)
            let result = try writer.write(file.records, importHash: file.contentHash)
            try writer.writeCheckpoints(file.checkpoints)
            try db.execute(sql: "UPDATE imports SET records = records + ? WHERE content_hash = ?",
                           arguments: [result.stored, file.contentHash])
            return .committed(result)
        }
    }
}
