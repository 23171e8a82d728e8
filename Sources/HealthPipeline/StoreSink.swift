public import DriverKit
public import Foundation
public import HealthModel
public import HealthStore
import Synchronization

/// The sink of live drivers: takes each batch in through the ``Intake`` (normalized, habit names
/// made canonical) and writes it in one transaction (records with their outbox rows; workout
/// pieces appended).
public final class StoreSink: RecordSink {
    public let store: HealthStore
    public let intake: Intake
    /// Called after each committed batch with what it held and the commit time (for
    /// measurements of latency; nil in normal use).
    private let onCommit: (@Sendable (LiveBatch, Date) -> Void)?
    private let rejections = Mutex(Rejections())

    public init(store: HealthStore, onCommit: (@Sendable (LiveBatch, Date) -> Void)? = nil) {
        self.store = store
        self.intake = Intake(store: store)
        self.onCommit = onCommit
    }

    public func emit(_ batch: [HealthRecord]) async throws {
        try await emit(LiveBatch(records: batch))
    }

    public func emit(_ batch: LiveBatch) async throws {
        let (_, accepted, rejected) = try await intake.write(batch)
        if !rejected.isEmpty { rejections.withLock { $0.add(rejected) } }
        guard !accepted.isEmpty else { return }
        onCommit?(accepted, Date())
    }

    /// The store's checkpoint under `key` (`driver_checkpoints`).
    public func checkpoint(_ key: CheckpointKey) async throws -> String? {
        try await store.checkpoint(key)
    }

    /// Records the normalizer refused so far: how many, and the first reasons.
    public var rejected: Rejections { rejections.withLock { $0 } }
}
