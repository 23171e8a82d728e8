import Synchronization

/// A wake-up that can be awaited: ``ring()`` from anywhere (any thread, any task); ``wait()``
/// returns when it rings, at once if it rang since the last wait or ``reset()``. Rings while
/// nobody waits count as one. Nothing polls, and a waiting task holds no thread.
///
/// The one one-shot wake-up of the project: the forwarder's "records were stored", the BLE
/// runtime's dispatch-timer sleep and the exec driver's "standard error is closed" use it.
public final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every task waiting now; when none is, the next ``wait()`` returns at once.
    public func ring() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.waiters.isEmpty else {
                state.rung = true
                return []
            }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        // Resumed outside the lock: resuming takes the waiting task's own lock, which a
        // cancellation handler already holds when it calls in here.
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Forgets a ring nobody waited for.
    public func reset() { state.withLock { $0.rung = false } }

    /// Waits until it rings (true) or the task is cancelled (false).
    public func wait() async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    if Task.isCancelled { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }

    /// Waits until it rings (true), the time is up or the task is cancelled (false). A ring
    /// that comes as the time runs out is not lost: the answer is then true.
    public func wait(upTo limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            group.addTask { await self.wait() }
            // Whichever ends first, the other is cancelled; the wait's own answer counts.
            var rang = false
            for await result in group {
                group.cancelAll()
                if let result { rang = result }
            }
            return rang
        }
    }

    /// Runs `body` until it returns or this rings, whichever comes first: a ring cancels it (a
    /// ring before the start too) and waits for it to end.
    public func cancels(_ body: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await body() }
            group.addTask { _ = await self.wait() }
            // Whichever ends first, the other is cancelled.
            _ = await group.next()
            group.cancelAll()
        }
    }
}
