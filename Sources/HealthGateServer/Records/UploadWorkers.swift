import Foundation

/// Which upload job runs next, fairly between accounts. Pure: no threads; the time is passed in.
///
/// - An account may have at most `inProgressPerAccount` uploads admitted at once (from before
///   its body is read until its answer is made); one more is refused (the caller answers 429).
/// - At most one job of an account runs at a time, and accounts take turns: the account of a
///   finished job goes to the back of the line if it has more waiting. So one account's flood
///   of uploads holds at most one worker, and every other account's next job waits for at most
///   one job per account ahead of it.
/// - Jobs run in one of two lanes, each with threads of its own: `normal`, and `bulk` at a
///   lower CPU priority, for large bodies and for heavy accounts, those whose jobs used more
///   than ``heavyCPUSeconds`` of CPU recently (decaying with ``usageTimeConstant``: about a
///   fifth of a core, sustained). Bulk work then takes the CPU that the normal lane and the
///   rest of the server leave, and a heavy account cannot slow down everyone else's uploads.
struct UploadSchedule<Job> {
    enum Lane: Int, CaseIterable, Sendable { case normal, bulk }

    /// An account is heavy while its decayed CPU use is above this (seconds).
    static var heavyCPUSeconds: Double { 2 }
    /// CPU use decays by a factor e every this many seconds (a steady share f of a core
    /// settles at f times this).
    static var usageTimeConstant: Double { 10 }

    let inProgressPerAccount: Int
    /// Admitted uploads per account.
    private(set) var admitted: [String: Int] = [:]
    /// Jobs not started, per account, oldest first.
    private var waiting: [String: [(job: Job, lane: Lane)]] = [:]
    /// Per lane: accounts whose next job is in that lane and that have none running, in turn order.
    private var ready: [[String]] = Lane.allCases.map { _ in [] }
    private var readyHead: [Int] = Lane.allCases.map { _ in 0 }
    /// Accounts with a job running.
    private(set) var running: Set<String> = []
    /// Recent CPU seconds per account (decayed), as of a time.
    private var usage: [String: (seconds: Double, at: Double)] = [:]

    init(inProgressPerAccount: Int) {
        precondition(inProgressPerAccount >= 1)
        self.inProgressPerAccount = inProgressPerAccount
    }

    /// Admits one more upload of `account`, or answers false when it has as many as allowed.
    mutating func admit(_ account: String) -> Bool {
        let count = admitted[account, default: 0]
        guard count < inProgressPerAccount else { return false }
        admitted[account] = count + 1
        return true
    }

    /// An admitted upload of `account` is over (answered or failed).
    mutating func release(_ account: String) {
        let count = admitted[account, default: 0] - 1
        admitted[account] = count > 0 ? count : nil
    }

    /// Queues a job of `account` (`large`: its body is) and answers the lane it will run in.
    @discardableResult
    mutating func submit(_ job: Job, for account: String, large: Bool, now: Double) -> Lane {
        let lane: Lane = large || isHeavy(account, now: now) ? .bulk : .normal
        waiting[account, default: []].append((job, lane))
        if waiting[account]!.count == 1 && !running.contains(account) { ready[lane.rawValue].append(account) }
        return lane
    }

    /// The next job of `lane` to run and its account (now running), or nil when none may start.
    mutating func take(_ lane: Lane) -> (account: String, job: Job)? {
        let l = lane.rawValue
        guard readyHead[l] < ready[l].count else { return nil }
        let account = ready[l][readyHead[l]]
        readyHead[l] += 1
        if readyHead[l] > 64 && readyHead[l] * 2 > ready[l].count {
            ready[l].removeFirst(readyHead[l])
            readyHead[l] = 0
        }
        var jobs = waiting.removeValue(forKey: account)!
        let job = jobs.removeFirst().job
        if !jobs.isEmpty { waiting[account] = jobs }
        running.insert(account)
        return (account, job)
    }

    /// The running job of `account` ended after using `cpuSeconds`: its next job, if any, waits
    /// for its turn behind the accounts already in line.
    mutating func finished(_ account: String, cpuSeconds: Double, now: Double) {
        running.remove(account)
        usage[account] = (recentCPU(account, now: now) + cpuSeconds, now)
        if usage.count > 10_000 { usage = usage.filter { $0.value.seconds * exp(($0.value.at - now) / Self.usageTimeConstant) > 0.01 } }
        if let next = waiting[account]?.first { ready[next.lane.rawValue].append(account) }
    }

    /// The account's decayed CPU seconds at `now`.
    func recentCPU(_ account: String, now: Double) -> Double {
        guard let entry = usage[account] else { return 0 }
        return entry.seconds * exp(-max(0, now - entry.at) / Self.usageTimeConstant)
    }

    func isHeavy(_ account: String, now: Double) -> Bool { recentCPU(account, now: now) > Self.heavyCPUSeconds }

    /// Jobs waiting to start.
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
}

/// Runs the CPU work of uploads (inflating, parsing, checking and re-encoding the records,
/// encoding the answer) on threads of its own, so that a heavy body never holds the Swift
/// concurrency pool, which serves every other request (two threads on a two-core machine), and
/// in turns between accounts, with large bodies and heavy accounts in a lower-priority lane
/// (``UploadSchedule``).
///
/// The threads start with the first job and live as long as the process (one set per server).
final class UploadWorkers: @unchecked Sendable {
    typealias Lane = UploadSchedule<@Sendable () -> Void>.Lane

