import Foundation

/// Which upload job runs next, fairly between accounts. Pure: no threads, no clock.
///
/// - An account may have at most `inProgressPerAccount` uploads admitted at once (from before
///   its body is read until its answer is made); one more is refused (the caller answers 429).
/// - At most one job of an account runs at a time, and accounts take turns: the account of
///   a finished job goes to the back of the line if it has more waiting. So one account's
///   flood of heavy uploads holds at most one worker, and every other account's next job
///   waits for at most one job per account ahead of it.
struct UploadSchedule<Job> {
    let inProgressPerAccount: Int
    /// Admitted uploads per account.
    private(set) var admitted: [String: Int] = [:]
    /// Jobs not started, per account, oldest first.
    private var waiting: [String: [Job]] = [:]
    /// Accounts with a waiting job and none running, in turn order.
    private var ready: [String] = []
    private var readyHead = 0
    /// Accounts with a job running.
    private(set) var running: Set<String> = []

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

    /// Queues a job of `account`.
    mutating func submit(_ job: Job, for account: String) {
        waiting[account, default: []].append(job)
        if waiting[account]!.count == 1 && !running.contains(account) { ready.append(account) }
    }

    /// The next job to run and its account (now running), or nil when none may start.
    mutating func take() -> (account: String, job: Job)? {
        guard readyHead < ready.count else { return nil }
        let account = ready[readyHead]
        readyHead += 1
        if readyHead > 64 && readyHead * 2 > ready.count {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
        var jobs = waiting.removeValue(forKey: account)!
        let job = jobs.removeFirst()
        if !jobs.isEmpty { waiting[account] = jobs }
        running.insert(account)
        return (account, job)
    }

    /// The running job of `account` ended: its next job, if any, waits for its turn behind the
    /// accounts already in line.
    mutating func finished(_ account: String) {
        running.remove(account)
        if waiting[account] != nil { ready.append(account) }
    }

    /// Jobs waiting to start.
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
}

/// Runs the CPU work of uploads (inflating, parsing, checking and re-encoding the records,
/// encoding the answer) on threads of its own, so that a heavy body never holds the Swift
/// concurrency pool, which serves every other request (two threads on a two-core machine), and
/// in turns between accounts (``UploadSchedule``).
///
/// The threads start with the first job and live as long as the process (one set per server).
final class UploadWorkers: @unchecked Sendable {
    /// Worker threads: at least two, so that one account (which holds at most one) cannot
    /// take them all.
    static let defaultThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Uploads one account may have in progress: the HealthGate forwarder keeps up to 8 in
    /// flight (2 by default), so a single device never meets the limit.
    static let defaultInProgressPerAccount = 8
    /// Stack of each worker thread: the parser recurses once per nesting level (at most 512).
    static let stackSize = 4 << 20

    let threads: Int
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var schedule: UploadSchedule<@Sendable () -> Void>
    private var started = false

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

    /// Runs `work` on a worker thread when it is `account`'s turn, and answers its result.
    func run<T: Sendable>(for account: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job: @Sendable () -> Void = { continuation.resume(with: Result { try work() }) }
            locked {
                schedule.submit(job, for: account)
                if !started {
                    started = true
                    for index in 0..<threads { startThread(index) }
                }
                condition.signal()
            }
        }
    }

    /// Admitted uploads per account now (for tests).
    var admittedCounts: [String: Int] { locked { schedule.admitted } }

    private func startThread(_ index: Int) {
        let thread = Thread { [self] in
            // A new thread would keep its creator's name (seen in top, gdb and /proc).
            Thread.current.name = "hg-upload-\(index)"
            loop()
        }
        thread.stackSize = Self.stackSize
        thread.start()
    }

    private func loop() {
        while true {
            condition.lock()
            var next = schedule.take()
            while next == nil {
                condition.wait()
                next = schedule.take()
            }
            condition.unlock()
            let (account, job) = next!
            job()
            locked {
                schedule.finished(account)
                // The account's next job may be ready for another thread.
                condition.signal()
            }
        }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }
}
