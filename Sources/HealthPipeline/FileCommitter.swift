import DriverKit
import Foundation
import HealthModel
import HealthStore

/// The sink of one file's import: takes what the importer hands over in through the ``Intake``
/// (normalized, habit names made canonical) and keeps it until the
/// end, where the pipeline commits it with the ledger entry in one transaction; a large file's
/// records are committed in parts of about `transactionWeight` (or at most
/// ``ImportLimits/transactionRecords`` records) as they come, each part noting in
/// the ledger how many records the importer had handed over (DriverKit's ``FileImporter``
/// states the rule). A part commits while the importer reads the next one (the store writes on
/// its own queue, the importer runs on the task pool: two cores, two stages); one part at a time
/// is in flight, so parts commit in order and each one's ledger count covers the parts before.
/// Call ``settle()`` once the importer has returned or thrown. A dry run keeps only counts.
actor FileCommitter: RecordSink {
    /// Who the file is, for the ledger.
    let header: FileImport
    let intake: Intake
    /// The intake's normalizer for this file (the body weight read once, at its start).
    let normalizer: Normalizer
    let dryRun: Bool
    /// Records an interrupted import of the same content already stored: skipped.
    let skip: Int
    /// Whether a part may record progress for a resumed import to skip (not with a date range:
    /// the records it filtered out would be skipped for good).
    let recordsProgress: Bool
    let transactionWeight: Int
    /// A dry run keeps this many of the first accepted records for its report.
    let previewCount: Int
    /// Told the records handed over so far after each batch (the progress within a file).
    let onProgress: (@Sendable (_ handedOver: Int) -> Void)?

    /// Records the importer handed over (skipped ones included).
    private(set) var handedOver = 0
    private(set) var accepted = 0
    private(set) var outOfRange = 0
    private(set) var rejected = Rejections()
    /// A dry run's first accepted records (``previewCount``).
    private(set) var preview: [HealthRecord] = []
    /// What the parts committed so far stored.
    private(set) var stored = WriteResult()
    private(set) var parts = 0
    /// Normalized records not committed yet.
    private(set) var pending: [HealthRecord] = []
    private var pendingWeight = 0
    private var assembler = WorkoutAssembler()
    /// The part being committed, if any.
    private var inFlight: Task<Void, any Error>?

    init(header: FileImport, intake: Intake, normalizer: Normalizer, dryRun: Bool, skip: Int, recordsProgress: Bool,
         transactionWeight: Int = ImportLimits.transactionWeight, previewCount: Int = 0,
         onProgress: (@Sendable (_ handedOver: Int) -> Void)? = nil) {
        self.onProgress = onProgress
        self.header = header
        self.intake = intake
        self.normalizer = normalizer
        self.dryRun = dryRun
        self.skip = skip
        self.recordsProgress = recordsProgress
        self.transactionWeight = max(1, transactionWeight)
        self.previewCount = previewCount
    }

    func emit(_ batch: [HealthRecord]) async throws {
        let alreadyStored = min(max(0, skip - handedOver), batch.count)
        handedOver += batch.count
        onProgress?(handedOver)
        let fresh = alreadyStored == 0 ? batch : Array(batch.dropFirst(alreadyStored))
        guard !fresh.isEmpty else { return }
        let outcome = try await intake.prepare(fresh, with: normalizer)
        accepted += outcome.accepted.count
        outOfRange += outcome.outOfRange
        rejected.add(outcome.rejected)
        if preview.count < previewCount { preview += outcome.accepted.prefix(previewCount - preview.count) }
        guard !dryRun else { return }
        pending += outcome.accepted
        pendingWeight += outcome.accepted.reduce(0) { $0 + ImportLimits.weight(of: $1) }
        if pendingWeight >= transactionWeight || pending.count >= ImportLimits.transactionRecords { try await commitPart() }
    }

    /// A file importer may hand over a workout in pieces too: it counts once finished.
    func emit(_ batch: LiveBatch) async throws {
        let finished = assembler.add(batch)
        if !finished.isEmpty { try await emit(finished) }
    }

    /// Takes the records not committed yet, for the final transaction.
    func takePending() -> [HealthRecord] {
        defer {
            pending = []
            pendingWeight = 0
        }
        return pending
    }

    /// Waits for the part being committed; throws what its commit threw (``AlreadyImported``,
    /// ``StoreFailure``). Afterwards ``stored`` and ``parts`` count every part.
    func settle() async throws {
        guard let part = inFlight else { return }
        inFlight = nil
        try await part.value
    }

    private func commitPart() async throws {
        guard let store = intake.store else { return }
        // The part before must be stored first: the ledger's count of a part covers the ones before it.
        try await settle()
        var part = header
        part.records = pending
        part.status = .inProgress
        part.handedOver = recordsProgress ? handedOver : 0
        pending = []
        pendingWeight = 0
        // Isolated to this actor: it suspends while the store writes, and the importer goes on.
        inFlight = Task {
            let outcome: CommitOutcome
            do { outcome = try await store.commit(part) } catch { throw StoreFailure(error: error) }
            switch outcome {
            case .alreadyImported(let entry):
                throw AlreadyImported(entry: entry)
            case .committed(let result):
                stored.add(result)
                parts += 1
            }
        }
        // Told to stop (the daemon at SIGTERM): a large file stops after this part, and the next
        // import resumes after it.
        if Task.isCancelled {
            try await settle()
            throw CancellationError()
        }
    }

    /// Another import of the same content finished while this one was under way.
    struct AlreadyImported: Error {
        var entry: LedgerEntry
    }

    /// A part could not be committed (disk full, database locked ...).
    struct StoreFailure: Error {
        var error: any Error
    }
}
