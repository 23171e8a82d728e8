import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A descriptor waited on by a thread of its own: poll(2) for `events` with no time limit, and
/// `onReady` called on that thread each time they come (it answers whether to go on). ``close()``
/// wakes the thread at once through a pipe; the thread then closes the descriptor. Nothing polls
/// on a timer, so an idle watch costs no wake-ups.
public final class DescriptorWatch: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private let fd: Int32
    /// The wake-up pipe: the thread polls `stopRead`, ``close()`` writes `stopWrite`.
    private let stopRead: Int32, stopWrite: Int32
    private let lock = NSLock()
    private var closed = false

    /// Takes over `fd` (closed when the watch ends, or at once if this fails).
    public init(fd: Int32, events: Int16, name: String, onReady: @escaping @Sendable (Int32) -> Bool,
         onEnd: @escaping @Sendable () -> Void) throws(Failure) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            Glibc.close(fd)
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.fd = fd
        (stopRead, stopWrite) = (ends[0], ends[1])
        let thread = Thread { [fd, stopRead, stopWrite] in
            var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
            while true {
                let ready = poll(&fds, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 || fds[1].revents != 0 || !onReady(fd) { break }
            }
            onEnd()
            Glibc.close(fd)
            Glibc.close(stopRead)
            Glibc.close(stopWrite)
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` with the descriptor while the watch is open (after ``close()`` the thread owns
    /// it and may have closed it); nil when closed.
    public func withDescriptor<T>(_ body: (Int32) -> T) -> T? {
        lock.lock()
        defer { lock.unlock() }
        return closed ? nil : body(fd)
    }

    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        var one: UInt8 = 1
        _ = write(stopWrite, &one, 1)
    }

    deinit { close() }
}
