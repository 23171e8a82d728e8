import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One inotify event: what happened to `name` in the watched folder `watch`.
public struct InotifyEvent: Sendable, Equatable {
    public var watch: Int32
    public var mask: UInt32
    public var cookie: UInt32
    public var name: String

    public var isCloseWrite: Bool { mask & UInt32(IN_CLOSE_WRITE) != 0 }
    public var isMovedTo: Bool { mask & UInt32(IN_MOVED_TO) != 0 }
    public var isCreate: Bool { mask & UInt32(IN_CREATE) != 0 }
    public var isDirectory: Bool { mask & UInt32(IN_ISDIR) != 0 }
    /// The watch is gone (removed, or its file system unmounted).
    public var isWatchRemoved: Bool { mask & UInt32(IN_IGNORED) != 0 }
    /// Events were lost (the kernel's queue overflowed): rescan.
    public var isOverflow: Bool { mask & UInt32(IN_Q_OVERFLOW) != 0 }

    /// The events in a buffer read from an inotify descriptor (`struct inotify_event` records:
    /// wd, mask, cookie, len, then `len` bytes of NUL-padded name). A truncated record ends the
    /// list; nothing is read past the buffer.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> [InotifyEvent] {
        var events: [InotifyEvent] = []
        var offset = 0
        let header = 16
        while offset + header <= bytes.count {
            let wd = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            guard length <= bytes.count - offset - header else { break }
            let nameBytes = bytes[(offset + header)..<(offset + header + length)].prefix { $0 != 0 }
            events.append(InotifyEvent(watch: wd, mask: mask, cookie: cookie, name: String(decoding: nameBytes, as: UTF8.self)))
            offset += header + length
        }
        return events
    }
}

/// An inotify instance read on a thread of its own; events arrive in ``events``. ``close()``
/// (or the end of iteration) stops the thread at once through a wake-up pipe, without polling.
public final class Inotify: @unchecked Sendable {
    public let events: AsyncStream<InotifyEvent>
    private let continuation: AsyncStream<InotifyEvent>.Continuation
    private let fd: Int32
    /// The wake-up pipe: the thread reads `stopRead`, ``close()`` writes `stopWrite`.
    private let stopRead: Int32
    private let stopWrite: Int32
    private let lock = NSLock()
    private var closed = false

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init() throws(Failure) {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw Failure(description: "inotify_init1: \(String(cString: strerror(errno)))") }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            Glibc.close(fd)
            throw Failure(description: "pipe2: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        (stopRead, stopWrite) = (ends[0], ends[1])
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(4096))
        continuation.onTermination = { [weak self] _ in self?.close() }
        let thread = Thread { [fd, stopRead, stopWrite, continuation] in
            Self.readLoop(fd: fd, stopRead: stopRead, stopWrite: stopWrite, continuation: continuation)
        }
        thread.name = "inotify"
        thread.start()
    }

    /// Watches `path` for the events in `mask` (`IN_CLOSE_WRITE | IN_MOVED_TO ...`); returns the
    /// watch descriptor.
    @discardableResult
    public func watch(_ path: String, mask: UInt32) throws(Failure) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { throw Failure(description: "inotify_add_watch \(path): closed") }
        let wd = inotify_add_watch(fd, path, mask)
        guard wd >= 0 else { throw Failure(description: "inotify_add_watch \(path): \(String(cString: strerror(errno)))") }
        return wd
    }

    /// Stops watching `wd` (nothing happens if it is already gone).
    public func unwatch(_ wd: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if !closed { _ = inotify_rm_watch(fd, wd) }  // after close the reading thread owns (and closes) fd
    }

    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        var one: UInt8 = 1
        _ = write(stopWrite, &one, 1)  // wakes the reading thread, which closes the descriptors
    }

    deinit { close() }

    private static func readLoop(fd: Int32, stopRead: Int32, stopWrite: Int32,
                                 continuation: AsyncStream<InotifyEvent>.Continuation) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || fds[1].revents != 0 { break }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count > 0 else { break }
            for event in buffer.withUnsafeBytes({ InotifyEvent.parse(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) {
                continuation.yield(event)
            }
        }
        continuation.finish()
        Glibc.close(fd)
        Glibc.close(stopRead)
        Glibc.close(stopWrite)
    }
}
