public import HealthModel
import Synchronization

/// A sink that keeps everything emitted, for one file's import (one transaction) and for tests.
/// Live workout pieces are put back together: a workout appears in ``records`` once its final
/// piece arrived.
public final class CollectingSink: RecordSink {
    private struct State {
        var records: [HealthRecord] = []
        var assembler = WorkoutAssembler()
        var batches = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func emit(_ batch: [HealthRecord]) async throws {
        state.withLock { $0.records.append(contentsOf: batch) }
    }

    public func emit(_ batch: LiveBatch) async throws {
        state.withLock { s in
            s.records.append(contentsOf: s.assembler.add(batch))
            s.batches += 1
        }
    }

    /// Everything emitted so far, in order.
    public var records: [HealthRecord] { state.withLock { $0.records } }

    /// Live workouts whose final piece has not arrived yet (samples so far).
    public var workoutsInProgress: [Workout] { state.withLock { $0.assembler.inProgress } }

    /// Live batches received.
    public var liveBatches: Int { state.withLock { $0.batches } }
}
