public import Dispatch
import Foundation

/// Blocking work (a device transfer, opening or reading a file, a database transaction, a slow
/// hash) run off Swift's cooperative pool, its result or error handed back to the suspended
/// caller. The one way the project does it: a blocked pool thread stalls every task, and the pool
/// has as many threads as cores (two here).
public enum OffPool {
    /// Runs `work` on `queue` and returns its result. A serial queue keeps the calls to a library
    /// that is not thread-safe in order; a concurrent one runs them side by side.
    public static func run<T: Sendable, E: Error>(on queue: DispatchQueue, _ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }
        }
        return try result.get()
    }

    /// Runs `work` on a thread of its own, for work that may block for long (a USB transfer
    /// waiting for its device, a capture decoded whole): a dispatch queue's few threads stay free.
    public static func runOnNewThread<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }
        }
        return try result.get()
    }
}
