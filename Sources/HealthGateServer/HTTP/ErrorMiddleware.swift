import Foundation
import Hummingbird
import NIOHTTP1
import Timing

/// The outermost middleware: turns every failure into `ErrorResponse` JSON (unknown routes
/// included: 404, or 405 with `Allow` for a known path) and logs one line per request (method,
/// path, status, time; never headers, queries or bodies, which may hold passwords or tokens).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = try Self.apiError(for: error, request: request, context: context).response(from: request, context: context)
        }
        let elapsed = ContinuousClock.now - started
        metrics.request(method: request.method.rawValue, path: request.uri.path, status: Int(response.status.code), duration: elapsed)
        let ms = elapsed.inSeconds * 1000
        context.logger.info("\(request.method.rawValue) \(request.uri.path) \(response.status.code) \(String(format: "%.1f", ms)) ms")
        return response
    }

    static func apiError(for error: any Error, request: Request, context: ServerContext) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as HTTPError where error.status == .notFound:
            return routeError(request)
        case let error as HTTPError:
            var api = APIError(status: error.status, code: code(for: error.status),
                               message: error.body ?? error.status.reasonPhrase.lowercased())
            api.headers = error.headers
            return api
        case StoreError.busy:
            context.logger.warning("database busy on \(request.method.rawValue) \(request.uri.path): every connection stayed in use")
            return .unavailable("the server is busy: try again in a moment", retryAfter: 1)
        case StoreError.unavailable(let why):
            context.logger.warning("database unavailable on \(request.method.rawValue) \(request.uri.path): \(why)")
            return .unavailable("the server's database is not answering: nothing was changed, try again shortly", retryAfter: 2)
        case let error as HTTPParserError:
            // The client's side of the request, not the server's: a body cut short (the client
            // went away, or the request timeout closed it) or bytes that are not HTTP.
            context.logger.notice("request ended early on \(request.method.rawValue) \(request.uri.path): \(error)")
            return .badRequest("the request was cut short or is not valid HTTP")
        default:
            context.logger.error("internal error on \(request.method.rawValue) \(request.uri.path): \(error)")
            return .internalError
        }
    }

    /// 404 for a path the server does not have, 405 for a method a known path does not take.
    static func routeError(_ request: Request) -> APIError {
        let path = request.uri.path
        if let allowed = Routes.methods(forPath: path) {
            return .methodNotAllowed("\(request.method.rawValue) is not allowed on \(path) (allowed: "
                                     + allowed.map(\.rawValue).joined(separator: ", ") + ")", allowed: allowed)
        }
        return .notFound("no such endpoint: \(path) (the API is described in openapi/healthgate-sync.yaml)")
    }

    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "bad_request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 409: "conflict"
        case 413: "payload_too_large"
        case 415: "unsupported_media_type"
        case 429: "too_many_requests"
        case 503: "unavailable"
        case 400..<500: "bad_request"
        default: "internal"
        }
    }
}
