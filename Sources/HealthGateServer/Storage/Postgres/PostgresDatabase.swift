import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// The server's connections to one PostgreSQL database: a postgres-nio pool (its `run()` is a
/// service of the server, see ``PostgresServerStore/services``), a bounded wait for a free
/// connection, transactions, and PostgreSQL's failures sorted into "try again" and "a bug".
///
/// Only unnamed (extended-protocol) statements are sent, never named prepared statements or
/// session state (`SET`, advisory locks held past a transaction, `LISTEN`): each transaction is
/// complete on its own, which is what a pooler in transaction mode (pgbouncer
/// `pool_mode = transaction`) needs.
final class PostgresDatabase: Sendable {
    let client: PostgresClient
    let settings: PostgresSettings
    let logger: Logger
    /// Leases waiting for a connection now, and the pool's size: what `/metrics` shows.
    private let usage = Mutex(Usage())

    struct Usage: Sendable {
        var waiting = 0
        var leased = 0
        var timedOut = 0
    }

    init(settings: PostgresSettings, logger: Logger) throws {
        var configuration: PostgresClient.Configuration
        switch settings.endpoint {
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: settings.user, password: settings.password,
                                  database: settings.database, tls: try Self.tls(settings))
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: settings.user, password: settings.password,
                                  database: settings.database)
        }
        configuration.options.maximumConnections = settings.poolMax
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(5)
        // The server's pool is the only state between requests; nothing else is per session.
        configuration.options.additionalStartupParameters = [("application_name", "healthgate-server")]
        self.settings = settings
        self.logger = logger
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    private static func tls(_ settings: PostgresSettings) throws -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let root = settings.rootCertificate {
            tls.trustRoots = .file(root)
        }
        switch settings.tls {
        case .disable:
            return .disable
        case .prefer:
            // As libpq's prefer and require: encrypted, the certificate not checked.
            tls.certificateVerification = .none
            return .prefer(tls)
        case .require:
            tls.certificateVerification = settings.rootCertificate == nil ? .none : .noHostnameVerification
            return .require(tls)
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            return .require(tls)
        }
    }

    var currentUsage: Usage { usage.withLock { $0 } }

    // MARK: Access

    /// Runs `body` on a connection of its own, in one transaction (committed when `body` returns,
    /// rolled back when it throws).
    @discardableResult
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await leased { connection in
            try await connection.query("BEGIN", logger: self.logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: self.logger)
                return value
            } catch {
                // A broken connection cannot roll back: the server did, and the pool drops it.
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }

    /// Runs `body` on a connection (each statement its own transaction).
    @discardableResult
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await leased(body)
    }

    /// A connection for `body`, waiting at most `settings.poolWait` for one to be free: past it
    /// ``StoreError/busy`` when every connection is in use, ``StoreError/unavailable(_:)`` when
    /// none could be opened (never a request that hangs). The wait
    /// and the work race in a task group; whichever side takes the lease's one state change first
    /// decides, so the work never starts after the wait has given up, and is never cancelled once
    /// it has started.
    private func leased<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let lease = LeaseState()
        usage.withLock { $0.waiting += 1 }
        defer {
            usage.withLock {
                if lease.started { $0.leased -= 1 } else { $0.waiting -= 1 }
            }
        }
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    try await self.client.withConnection { connection in
                        guard lease.start() else { throw StoreError.busy }
                        self.usage.withLock {
                            $0.waiting -= 1
                            $0.leased += 1
                        }
                        return try await body(connection)
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: self.settings.poolWait)
                    if lease.giveUp() {
                        // Every connection in use: busy. Fewer in use: the pool could not open
                        // one (PostgreSQL down, restarting or unreachable).
                        let exhausted = self.usage.withLock { usage in
                            usage.timedOut += 1
                            return usage.leased >= self.settings.poolMax
                        }
                        throw exhausted ? StoreError.busy
                            : StoreError.unavailable("no connection to PostgreSQL within \(self.settings.poolWait)")
                    }
                    return nil
                }
                while let result = try await group.next() {
                    if let value = result {
                        group.cancelAll()
                        return value
                    }
                }
                throw StoreError.busy
            }
        } catch {
            throw Self.sorted(error)
        }
    }

    /// The one state change of a lease: started (the work runs) or given up (it never will).
    private final class LeaseState: Sendable {
        private let state = Atomic<Int>(0)
        func start() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }
        func giveUp() -> Bool { state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged }
        var started: Bool { state.load(ordering: .acquiring) == 1 }
    }

    // MARK: Errors

    /// PostgreSQL's failures a client should retry become ``StoreError/unavailable(_:)``: the
    /// connection lost or refused, the server shutting down or starting, out of connections, a
    /// serialization failure or deadlock (the transaction was rolled back whole). SQL errors
    /// stay as they are (a defect: answered 500 and logged).
    static func sorted(_ error: any Error) -> any Error {
        switch error {
        case is StoreError, is CancellationError:
            return error
        case let error as PSQLError:
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? ""
                if retryable(sqlState: state) { return StoreError.unavailable("PostgreSQL \(state): \(message)") }
                return PostgresFailure(sqlState: state, message: message, detail: error.serverInfo?[.detail])
            }
            if error.code == .queryCancelled { return CancellationError() }
            return StoreError.unavailable("PostgreSQL connection: \(error.code)" + (error.underlying.map { " (\($0))" } ?? ""))
        case is ChannelError, is IOError, is NIOConnectionError:
            return StoreError.unavailable("PostgreSQL connection: \(error)")
        default:
            return error
        }
    }

    /// SQLSTATE classes and codes after which the same request may succeed.
    static func retryable(sqlState state: String) -> Bool {
        state.hasPrefix("08")  // connection exception
            || state.hasPrefix("53")  // insufficient resources (too many connections, disk full)
            || state.hasPrefix("57P")  // admin shutdown, crash shutdown, cannot connect now
            || state == "40001"  // serialization failure
            || state == "40P01"  // deadlock detected
            || state == "25006"  // read-only transaction (a standby promoted meanwhile)
    }
}

/// An SQL error PostgreSQL reported: a defect of the server's statements or schema.
struct PostgresFailure: Error, CustomStringConvertible {
    var sqlState: String
    var message: String
    var detail: String?
    var description: String { "PostgreSQL \(sqlState): \(message)" + (detail.map { " (\($0))" } ?? "") }
}
