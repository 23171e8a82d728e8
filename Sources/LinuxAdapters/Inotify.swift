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

    public init(watch: Int32, mask: UInt32, cookie: UInt32, name: String) {
        self.watch = watch
        self.mask = mask
        self.cookie = cookie
        self.name = name
    }

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

/// An inotify instance read on a thread of its own (a ``DescriptorWatch``); events arrive in
/// ``events``. ``close()`` (or the end of iteration) stops the thread at once, without polling.
public final class Inotify: @unchecked Sendable {
    public let events: AsyncStream<InotifyEvent>
    private let watcher: DescriptorWatch

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init() throws(Failure) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw Failure(description: "inotify_init1: \(String(cString: strerror(errno)))") }
        let (events, continuation) = AsyncStream<InotifyEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        self.events = events
        let buffer = ReadBuffer()
        do {
            watcher = try DescriptorWatch(fd: fd, events: Int16(POLLIN), name: "inotify", onReady: { fd in
                let count = buffer.bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
                guard count > 0 else { return false }
                for event in buffer.bytes.withUnsafeBytes({ InotifyEvent.parse(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) {
                    continuation.yield(event)
                }
                return true
            }, onEnd: { continuation.finish() })
        } catch {
            throw Failure(description: error.description)
        }
        continuation.onTermination = { [watcher] _ in watcher.close() }
    }

    /// Watches `path` for the events in `mask` (`IN_CLOSE_WRITE | IN_MOVED_TO ...`); returns the
    /// watch descriptor.
    @discardableResult
    public func watch(_ path: String, mask: UInt32) throws(Failure) -> Int32 {
        guard let wd = watcher.withDescriptor({ inotify_add_watch($0, path, mask) }) else {
            throw Failure(description: "inotify_add_watch \(path): closed")
        }
        guard wd >= 0 else { throw Failure(description: "inotify_add_watch \(path): \(String(cString: strerror(errno)))") }
        return wd
    }

    /// Stops watching `wd` (nothing happens if it is already gone).
    public func unwatch(_ wd: Int32) {
        _ = watcher.withDescriptor { inotify_rm_watch($0, wd) }
    }

    public func close() { watcher.close() }

    deinit { close() }
}

/// The reading thread's buffer (only that thread touches it).
private final class ReadBuffer: @unchecked Sendable {
    var bytes = [UInt8](repeating: 0, count: 64 * 1024)
}
