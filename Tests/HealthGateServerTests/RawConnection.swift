import Foundation
import TestSupport

/// A plain TCP connection to the server on loopback from a chosen local address (any of
/// 127.0.0.0/8), blocking, for tests that talk byte by byte. Use it from a thread of its own.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var isOpen = true

    /// How a read ended.
    enum Ending: Equatable {
        case data
        /// The server closed the connection (end of stream).
        case closed
        /// The server reset it.
        case reset
        /// Nothing came in time.
        case timedOut
    }

    /// An HTTP answer as read off the socket (status 0 when none came).
    struct Answer: CustomStringConvertible {
        var status = 0
        var head = ""
        var body = ""
        var ending = Ending.data
        var description: String { status == 0 ? "no answer (\(ending))" : "\(status) \(body)" }
    }

    init(port: Int, from source: String = "127.0.0.1") throws {
        // Close-on-exec: a server another test starts meanwhile must not inherit it.
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServerFailure("socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        do {
            try Self.withAddress(source, port: 0) { bind(fd, $0, $1) }
            try Self.withAddress("127.0.0.1", port: port) { connect(fd, $0, $1) }
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private static func withAddress(_ host: String, port: Int, _ call: (UnsafePointer<sockaddr>, socklen_t) -> Int32) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw ServerFailure("\(host):\(port): \(String(cString: strerror(errno)))") }
    }

    /// Sends all of `text`; false when the server has closed or reset the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Waits up to `timeout` milliseconds for bytes: `.data` when some came (appended to
    /// `into`), else how the wait ended.
    func read(timeout: Int32, into bytes: inout [UInt8]) -> Ending {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, timeout) > 0 else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buffer, buffer.count, 0)
        if n > 0 {
            bytes.append(contentsOf: buffer[..<n])
            return .data
        }
        return n == 0 ? .closed : .reset
    }

    func read(timeout: Int32) -> Ending {
        var ignored: [UInt8] = []
        return read(timeout: timeout, into: &ignored)
    }

    /// Sends `request` and reads one answer (head and `Content-Length` body), 20 s at most.
    func request(_ request: String) -> Answer {
        var answer = Answer()
        guard send(request) else {
            answer.ending = .reset
            return answer
        }
        var bytes: [UInt8] = []
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.upperBound])
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                let body = String(text[end.upperBound...])
                if body.utf8.count >= length {
                    answer.head = head
                    answer.body = body
                    answer.status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                    return answer
                }
            }
            answer.ending = read(timeout: 20_000, into: &bytes)
            if answer.ending != .data { return answer }
        }
    }

    /// Sends `count` bytes one at a time, `every` milliseconds apart, and answers how many were
    /// sent before the server closed the connection (`count`: it never did).
    func trickle(_ count: Int, every milliseconds: Int32) -> Int {
        for sent in 0..<count {
            // Waiting for the server to say something (it closes) paces the bytes.
            if read(timeout: milliseconds) != .timedOut { return sent }
            if !send("a") { return sent }
        }
        return count
    }

    /// Whether the server has answered (or closed) the connection, without waiting.
    var wasAnswered: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) >= 0
    }

    /// Ends the connection (shutdown first: that ends it even if another process holds the descriptor).
    func close() {
        guard isOpen else { return }
        isOpen = false
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    deinit { close() }
}
