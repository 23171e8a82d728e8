import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for systemd's end of the notify protocol: a datagram socket at a temporary path
/// (pass `path` as `NOTIFY_SOCKET`) that collects the messages sent to it. Like systemd it reads
/// all the time (a thread of its own queues what arrives), so a daemon's messages never find the
/// kernel's ten-datagram queue full while a test is busy elsewhere (the daemon drops them then).
public final class NotifySocket: @unchecked Sendable {
    /// The socket and what was read from it; owned by the reading thread until it stops.
    private final class Reader: @unchecked Sendable {
        let fd: Int32
        let lock = NSLock()
        var queue: [[String]] = []
        var stopped = false

        init(fd: Int32) { self.fd = fd }

        func run() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !lock.withLock({ stopped }) {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) == 1 else { continue }
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { continue }
                let message = String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").map(String.init)
                lock.withLock { queue.append(message) }
            }
            close(fd)
        }
    }

    public let path: String
    private let reader: Reader

    public init() throws {
        let path = NSTemporaryDirectory() + "hg-notify-\(UUID().uuidString.prefix(8)).sock"
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw PeerError("bind \(path): errno \(errno)")
        }
        let reader = Reader(fd: fd)
        self.reader = reader
        let thread = Thread { reader.run() }
        thread.name = "notify-socket"
        thread.start()
    }

    /// The next message (its lines), waiting up to `timeout` seconds; nil if none came. Waits
    /// with `Task.sleep` between checks, so that concurrent tests keep their threads.
    public func receive(timeout: Double = 10) async -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let message = receiveNow() { return message }
            try? await Task.sleep(for: .milliseconds(20))
        } while Date() < deadline
        return receiveNow()
    }

    /// A message already received, or nil.
    public func receiveNow() -> [String]? {
        reader.lock.withLock { reader.queue.isEmpty ? nil : reader.queue.removeFirst() }
    }

    /// Messages until one contains `line` (returned with everything before it), or nil after
    /// `timeout` seconds (default ``Patience/limit``).
    public func waitFor(_ line: String, timeout: Double = Patience.seconds) async -> [[String]]? {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [[String]] = []
        while Date() < deadline {
            guard let message = await receive(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { break }
            seen.append(message)
            if message.contains(line) { return seen }
        }
        return nil
    }

    deinit {
        reader.lock.withLock { reader.stopped = true }
        unlink(path)
    }
}
