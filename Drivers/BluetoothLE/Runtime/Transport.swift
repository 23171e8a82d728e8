#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Dispatch
import CBluetooth
import Synchronization
import Foundation
public import BluetoothCentral
import Timing

/// A byte stream to an HCI controller: H4 over TCP, a Unix socket or a serial line, or the Linux
/// HCI user channel (whose packets carry the same packet type indicator, so the H4 framer reads
/// it too).
///
/// `start(on:_:)` delivers chunks as they arrive, on `queue` and in order, then `nil` once when
/// the peer closes, on a read error or after `close()` (callbacks run on a dispatch queue, not on
/// Swift's cooperative pool, so a busy pool cannot delay them). `send` writes the whole buffer or
/// throws; it may be called from any thread.
public protocol HCITransport: AnyObject, Sendable {
    var name: String { get }
    /// Call once.
    func start(on queue: DispatchQueue, _ receive: @escaping @Sendable ([UInt8]?) -> Void)
    func send(_ bytes: [UInt8]) throws(TransportError)
    func close()
}

extension HCITransport {
    /// The chunks as an async stream (starts delivery on a private queue).
    public func chunks() -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        start(on: DispatchQueue(label: "healthgate.ble.transport.\(name)")) { chunk in
            if let chunk { continuation.yield(chunk) } else { continuation.finish() }
        }
        return stream
    }
}

extension TransportError {
    static func errnoName(_ e: Int32) -> String {
        switch e {
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EPERM: "EPERM"
        case EACCES: "EACCES"
        case ENODEV: "ENODEV"
        case ENOENT: "ENOENT"
        case EBUSY: "EBUSY"
        case EALREADY: "EALREADY"
        case ECONNREFUSED: "ECONNREFUSED"
        case ETIMEDOUT: "ETIMEDOUT"
        case ENOTTY: "ENOTTY"
        case EPROTONOSUPPORT: "EPROTONOSUPPORT"
        case EPIPE: "EPIPE"
        case ECONNRESET: "ECONNRESET"
        default: "errno \(e)"
        }
    }

    static func systemMessage(_ e: Int32) -> String { String(cString: strerror(e)) }

    /// The error for a failed HCI user-channel `socket` or `bind` on adapter `index`.
    public static func hci(index: UInt16, errno e: Int32) -> TransportError {
        let name = "hci\(index)", code = errnoName(e)
        switch e {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return TransportError(.unsupported, "\(name): Bluetooth sockets not supported by this kernel (\(code))", errno: e)
        case EPERM, EACCES:
            return TransportError(.permissionDenied, "\(name): permission denied: the HCI user channel needs CAP_NET_ADMIN (\(code))", errno: e)
        case ENODEV:
            return TransportError(.notFound, "\(name): no such Bluetooth adapter (\(code))", errno: e)
        case EBUSY, EALREADY:
            return TransportError(.busy, "\(name): adapter is up or in use by bluetoothd; power it off first, e.g. `btmgmt --index \(index) power off` (\(code))", errno: e)
        default:
            return TransportError(.io, "\(name): \(systemMessage(e)) (\(code))", errno: e)
        }
    }

    static func posix(_ name: String, _ what: String, _ e: Int32) -> TransportError {
        let kind: Kind = switch e {
        case ENOENT: .notFound
        case EACCES, EPERM: .permissionDenied
        case ECONNREFUSED: .refused
        case ETIMEDOUT: .timedOut
        case EBUSY: .busy
        default: .io
        }
        return TransportError(kind, "\(name): \(what): \(systemMessage(e)) (\(errnoName(e)))", errno: e)
    }
}

/// Opens the transport a `TransportAddress` names.
public enum HCITransports {
    /// - Parameter connectTimeout: for TCP only.
    public static func open(_ address: TransportAddress, connectTimeout: Duration = .seconds(5)) throws(TransportError) -> any HCITransport {
        switch address {
        case .tcp(let host, let port):
            return try FileDescriptorTransport(name: address.description, fd: connectTCP(host: host, port: port, timeout: connectTimeout), isSocket: true)
        case .unix(let path):
            return try FileDescriptorTransport(name: address.description, fd: connectUnix(path: path), isSocket: true)
        case .serial(let path, let baud):
            return try FileDescriptorTransport(name: address.description, fd: openSerial(path: path, baud: baud), isSocket: false)
        case .hci(let index):
            return try FileDescriptorTransport(name: "hci\(index)", fd: openHCIUserChannel(index: index), isSocket: true)
        }
    }

