import AsyncHTTPClient
import Gzip
import Foundation
import HealthModel
import NIOCore
import NIOHTTP1
import NIOSSL
import SyncProtocol

/// Why a request to the tracking server failed, sorted by what the caller should do.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 401: the token is wrong or revoked. Log in again; nothing is lost.
    case unauthorized(String)
    /// The server refused this request as it is (400, 409, 413, 415 ...); sending it unchanged
    /// will fail again.
    case refused(status: Int, code: String, message: String)
    /// Worth retrying: 429, 5xx, a timeout, a connection problem. `retryAfter` from the answer.
    case transient(String, retryAfter: Duration?)
    /// The answer did not make sense (not the protocol).
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .unauthorized(let m): "the server refused the token (\(m)); log in again"
        case .refused(let status, let code, let message): "the server refused the request: \(status) \(code): \(message)"
        case .transient(let m, _): m
        case .invalidResponse(let m): "unexpected answer from the server: \(m)"
        }
    }
}

/// The tracking server's API over HTTP(S), one call per endpoint. Timeouts on everything; TLS
/// verified against the system trust store, or only against a pinned CA when one is given.
public final class SyncClient: Sendable {
    public struct Configuration: Sendable {
        /// e.g. `https://health.example.org` (no path) or `http://127.0.0.1:8080`.
        public var server: URL
        public var connectTimeout: Duration = .seconds(10)
        /// Whole-request deadline.
        public var requestTimeout: Duration = .seconds(60)
        /// PEM file of the only CA to trust (a private server); nil: the system trust store.
        public var pinnedCAFile: String?
        /// Compress upload bodies (`Content-Encoding: gzip`).
        public var gzip = true

        public init(server: URL) { self.server = server }
    }

    public let configuration: Configuration
    private let http: HTTPClient

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        var tls = TLSConfiguration.makeClientConfiguration()
        if let ca = configuration.pinnedCAFile {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca))
        }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.timeout = .init(connect: .init(configuration.connectTimeout), read: .init(configuration.requestTimeout))
        http.redirectConfiguration = .disallow
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
    }

    /// Closes connections; call once when done.
    public func shutdown() async {
        try? await http.shutdown()
    }

    // MARK: Endpoints

    public func health() async throws(SyncError) -> HealthResponse {
        try await call(.GET, "/health", token: nil, body: nil)
    }

    public func register(email: String, password: String) async throws(SyncError) -> RegisterResponse {
        try await call(.POST, "/accounts", token: nil, body: json(RegisterRequest(email: email, password: password)))
    }

    public func login(email: String, password: String, deviceName: String) async throws(SyncError) -> LoginResponse {
        try await call(.POST, "/sessions", token: nil,
                       body: json(LoginRequest(email: email, password: password, deviceName: deviceName)))
    }

    /// Revokes `token` on the server.
    public func logout(token: String) async throws(SyncError) {
        let _: Empty = try await call(.DELETE, "/sessions/current", token: token, body: nil)
    }

    public func markPrimary(token: String) async throws(SyncError) -> DeviceInfo {
        try await call(.PUT, "/devices/current/primary", token: token, body: nil)
    }

    public func devices(token: String) async throws(SyncError) -> DeviceList {
        try await call(.GET, "/devices", token: token, body: nil)
    }

    /// Uploads records already encoded as one `UploadRequest` body.
    public func upload(body: ByteBuffer, token: String) async throws(SyncError) -> UploadResponse {
        var body = body
        var headers: [(String, String)] = []
        if configuration.gzip {
            // Level 1: most of the size saving (records repeat their keys) for a fraction of the
            // default level's CPU, which a drain of a large backlog spends per upload.
            body = ByteBuffer(bytes: body.withUnsafeReadableBytes { Gzip.compress($0, level: 1) })
            headers.append(("Content-Encoding", "gzip"))
        }
        return try await call(.POST, "/records", token: token, body: body, headers: headers)
    }

    public func history(after cursor: Int64, limit: Int, token: String) async throws(SyncError) -> HistoryPage {
        try await call(.GET, "/records?after=\(cursor)&limit=\(limit)", token: token, body: nil)
    }

    /// Logs one of the account's devices out (`.refused` 404 when it has no such device).
    public func revokeDevice(id: String, token: String) async throws(SyncError) {
        let segment = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? id
        let _: Empty = try await call(.DELETE, "/devices/\(segment)", token: token, body: nil)
    }

    /// Sets a new password (`.refused` 403 when `current` is wrong); the account's other devices
    /// are logged out.
    public func changePassword(current: String, new: String, token: String) async throws(SyncError) -> PasswordChangeResponse {
        try await call(.PUT, "/accounts/current/password", token: token,
                       body: json(PasswordChangeRequest(currentPassword: current, newPassword: new)))
    }

    /// Deletes the account with its records and devices (`.refused` 403 when `password` is wrong).
    public func deleteAccount(password: String, token: String) async throws(SyncError) {
        let _: Empty = try await call(.POST, "/accounts/current/deletion", token: token,
                                      body: json(AccountDeletionRequest(password: password)))
    }

    // MARK: Plumbing

    private struct Empty: Decodable {}

    private func json(_ value: some Encodable) throws(SyncError) -> ByteBuffer {
        do { return ByteBuffer(bytes: try SyncJSONEncoder().encode(value)) } catch {
            throw .invalidResponse("cannot encode the request: \(error)")
        }
    }

    private func call<T: Decodable>(_ method: HTTPMethod, _ path: String, token: String?, body: ByteBuffer?,
                                    headers: [(String, String)] = []) async throws(SyncError) -> T {
        var request = HTTPClientRequest(url: configuration.server.absoluteString.trimmingSuffix("/") + SyncAPI.prefix + path)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "healthgate")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }

        let status: Int
        let retryAfter: Duration?
        let bytes: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: .init(configuration.requestTimeout))
            status = Int(response.status.code)
            retryAfter = response.headers.first(name: "Retry-After").flatMap(Self.retryAfter)
            bytes = try await response.body.collect(upTo: SyncAPI.maxBodyBytes)
        } catch {
            throw .transient("\(configuration.server.host ?? "server"): \(Self.describe(error))", retryAfter: nil)
        }
        let data = Array(bytes.readableBytesView)
        guard (200..<300).contains(status) else {
            let answer = try? SyncJSONDecoder().decode(ErrorResponse.self, from: data)
            let code = answer?.error.code ?? "http_\(status)"
            let message = answer?.error.message ?? String(decoding: data.prefix(200), as: UTF8.self)
            switch status {
            case 401: throw .unauthorized(message)
            case 408, 429, 500...: throw .transient("server answered \(status) \(code): \(message)", retryAfter: retryAfter)
            default: throw .refused(status: status, code: code, message: message)
            }
        }
        if T.self == Empty.self, let empty = Empty() as? T { return empty }
        do { return try SyncJSONDecoder().decode(T.self, from: data) } catch let error as DecodingError {
            throw .invalidResponse("\(method) \(path): " + SyncAPI.describe(error))
        } catch {
            throw .invalidResponse("\(method) \(path): \(error)")
        }
    }

    /// `Retry-After` as seconds or an HTTP date.
    static func retryAfter(_ value: String) -> Duration? {
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 {
            return .milliseconds(Int64(seconds * 1000))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000))
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .connectTimeout: return "no answer in time"
            case .remoteConnectionClosed: return "the connection closed before an answer"
            default: return "\(e)"
            }
        }
        return "\(error)"
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
