import Foundation
public import GRDB
import Synchronization

/// Proves that no SQLite statement of a ``HealthStore`` runs on a thread of Swift's cooperative
/// pool (two threads on a two-core machine: one blocked on SQLite halves the whole process).
///
/// On Linux the cooperative pool is made of the worker threads of libdispatch's global
/// (non-overcommit) root queues, which libdispatch names after their queue, keeping the last 15
/// characters: `com.apple.root.default-qos` gives "oot.default-qos". The threads that serve serial
/// queues (GRDB's writer and readers, the store's opening queue) belong to the overcommit roots and
/// are named "-qos.overcommit". A statement that starts while a task is running on a thread whose
/// name ends in "-qos" is therefore running on the cooperative pool. (The task matters: a plain
/// thread inherits the name of the thread that started it.) A synchronous `DatabasePool.write`
/// called from a task runs its statements on the caller's thread (dispatch_sync borrows it) and is
/// caught here; GRDB's `async` accesses run on its queues' threads and are not.
///
/// Off by default (tracing every statement costs time). ``enable()`` (tests) or the environment
/// variable `HEALTHGATE_STATEMENT_CHECK=1` (processes a test starts) turns it on for the stores
/// opened afterwards; every statement of their connections is traced and those that ran on the pool
/// are kept and written to standard error. A process that the variable turned it on for writes
/// "statement check: N statement(s), M on Swift's cooperative pool" to standard error as it exits.
public enum StatementThreadCheck {
    /// A statement that ran on a thread of the cooperative pool.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        /// The database file (`:memory:` for an in-memory store).
        public var path: String
        public var sql: String
        /// The thread's name, as libdispatch set it.
        public var thread: String
        public var description: String { "\(path): \(sql) [thread \(thread)]" }
    }

    private static let enabled = Atomic<Bool>(false)
    /// On from the environment: also reports the totals at exit.
    private static let fromEnvironment: Bool = {
        guard ProcessInfo.processInfo.environment["HEALTHGATE_STATEMENT_CHECK"] == "1" else { return false }
        atexit {
            let checked = StatementThreadCheck.traced.withLock { $0.values.reduce(0, +) }
            let onPool = StatementThreadCheck.found.withLock { $0.count }
            FileHandle.standardError.write(Data("statement check: \(checked) statement(s), \(onPool) on Swift's cooperative pool\n".utf8))
        }
        return true
    }()
    private static let found = Mutex<[Violation]>([])
    private static let traced = Mutex<[String: Int]>([:])

    /// Traces the statements of every store opened from now on.
    public static func enable() { enabled.store(true, ordering: .sequentiallyConsistent) }

    static var isEnabled: Bool { fromEnvironment || enabled.load(ordering: .sequentiallyConsistent) }

    /// The statements of the store at `path` (all stores when nil) that ran on the pool so far.
    public static func violations(path: String? = nil) -> [Violation] {
        found.withLock { all in all.filter { path == nil || $0.path == path } }
    }

    /// How many statements of the store at `path` were checked so far (the check was on).
    public static func checkedStatements(path: String) -> Int {
        traced.withLock { $0[path] ?? 0 }
    }

    /// True when a task is running on a thread of Swift's cooperative pool (a worker of a global
    /// root queue).
    public static func onCooperativeThread() -> Bool {
        withUnsafeCurrentTask { $0 != nil } && threadName().hasSuffix("-qos")
    }

    /// The current thread's name (`/proc/thread-self/comm`), or "" when it cannot be read.
    public static func threadName() -> String {
        let fd = open("/proc/thread-self/comm", O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return "" }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    /// Checks every statement of `db` from now on, under the name `path` (the store does it in its
    /// `prepareDatabase`; a test can do it on a connection of its own).
    public static func install(on db: Database, path: String) {
        db.trace(options: .statement) { event in
            guard case .statement(let statement) = event else { return }
            traced.withLock { $0[path, default: 0] += 1 }
            guard onCooperativeThread() else { return }
            let violation = Violation(path: path, sql: statement.sql, thread: threadName())
            found.withLock { $0.append(violation) }
            FileHandle.standardError.write(Data("SQLite statement on Swift's cooperative pool: \(violation)\n".utf8))
        }
    }
}
