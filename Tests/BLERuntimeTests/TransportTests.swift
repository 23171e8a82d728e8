#if canImport(Glibc)
import Glibc
#endif
import Testing
import BluetoothCentral
import BLEHost
@testable import BLERuntime

/// Opening transports from `TransportAddress`: the error paths, and a real byte round trip over
/// a pty (termios raw mode) and a TCP listener.
@Suite struct TransportTests {
    @Test func hciUserChannelErrorMessages() {
        let e = TransportError.hci(index: 0, errno: EAFNOSUPPORT)
        #expect(e.kind == .unsupported)
        #expect(e.message == "hci0: Bluetooth sockets not supported by this kernel (EAFNOSUPPORT)")
        #expect(TransportError.hci(index: 1, errno: EPERM).kind == .permissionDenied)
        #expect(TransportError.hci(index: 1, errno: EPERM).message.hasPrefix("hci1: permission denied"))
        #expect(TransportError.hci(index: 2, errno: ENODEV).message.hasPrefix("hci2: no such Bluetooth adapter"))
        #expect(TransportError.hci(index: 0, errno: EBUSY).kind == .busy)
    }

    /// On this machine the kernel has no Bluetooth (EAFNOSUPPORT); elsewhere the socket exists but
    /// binding fails without CAP_NET_ADMIN or without the adapter. Either way: a typed error that
    /// names the adapter, never a crash.
    @Test func openingHCIUserChannelFailsWithATypedError() throws {
        let address = try TransportAddress(parsing: "hci0")
        do {
            let t = try HCITransports.open(address)
            t.close()  // a machine with a free hci0 and CAP_NET_ADMIN: fine too
        } catch {
            #expect(error.message.hasPrefix("hci0: "))
            if error.errno == EAFNOSUPPORT {
                #expect(error.message == "hci0: Bluetooth sockets not supported by this kernel (EAFNOSUPPORT)")
            }
        }
    }

    @Test func tcpConnectionRefused() throws {
        // Bind a port, then close it: nothing listens there.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = UInt16(bigEndian: addr.sin_port)
        close(fd)
        #expect(throws: TransportError.self) { try HCITransports.open(.tcp(host: "127.0.0.1", port: port)) }
        do {
            _ = try HCITransports.open(.tcp(host: "127.0.0.1", port: port))
        } catch {
            #expect(error.kind == .refused)
            #expect(error.message.hasPrefix("tcp:127.0.0.1:\(port): connect: "))
        }
    }

    @Test func unresolvableHost() {
        do {
            _ = try HCITransports.open(.tcp(host: "no-such-host.invalid", port: 1))
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .notFound)
        }
    }

    @Test func unixSocketMissing() {
        do {
            _ = try HCITransports.open(.unix(path: "/tmp/healthgate-no-such-socket-\(getpid())"))
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message.contains("ENOENT"))
        }
    }

    @Test func serialErrors() {
        do {
            _ = try HCITransports.open(.serial(path: "/dev/healthgate-no-such-tty", baud: 115_200))
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .notFound)
        }
        do {
            _ = try HCITransports.open(.serial(path: "/dev/null", baud: 115_200))
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .invalid)
            #expect(error.message == "serial:/dev/null: not a serial device (ENOTTY)")
        }
    }

    /// A pty stands in for a UART: raw mode must pass every byte value through unchanged.
    @Test func serialRoundTripOverPty() async throws {
        // posix_openpt/ptsname are not imported by Glibc's module map: /dev/ptmx and its ioctls.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0, number: UInt32 = 0
        #expect(ioctl(master, 0x4004_5431, &unlock) == 0)  // TIOCSPTLCK
        #expect(ioctl(master, 0x8004_5430, &number) == 0)  // TIOCGPTN
        let slave = "/dev/pts/\(number)"
        let t = try HCITransports.open(.serial(path: slave, baud: 921_600))
        defer { t.close() }
        // Put the master side in raw mode too, so nothing is translated on the way back.
        var tio = termios()
        tcgetattr(master, &tio)
        cfmakeraw(&tio)
        tcsetattr(master, TCSANOW, &tio)

        let payload: [UInt8] = [0x01, 0x03, 0x0C, 0x00, 0x0A, 0x0D, 0x11, 0x13, 0x7F, 0xFF, 0x00]
        try t.send(payload)
        var got = [UInt8](repeating: 0, count: 64)
        var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        #expect(poll(&p, 1, 2000) == 1)
        let n = read(master, &got, got.count)
        #expect(Array(got.prefix(max(0, n))) == payload)

        let back: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
        _ = back.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        let received = try await withTimeout {
            var all: [UInt8] = []
            for await chunk in t.chunks() {
                all += chunk
                if all.count >= back.count { break }
            }
            return all
        }
        #expect(received == back)
    }
}
