import Foundation
import Gzip
import Hummingbird
import SyncProtocol

/// JSON answers, encoded like every sync protocol body (``SyncAPI/encoder()``).
enum JSONResponse {
    static let contentType = "application/json"

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        do {
            return make(data: try SyncJSONEncoder().encodeData(value), status: status)
        } catch {
            // Only non-finite numbers fail to encode, and no answer carries one.
            return make(data: Data(#"{"error":{"code":"internal","message":"answer could not be encoded"}}"#.utf8),
                        status: .internalServerError)
        }
    }

    static func make(data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// A request body as it was sent: its bytes (compressed when `gzip`), not yet inflated or parsed.
struct RawBody: Sendable {
    var bytes: Data
    var gzip: Bool
}

/// Reads JSON request bodies within limits.
///
/// - the content type must be JSON (`application/json` or `application/*+json`), else 415;
/// - `Content-Encoding` may be `gzip` or `identity`, else 415;
/// - the body may not exceed `limit` bytes as sent nor after decompression, else 413: a
///   declared `Content-Length` over the limit is refused before keeping any of it, keeping
///   stops at the limit, and inflating stops there too (so a gzip bomb costs at most `limit`
///   bytes of memory);
/// - parsing may not build more index than the body's size (``indexLimit(forBodyBytes:)``),
///   else 413;
/// - a body that is not valid JSON for the expected type is 400 with where it went wrong.
///
/// Reading (``read(_:limit:)``) waits on the network; inflating and decoding (``inflate(_:limit:within:)``,
/// ``decode(_:text:)``) are CPU work, which uploads do on ``UploadWorkers``.
enum JSONBody {
    /// Reads and decodes a small body (register, login) where it is.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        let raw = try await read(request, limit: limit)
        // Without a bound below the limit there is always a text (or a 413).
        return try decode(type, text: try inflate(raw, limit: limit)!)
    }

    /// Parses and decodes the JSON text of a body.
    static func decode<T: Decodable>(_ type: T.Type, text: Data) throws -> T {
        do {
            return try SyncJSONDecoder(indexLimit: indexLimit(forBodyBytes: text.count)).decode(type, from: text)
        } catch let error as DecodingError {
            throw refusal(error, expected: name(of: type))
        }
    }

    /// The answer to a body that did not decode as `expected`: 413 when it holds more values
    /// than its size allows, else 400 saying where it went wrong.
    static func refusal(_ error: DecodingError, expected: String) -> APIError {
        if case .dataCorrupted(let context) = error, let exceeded = context.underlyingError as? SyncJSONDecoder.IndexLimitExceeded {
            return .payloadTooLarge("request body holds more values than a body of its size can: \(exceeded)")
        }
        return .badRequest("request body is not a valid \(expected): " + SyncAPI.describe(error))
    }

    /// How much parsed index a body of `bytes` bytes may build: as much as its own size (and a
    /// little for tiny bodies). The index takes 4 bytes per string, number or literal and 12
    /// per array or object; real uploads need about half their size (measurements, the
    /// densest records, ~0.5; workout samples and rr intervals less), so they all fit, and
    /// parsing costs at most twice the body (the body and its index). A body of bare small
    /// numbers (`[0,0,0,...]`, two bytes per value: what a gzip bomb inflates to) would need
    /// twice its size and is refused halfway, before most of that memory is touched.
    static func indexLimit(forBodyBytes bytes: Int) -> Int { bytes + 4096 }

    /// The body as sent, within `limit` (checks the content type and encoding first).
    static func read(_ request: Request, limit: Int) async throws -> RawBody {
        try checkContentType(request)
        let gzip = try isGzip(request)
        var body = request.body.makeAsyncIterator()
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            try await discard(&body, received: 0, limit: limit)
            throw tooLarge(limit, gzip: false)
        }
        var raw = Data()
        while let buffer = try await body.next() {
            // The size as sent is bounded too (compressed, it cannot usefully exceed the inflated limit).
            guard raw.count + buffer.readableBytes <= limit else {
                try await discard(&body, received: raw.count + buffer.readableBytes, limit: limit)
                throw tooLarge(limit, gzip: false)
            }
            raw.append(contentsOf: buffer.readableBytesView)
        }
        return RawBody(bytes: raw, gzip: gzip)
    }

