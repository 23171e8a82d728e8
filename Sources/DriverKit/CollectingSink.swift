import HealthModel
import Synchronization

/// A sink that keeps everything emitted, for one file's import (one transaction) and for tests.
public final class CollectingSink: RecordSink {
    private let storage = Mutex<[HealthRecord]>([])

    public init() {}

    public func emit(_ batch: [HealthRecord]) async throws {
        storage.withLock { $0.append(contentsOf: batch) }
    }

    /// Everything emitted so far, in order.
    public var records: [HealthRecord] { storage.withLock { $0 } }
}
