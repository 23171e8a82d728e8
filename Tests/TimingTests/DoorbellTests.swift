import Dispatch
import Synchronization
import Testing
import Timing

/// The one wake-up: a ring before the wait, during it, none (the time runs out), a cancelled
/// wait, many rings as one wake-up, and every waiter woken. No wall-clock assertion: time limits
/// only keep a broken doorbell from hanging the run.
@Suite(.timeLimit(.minutes(2))) struct DoorbellTests {
    @Test func aRingBeforeTheWaitIsKept() async {
        let bell = Doorbell()
        bell.ring()
        #expect(await bell.wait())
        // Taken: the next wait has none left.
        #expect(await bell.wait(upTo: .milliseconds(20)) == false)
    }

    @Test func aRingDuringTheWaitEndsIt() async {
        let bell = Doorbell()
        let answer = Box<Bool?>(nil)
        let waiting = Task { let rang = await bell.wait(upTo: .seconds(3600)); answer.value.withLock { $0 = rang } }
        try? await Task.sleep(for: .milliseconds(20))  // most likely waiting by now; either way it must end rung
        while answer.value.withLock({ $0 }) == nil {
            bell.ring()
            try? await Task.sleep(for: .milliseconds(1))
        }
        await waiting.value
        #expect(answer.value.withLock { $0 } == true)
    }

    @Test func theTimeRunsOutWithoutARing() async {
        let bell = Doorbell()
        #expect(await bell.wait(upTo: .milliseconds(10)) == false)
        #expect(await bell.wait(upTo: .zero) == false)
        // And a ring after that is still kept for the next wait.
        bell.ring()
        #expect(await bell.wait(upTo: .seconds(3600)))
    }

    @Test func cancellationEndsTheWait() async {
        let bell = Doorbell()
        let waiting = Task { await bell.wait() }
        let timed = Task { await bell.wait(upTo: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(10))
        waiting.cancel()
        timed.cancel()
        #expect(await waiting.value == false)
        #expect(await timed.value == false)
        // Already cancelled before it waits: at once.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await bell.wait()
        }
        #expect(await early.value == false)
        // A ring nobody took is still there after the cancelled waits.
        bell.ring()
        #expect(await bell.wait())
    }

    @Test func manyRingsAreOneWakeUp() async {
        let bell = Doorbell()
        for _ in 0..<1000 { bell.ring() }
        #expect(await bell.wait())
        #expect(await bell.wait(upTo: .milliseconds(20)) == false)
        bell.ring()
        bell.reset()
        #expect(await bell.wait(upTo: .milliseconds(20)) == false)
    }

    @Test func aRingWakesEveryWaiter() async {
        let bell = Doorbell()
        let woken = Box(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { if await bell.wait(upTo: .seconds(3600)) { woken.value.withLock { $0 += 1 } } }
            }
            // Ring until all eight are woken (some may start waiting after a ring).
            while woken.value.withLock({ $0 }) < 8 {
                bell.ring()
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        #expect(woken.value.withLock { $0 } == 8)
    }

    /// Rings and cancellations racing waits, many times over: every wait ends, with true only
    /// when it was rung. 300 rounds (50 of each of the six mixes of yield, ring and cancel), on
    /// an executor of their own: each round is a few hops between tasks, and on the shared pool
    /// (two threads here) under the whole suite's load a hop waited behind other tests' work
    /// (300 rounds took 183 s once, without any wait hanging). What is tested is the bell, not
    /// the pool's latency.
    @Test func racesAlwaysEnd() async {
        let executor = SerialTaskExecutor()
        let (ended, rung) = await withTaskExecutorPreference(executor) {
            let bell = Doorbell()
            var ended = 0
            var rung = 0
            for round in 0..<300 {
                let waiting = Task(executorPreference: executor) { await bell.wait() }
                if round % 3 != 0 { await Task.yield() }
                if round % 2 == 0 { bell.ring() } else { waiting.cancel() }
                if await waiting.value { rung += 1 }
                ended += 1
                bell.reset()
            }
            return (ended, rung)
        }
        #expect(ended == 300)
        // Every rung round answers true (the ring is kept if it comes first), no cancelled one
        // does (each round resets the bell).
        #expect(rung == 150)
    }
}

/// Runs its jobs one at a time on a dispatch queue of its own, apart from the concurrency pool.
final class SerialTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "serial-task-executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// `cancels`: a body that ends by itself ends it, the bell never rung; a ring cancels a
    /// body that would run for an hour, and `cancels` returns once the body has ended.
    @Test func aRingCancelsTheBodyAndABodyThatEndsNeedsNoRing() async {
        let bell = Doorbell()
        let ran = Box(false)
        await bell.cancels { ran.value.withLock { $0 = true } }
        #expect(ran.value.withLock { $0 })

        let ended = Box<String?>(nil)
        let stopping = Doorbell()
        let running = Task {
            await stopping.cancels {
                do {
                    try await Task.sleep(for: .seconds(3600))
                    ended.value.withLock { $0 = "slept" }
                } catch {
                    ended.value.withLock { $0 = "cancelled" }
                }
            }
        }
        stopping.ring()
        await running.value
        #expect(ended.value.withLock { $0 } == "cancelled")
    }
}

/// A value shared with other tasks.
final class Box<T: Sendable>: Sendable {
    let value: Mutex<T>
    init(_ value: T) { self.value = Mutex(value) }
}
