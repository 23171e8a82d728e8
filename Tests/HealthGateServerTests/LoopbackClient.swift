import Foundation
import TestSupport

/// HTTP/1.1 requests from a chosen loopback source address (127.0.0.2, 127.0.0.3 ...: Linux routes
/// all of 127/8 to the loopback interface), so that one test can play several client addresses
/// against a real server. Plain blocking sockets, on a thread of their own.
struct LoopbackClient {
    let server: ServerProcess
    /// The source address, e.g. "127.0.0.7".
    let address: String

    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    func post(_ path: String, json: String) async throws -> Answer {
        let port = UInt16(server.url.port ?? 0)
        let address = address
        return try await onOwnThread { try Self.exchange(port: port, from: address, path: path, body: json) }
    }

    /// `POST /v1/sessions` with these credentials.
    func login(_ email: String, _ password: String) async throws -> Answer {
        let body = try JSONSerialization.data(withJSONObject: ["email": email, "password": password, "device_name": "loopback"])
        return try await post("/v1/sessions", json: String(decoding: body, as: UTF8.self))
    }

    private static func exchange(port: UInt16, from source: String, path: String, body: String) throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerFailure("socket: \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)  // only guards against a hang
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func socketAddress(_ text: String, _ port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, text, &address.sin_addr)
            return address
        }
        var local = socketAddress(source, 0)
        var remote = socketAddress("127.0.0.1", port)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw ServerFailure("bind \(source): \(errno)") }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ServerFailure("connect: \(errno)") }
        let request = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw ServerFailure("send: \(errno)") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw ServerFailure("recv: \(errno)") }
            received += buffer[0..<n]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw ServerFailure("no HTTP answer: \(text)") }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = head.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else { throw ServerFailure("bad status line: \(text)") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}