    /// Worker threads per lane: at least two, so that one account (which holds at most one)
    /// cannot take them all.
    static let defaultThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Uploads one account may have in progress: the HealthGate forwarder keeps up to 8 in
    /// flight (2 by default), so a single device never meets the limit.
    static let defaultInProgressPerAccount = 8
    /// Bodies larger than this (inflated) are decoded in the bulk lane. A forwarder's batch of
    /// a thousand measurements is about 250 KB; an hour's workout with 1 s samples about 600 KB.
    static let bulkBodyBytes = 4 << 20
    /// The nice value of bulk threads (CPU weight about a tenth of a normal thread's).
    static let bulkNice: Int32 = 10
    /// Stack of each worker thread: the parser recurses once per nesting level (at most 512).
    static let stackSize = 4 << 20

    let threads: Int
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var schedule: UploadSchedule<@Sendable () -> Void>
    private var started = false
    /// Guarded by `condition`: whether a large upload holds the turn (``oneLargeAtATime(_:)``),
    /// and those waiting for it, first come first served.
    private var largeBusy = false
    private var largeWaiting: [CheckedContinuation<Void, Never>] = []

    init(threads: Int = UploadWorkers.defaultThreads, inProgressPerAccount: Int = UploadWorkers.defaultInProgressPerAccount) {
        precondition(threads >= 1)
        self.threads = threads
        schedule = UploadSchedule(inProgressPerAccount: inProgressPerAccount)
    }

    /// Runs `body` as one admitted upload of `account`, or throws 429 (with `Retry-After: 1`)
    /// when the account already has as many in progress as allowed.
    func admitted<T>(_ account: String, _ body: () async throws -> T) async throws -> T {
        let limit = schedule.inProgressPerAccount
        guard locked({ schedule.admit(account) }) else {
            throw APIError.tooManyRequests("this account already has \(limit) uploads in progress: wait for their answers",
                                           retryAfter: 1)
        }
        defer { locked { schedule.release(account) } }
        return try await body()
    }

    /// Runs `body`, the whole life of one large upload (inflating, decoding, checking, storing,
    /// answering), when no other large upload of any account is in it: what a large upload
    /// costs in memory (its JSON text, the parser's index, the decoded records and their stored
    /// form: about four times its JSON, at most 32 MiB of it) is then paid for one upload at a
    /// time, whatever number are sent at once. The others wait their turn holding only their
    /// body as sent.
    func oneLargeAtATime<T>(_ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = locked {
                if largeBusy {
                    largeWaiting.append(continuation)
                    return false
                }
                largeBusy = true
                return true
            }
            if now { continuation.resume() }
        }
        defer {
            // The turn passes to the next one waiting, or is free.
            let next: CheckedContinuation<Void, Never>? = locked {
                if largeWaiting.isEmpty {
                    largeBusy = false
                    return nil
                }
                return largeWaiting.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }

    /// Large uploads waiting for their turn (for tests).
    var largeWaitingCount: Int { locked { largeWaiting.count } }

    /// Runs `work` on a worker thread when it is `account`'s turn (`large`: in the bulk lane),
    /// and answers its result.
    func run<T: Sendable>(for account: String, large: Bool = false, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job: @Sendable () -> Void = { continuation.resume(with: Result { try work() }) }
            locked {
                schedule.submit(job, for: account, large: large, now: Self.monotonicSeconds())
                if !started {
                    started = true
                    for lane in Lane.allCases {
                        for index in 0..<threads { startThread(lane, index) }
                    }
                }
                condition.broadcast()
            }
        }
    }

    /// Admitted uploads per account now (for tests).
    var admittedCounts: [String: Int] { locked { schedule.admitted } }

    /// Jobs waiting to start (for tests).
    var waitingJobs: Int { locked { schedule.waitingCount } }

    private func startThread(_ lane: Lane, _ index: Int) {
        let thread = Thread { [self] in
            // A new thread keeps its creator's name (seen in top, gdb and /proc); Foundation's
            // `Thread.name` does not always reach the system's.
            let name = (lane == .bulk ? "hg-bulk-" : "hg-upload-") + String(index)
            try? name.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            // Per thread on Linux. Unprivileged, it cannot be undone: hence threads per lane.
            if lane == .bulk { _ = nice(Self.bulkNice) }
            loop(lane)
        }
        thread.stackSize = Self.stackSize
        thread.start()
    }

    private func loop(_ lane: Lane) {
        while true {
            condition.lock()
            var next = schedule.take(lane)
            while next == nil {
                condition.wait()
                next = schedule.take(lane)
            }
            condition.unlock()
            let (account, job) = next!
            let cpu0 = Self.threadCPUSeconds()
            job()
            let cpu = Self.threadCPUSeconds() - cpu0
            locked {
                schedule.finished(account, cpuSeconds: cpu, now: Self.monotonicSeconds())
                // The account's next job may be ready for another thread.
                condition.broadcast()
            }
        }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    static func monotonicSeconds() -> Double { seconds(CLOCK_MONOTONIC) }

    /// CPU time of the calling thread.
    static func threadCPUSeconds() -> Double { seconds(CLOCK_THREAD_CPUTIME_ID) }

    private static func seconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
