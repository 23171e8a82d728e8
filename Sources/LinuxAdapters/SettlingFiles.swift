import Foundation
import Timing
#if canImport(Glibc)
import Glibc
#endif

/// At most one pending settle check: ``schedule()`` asks for a tick unless one is pending,
/// ``fired()`` says it came. The timer itself, ``run(after:_:)``, is a child task of the driver's
/// task group that sleeps only when asked to: checks run only while files wait, so idle folders
/// cost nothing. Copies share the timer (the owner keeps its copy, the child runs another).
public struct SettleTimer: Sendable {
    private var pending = false
    private let armed = Doorbell()

    public init() {}

    public mutating func schedule() {
        guard !pending else { return }
        pending = true
        armed.ring()
    }

    public mutating func fired() { pending = false }

    /// Each ``schedule()`` gives one `fire()` after `delay`; returns when cancelled.
    public func run(after delay: Duration, _ fire: @escaping @Sendable () -> Void) async {
        while await armed.wait() {
            do { try await Task.sleep(for: delay) } catch { return }
            fire()
        }
    }
}

/// Files that may still be being written, and when each counts as complete. A file seen being
/// written waits for its close (the caller hears of it from inotify and calls ``remove(_:)``;
/// the kernel closes a file even when its writer dies). A file whose writing was not seen
/// (found by listing a folder) is complete once its size and time stood still for `settle`.
public struct SettlingFiles {
    struct Seen {
        var size: Int64
        var modified: Double
        var since: ContinuousClock.Instant
        /// A writer was seen (created or modified while watched): wait for its close.
        var writing: Bool
    }

    public let settle: Duration
    private var pending: [String: Seen] = [:]
    private let clock = ContinuousClock()

    public init(settle: Duration) { self.settle = settle }

    public var isEmpty: Bool { pending.isEmpty }
    /// Paths waiting, sorted.
    public var waiting: [String] { pending.keys.sorted() }

    /// Starts (or goes on) watching `path`; `writing`: a writer was seen.
    public mutating func observe(_ path: String, writing: Bool) {
        guard let now = Self.stat(path) else { return }
        let wasWriting = pending[path]?.writing ?? false
        if let seen = pending[path], seen.size == now.size, seen.modified == now.modified, seen.writing || !writing { return }
        pending[path] = Seen(size: now.size, modified: now.modified, since: clock.now, writing: writing || wasWriting)
    }

    /// Forgets `path` (closed after writing, moved away, deleted).
    public mutating func remove(_ path: String) { pending[path] = nil }

    /// Files whose size and time have stood still for the settle time; they are forgotten.
    public mutating func settled() -> [String] {
        var ready: [String] = []
        for (path, seen) in pending where !seen.writing {
            guard let now = Self.stat(path) else {
                pending[path] = nil  // gone
                continue
            }
            if now.size != seen.size || now.modified != seen.modified {
                pending[path] = Seen(size: now.size, modified: now.modified, since: clock.now, writing: false)
            } else if clock.now - seen.since >= settle {
                pending[path] = nil
                ready.append(path)
            }
        }
        return ready.sorted()
    }

    /// Size and modification time of a regular file, or nil.
    public static func stat(_ path: String) -> (size: Int64, modified: Double)? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (Int64(info.st_size), Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }
}
