import Foundation
import Hummingbird
import WebSecurity

/// Accepts a request only with `Authorization: Bearer TOKEN` naming a logged-in device (by the
/// token's hash) that has not expired (``TokenExpiry``); sets ``ServerContext/principal`` for the
/// routes behind it. Anything else is 401 with the same answer whether the token is malformed,
/// unknown or revoked (an expired token is told so: its holder knew it).
struct BearerAuthMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let store: any ServerStore
    let expiry: TokenExpiry

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        guard let token = Self.bearerToken(request.headers[.authorization]) else {
            throw APIError.unauthorized("missing device token: send Authorization: Bearer TOKEN (from POST /v1/sessions)")
        }
        guard let principal = try await store.principal(tokenHash: SecretToken.hash(token)) else {
            throw APIError.unauthorized("the device token is not valid (wrong, or logged out)")
        }
        let now = Date()
        if expiry.isExpired(lastSeen: principal.lastSeenAt, now: now) {
            _ = try await store.revokeDevice(id: principal.deviceId, userId: principal.userId, now: now)
            context.logger.info("device token expired", metadata: ["device": "\(principal.deviceId)"])
            throw APIError.unauthorized("the device token expired (unused for more than \(expiry.idleDays) days): log in again")
        }
        if principal.needsTouch(now: now) { try await store.touchDevice(id: principal.deviceId, now: now) }
        var context = context
        context.principal = principal
        return try await next(request, context)
    }

    /// The token of a `Bearer` authorization (the scheme is case-insensitive).
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
