public import Foundation

/// Where the server keeps its data, as `--database` (or `HEALTHGATE_DATABASE`) names it:
///
/// - `sqlite:PATH`, `sqlite://PATH` or a plain path: one SQLite file (the default);
/// - `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]` (or `postgresql://`): a
///   PostgreSQL database. Options: `sslmode` (disable, prefer, require, verify-full; default
///   prefer on TCP), `sslrootcert` (a PEM file of the certificate authorities to trust; with it
///   the default is verify-full), `host` (a folder holding PostgreSQL's Unix socket, as libpq
///   takes it, e.g. `/run/postgresql`), `pool_max` (connections per server process; default 20),
///   `pool_wait` (seconds a request waits for a free connection before 503; default 5). Without a
///   password in the URL, `PGPASSWORD` is used when set; without a user, the process's user.
public enum DatabaseLocation: Equatable, Sendable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresSettings)

    /// What a location failed to parse on: the whole message for people.
    public struct Invalid: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    public static func parse(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> DatabaseLocation {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return .postgres(try PostgresSettings(url: text, environment: environment))
        }
        if lowered.hasPrefix("sqlite://") { return try sqlite(String(text.dropFirst("sqlite://".count)), text) }
        if lowered.hasPrefix("sqlite:") { return try sqlite(String(text.dropFirst("sqlite:".count)), text) }
        if let colon = text.range(of: "://") {
            throw Invalid(description: "\(text): unknown database kind '\(text[..<colon.lowerBound])' (sqlite:PATH or postgres://...)")
        }
        return try sqlite(text, text)
    }

    private static func sqlite(_ path: String, _ text: String) throws -> DatabaseLocation {
        guard !path.isEmpty else { throw Invalid(description: "\(text): no file named (sqlite:PATH)") }
        return .sqlite(path: path)
    }

    /// For logs and messages: never the password.
    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let settings): settings.description
        }
    }
}

/// A PostgreSQL database and how to reach it (see ``DatabaseLocation``).
public struct PostgresSettings: Equatable, Sendable, CustomStringConvertible {
    public enum Endpoint: Equatable, Sendable {
        case tcp(host: String, port: Int)
        /// The socket file itself (`FOLDER/.s.PGSQL.PORT`).
        case unixSocket(path: String)
    }

    public enum TLSMode: String, Equatable, Sendable, CaseIterable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public var endpoint: Endpoint
    public var user: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// PEM certificate authorities trusted for the server's certificate (else the system's).
    public var rootCertificate: String?
    /// Connections per server process.
    public var poolMax = 20
    /// How long a request waits for a free connection before it is answered 503.
    public var poolWait: Duration = .seconds(5)

    public init(endpoint: Endpoint, user: String, password: String? = nil, database: String, tls: TLSMode = .disable) {
        self.endpoint = endpoint
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
    }

    init(url text: String, environment: [String: String]) throws {
        func invalid(_ why: String) -> DatabaseLocation.Invalid {
            DatabaseLocation.Invalid(description: "\(Self.redacted(text)): \(why)")
        }
        guard let components = URLComponents(string: text) else { throw invalid("not a URL") }
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard let value = item.value else { throw invalid("option \(item.name) has no value") }
            options[item.name] = value
        }
        let known: Set = ["sslmode", "sslrootcert", "host", "pool_max", "pool_wait"]
        if let unknown = options.keys.sorted().first(where: { !known.contains($0) }) {
            throw invalid("unknown option '\(unknown)' (known: \(known.sorted().joined(separator: ", ")))")
        }
        let database = String(components.percentEncodedPath.drop { $0 == "/" }).removingPercentEncoding ?? ""
        guard !database.isEmpty, !database.contains("/") else { throw invalid("no database named (postgres://USER@HOST/DATABASE)") }
        self.database = database
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw invalid("port \(port) is not in 1...65535") }
        if let folder = options["host"] {
            guard folder.hasPrefix("/") else { throw invalid("host= must be the folder of PostgreSQL's socket (e.g. /run/postgresql)") }
            endpoint = .unixSocket(path: folder + "/.s.PGSQL.\(port)")
        } else {
            guard let host = components.host, !host.isEmpty else { throw invalid("no host (postgres://USER@HOST/DATABASE)") }
            endpoint = .tcp(host: host, port: port)
        }
        let user = components.user.flatMap { $0.removingPercentEncoding } ?? environment["PGUSER"] ?? environment["USER"]
        guard let user, !user.isEmpty else { throw invalid("no user (postgres://USER@HOST/DATABASE)") }
        self.user = user
        password = components.password.flatMap { $0.removingPercentEncoding } ?? environment["PGPASSWORD"]
        rootCertificate = options["sslrootcert"]
        if case .unixSocket = endpoint {
            tls = .disable
        } else if let mode = options["sslmode"] {
            guard let parsed = TLSMode(rawValue: mode) else {
                throw invalid("sslmode \(mode) is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            tls = parsed
        } else {
            tls = rootCertificate == nil ? .prefer : .verifyFull
        }
        if let text = options["pool_max"] {
            guard let n = Int(text), (1...1000).contains(n) else { throw invalid("pool_max must be in 1...1000") }
            poolMax = n
        }
        if let text = options["pool_wait"] {
            guard let seconds = Double(text), seconds > 0, seconds <= 600 else { throw invalid("pool_wait must be seconds in (0, 600]") }
            poolWait = .milliseconds(Int64(seconds * 1000))
        }
    }

    /// The URL without its password.
    public var description: String {
        var text = "postgres://\(user)@"
        switch endpoint {
        case .tcp(let host, let port): text += (host.contains(":") ? "[\(host)]" : host) + ":\(port)/\(database)"
        case .unixSocket(let path): text += "/\(database)?host=" + (path as NSString).deletingLastPathComponent
        }
        return text
    }

    /// A URL as written, its password (if any) replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? "postgres://***"
    }
}
