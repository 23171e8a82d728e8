import DriverKit
import Foundation
import TOMLKit
import Timing

/// What `healthgate daemon` runs: read from a TOML file (`--config`, sample and reference in
/// `systemd/healthgate.toml`) or the embedded default for a state directory (`--state-dir`).
///
/// Validation happens here, before anything starts: an unknown key, a value of the wrong type or
/// out of range, or a driver table its driver refuses is a ``ConfigError`` naming the key path.
public struct DaemonConfig: Sendable, Equatable {
    /// The database file.
    public var database: String
    /// Log level: trace, debug, info, notice, warning, error or critical.
    public var logLevel = "info"
    /// The local status API's Unix socket (nil: none).
    public var statusSocket: String?
    /// `HOST:PORT` of the Prometheus metrics endpoint (nil: none).
    public var metricsAddress: String?
    /// Forwarding to the tracking server (nil: store only).
    public var forwarder: ForwarderSettings?
    /// Driver instances by name (the table's name under `[drivers]`).
    public var drivers: [String: DriverInstance] = [:]

    public init(database: String) { self.database = database }

    /// The embedded default: the database `DIR/healthgate.sqlite`, an inbox folder `DIR/inbox`,
    /// a status socket `DIR/healthgate.sock`, no server.
    public static func embeddedDefault(stateDirectory dir: String) -> DaemonConfig {
        var config = DaemonConfig(database: dir + "/healthgate.sqlite")
        config.statusSocket = dir + "/healthgate.sock"
        config.drivers["inbox"] = DriverInstance(name: "inbox", type: .watchFolder,
                                                 config: DriverConfig(["path": dir + "/inbox"]))
        return config
    }
}

/// The `[forwarder]` table.
public struct ForwarderSettings: Sendable, Equatable {
    /// The tracking server's base URL (http or https).
    public var server: URL
    /// The device token file written by `healthgate login` (default: next to the database).
    public var credentials: String?
    /// A CA certificate (PEM) to trust instead of the system store.
    public var caFile: String?
    /// Seconds between drains when nothing new was stored.
    public var intervalS = 60.0
    public var batchRecords = 1000
    public var batchBytes = 8 << 20
    public var concurrentUploads = 2
    /// Pull the other devices' history after each drain.
    public var pull = true

    public init(server: URL) { self.server = server }
}

/// One `[drivers.NAME]` table.
public struct DriverInstance: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case ble, watchFolder = "watch_folder", massStorage = "mass_storage", exec
    }
    public var name: String
    public var type: Kind
    /// The table's other keys as the driver reads them (arrays joined with commas).
    public var config: DriverConfig

    public init(name: String, type: Kind, config: DriverConfig) {
        self.name = name
        self.type = type
        self.config = config
    }
}

/// A configuration the daemon will not start with: where (file, key path) and why.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String?
    /// `drivers.inbox.path`, or empty for the file as a whole.
    public var keyPath: String
    public var reason: String

    public var description: String {
        [file, keyPath.isEmpty ? nil : keyPath, reason].compactMap { $0 }.joined(separator: ": ")
    }
}

