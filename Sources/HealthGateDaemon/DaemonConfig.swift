public import Dashboard
public import DriverKit
import Foundation
public import HealthSync
import MetricsEndpoint
import TOMLKit
import Timing
public import WebSecurity

/// What `healthgate daemon` runs: read from a TOML file (`--config`, sample and reference in
/// `systemd/healthgate.toml`) or the embedded default for a state directory (`--state-dir`).
///
/// Validation happens here, before anything starts: an unknown key, a value of the wrong type or
/// out of range, or a driver table its driver refuses is a ``ConfigError`` naming the key path.
/// Driver tables are checked by the drivers themselves (``DriverCatalog``), which open nothing
/// while doing so.
public struct DaemonConfig: Sendable, Equatable {
    /// The database file.
    public var database: String
    /// What the file holds that is no longer needed, to tell the user (`daemon --check` prints
    /// them, the daemon logs them at start): a `[drivers.NAME]` table of type `manual`.
    public var notices: [String] = []
    /// Log level: trace, debug, info, notice, warning, error or critical.
    public var logLevel = "info"
    /// The local status API's Unix socket (nil: none).
    public var statusSocket: String?
    /// `HOST:PORT` of the Prometheus metrics endpoint (nil: none).
    public var metricsAddress: String?
    /// `HOST:PORT` or `unix:PATH` of the dashboard, `[dashboard] listen` (nil: none): loopback,
    /// a Unix socket for a proxy, or any address with TLS and a password (``dashboardAccess``).
    public var dashboardAddress: String?
    /// `[dashboard]`'s TLS certificate and key files, password hash and read-only switch.
    public var dashboardAccess = DashboardAccessSettings()
    /// Forwarding to the tracking server (nil: store only).
    public var forwarder: ForwarderSettings?
    /// Driver instances by name (the table's name under `[drivers]`).
    public var drivers: [String: DriverInstance] = [:]
    /// `[importers.ID]` tables: file importers' settings by id (without `enabled`).
    public var importers: [String: [String: ConfigValue]] = [:]
    /// File importers turned off (`enabled = false`).
    public var disabledImporters: Set<String> = []

    public init(database: String) { self.database = database }

    /// The embedded default: the database `DIR/healthgate.sqlite`, an inbox folder `DIR/inbox`,
    /// a status socket `DIR/healthgate.sock`, no server.
    public static func embeddedDefault(stateDirectory dir: String) -> DaemonConfig {
        var config = DaemonConfig(database: dir + "/healthgate.sqlite")
        config.statusSocket = dir + "/healthgate.sock"
        config.drivers["inbox"] = DriverInstance(name: "inbox", type: "watch_folder", settings: ["path": .string(dir + "/inbox")])
        return config
    }
}

/// The `[forwarder]` table, decoded into the forwarder's settings.
private struct ForwarderTable: Decodable {
    var settings: ForwarderSettings

    enum CodingKeys: String, CodingKey {
        case server, credentials, caFile = "ca_file", interval = "interval_s", batchRecords = "batch_records"
        case batchBytes = "batch_bytes", concurrentUploads = "concurrent_uploads", pull
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let text = try c.decode(String.self, forKey: .server, required: "the tracking server's URL")
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw c.configError(.server, "'\(text)' is not an http or https URL")
        }
        settings = ForwarderSettings(server: url)
        settings.credentials = try c.decodeIfPresent(String.self, forKey: .credentials)
        settings.caFile = try c.decodeIfPresent(String.self, forKey: .caFile)
        if let interval = try c.decodeIfPresent(duration: .interval, unit: .seconds, in: .seconds(1)...(.seconds(86_400))) {
            settings.intervalS = interval.inSeconds
        }
        settings.batchRecords = try c.decodeIfPresent(Int.self, forKey: .batchRecords, in: 1...5000) ?? settings.batchRecords
        settings.batchBytes = try c.decodeIfPresent(Int.self, forKey: .batchBytes, in: 1024...(32 << 20)) ?? settings.batchBytes
        settings.concurrentUploads = try c.decodeIfPresent(Int.self, forKey: .concurrentUploads, in: Forwarder.Configuration.concurrentUploadsRange) ?? settings.concurrentUploads
        settings.pull = try c.decodeIfPresent(Bool.self, forKey: .pull) ?? settings.pull
    }
}

/// One `[drivers.NAME]` table.
public struct DriverInstance: Sendable, Equatable {
    public var name: String
    /// The driver's id (`type = "ble"`).
    public var type: String
    /// The table's other keys, for the driver's typed settings.
    public var settings: [String: ConfigValue]

    public init(name: String, type: String, settings: [String: ConfigValue]) {
        self.name = name
        self.type = type
        self.settings = settings
    }

    /// The key path of the instance's table.
    public var keyPath: String { "drivers.\(name)" }
}

