public import Hummingbird
import SyncProtocol

/// A failure answered to the client as `ErrorResponse` JSON with an HTTP status.
///
/// Every error the server answers goes through this type (``ErrorMiddleware`` converts the
/// framework's own errors), so clients always get `{"error": {"code", "message"}}`.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    /// One of the codes listed on `ErrorResponse`.
    public var code: String
    /// A sentence for people: what was wrong and, where it helps, what is accepted.
    public var message: String
    /// Extra headers (Retry-After, Allow, WWW-Authenticate).
    public var headers: HTTPFields = [:]
    /// 413: the largest body accepted, in bytes after decompression.
    public var maxBytes: Int?

    public init(status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func badRequest(_ message: String) -> APIError {
        APIError(status: .badRequest, code: "bad_request", message: message)
    }

    public static func unauthorized(_ message: String) -> APIError {
        APIError(status: .unauthorized, code: "unauthorized", message: message, headers: [.wwwAuthenticate: "Bearer"])
    }

    public static func forbidden(_ message: String) -> APIError {
        APIError(status: .forbidden, code: "forbidden", message: message)
    }

    public static func notFound(_ message: String) -> APIError {
        APIError(status: .notFound, code: "not_found", message: message)
    }

    public static func methodNotAllowed(_ message: String, allowed: [HTTPRequest.Method]) -> APIError {
        APIError(status: .methodNotAllowed, code: "method_not_allowed", message: message,
                 headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")])
    }

    public static func conflict(_ message: String) -> APIError {
        APIError(status: .conflict, code: "conflict", message: message)
    }

    public static func payloadTooLarge(_ message: String, maxBytes: Int? = nil) -> APIError {
        var error = APIError(status: .contentTooLarge, code: "payload_too_large", message: message)
        error.maxBytes = maxBytes
        return error
    }

    public static func unsupportedMediaType(_ message: String) -> APIError {
        APIError(status: .unsupportedMediaType, code: "unsupported_media_type", message: message)
    }

    public static func tooManyRequests(_ message: String, retryAfter seconds: Int) -> APIError {
        APIError(status: .tooManyRequests, code: "too_many_requests", message: message,
                 headers: [.retryAfter: String(seconds)])
    }

    public static func unavailable(_ message: String, retryAfter seconds: Int) -> APIError {
        APIError(status: .serviceUnavailable, code: "unavailable", message: message,
                 headers: [.retryAfter: String(seconds)])
    }

    // Named after the HTTP status (500 Internal Server Error), like the cases above.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    public static let internalError = APIError(status: .internalServerError, code: "internal",
                                               message: "internal server error (see the server log)")
}

extension APIError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONResponse.make(ErrorResponse(code: code, message: message, maxBytes: maxBytes), status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}
