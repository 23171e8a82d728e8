public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The systemd notify protocol (`Type=notify`): datagrams of `KEY=VALUE` lines sent to the
/// Unix socket named by `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
public final class SystemdNotifier: Sendable {
    /// Where messages go (nil: nowhere).
    public let socketPath: String?
    /// How often systemd wants `WATCHDOG=1` (half its `WATCHDOG_USEC`), or nil.
    public let watchdogInterval: Duration?

    /// From the process environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, `WATCHDOG_PID`).
    public convenience init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        var interval: Duration?
        // WATCHDOG_PID, when set, names the process the watchdog is meant for.
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0 {
            interval = .microseconds(usec / 2)
        }
        self.init(socketPath: socket, watchdogInterval: interval)
    }

    public init(socketPath: String?, watchdogInterval: Duration?) {
        self.socketPath = socketPath
        self.watchdogInterval = watchdogInterval
    }

    /// Startup is complete.
    public func ready(status: String? = nil) { send(["READY=1"] + statusLine(status)) }

    /// A one-line status `systemctl status` shows.
    public func status(_ text: String) { send(statusLine(text)) }

    /// The watchdog ping.
    public func watchdog() { send(["WATCHDOG=1"]) }

    /// Reloading the configuration (SIGHUP); call ``ready(status:)`` when done.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let usec = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        send(["RELOADING=1", "MONOTONIC_USEC=\(usec)"])
    }

    /// Shutting down.
    public func stopping(status: String? = nil) { send(["STOPPING=1"] + statusLine(status)) }

    private func statusLine(_ text: String?) -> [String] {
        // One line: a newline would start a new assignment.
        text.map { ["STATUS=" + $0.replacingOccurrences(of: "\n", with: " ")] } ?? []
    }

    /// Sends one datagram; failures are ignored (the protocol is advisory). Never waits: a
    /// receiver whose queue is full (a socket nobody reads; the kernel queues ten datagrams) makes
    /// the message dropped, not the caller blocked: a blocked watchdog ping held a daemon's
    /// shutdown for ever (its task could not be cancelled out of `sendto`).
    func send(_ lines: [String]) {
        guard let socketPath, !lines.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let message = Array(lines.joined(separator: "\n").utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                message.withUnsafeBytes { bytes in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), sockaddrPointer, length)
                }
            }
        }
    }
}
