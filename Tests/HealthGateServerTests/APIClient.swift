import AsyncHTTPClient
import Foundation
import Gzip
import HealthModel
import NIOCore
import NIOHTTP1
import SyncProtocol
import Testing
import TestSupport

/// An answer: status, headers and body.
struct Reply {
    var status: Int
    var headers: HTTPHeaders
    var body: Data

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try SyncAPI.decoder().decode(type, from: body)
        } catch {
            throw ServerFailure("\(status) \(String(decoding: body, as: UTF8.self)) is not a \(type): \(error)")
        }
    }

    /// The error answer (every failure must be one).
    func error() throws -> ErrorResponse.Body { try decode(ErrorResponse.self).error }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Talks HTTP to one server with AsyncHTTPClient.
struct APIClient {
    let baseURL: String
    var token: String?

    init(_ server: ServerProcess, token: String? = nil) {
        baseURL = server.url.absoluteString
        self.token = token
    }

    func send(_ method: HTTPMethod, _ path: String, body: Data? = nil, contentType: String? = "application/json",
              headers: [(String, String)] = [], timeout: TimeAmount = .seconds(60)) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 256 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: bytes))
    }

    func send(_ method: HTTPMethod, _ path: String, json value: some Encodable, headers: [(String, String)] = []) async throws -> Reply {
        try await send(method, path, body: try SyncAPI.encoder().encode(value), headers: headers)
    }

    // MARK: The protocol's calls

    @discardableResult
    func register(_ email: String, _ password: String) async throws -> Reply {
        try await send(.POST, "/v1/accounts", json: RegisterRequest(email: email, password: password))
    }

    func login(_ email: String, _ password: String, device: String = "test-box") async throws -> Reply {
        try await send(.POST, "/v1/sessions", json: LoginRequest(email: email, password: password, deviceName: device))
    }

    /// Registers (if needed) and logs in: a client holding the new device's token.
    func account(_ email: String, _ password: String = "long enough password", device: String = "test-box")
        async throws -> (client: APIClient, login: LoginResponse) {
        _ = try await register(email, password)
        let reply = try await login(email, password, device: device)
        #expect(reply.status == 201, "\(reply.text)")
        let login = try reply.decode(LoginResponse.self)
        var client = self
        client.token = login.token
        return (client, login)
    }

    func upload(_ records: [WireRecord]) async throws -> Reply {
        try await send(.POST, "/v1/records", json: UploadRequest(records: records))
    }

    /// Uploads and answers the statuses (the upload must be answered 200).
    func uploadStatuses(_ records: [WireRecord]) async throws -> [UploadResult.Status] {
        let reply = try await upload(records)
        #expect(reply.status == 200, "\(reply.text)")
        return try reply.decode(UploadResponse.self).results.map(\.status)
    }

    func history(after: Int64 = 0, limit: Int? = nil) async throws -> HistoryPage {
        let reply = try await send(.GET, "/v1/records?after=\(after)" + (limit.map { "&limit=\($0)" } ?? ""))
        #expect(reply.status == 200, "\(reply.text)")
        return try reply.decode(HistoryPage.self)
    }

    /// Every page of history from the beginning.
    func allHistory() async throws -> [WireRecord] {
        var records: [WireRecord] = []
        var after: Int64 = 0
        while true {
            let page = try await history(after: after)
            records += page.records
            after = page.next
            if !page.more { return records }
        }
    }

    func summaries(_ query: String) async throws -> Reply {
        try await send(.GET, "/v1/summaries?" + query)
    }
}

/// Records to upload, with fixed ids derived from a name.
enum Make {
    static func id(_ name: String) -> RecordID { RecordID.derive("server-test", name) }

    static func date(_ text: String) -> Date { ISO8601.parse(text)! }

    static func workout(_ name: String, version: Int = 1, start: String = "2026-03-02T07:00:00Z", minutes: Double = 60,
                        timerS: Double? = nil, distanceM: Double? = 10_000, energyKcal: Double? = 600,
                        sport: String = "running") -> WireRecord {
        let s = date(start)
        return WireRecord(.workout(Workout(id: id(name), version: version, sport: sport, start: s,
                                           end: s.addingTimeInterval(minutes * 60), timerS: timerS, distanceM: distanceM,
                                           energyKcal: energyKcal,
                                           samples: [Sample(time: s, heartRate: 120), Sample(time: s.addingTimeInterval(1), heartRate: 121)],
                                           source: Source(driver: "fit", device: "watch/1"))))
    }

    static func sleep(_ name: String, version: Int = 1, start: String, hours: Double, awakeMinutes: Double = 0) -> WireRecord {
        let s = date(start)
        let e = s.addingTimeInterval(hours * 3600)
        var stages = [SleepStageSpan(start: s, end: e.addingTimeInterval(-awakeMinutes * 60), stage: .light)]
        if awakeMinutes > 0 { stages.append(SleepStageSpan(start: e.addingTimeInterval(-awakeMinutes * 60), end: e, stage: .awake)) }
        return WireRecord(.sleep(SleepSession(id: id(name), version: version, start: s, end: e, stages: stages,
                                              source: Source(driver: "fit"))))
    }

    static func habit(_ name: String, version: Int = 1, time: String, value: Double = 250, note: String? = nil) -> WireRecord {
        WireRecord(.habit(HabitEvent(id: id(name), version: version, habit: "hydration", time: date(time), value: value,
                                     unit: "ml", note: note, source: Source(driver: "manual"))))
    }

    static func measurement(_ name: String, version: Int = 1, time: String, kind: MeasurementKind = .weight,
                            value: Double = 70.5) -> WireRecord {
        WireRecord(.measurement(Measurement(id: id(name), version: version, kind: kind, time: date(time), value: value,
                                            source: Source(driver: "ble", device: "scale"))))
    }
}

/// gzip for upload bodies.
func gzip(_ data: Data, level: Int32 = 6) -> Data { Gzip.compress(data, level: level) }
