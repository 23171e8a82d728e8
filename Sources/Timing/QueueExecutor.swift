public import Dispatch

/// A serial executor on a dispatch queue: an actor that names it as its `unownedExecutor` runs
/// its jobs there (the own Bluetooth host's runtime; BlueZ's device sessions). Linux has no
/// `DispatchSerialQueue` executor.
///
/// Kept after the store stopped blocking the pool: the pool still runs CPU-bound work (decoding
/// imported files, JSON encoding of uploads). Measured on 2 cores with the pool kept busy by two
/// CPU-bound tasks (250 ms between suspension points): a `DispatchSourceTimer` on a serial queue,
/// as here, fired 4 ms late at the median (16 ms at p99), while `Task.sleep` and `asyncAfter`
/// sleeps were 230-240 ms late at the median (up to 520 ms); on an idle pool all were 0.1 ms late.
public final class QueueExecutor: SerialExecutor, @unchecked Sendable {
    /// The queue the jobs run on; timers and callbacks that touch the actor's state go here too.
    public let queue: DispatchQueue
    public init(label: String) { queue = DispatchQueue(label: label) }
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
    public func checkIsolated() { dispatchPrecondition(condition: .onQueue(queue)) }
}
