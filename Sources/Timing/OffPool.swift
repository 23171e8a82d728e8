public import Dispatch

/// Blocking work (a device transfer, a listing of a slow mounted volume) run on a dispatch queue,
/// never on a thread of Swift's concurrency pool, with its result handed back to the caller.
public enum OffPool {
    /// Runs `work` on `queue` (a serial queue keeps calls to a library that is not thread-safe in
    /// order) and returns its result.
    public static func run<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
