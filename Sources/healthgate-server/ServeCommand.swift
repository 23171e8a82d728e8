import ArgumentParser
import Foundation
import HealthGateServer
import HealthModel
import WebSecurity
import SyncProtocol
import Hummingbird
import Logging
import MetricsEndpoint

/// `healthgate-server`: the reference tracking server of the HealthGate sync protocol.
@main
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthgate-server",
        abstract: "The reference tracking server for HealthGate's sync protocol (v1).",
        discussion: """
            Accounts, device logins, record uploads (upserts by id and version), history and \
            summaries over HTTP, as described in openapi/healthgate-sync.yaml. Everything is kept \
            in one SQLite file (--db, the default) or in a PostgreSQL database (--database \
            postgres://...), which several server processes may share.

            On start it prints one line to standard output, `healthgate-server listening on \
            http://HOST:PORT`, with the port actually bound (useful with --port 0). Logs go to \
            standard error; passwords and tokens are never logged, and the database keeps only \
            bcrypt hashes of passwords and SHA-256 hashes of device tokens. SIGINT or SIGTERM \
            stops the server after the requests in progress.

            HTTPS with --tls-cert and --tls-key (TLS 1.2 and 1.3; SIGHUP reloads the certificate); \
            plain HTTP is served on loopback only, unless --plain-http says a proxy terminates TLS.
            Testing options (fault injection) are listed by --help-hidden. \
            `healthgate-server migrate` brings a database's schema up to date on its own.
            """,
        version: ServerVersion.current,
        subcommands: [MigrateCommand.self])

    @OptionGroup var storage: StorageOptions

    @Option(help: ArgumentHelp("The address to listen on (0.0.0.0 for every interface).", valueName: "address"))
    var host = "127.0.0.1"

    @Option(help: ArgumentHelp("The TCP port (0: any free port).", valueName: "port"))
    var port = 8080

    @Option(help: ArgumentHelp("""
        Serve HTTPS with this PEM certificate chain (the server's certificate first). Read again \
        on SIGHUP: new connections get the new certificate, open ones keep theirs.
        """, valueName: "file"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-cert (readable by the server only).", valueName: "file"))
    var tlsKey: String?

    @Flag(help: ArgumentHelp("""
        Serve plain HTTP on an address other than loopback (behind a reverse proxy that terminates \
        TLS on the same machine or network). Without TLS and without this flag, only 127.0.0.1, \
        ::1 or localhost are allowed.
        """))
    var plainHTTP = false

    @Option(help: ArgumentHelp("""
        Serve Prometheus metrics (GET /metrics) on this HOST:PORT, apart from the API (e.g. \
        127.0.0.1:9465): request latency, records accepted, duplicate and rejected, the database \
        pool's use, connections open.
        """, valueName: "host:port"))
    var metricsAddress: String?

    @Option(help: ArgumentHelp("bcrypt cost for new password hashes (4...31; each step doubles the time).",
                               valueName: "n"))
    var bcryptCost: UInt8 = PasswordHasher.defaultCost

    @Option(help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"

    @Option(help: ArgumentHelp("Largest upload body accepted, in bytes after decompression (larger: 413).",
                               valueName: "bytes"))
    var maxUploadBytes = SyncAPI.maxBodyBytes

    @Option(help: ArgumentHelp("Most records accepted in one upload (more: 413).", valueName: "n"))
    var maxUploadRecords = SyncAPI.maxRecordsPerUpload

    @Option(help: ArgumentHelp("Registrations accepted from one client address per hour (more: 429).", valueName: "n"))
    var registrationsPerHour = RegistrationThrottle.defaultPolicy.limit

    @Option(help: ArgumentHelp("""
        Failed logins from one client address within 15 minutes before it may try only the emails \
        it has logged in to (more: 429). Raise it behind a reverse proxy, where every client has \
        the proxy's address.
        """, valueName: "n"))
    var loginFailuresPerAddress = LoginAttempts.Policy().addressFailures

    @Option(help: ArgumentHelp("A device token unused for this many days stops working (0: never).", valueName: "days"))
    var tokenIdleDays = TokenExpiry.defaultIdleDays

    @Option(help: ArgumentHelp("""
        Connections open at once; more are answered 503 with Retry-After and closed. Default: as \
        many as the open-file limit allows (raised to its hard limit at start), less a reserve for \
        the database and for answering refusals.
        """, valueName: "n"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp("""
        Connections open at once from one client address (more: 503). Behind a reverse proxy every \
        client has the proxy's address: raise it there.
        """, valueName: "n"))
    var maxConnectionsPerAddress = ConnectionLimits().maxConnectionsPerAddress

    @Option(help: ArgumentHelp("""
        Seconds allowed to receive a request, head and body, from its first byte; a connection \
        still sending after that is closed.
        """, valueName: "seconds"))
    var requestTimeout = Self.seconds(ConnectionLimits().requestTimeout)

    @Option(help: ArgumentHelp("""
        Seconds a connection may wait for its next request before it is closed (longer than the \
        daemon's 60 s sync interval, so a kept connection is not closed just as it is used).
        """, valueName: "seconds"))
    var idleTimeout = Self.seconds(ConnectionLimits().idleTimeout)

    @Option(help: ArgumentHelp("Testing: the fraction (0...1) of uploads (POST /v1/records) that fail on purpose.",
                               valueName: "rate", visibility: .hidden))
    var faultRate: Double = 0

    @Option(help: ArgumentHelp("Testing: the seed of the fault sequence (the same seed repeats the same faults).",
                               valueName: "n", visibility: .hidden))
    var faultSeed: UInt64 = 1

    @Option(help: ArgumentHelp("""
        Testing: the faults to draw from, comma-separated: unavailable (503 with Retry-After: 1), \
        stall (no answer for --fault-stall seconds, then 503), drop (the upload is stored, then the \
        connection is closed without an answer).
        """, valueName: "kinds", visibility: .hidden))
    var faultKinds = FaultPlan.Kind.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: ArgumentHelp("Testing: how long a stall fault holds the answer, in seconds.", valueName: "seconds",
                               visibility: .hidden))
    var faultStall: Double = 30

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        if let metricsAddress, MetricsServer.parse(metricsAddress) == nil {
            throw ValidationError("--metrics-address \(metricsAddress) is not HOST:PORT")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if tlsCert == nil, !plainHTTP, !["127.0.0.1", "::1", "localhost"].contains(host) {
            throw ValidationError("""
                --host \(host) would serve passwords and tokens over plain HTTP beyond this machine: give --tls-cert and \
                --tls-key, or --plain-http behind a reverse proxy that terminates TLS
                """)
        }
        guard PasswordHasher.costs.contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be in 4...31") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
        guard (1024...SyncAPI.maxBodyBytes).contains(maxUploadBytes) else {
            throw ValidationError("--max-upload-bytes must be in 1024...\(SyncAPI.maxBodyBytes)")
        }
        guard (1...SyncAPI.maxRecordsPerUpload).contains(maxUploadRecords) else {
            throw ValidationError("--max-upload-records must be in 1...\(SyncAPI.maxRecordsPerUpload)")
        }
        guard registrationsPerHour >= 1 else { throw ValidationError("--registrations-per-hour must be 1 or more") }
        guard loginFailuresPerAddress >= 1 else { throw ValidationError("--login-failures-per-address must be 1 or more") }
        guard TokenExpiry.idleDaysRange.contains(tokenIdleDays) else {
            throw ValidationError("--token-idle-days must be in \(TokenExpiry.idleDaysRange.lowerBound)...\(TokenExpiry.idleDaysRange.upperBound) (0: never)")
        }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be 1 or more") }
        guard maxConnectionsPerAddress >= 1 else { throw ValidationError("--max-connections-per-address must be 1 or more") }
        guard requestTimeout > 0, requestTimeout <= 3600 else {
            throw ValidationError("--request-timeout must be a number of seconds in (0, 3600]")
        }
        guard idleTimeout > 0, idleTimeout <= 86400 else {
            throw ValidationError("--idle-timeout must be a number of seconds in (0, 86400]")
        }
        guard (0...1).contains(faultRate) else { throw ValidationError("--fault-rate must be in 0...1") }
        _ = try kinds()
        guard faultStall >= 0, faultStall.isFinite else { throw ValidationError("--fault-stall must be a number of seconds") }
    }

    private func kinds() throws -> [FaultPlan.Kind] {
        try faultKinds.split(separator: ",").map { name in
            guard let kind = FaultPlan.Kind(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--fault-kinds: unknown fault '\(name)' (unavailable, stall, drop)")
            }
            return kind
        }
    }

    private static func seconds(_ duration: Duration) -> Double { duration.inSeconds }

    /// The connection caps for the open-file limit in force, `--max-connections` checked against it.
    private func connectionLimits(openFileLimit: Int, storeDescriptors: Int) throws -> ConnectionLimits {
        var limits = ConnectionLimits(openFileLimit: openFileLimit, storeDescriptors: storeDescriptors)
        if let maxConnections {
            guard maxConnections <= limits.maxConnections else {
                throw ValidationError("""
                    --max-connections \(maxConnections) does not fit under the open-file limit (\(openFileLimit)): \
                    at most \(limits.maxConnections); raise the limit (ulimit -n, or LimitNOFILE= in a systemd unit)
                    """)
            }
            limits.maxConnections = maxConnections
        }
        limits.maxConnectionsPerAddress = maxConnectionsPerAddress
        limits.requestTimeout = .clamped(seconds: requestTimeout, maximum: .seconds(3600))
        limits.idleTimeout = .clamped(seconds: idleTimeout, maximum: .seconds(86_400))
        return limits
    }

    func run() async throws {
        // Every connection is a descriptor: take all the process may have, then size the caps to it.
        let openFileLimit = OpenFileLimit.raise()
        let location = try storage.location()
        // A PostgreSQL pool's connections are descriptors too: kept out of the clients' share.
        var storeDescriptors = 0
        if case .postgres(let settings) = location { storeDescriptors = settings.poolMax }
        let connections = try connectionLimits(openFileLimit: openFileLimit, storeDescriptors: storeDescriptors)
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "healthgate-server")

        let store = try StorageOptions.open(location, logger: logger)
        var options = ServerOptions()
        if let tlsCert, let tlsKey {
            do {
                let tls = try await TLSCertificates(certificate: tlsCert, key: tlsKey)
                if let warning = tls.warning() { logger.warning("\(warning)") }
                options.tls = tls
            } catch let error as TLSSetupError {
                throw ValidationError(error.description)
            }
            if let warning = TLSCertificates.keyAccessWarning(path: tlsKey) { logger.warning("\(warning)") }
        }
        options.host = host
        options.port = port
        options.bcryptCost = bcryptCost
        options.limits.uploadBodyBytes = maxUploadBytes
        options.limits.recordsPerUpload = maxUploadRecords
        options.registrationPolicy.limit = registrationsPerHour
        options.tokenExpiry.idleDays = tokenIdleDays
        options.loginPolicy.addressFailures = loginFailuresPerAddress
        options.connections = connections
        options.metricsAddress = metricsAddress
        if faultRate > 0 {
            options.faults = FaultPlan(rate: faultRate, seed: faultSeed, kinds: try kinds(),
                                       stall: .clamped(seconds: faultStall, maximum: .seconds(86_400)))
            logger.warning("fault injection is on: \(faultRate) of uploads fail (\(faultKinds)), seed \(faultSeed)")
        }
        logger.info("database \(location)")
        logger.info("""
            open-file limit \(openFileLimit): up to \(connections.maxConnections) connections, \
            \(connections.maxConnectionsPerAddress) per client address
            """)
        let app = HealthGateServer.application(options: options, store: store, logger: logger) { url in
            // Unbuffered: a test or supervisor reading the pipe sees the line at once.
            FileHandle.standardOutput.write(Data("healthgate-server listening on \(url)\n".utf8))
        }
        try await app.runService()
        logger.info("stopped")
    }
}
