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
        let connection = try RawConnection(port: Int(port), from: source)
        defer { connection.close() }
        let answer = connection.request("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                                        + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        guard answer.status != 0 else { throw ServerFailure("no HTTP answer: \(answer)") }
        var headers: [String: String] = [:]
        for line in answer.head.components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: answer.status, headers: headers, body: answer.body)
    }
}
