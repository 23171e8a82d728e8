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

/// Reads JSON request bodies within limits.
///
/// - the content type must be JSON (`application/json` or `application/*+json`), else 415;
/// - `Content-Encoding` may be `gzip` (inflated as it streams in) or `identity`, else 415;
/// - the body may not exceed `limit` bytes as sent nor after decompression, else 413: a
///   declared `Content-Length` over the limit is refused before keeping any of it, and keeping
///   stops at the limit (so a gzip bomb costs at most `limit` bytes of memory);
/// - a body that is not valid JSON for the expected type is 400 with where it went wrong.
enum JSONBody {
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        let data = try await read(request, limit: limit)
        do {
            return try SyncJSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw APIError.badRequest("request body is not a valid \(name(of: type)): " + SyncAPI.describe(error))
        }
    }

    static func read(_ request: Request, limit: Int) async throws -> Data {
        try checkContentType(request)
        let gzip = try isGzip(request)
        var body = request.body.makeAsyncIterator()
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            try await discard(&body, received: 0, limit: limit)
            throw tooLarge(limit, gzip: false)
        }
        var raw = Data()
        var received = 0
        let inflater = gzip ? try GzipInflater(limit: limit) : nil
        while let buffer = try await body.next() {
            // The size as sent is bounded too (compressed, it cannot usefully exceed the inflated limit).
            received += buffer.readableBytes
            guard received <= limit else {
                try await discard(&body, received: received, limit: limit)
                throw tooLarge(limit, gzip: false)
            }
            if let inflater {
                do {
                    try buffer.withUnsafeReadableBytes { bytes throws(GzipInflater.Failure) in try inflater.feed(bytes) }
                } catch {
                    if error == .tooLarge { try await discard(&body, received: received, limit: limit) }
                    throw gzipError(error, limit: limit)
                }
            } else {
                raw.append(contentsOf: buffer.readableBytesView)
            }
        }
        guard let inflater else { return raw }
        do {
            return try inflater.finish()
        } catch {
            throw gzipError(error, limit: limit)
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
