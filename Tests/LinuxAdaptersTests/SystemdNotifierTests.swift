import Foundation
import LinuxAdapters
import Testing
import TestSupport

@Suite struct SystemdNotifierTests {
    @Test func sendsTheProtocolsMessagesToTheSocket() async throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "20000000"])
        #expect(notifier.watchdogInterval == .seconds(10))
        notifier.ready(status: "watching 1 folder\nand more")
        #expect(await socket.receive() == ["READY=1", "STATUS=watching 1 folder and more"])
        notifier.watchdog()
        #expect(await socket.receive() == ["WATCHDOG=1"])
        notifier.reloading()
        let reload = try #require(await socket.receive())
        #expect(reload.first == "RELOADING=1" && reload.count == 2 && reload[1].hasPrefix("MONOTONIC_USEC="))
        notifier.stopping(status: "stopping")
        #expect(await socket.receive() == ["STOPPING=1", "STATUS=stopping"])
    }

    @Test func withoutSystemdNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(notifier.socketPath == nil && notifier.watchdogInterval == nil)
        notifier.ready()  // must not fail
        // A watchdog meant for another process is not ours to ping.
        let other = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"])
        #expect(other.watchdogInterval == nil)
    }

    /// A notify socket nobody reads fills after ten datagrams (the kernel's queue): the daemon's
    /// watchdog pings must then be dropped, not block the task that sends them (a full-suite run
    /// had a daemon ignore SIGTERM for 5 minutes that way: its watchdog task sat in `sendto`).
    @Test func aReceiverThatDoesNotReadNeverBlocksTheSender() async throws {
        // A bound datagram socket nobody reads (NotifySocket reads all the time, as systemd does).
        let path = NSTemporaryDirectory() + "hg-notify-unread-\(UUID().uuidString.prefix(8)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000000"])
        let sent = try await onOwnThread { () -> Int in
            for _ in 0..<200 { notifier.watchdog() }
            return 200
        }
        #expect(sent == 200)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 10, "WATCHDOG=1 queued")
    }
}