    /// The body's JSON text: inflated within `limit` when it is gzip (longer: 413). With a
    /// `bound` below the limit, nil when the text is longer than that.
    static func inflate(_ raw: RawBody, limit: Int, within bound: Int? = nil) throws -> Data? {
        let bound = min(bound ?? limit, limit)
        guard raw.gzip else { return raw.bytes.count <= bound ? raw.bytes : nil }
        let result = raw.bytes.withUnsafeBytes { bytes -> Result<Data, GzipInflater.Failure> in
            do throws(GzipInflater.Failure) {
                let inflater = try GzipInflater(limit: bound)
                try inflater.feed(bytes)
                return .success(try inflater.finish())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let data): return data
        case .failure(.tooLarge) where bound < limit: return nil
        case .failure(let failure): throw gzipError(failure, limit: limit)
        }
    }

    /// Hands the body's JSON text to `sink` a piece at a time (a gzip body inflated 64 KiB at a
    /// time, never whole), within `limit` (longer: 413). With a `bound` below the limit, false
    /// when the text is longer than that (`sink` has then seen part of it).
    static func stream(_ raw: RawBody, limit: Int, within bound: Int? = nil,
                       into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        let bound = min(bound ?? limit, limit)
        guard raw.gzip else {
            guard raw.bytes.count <= bound else { return false }
            try raw.bytes.withUnsafeBytes { try sink($0) }
            return true
        }
        do {
            try raw.bytes.withUnsafeBytes { try GzipInflater.stream($0, limit: bound, into: sink) }
            return true
        } catch GzipInflater.Failure.tooLarge where bound < limit {
            return false
        } catch let failure as GzipInflater.Failure {
            throw gzipError(failure, limit: limit)
        }
    }

    /// Reads and drops the rest of a body that is refused, up to twice the limit in all, so that
    /// a client that sends its whole body before reading the answer (and may have asked to
    /// close the connection after it) gets the 413 instead of a stalled or reset connection.
    /// Past that, the connection is the client's problem.
    private static func discard(_ body: inout RequestBody.AsyncIterator, received: Int, limit: Int) async throws {
        var received = received
        while received <= 2 * limit, let buffer = try await body.next() {
            received += buffer.readableBytes
        }
    }

    private static func checkContentType(_ request: Request) throws {
        guard let value = request.headers[.contentType] else {
            throw APIError.unsupportedMediaType("missing Content-Type: send the body as application/json")
        }
        let mediaType = value.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        guard mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")) else {
            throw APIError.unsupportedMediaType("Content-Type \(mediaType.isEmpty ? "(empty)" : mediaType) is not supported: send application/json")
        }
    }

    private static func isGzip(_ request: Request) throws -> Bool {
        let codings = request.headers[values: .contentEncoding]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch codings {
        case []: return false
        case ["gzip"], ["x-gzip"]: return true
        default:
            throw APIError.unsupportedMediaType("Content-Encoding \(codings.joined(separator: ", ")) is not supported: send gzip or identity")
        }
    }

    private static func tooLarge(_ limit: Int, gzip: Bool) -> APIError {
        .payloadTooLarge("request body exceeds \(limit) bytes" + (gzip ? " after decompression" : ""), maxBytes: limit)
    }

    private static func gzipError(_ failure: GzipInflater.Failure, limit: Int) -> APIError {
        switch failure {
        case .tooLarge: tooLarge(limit, gzip: true)
        case .malformed(let why): .badRequest("request body is not valid gzip: \(why)")
        }
    }

    private static func name<T>(of type: T.Type) -> String {
        switch type {
        case is RegisterRequest.Type: "RegisterRequest"
        case is LoginRequest.Type: "LoginRequest"
        case is UploadRequest.Type: "UploadRequest"
        default: "\(type)"
        }
    }
}
