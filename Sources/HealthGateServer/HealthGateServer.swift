import Foundation
public import Hummingbird
import HummingbirdCore
public import Logging
import MetricsEndpoint
import NIOCore
public import WebSecurity

/// How a server runs: where it listens and its security and test settings.
public struct ServerOptions: Sendable {
    public var host = "127.0.0.1"
    /// 0: any free port (the actual one is passed to `onListening`).
    public var port = 8080
    public var bcryptCost = PasswordHasher.defaultCost
    public var loginPolicy = LoginAttempts.Policy()
    public var registrationPolicy = RegistrationThrottle.defaultPolicy
    public var limits = ServerLimits()
    public var tokenExpiry = TokenExpiry()
    /// Connection caps and timeouts (defaults fit under the process's open-file limit).
    public var connections = ConnectionLimits()
    /// Fault injection for client tests; nil in normal use.
    public var faults: FaultPlan?
    /// HTTPS with this certificate (reloaded on SIGHUP); nil: plain HTTP.
    public var tls: TLSCertificates?
    /// `HOST:PORT` where `GET /metrics` answers (Prometheus); nil: nowhere.
    public var metricsAddress: String?

    public init() {}
}

/// The reference tracking server: builds the HTTP application over a ``ServerStore``.
public enum HealthGateServer {
    /// The application, ready to `run()` or `runService()` (which stops gracefully on SIGINT
    /// and SIGTERM). `onListening` gets `http://HOST:PORT` once the socket is bound.
    public static func application(options: ServerOptions, store: any ServerStore, logger: Logger,
                                   onListening: @escaping @Sendable (String) -> Void = { _ in }) -> some ApplicationProtocol {
        // For the process: large blocks (uploads' buffers) go back to the system when freed.
        GlibcMalloc.setMmapThreshold(GlibcMalloc.serverMmapThreshold)
        // The limits' counts: in the database when the store shares them between processes.
        let login = LoginAttempts(policy: options.loginPolicy)
        var rules = login.rules
        rules[.registration] = options.registrationPolicy
        let ledger = store.limitLedger(rules: rules) ?? MemoryLimitLedger(rules: rules)
        let registry = ConnectionRegistry(limits: options.connections)
        let metrics = ServerMetrics {
            [("connections_open", "HTTP connections open now.", Double(registry.open))] + store.gauges()
        }
        let deps = ServerDependencies(store: store, hasher: PasswordHasher(cost: options.bcryptCost),
                                      throttle: LoginThrottle(policy: options.loginPolicy, ledger: ledger),
                                      registrations: RegistrationThrottle(policy: options.registrationPolicy, ledger: ledger),
                                      checker: UploadChecker(),
                                      limits: options.limits, tokenExpiry: options.tokenExpiry, metrics: metrics)
        let router = Routes.router(deps, faults: options.faults.map(FaultInjector.init))
        let guards = ConnectionGuardSettings(registry: registry, logger: logger)
        let http = HTTP1Channel.Configuration(additionalChannelHandlers: [RequestEndObserver()],
                                              idleTimeout: TimeAmount(options.connections.idleTimeout))
        var app = Application(router: router,
                           // HTTP/1 with the connection caps and the request timeout (ConnectionGuard.swift).
                           server: HTTPServerBuilder { responder in
                               let plain = GuardedHTTP1Channel(http: HTTP1Channel(responder: responder, configuration: http),
                                                               settings: guards)
                               guard let tls = options.tls else { return plain }
                               return ReloadableTLSChannel(base: plain, certificates: tls,
                                                           handshakeTimeout: TimeAmount(options.connections.requestTimeout))
                           },
                           configuration: .init(address: .hostname(options.host, port: options.port),
                                                serverName: "healthgate-server/\(ServerVersion.current)"),
                           onServerRunning: { channel in
                               // On the listening socket before the address is announced.
                               _ = try? await channel.eventLoop.submit {
                                   try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(settings: guards),
                                                                                  position: .first)
                               }.get()
                               let address = channel.localAddress
                               let host = address?.ipAddress ?? options.host
                               let port = address?.port ?? options.port
                               let scheme = options.tls == nil ? "http://" : "https://"
                               onListening(scheme + (host.contains(":") ? "[\(host)]" : host) + ":\(port)")
                           },
                           logger: logger)
        // The store's connection pool runs beside the server; its schema is brought up to date
        // before the socket opens.
        app.addServices(store.services)
        if let address = options.metricsAddress {
            app.addServices(MetricsServer(address: address, logger: logger, exposition: metrics.exposition))
        }
        if let tls = options.tls { app.addServices(TLSReloadService(certificates: tls, hangUps: tls.hangUps, logger: logger)) }
        app.beforeServerStarts { try await store.prepare(logger: logger) }
        return app
    }
}
