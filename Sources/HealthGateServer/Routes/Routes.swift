import Foundation
import Hummingbird
import HealthModel
import SyncProtocol
import WebSecurity

/// What the routes share. Each piece of state has one owner: the store owns everything
/// persistent, the throttles own failed-login and registration counts.
struct ServerDependencies: Sendable {
    let store: any ServerStore
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    let registrations: RegistrationThrottle
    let checker: UploadChecker
    let limits: ServerLimits
    var tokenExpiry = TokenExpiry()
    /// The threads that do the CPU work of uploads, in turns between accounts.
    var uploads = UploadWorkers()
    var metrics = ServerMetrics()
}

/// Request and answer size limits.
public struct ServerLimits: Sendable, Equatable {
    /// Bodies of the small requests (register, login).
    public var smallBodyBytes = 64 * 1024
    /// Upload bodies, after decompression.
    public var uploadBodyBytes = SyncAPI.maxBodyBytes
    public var recordsPerUpload = SyncAPI.maxRecordsPerUpload
    /// A history page stops adding records once their bodies reach this size (and says `more`).
    public var historyPageBytes = 8 << 20

    public init() {}
}

/// The endpoints, in one table (the 405 answers read it) and the router built from it.
enum Routes {
    /// `{id}` stands for any one path segment.
    static let table: [(path: String, methods: [HTTPRequest.Method])] = [
        ("/v1/health", [.get]),
        ("/v1/accounts", [.post]),
        ("/v1/accounts/current/password", [.put]),
        ("/v1/accounts/current/deletion", [.post]),
        ("/v1/sessions", [.post]),
        ("/v1/sessions/current", [.delete]),
        ("/v1/devices", [.get]),
        ("/v1/devices/current/primary", [.put]),
        ("/v1/devices/{id}", [.delete]),
        ("/v1/records", [.get, .post, .delete]),
        ("/v1/records/{id}", [.delete]),
        ("/v1/summaries", [.get]),
    ]

    /// The methods a known path takes; nil for an unknown path.
    static func methods(forPath path: String) -> [HTTPRequest.Method]? {
        entry(forPath: path)?.methods
    }

    /// The table's pattern a path matches (`/v1/records/{id}`); nil for an unknown path.
    static func pattern(forPath path: String) -> String? {
        entry(forPath: path)?.path
    }

    private static func entry(forPath path: String) -> (path: String, methods: [HTTPRequest.Method])? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let segments = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        return table.first { entry in
            let pattern = entry.path.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.count == segments.count
                && zip(pattern, segments).allSatisfy { $0 == "{id}" ? !$1.isEmpty : $0 == $1 }
        }
    }

    static func router(_ deps: ServerDependencies, faults: FaultInjector?) -> Router<ServerContext> {
        let router = Router(context: ServerContext.self)
        router.add(middleware: ErrorMiddleware(metrics: deps.metrics))
        if let faults { router.add(middleware: FaultMiddleware(injector: faults)) }

        let open = router.group("v1")
        open.get("health") { _, context in try await health(deps.store, context: context) }
        AccountRoutes(deps: deps).addOpen(to: open)

        let authenticated = router.group("v1").add(middleware: BearerAuthMiddleware(store: deps.store, expiry: deps.tokenExpiry))
        AccountRoutes(deps: deps).addAuthenticated(to: authenticated)
        RecordRoutes(deps: deps).add(to: authenticated)
        RecordDeletionRoutes(deps: deps).add(to: authenticated)
        SummaryRoutes(deps: deps).add(to: authenticated)
        return router
    }
}

extension Routes {
    /// `GET /v1/health`: 200 when the database answers within 5 s, else 503 (with Retry-After)
    /// saying so: what a load balancer or a monitor asks before sending traffic.
    static func health(_ store: any ServerStore, context: ServerContext) async throws -> Response {
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await store.ping()
                    return true
                } catch {
                    context.logger.warning("health: the database does not answer: \(error)")
                    return false
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(5))
                context.logger.warning("health: the database did not answer within 5 s")
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard answered else {
            var response = JSONResponse.make(HealthResponse(status: "unavailable", version: ServerVersion.current, database: "unavailable"),
                                             status: .serviceUnavailable)
            response.headers[.retryAfter] = "5"
            return response
        }
        return JSONResponse.make(HealthResponse(version: ServerVersion.current, database: "ok"))
    }
}

/// Query parameters, checked.
struct Query {
    let parameters: Parameters

    init(_ request: Request) { parameters = request.uri.queryParameters }

    func string(_ name: String) -> String? { parameters.get(name) }

    /// An integer in `range`, or `defaultValue` when absent.
    func integer<T: FixedWidthInteger>(_ name: String, in range: ClosedRange<T>, default defaultValue: T) throws -> T {
        guard let text = parameters.get(name) else { return defaultValue }
        guard let value = T(text), range.contains(value) else {
            throw APIError.badRequest("query parameter \(name) must be an integer in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return value
    }
}
