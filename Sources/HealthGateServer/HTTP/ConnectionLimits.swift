public import Foundation
import Synchronization

/// How many connections the server keeps open and how long it waits on them.
///
/// Every connection is a file descriptor. Past the open-file limit the kernel still completes
/// new TCP handshakes but the server cannot accept them, so clients would wait for an answer
/// that never comes. The caps keep the server below that limit: a connection over a cap is
/// answered 503 with `Retry-After` and closed, and a slow client is cut off by the request
/// timeout instead of holding its connection (and descriptor) for as long as it likes.
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections open at once; past it, new ones are refused.
    public var maxConnections: Int
    /// Connections open at once from one client address (behind a reverse proxy every client
    /// has the proxy's address: raise it to `maxConnections` there).
    public var maxConnectionsPerAddress = 64
    /// Refused connections being answered at once (503, then a short wait for the client to
    /// close); past it, a refused connection is closed without an answer. Descriptors too.
    public var maxRefusing: Int
    /// Time allowed to receive a request, head and body, from its first byte.
    public var requestTimeout: Duration = .seconds(60)
    /// A connection without a request for this long is closed. 90 s: longer than the daemon's
    /// default sync interval (60 s), so that a connection kept for the next sync is not closed by
    /// the server at the very moment the client sends on it.
    public var idleTimeout: Duration = .seconds(90)
    /// `Retry-After` of a refusal, in seconds.
    public var retryAfter = 5

    /// Descriptors the store may hold besides the reserve: a PostgreSQL pool's connections (its
    /// maximum), 0 for SQLite (its files are in the reserve).
    public var storeDescriptors = 0

    /// Caps that fit under `openFileLimit` descriptors with the store's
    /// (see ``OpenFileLimit/budget(openFileLimit:storeDescriptors:)``).
    public init(openFileLimit: Int = OpenFileLimit.current(), storeDescriptors: Int = 0) {
        let budget = OpenFileLimit.budget(openFileLimit: openFileLimit, storeDescriptors: storeDescriptors)
        maxConnections = budget.connections
        maxRefusing = budget.refusing
        self.storeDescriptors = storeDescriptors
    }
}

/// The process's open-file limit (RLIMIT_NOFILE) and how the server shares it out.
public enum OpenFileLimit {
    /// Descriptors kept for everything but client connections: standard streams, the listening
    /// socket, the SQLite files (main file and log of each pooled connection, the shared memory),
    /// and a few (epoll, eventfd, timerfd) for each event loop thread. A running server uses
    /// about 25 on two cores.
    public static func reserved(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int {
        64 + 4 * cores
    }

    /// The caps for `openFileLimit`: what is left after ``reserved(cores:)``, a tenth of it for
    /// refusals in progress and the rest for connections.
    /// `storeDescriptors`: what the store's pool may open on top (a PostgreSQL pool opens its
    /// connections as requests need them: counted at their maximum, so that the pool growing
    /// under a full house cannot take the descriptors the caps promised to clients).
    public static func budget(openFileLimit: Int, storeDescriptors: Int = 0) -> (connections: Int, refusing: Int) {
        let usable = max(openFileLimit - reserved() - storeDescriptors, 2)
        let refusing = max(usable / 10, 1)
        return (usable - refusing, refusing)
    }

    /// The soft limit now.
    public static func current() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return clamp(limit.rlim_cur)
    }

    /// Raises the soft limit to the hard one (as far as the kernel allows) and answers the soft
    /// limit in force afterwards.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current() }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0, limit.rlim_max == rlim_t.max,
               let text = try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8),
               let ceiling = rlim_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                // An unlimited hard limit: the kernel's own ceiling is the most a process may have.
                raised.rlim_cur = ceiling
                _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
            }
        }
        return current()
    }

    private static func clamp(_ value: rlim_t) -> Int {
        value >= rlim_t(Int32.max) ? Int(Int32.max) : Int(value)
    }
}

/// The open connections, in total and per client address, and whether one more may open. Pure.
public struct ConnectionCounts: Sendable {
    /// What happens to a new connection.
    public enum Admission: Sendable, Equatable {
        case admitted
        /// Answered 503 and closed, for the reason given.
        case refused(Refusal)
        /// Closed at once without an answer: too many refusals are already in progress.
        case dropped(Refusal)
    }

    public enum Refusal: Sendable, Equatable {
        /// `maxConnections` are open.
        case total
        /// `maxConnectionsPerAddress` are open from the client's address.
        case perAddress
        /// The open-file limit in force now (lowered since the server started, e.g. by
        /// `prlimit`) leaves room for this many connections, and they are open.
        case openFiles(Int)
    }

    public let limits: ConnectionLimits
    public private(set) var open = 0
    public private(set) var refusing = 0
    private var perAddress: [String: Int] = [:]

    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Decides on a new connection from `address` and counts it until ``release(_:address:)``.
    ///
    /// `openFileLimit` is the limit in force now: the caps were fitted under the limit at start,
    /// but it can be lowered under a running process, and the process must never reach it. At
    /// the limit, every `open` fails, and libdispatch (Swift's concurrency pool on Linux) opens
    /// `/proc/<tid>/stat` for each of its worker threads every second and stops the process
    /// (SIGILL) when it cannot. So the budget of the limit now bounds the caps too.
    public mutating func admit(address: String, openFileLimit: Int = Int(Int32.max)) -> Admission {
        let fromAddress = perAddress[address, default: 0]
        let budget = OpenFileLimit.budget(openFileLimit: openFileLimit, storeDescriptors: limits.storeDescriptors)
        let refusal: Refusal
        if open >= budget.connections, budget.connections < limits.maxConnections {
            refusal = .openFiles(budget.connections)
        } else if open >= limits.maxConnections {
            refusal = .total
        } else if fromAddress >= limits.maxConnectionsPerAddress {
            refusal = .perAddress
        } else {
            open += 1
            perAddress[address] = fromAddress + 1
            return .admitted
        }
        guard refusing < min(limits.maxRefusing, budget.refusing) else { return .dropped(refusal) }
        refusing += 1
        return .refused(refusal)
    }

    /// Forgets a connection once it is closed.
    public mutating func release(_ admission: Admission, address: String) {
        switch admission {
        case .admitted:
            open -= 1
            let left = perAddress[address, default: 1] - 1
            perAddress[address] = left > 0 ? left : nil
        case .refused:
            refusing -= 1
        case .dropped:
            break
        }
    }

    /// Connections open from `address`.
    public func open(from address: String) -> Int { perAddress[address, default: 0] }
}

/// The server's one ``ConnectionCounts``, shared by the event loop threads.
public final class ConnectionRegistry: Sendable {
    public let limits: ConnectionLimits
    private let counts: Mutex<ConnectionCounts>

    public init(limits: ConnectionLimits) {
        self.limits = limits
        counts = Mutex(ConnectionCounts(limits: limits))
    }

    /// Decides on a new connection under the open-file limit in force now (one `getrlimit`).
    public func admit(address: String) -> ConnectionCounts.Admission {
        let openFileLimit = OpenFileLimit.current()
        return counts.withLock { $0.admit(address: address, openFileLimit: openFileLimit) }
    }

    public func release(_ admission: ConnectionCounts.Admission, address: String) {
        counts.withLock { $0.release(admission, address: address) }
    }

    /// Connections open now.
    public var open: Int { counts.withLock { $0.open } }
}
