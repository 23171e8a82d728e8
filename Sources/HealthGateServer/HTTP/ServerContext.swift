public import Hummingbird
public import NIOCore

/// What a request carries through the middleware and routes: the connection it came on and,
/// once ``BearerAuthMiddleware`` accepted its token, the user and device it acts for.
public struct ServerContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's address (login rate limits count per address).
    public let remoteAddress: SocketAddress?
    /// The connection (fault injection can drop it without an answer).
    let channel: any Channel
    /// Set for routes behind ``BearerAuthMiddleware``.
    public var principal: Principal?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address as text ("unknown" when the socket does not say).
    public var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }

    /// The authenticated user and device; routes behind the bearer middleware only.
    func requirePrincipal() throws -> Principal {
        guard let principal else { throw APIError.unauthorized("this operation needs a device token") }
        return principal
    }
}
