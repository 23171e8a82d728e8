public import HealthModel

/// What became of one file.
public struct FileReport: Sendable, Encodable, Equatable {
    public enum Status: String, Sendable, Encodable {
        /// Stored whole.
        case imported
        /// Damaged part-way: what came before the damage was stored.
        case partial
        /// The ledger knew this content: nothing done.
        case alreadyImported = "already_imported"
        /// Nothing could be read; nothing stored.
        case failed
        /// A dry run: what would have been stored.
        case wouldImport = "would_import"
        /// Found while walking a folder, but no driver reads it.
        case skipped
    }

    public var path: String
    public var status: Status
    public var driver: String?
    /// Records stored (or that a dry run would store).
    public var records: Int = 0
    /// Records already in the database at this version.
    public var unchanged: Int = 0
    /// Records outside `--since/--until`.
    public var outOfRange: Int = 0
    /// Records refused by validation: the reasons of the first ``Rejections/keptLimit``.
    public var rejected: [String] = []
    /// Every record refused by validation (`rejected` lists the first reasons only).
    public var rejectedCount: Int = 0
    /// Why the file failed or is partial.
    public var error: String?
    /// The file's records (or what the ledger keeps of it) could not be stored, or its import was
    /// interrupted: importing it again is needed, and nothing marks it done (a driver's checkpoint
    /// went with it). An unreadable file is not this: it is in the ledger as unreadable.
    public var notStored = false
    /// A dry run: the first records as they would be stored (normalized and validated). Not part
    /// of the report's JSON: the CLI spells records with the sync protocol's coding.
    public var preview: [HealthRecord] = []

    public init(path: String, status: Status, driver: String? = nil, records: Int = 0, unchanged: Int = 0, outOfRange: Int = 0,
                rejected: [String] = [], rejectedCount: Int? = nil, error: String? = nil) {
        self.path = path
        self.status = status
        self.driver = driver
        self.records = records
        self.unchanged = unchanged
        self.outOfRange = outOfRange
        self.rejected = rejected
        self.rejectedCount = rejectedCount ?? rejected.count
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case path, status, driver, records, unchanged, outOfRange = "out_of_range", rejected, rejectedCount = "rejected_count", error
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(status, forKey: .status)
        try c.encode(driver, forKey: .driver)
        try c.encode(records, forKey: .records)
        try c.encode(unchanged, forKey: .unchanged)
        try c.encode(outOfRange, forKey: .outOfRange)
        try c.encode(rejected, forKey: .rejected)
        try c.encode(rejectedCount, forKey: .rejectedCount)
        try c.encode(error, forKey: .error)
    }
}