    static func connectTCP(host: String, port: UInt16, timeout: Duration) throws(TransportError) -> Int32 {
        let name = "tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw TransportError(.notFound, "\(name): cannot resolve host: \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: TransportError = TransportError(.notFound, "\(name): no address")
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        let ms = Int32(clamping: max(1, timeout.inMilliseconds))
        while let ai = cursor {
            cursor = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { lastError = .posix(name, "socket", errno); continue }
            if connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 {
                let e = errno
                guard e == EINPROGRESS else { lastError = .posix(name, "connect", e); Glibc.close(fd); continue }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let n = poll(&p, 1, ms)
                if n == 0 { lastError = TransportError(.timedOut, "\(name): connect timed out"); Glibc.close(fd); continue }
                var soError: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
                if n < 0 || soError != 0 { lastError = .posix(name, "connect", n < 0 ? errno : soError); Glibc.close(fd); continue }
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw lastError
    }

    static func connectUnix(path: String) throws(TransportError) -> Int32 {
        let name = "unix:\(path)"
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { throw TransportError(.invalid, "\(name): path too long") }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .posix(name, "socket", errno) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let e = errno
            Glibc.close(fd)
            throw .posix(name, "connect", e)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    static func speed(_ baud: Int) -> speed_t? {
        switch baud {
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115_200: speed_t(B115200)
        case 230_400: speed_t(B230400)
        case 460_800: speed_t(B460800)
        case 500_000: speed_t(B500000)
        case 576_000: speed_t(B576000)
        case 921_600: speed_t(B921600)
        case 1_000_000: speed_t(B1000000)
        case 1_152_000: speed_t(B1152000)
        case 1_500_000: speed_t(B1500000)
        case 2_000_000: speed_t(B2000000)
        case 2_500_000: speed_t(B2500000)
        case 3_000_000: speed_t(B3000000)
        case 3_500_000: speed_t(B3500000)
        case 4_000_000: speed_t(B4000000)
        default: nil
        }
    }

    /// Opens a serial device or pty in raw mode (8N1, no flow control, no echo) at `baud`.
    static func openSerial(path: String, baud: Int) throws(TransportError) -> Int32 {
        let name = "serial:\(path)"
        guard let rate = speed(baud) else { throw TransportError(.invalid, "\(name): unsupported baud rate \(baud)") }
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .posix(name, "open", errno) }
        var tio = termios()
        guard tcgetattr(fd, &tio) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw e == ENOTTY ? TransportError(.invalid, "\(name): not a serial device (ENOTTY)", errno: e) : .posix(name, "tcgetattr", e)
        }
        cfmakeraw(&tio)
        tio.c_cflag |= tcflag_t(CLOCAL | CREAD)
        tio.c_cflag &= ~tcflag_t(CSTOPB)
        withUnsafeMutableBytes(of: &tio.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard cfsetispeed(&tio, rate) == 0, cfsetospeed(&tio, rate) == 0, tcsetattr(fd, TCSANOW, &tio) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .posix(name, "set raw mode at \(baud) baud", e)
        }
        _ = tcflush(fd, TCIOFLUSH)
        return fd
    }

    /// The Linux HCI user channel: exclusive raw access to an adapter that is powered off in the
    /// kernel (needs CAP_NET_ADMIN).
    static func openHCIUserChannel(index: UInt16) throws(TransportError) -> Int32 {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw .hci(index: index, errno: errno) }
        var addr = sockaddr_hci(hci_family: sa_family_t(AF_BLUETOOTH), hci_dev: index, hci_channel: UInt16(HCI_CHANNEL_USER))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        if rc != 0 {
            let e = errno
            Glibc.close(fd)
            throw .hci(index: index, errno: e)
        }
        return fd
    }
}

/// A non-blocking file descriptor read by a `DispatchSource` (no thread parked in `read`, no
/// polling loop); writes block the caller briefly with `poll` when the kernel buffer is full.
/// `@unchecked Sendable`: mutable state is guarded by `state`; the read buffer is only touched on
/// the delivery queue (serial).
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    public let name: String
    private let fd: Int32
    private let isSocket: Bool
    private struct State {
        var closed = false
        var source: (any DispatchSourceRead)?
        var fdClosed = false
    }
    private var _state = State()
    private let lock = NSLock()
    private let writeLock = Mutex(())
    private var readBuffer = [UInt8](repeating: 0, count: 65536)

    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&_state)
    }

    /// Takes ownership of `fd`.
    public init(name: String, fd: Int32, isSocket: Bool) {
        self.name = name
        self.fd = fd
        self.isSocket = isSocket
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close() }

    public func start(on queue: DispatchQueue, _ receive: @escaping @Sendable ([UInt8]?) -> Void) {
        let fd = fd
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readAvailable(receive) }
        source.setCancelHandler {
            Glibc.close(fd)
            receive(nil)
        }
        let closed = withState { s in
            if !s.closed { s.source = source }
            return s.closed
        }
        if closed {
            queue.async { receive(nil) }
            return
        }
        source.resume()
    }

    private func readAvailable(_ receive: @Sendable ([UInt8]?) -> Void) {
        while true {
            let n = readBuffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                receive(Array(readBuffer[0..<n]))
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            if n < 0 && errno == EINTR { continue }
            close()  // EOF or error
            return
        }
    }

    public func send(_ bytes: [UInt8]) throws(TransportError) {
        guard !withState({ $0.closed }) else { throw TransportError(.closed, "\(name): closed") }
        let result: TransportError? = writeLock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw in
                    isSocket ? Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                             : Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                }
                if n > 0 { offset += n; continue }
                let e = errno
                if n < 0 && e == EINTR { continue }
                if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) {
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    if poll(&p, 1, 2000) == 0 { return TransportError(.timedOut, "\(name): write timed out (peer not reading)") }
                    continue
                }
                return .posix(name, "write", e)
            }
            return nil
        }
        if let result { throw result }
    }

    /// Idempotent. The descriptor is closed by the read source's cancel handler (after any read
    /// in progress), or here when delivery never started.
    public func close() {
        let (wasClosed, source, closeNow): (Bool, (any DispatchSourceRead)?, Bool) = withState { s in
            guard !s.closed else { return (true, nil, false) }
            s.closed = true
            if s.source == nil && !s.fdClosed { s.fdClosed = true; return (false, nil, true) }
            return (false, s.source, false)
        }
        guard !wasClosed else { return }
        if isSocket { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        if closeNow { Glibc.close(fd) }
        source?.cancel()
    }
}