extension DaemonConfig {
    /// Reads and validates the file at `path` against the drivers of `catalog`. `stateDirectory`
    /// supplies the database's default location when the file does not name one.
    public static func load(path: String, stateDirectory: String, drivers catalog: DriverCatalog) throws(ConfigError) -> DaemonConfig {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ConfigError(file: path, keyPath: "", reason: "cannot read the file: \(error.localizedDescription)")
        }
        do { return try parse(text, stateDirectory: stateDirectory, drivers: catalog) } catch {
            var located = error
            located.file = path
            throw located
        }
    }

    /// The top level of the file, typed.
    private struct File: Decodable {
        enum LogLevel: String, ConfigChoice { case trace, debug, info, notice, warning, error, critical }

        struct API: Decodable {
            var socket: String?
            var metrics: String?

            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                socket = try c.decodeIfPresent(String.self, forKey: .socket)
                metrics = try c.decodeIfPresent(String.self, forKey: .metrics)
                if let metrics, !DaemonConfig.isHostPort(metrics) { throw c.configError(.metrics, "'\(metrics)' is not HOST:PORT") }
            }

            enum CodingKeys: String, CodingKey { case socket, metrics }
        }

        /// `[dashboard]`: the pages and charts (docs/dashboard.md): on loopback, or on any address
        /// with `tls_cert`, `tls_key` and `password_hash` all three.
        struct DashboardTable: Decodable {
            var listen: String?
            var enabled: Bool
            var access = DashboardAccessSettings()

            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
                listen = try c.decodeIfPresent(String.self, forKey: .listen)
                access.certificate = try c.decodeIfPresent(String.self, forKey: .tlsCert)
                access.key = try c.decodeIfPresent(String.self, forKey: .tlsKey)
                access.passwordHash = try c.decodeIfPresent(String.self, forKey: .passwordHash)
                access.readOnly = try c.decodeIfPresent(Bool.self, forKey: .readOnly) ?? false
                if access.certificate != nil, access.key == nil { throw c.configError(.tlsKey, "is required with tls_cert (its private key)") }
                if access.key != nil, access.certificate == nil { throw c.configError(.tlsCert, "is required with tls_key (its certificate)") }
                if let hash = access.passwordHash, !DashboardAccess.isPasswordHash(hash) {
                    throw c.configError(.passwordHash, "is not a password hash: make one with `healthgate dashboard hash-password`")
                }
                if let listen, case .failure(let error) = DashboardListen.parse(listen, secured: access.secured) {
                    throw c.configError(.listen, error.description)
                }
            }

            enum CodingKeys: String, CodingKey {
                case listen, enabled, tlsCert = "tls_cert", tlsKey = "tls_key", passwordHash = "password_hash", readOnly = "read_only"
            }
        }

        var database: String?
        var logLevel: LogLevel?
        var api: API?
        var dashboard: DashboardTable?
        var forwarder: ForwarderTable?
        var drivers: [String: ConfigValue]?
        var importers: [String: ConfigValue]?

        enum CodingKeys: String, CodingKey { case database, logLevel = "log_level", api, dashboard, forwarder, drivers, importers }
    }

    /// Parses and validates TOML text; every driver table is checked by its driver in `catalog`.
    public static func parse(_ text: String, stateDirectory: String, drivers catalog: DriverCatalog) throws(ConfigError) -> DaemonConfig {
        let file = try ConfigDecoder.decode(File.self, from: try TOMLConfig.parse(text))
        var config = DaemonConfig(database: file.database ?? stateDirectory + "/healthgate.sqlite")
        config.logLevel = file.logLevel?.rawValue ?? config.logLevel
        config.statusSocket = file.api?.socket
        config.metricsAddress = file.api?.metrics
        if let dashboard = file.dashboard, dashboard.enabled {
            config.dashboardAddress = dashboard.listen ?? DashboardServer.defaultAddress
            config.dashboardAccess = dashboard.access
        }
        config.forwarder = file.forwarder?.settings
        for (name, value) in (file.drivers ?? [:]).sorted(by: { $0.key < $1.key }) {
            // Entries were once a driver that idled: its table is ignored now, not refused, so a
            // daemon upgraded with its old file still starts.
            if case .table(let table) = value, table["type"] == .string(retiredManualType) {
                config.notices.append("[drivers.\(name)]: type '\(retiredManualType)' is no longer a driver (entries need no table: "
                                      + "`healthgate log`, the status socket's log request and the dashboard take them in); the table is ignored, remove it")
                continue
            }
            let instance = try driver(name, value, catalog: catalog)
            config.drivers[name] = instance
        }
        for (id, value) in (file.importers ?? [:]).sorted(by: { $0.key < $1.key }) {
            let keyPath = "importers.\(id)"
            let importers = catalog.fileImporters.map(\.id)
            guard let descriptor = catalog[id], descriptor.kind == .fileImporter else {
                throw ConfigError(keyPath: keyPath, reason: "'\(id)' is not a file importer: one of \(importers.joined(separator: ", "))")
            }
            guard case .table(var table) = value else { throw ConfigError(keyPath: keyPath, reason: "must be a table ([\(keyPath)])") }
            if let enabled = table.removeValue(forKey: "enabled") {
                guard case .bool(let on) = enabled else { throw ConfigError(keyPath: keyPath + ".enabled", reason: "must be true or false") }
                if !on { config.disabledImporters.insert(id) }
            }
            do { _ = try descriptor.makeFileImporter(table, context: .standalone(id)) } catch { throw error.under(keyPath) }
            config.importers[id] = table
        }
        return config
    }

    /// The type of the driver entries once were.
    static let retiredManualType = "manual"

    private static func driver(_ name: String, _ value: ConfigValue, catalog: DriverCatalog) throws(ConfigError) -> DriverInstance {
        let keyPath = "drivers.\(name)"
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ConfigError(keyPath: keyPath, reason: "a driver's name may hold letters, digits, '-' and '_' only")
        }
        guard case .table(var table) = value else { throw ConfigError(keyPath: keyPath, reason: "must be a table ([\(keyPath)])") }
        let kinds = catalog.deviceDrivers.map(\.id).joined(separator: ", ")
        guard let type = table.removeValue(forKey: "type") else {
            throw ConfigError(keyPath: keyPath + ".type", reason: "is required: one of \(kinds)")
        }
        guard case .string(let id) = type else { throw ConfigError(keyPath: keyPath + ".type", reason: "must be a string") }
        guard let descriptor = catalog[id], descriptor.kind == .deviceDriver else {
            let hint = catalog[id]?.kind == .fileImporter ? " (file importers are set in [importers.\(id)])" : ""
            throw ConfigError(keyPath: keyPath + ".type", reason: "'\(id)' is not a driver: one of \(kinds)\(hint)")
        }
        // The driver checks its table (and opens nothing).
        do { _ = try descriptor.makeDeviceDriver(table, context: .standalone(name)) } catch { throw error.under(keyPath) }
        return DriverInstance(name: name, type: id, settings: table)
    }

    static func isHostPort(_ text: String) -> Bool { MetricsServer.parse(text) != nil }
}