extension DaemonConfig {
    /// Reads and validates the file at `path`. `stateDirectory` supplies the database's default
    /// location when the file does not name one.
    public static func load(path: String, stateDirectory: String) throws(ConfigError) -> DaemonConfig {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ConfigError(file: path, keyPath: "", reason: "cannot read the file: \(error.localizedDescription)")
        }
        do { return try parse(text, stateDirectory: stateDirectory) } catch {
            var located = error
            located.file = path
            throw located
        }
    }

    /// Parses and validates TOML text.
    public static func parse(_ text: String, stateDirectory: String) throws(ConfigError) -> DaemonConfig {
        let root: TOMLTable
        do { root = try TOMLTable(string: text) } catch let error as TOMLParseError {
            throw ConfigError(keyPath: "", reason: "not valid TOML: \(error.description) (line \(error.source.begin.line), column \(error.source.begin.column))")
        } catch {
            throw ConfigError(keyPath: "", reason: "not valid TOML: \(error)")
        }
        var reader = TableReader(table: root, path: "")
        var config = DaemonConfig(database: try reader.string("database") ?? stateDirectory + "/healthgate.sqlite")
        if let level = try reader.string("log_level") {
            let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
            guard levels.contains(level) else { throw reader.error("log_level", "'\(level)' is not one of \(levels.joined(separator: ", "))") }
            config.logLevel = level
        }
        if var api = try reader.table("api") {
            config.statusSocket = try api.string("socket")
            if let address = try api.string("metrics") {
                guard Self.isHostPort(address) else { throw api.error("metrics", "'\(address)' is not HOST:PORT") }
                config.metricsAddress = address
            }
            try api.finish()
        }
        if var table = try reader.table("forwarder") {
            config.forwarder = try Self.forwarder(&table)
            try table.finish()
        }
        if var drivers = try reader.table("drivers") {
            for name in drivers.keys {
                guard var table = try drivers.table(name) else { continue }
                config.drivers[name] = try Self.driver(name, &table)
            }
            try drivers.finish()
        }
        try reader.finish()
        return config
    }

    private static func forwarder(_ table: inout TableReader) throws(ConfigError) -> ForwarderSettings {
        guard let text = try table.string("server") else { throw table.error("server", "is required (the tracking server's URL)") }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw table.error("server", "'\(text)' is not an http or https URL")
        }
        var settings = ForwarderSettings(server: url)
        settings.credentials = try table.string("credentials")
        settings.caFile = try table.string("ca_file")
        if let interval = try table.double("interval_s", in: 1...86_400) { settings.intervalS = interval }
        if let records = try table.int("batch_records", in: 1...5000) { settings.batchRecords = records }
        if let bytes = try table.int("batch_bytes", in: 1024...(32 << 20)) { settings.batchBytes = bytes }
        if let window = try table.int("concurrent_uploads", in: 1...8) { settings.concurrentUploads = window }
        if let pull = try table.bool("pull") { settings.pull = pull }
        return settings
    }

    private static func driver(_ name: String, _ table: inout TableReader) throws(ConfigError) -> DriverInstance {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ConfigError(keyPath: table.path, reason: "a driver's name may hold letters, digits, '-' and '_' only")
        }
        guard let typeName = try table.string("type") else {
            throw table.error("type", "is required: one of \(DriverInstance.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let type = DriverInstance.Kind(rawValue: typeName) else {
            throw table.error("type", "'\(typeName)' is not a driver: one of \(DriverInstance.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return DriverInstance(name: name, type: type, config: DriverConfig(try table.flattenedRest()))
    }

    static func isHostPort(_ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { return false }
        return !text[..<colon].isEmpty && (1...65_535).contains(port)
    }
}

/// Reads one TOML table, remembering which keys were read so that the rest can be reported
/// as unknown.
struct TableReader {
    let table: TOMLTable
    /// The table's key path (`forwarder`, `drivers.inbox`; empty at the top).
    let path: String
    private var used: Set<String> = []

    init(table: TOMLTable, path: String) {
        self.table = table
        self.path = path
    }

    var keys: [String] { table.keys.sorted() }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    func error(_ key: String, _ reason: String) -> ConfigError { ConfigError(keyPath: keyPath(key), reason: reason) }

    private mutating func value(_ key: String) -> (any TOMLValueConvertible)? {
        used.insert(key)
        return table[key]
    }

    mutating func string(_ key: String) throws(ConfigError) -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.string else { throw error(key, "must be a string") }
        return text
    }

    mutating func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.bool else { throw error(key, "must be true or false") }
        return flag
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.int else { throw error(key, "must be a whole number") }
        guard range.contains(number) else { throw error(key, "\(number) is out of range (\(range.lowerBound) to \(range.upperBound))") }
        return number
    }

    mutating func double(_ key: String, in range: ClosedRange<Double>) throws(ConfigError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.double ?? value.int.map(Double.init) else { throw error(key, "must be a number") }
        guard range.contains(number) else { throw error(key, "\(number) is out of range (\(range.lowerBound) to \(range.upperBound))") }
        return number
    }

    mutating func table(_ key: String) throws(ConfigError) -> TableReader? {
        guard let value = value(key) else { return nil }
        guard let inner = value.table else { throw error(key, "must be a table ([\(keyPath(key))])") }
        return TableReader(table: inner, path: keyPath(key))
    }

    /// The keys not read yet, as a driver's flat configuration: strings, numbers and booleans
    /// as text, arrays of them joined with commas.
    mutating func flattenedRest() throws(ConfigError) -> [String: String] {
        var out: [String: String] = [:]
        for key in keys where !used.contains(key) {
            used.insert(key)
            let value = table[key]!
            if let items = value.array {
                var texts: [String] = []
                for item in items {
                    guard let text = Self.scalarText(item), !text.contains(",") else {
                        throw error(key, "must be a list of strings or numbers without commas")
                    }
                    texts.append(text)
                }
                out[key] = texts.joined(separator: ",")
            } else if let text = Self.scalarText(value) {
                out[key] = text
            } else {
                throw error(key, "must be a string, number, boolean or list")
            }
        }
        return out
    }

    private static func scalarText(_ value: any TOMLValueConvertible) -> String? {
        if let text = value.string { return text }
        if let number = value.int { return String(number) }
        if let number = value.double { return String(number) }
        if let flag = value.bool { return String(flag) }
        return nil
    }

    /// Fails on the first key nobody read: a misspelt key is an error, not a silent default.
    func finish() throws(ConfigError) {
        if let unknown = keys.first(where: { !used.contains($0) }) { throw error(unknown, "unknown key") }
    }
}

extension DriverConfig {
    /// `key` as a duration in seconds within `range`, or nil when absent.
    func seconds(_ key: String, in range: ClosedRange<Double>, keyPath: String) throws(ConfigError) -> Duration? {
        guard let text = self[key] else { return nil }
        guard let seconds = Double(text), range.contains(seconds) else {
            throw ConfigError(keyPath: keyPath + "." + key,
                              reason: "'\(text)' is not a number of seconds in \(range.lowerBound)...\(range.upperBound)")
        }
        return .clamped(seconds: seconds)
    }

    /// Fails on the first key not in `known`: a misspelt key is an error, not a silent default.
    func rejectUnknownKeys(_ known: Set<String>, keyPath: String) throws(ConfigError) {
        if let key = Set(values.keys).subtracting(known).sorted().first {
            throw ConfigError(keyPath: keyPath + "." + key, reason: "unknown key")
        }
    }
}
