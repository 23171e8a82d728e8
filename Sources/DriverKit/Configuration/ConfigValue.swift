/// A value of a configuration file, as the daemon read it from TOML: what a driver's typed
/// settings are decoded from (``ConfigDecoder``). Drivers never see the file format.
public enum ConfigValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case bool(Bool)
    case array([ConfigValue])
    case table([String: ConfigValue])
}

/// A configuration the daemon will not start with, or a driver table its driver refuses: where
/// (file, key path) and why.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration file, when known.
    public var file: String?
    /// `drivers.inbox.path`, or empty for the file as a whole.
    public var keyPath: String
    public var reason: String

    public init(file: String? = nil, keyPath: String, reason: String) {
        self.file = file
        self.keyPath = keyPath
        self.reason = reason
    }

    /// The same error, with its key path under `prefix` (a table's own path).
    public func under(_ prefix: String) -> ConfigError {
        guard !prefix.isEmpty else { return self }
        var copy = self
        copy.keyPath = keyPath.isEmpty ? prefix : prefix + "." + keyPath
        return copy
    }

    public var description: String {
        [file, keyPath.isEmpty ? nil : keyPath, reason].compactMap { $0 }.joined(separator: ": ")
    }
}

extension ConfigValue: Decodable {
    /// A table or value taken as it is (``ConfigDecoder`` only): nothing under it counts as an
    /// unknown key; whoever uses it decodes it later.
    public init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? ValueDecoder else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "only ConfigDecoder reads a ConfigValue"))
        }
        decoder.reads.markWhole(decoder.path)
        self = decoder.value
    }
}