/// TOML text as configuration values (the daemon's file; `healthgate import --mapping`'s).
public enum TOMLConfig {
    public static func parse(_ text: String) throws(ConfigError) -> [String: ConfigValue] {
        let root: TOMLTable
        do { root = try TOMLTable(string: text) } catch let error as TOMLParseError {
            throw ConfigError(keyPath: "", reason: "not valid TOML: \(error.description) (line \(error.source.begin.line), column \(error.source.begin.column))")
        } catch {
            throw ConfigError(keyPath: "", reason: "not valid TOML: \(error)")
        }
        return try table(root, at: "")
    }

    private static func table(_ table: TOMLTable, at path: String) throws(ConfigError) -> [String: ConfigValue] {
        var out: [String: ConfigValue] = [:]
        for key in table.keys {
            let keyPath = path.isEmpty ? key : path + "." + key
            out[key] = try value(table[key]!, at: keyPath)
        }
        return out
    }

    private static func value(_ value: any TOMLValueConvertible, at path: String) throws(ConfigError) -> ConfigValue {
        if let text = value.string { return .string(text) }
        if let flag = value.bool { return .bool(flag) }
        if let number = value.int { return .integer(number) }
        if let number = value.double { return .float(number) }
        if let inner = value.table { return .table(try table(inner, at: path)) }
        if let items = value.array {
            var out: [ConfigValue] = []
            for (index, item) in items.enumerated() { out.append(try self.value(item, at: path + "[\(index)]")) }
            return .array(out)
        }
        throw ConfigError(keyPath: path, reason: "dates and times are not settings here: write a string")
    }
}

/// `[dashboard]`'s access settings, as written: file paths and the hash (the files are read
/// when the daemon starts, ``DashboardAccessSettings/load()``).
public struct DashboardAccessSettings: Sendable, Equatable {
    public var certificate: String?
    public var key: String?
    public var passwordHash: String?
    public var readOnly = false

    public init(certificate: String? = nil, key: String? = nil, passwordHash: String? = nil, readOnly: Bool = false) {
        self.certificate = certificate
        self.key = key
        self.passwordHash = passwordHash
        self.readOnly = readOnly
    }

    /// TLS and a password: fit to listen off loopback.
    public var secured: Bool { certificate != nil && key != nil && passwordHash != nil }

    /// The certificates read (and SIGHUP trapped for their reload) and the rest as given.
    public func load() async throws -> DashboardAccess {
        var access = DashboardAccess(passwordHash: passwordHash, readOnly: readOnly)
        if let certificate, let key { access.tls = try await TLSCertificates(certificate: certificate, key: key) }
        return access
    }
}
