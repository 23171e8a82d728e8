import AsyncHTTPClient
import Gzip
public import Foundation
import HealthModel
public import NIOCore
import NIOHTTP1
import NIOSSL
public import SyncProtocol

/// Why a request to the tracking server failed, sorted by what the caller should do. Every text
/// from the server in it is made safe to print (``DisplayText``).
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 401: the token is wrong, expired or revoked. Log in again; nothing is lost.
    case unauthorized(String)
    /// The tracking server itself refused this request as it is: an answer in the protocol's
    /// error format (400, 409, 413, 415 ...), its texts made safe to print. Sending it unchanged
    /// will fail again. The answer may name a record (`recordId`) or a size limit (`maxBytes`).
    case refused(status: Int, answer: ErrorResponse.Body)
    /// The answer is not the sync protocol's: a redirect, or an error page from a proxy or
    /// another web server (301, 403, 404, 407 ...). Nothing is retried or given up until the
    /// path to the server is fixed.
    case notTheServer(status: Int, detail: String)
    /// Worth retrying: 408, 429, 5xx, a timeout, a connection problem. `retryAfter` from the
    /// answer (already clamped to ``SyncClient/longestServerWait``).
    case transient(String, retryAfter: Duration?)
    /// A 2xx answer that did not make sense (not the protocol: a captive portal, a broken
    /// proxy); retried like a transient failure.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .unauthorized(let m): "the server refused the token (\(m)); log in again"
        case .refused(let status, let answer): "the server refused the request: \(status) \(answer.code): \(answer.message)"
        case .notTheServer(let status, let detail):
            "the answer (HTTP \(status)) did not come from a HealthGate tracking server: \(detail); check the server address "
                + "and any proxy in between (nothing was lost: the records stay in the outbox)"
        case .transient(let m, _): m
        case .invalidResponse(let m): "unexpected answer from the server: \(m)"
        }
    }

    /// Worth sending again after a wait.
    public var isTransient: Bool {
        switch self {
        case .transient, .invalidResponse: true
        case .unauthorized, .refused, .notTheServer: false
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
        // Idle connections are closed well before a server would close them (the reference
        // server after 90 s): a request never goes out on a connection the server is closing.
        http.connectionPool = .init(idleTimeout: .seconds(30))
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
        return try await call(.POST, "/records", token: token, body: body, headers: headers, idempotent: true)
    }

    public func history(after cursor: Int64, limit: Int, token: String) async throws(SyncError) -> HistoryPage {
        try await call(.GET, "/records?after=\(cursor)&limit=\(limit)", token: token, body: nil)
    }

    /// ``history(after:limit:token:)`` with each record kept as the text the server sent.
    public func rawHistory(after cursor: Int64, limit: Int, token: String) async throws(SyncError) -> RawHistoryPage {
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
        // Not sent again on a broken connection: a change that went through would then be refused
        // (the current password is no longer current) and look like a failure.
        try await call(.PUT, "/accounts/current/password", token: token,
                       body: json(PasswordChangeRequest(currentPassword: current, newPassword: new)), idempotent: false)
    }

    /// Deletes one of the account's records on the server (`.refused` 404 when it has none with
    /// this id); the account's other devices learn of it from the history (a tombstone).
    public func deleteRecord(id: String, token: String) async throws(SyncError) {
        let segment = id.lowercased().addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/")))
            ?? id
        let _: Empty = try await call(.DELETE, "/records/\(segment)", token: token, body: nil)
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
                                    headers: [(String, String)] = [], idempotent: Bool? = nil) async throws(SyncError) -> T {
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

        let answer = try await send(request, idempotent: idempotent ?? (method != .POST))
        guard (200..<300).contains(answer.status) else { throw Self.failure(answer) }
        if T.self == Empty.self, let empty = Empty() as? T { return empty }
        do { return try SyncJSONDecoder().decode(T.self, from: answer.body) } catch let error as DecodingError {
            throw .invalidResponse("\(method) \(path): " + DisplayText.safe(SyncAPI.describe(error)))
        } catch {
            throw .invalidResponse("\(method) \(path): " + DisplayText.safe("\(error)"))
        }
    }

    /// An answer as received: status, headers and body.
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// Sends `request`. A request that can be repeated without harm is sent once more at once
    /// when its connection broke before any answer (a connection the server closed as idle just
    /// as the request went out); everything else that fails on the way is transient.
    private func send(_ request: HTTPClientRequest, idempotent: Bool) async throws(SyncError) -> Answer {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let response = try await http.execute(request, timeout: .init(configuration.requestTimeout))
                let bytes = try await response.body.collect(upTo: SyncAPI.maxBodyBytes)
                return Answer(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
            } catch {
                if idempotent, attempt == 1, Self.isBrokenConnection(error) { continue }
                throw .transient("\(configuration.server.host ?? "server"): \(Self.describe(error))", retryAfter: nil)
            }
        }
    }

    /// The connection ended before the answer: nothing says the server saw the request.
    static func isBrokenConnection(_ error: any Error) -> Bool {
        if let e = error as? HTTPClientError, e == .remoteConnectionClosed { return true }
        if let e = error as? IOError, [ECONNRESET, EPIPE].contains(e.errnoCode) { return true }
        return false
    }

    /// What a non-2xx answer means. Only an answer in the protocol's own error format counts as
    /// the server refusing the request; anything else on a 3xx or 4xx came from something else
    /// on the way (a proxy, a captive portal, another web server) and says nothing about the
    /// records.
    static func failure(_ answer: Answer) -> SyncError {
        let status = answer.status
        let retryAfter = answer.headers.first(name: "Retry-After").flatMap(Self.retryAfter)
        let protocolError = isJSON(answer.headers) ? try? SyncJSONDecoder().decode(ErrorResponse.self, from: answer.body) : nil
        let message = DisplayText.safe(protocolError?.error.message ?? Self.summary(of: answer.body), limit: 300)
        switch status {
        case 401:
            return .unauthorized(message)
        case 408, 425, 429, 500...:
            let code = protocolError.map { " " + DisplayText.safe($0.error.code, limit: 40) } ?? ""
            return .transient("server answered \(status)\(code): \(message)", retryAfter: retryAfter)
        case 300..<400:
            let location = answer.headers.first(name: "Location").map { DisplayText.safe($0, limit: 200) } ?? "nowhere"
            return .notTheServer(status: status, detail: "a redirect to \(location)")
        default:
            guard let protocolError else {
                return .notTheServer(status: status, detail: message.isEmpty ? "an empty answer" : "\"\(message)\"")
            }
            var answer = protocolError.error
            answer.code = DisplayText.safe(answer.code, limit: 40)
            answer.message = message
            return .refused(status: status, answer: answer)
        }
    }

    private static func isJSON(_ headers: HTTPHeaders) -> Bool {
        guard let type = headers.first(name: "Content-Type")?.lowercased() else { return false }
        return type.hasPrefix("application/json") || (type.hasPrefix("application/") && type.contains("+json"))
    }

    /// The first words of a body that is not the protocol's: an HTML page's title, or its start.
    static func summary(of body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(2000), as: UTF8.self)
        if let open = text.range(of: "<title>", options: .caseInsensitive),
           let close = text.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<text.endIndex) {
            return String(text[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return String(text.prefix(200)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The longest wait a server can ask for with `Retry-After`; longer (or nonsense such as
    /// `inf`) counts as this.
    public static let longestServerWait: Duration = .seconds(3600)

    /// `Retry-After` as seconds or an HTTP date, clamped to 0...``longestServerWait``; nil when
    /// it is neither.
    static func retryAfter(_ value: String) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text) {
            guard !seconds.isNaN else { return nil }
            return .clamped(seconds: seconds, maximum: longestServerWait)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return .clamped(seconds: date.timeIntervalSinceNow, maximum: longestServerWait)
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
