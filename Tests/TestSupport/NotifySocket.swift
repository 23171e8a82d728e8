import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for systemd's end of the notify protocol: a datagram socket at a temporary path
/// (pass `path` as `NOTIFY_SOCKET`) that collects the messages sent to it.
public final class NotifySocket: @unchecked Sendable {
    public let path: String
    private let fd: Int32

    public init() throws {
        path = NSTemporaryDirectory() + "hg-notify-\(UUID().uuidString.prefix(8)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw PeerError("bind \(path): errno \(errno)") }
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

    /// A message already waiting, or nil.
    public func receiveNow() -> [String]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").map(String.init)
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
        close(fd)
        unlink(path)
    }
}
