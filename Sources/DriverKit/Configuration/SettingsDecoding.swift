public import HealthModel

/// A setting that takes one of a few words (`after_import = "move"`): an enum whose raw values
/// are the words. A word not in the list is an error that lists them.
public protocol ConfigChoice: CaseIterable, RawRepresentable, Decodable, Sendable where RawValue == String {}

extension ConfigChoice {
    public init(from decoder: any Decoder) throws {
        let word = try decoder.singleValueContainer().decode(String.self)
        guard let choice = Self(rawValue: word) else {
            throw ConfigError(keyPath: ConfigDecoder.keyPath(decoder.codingPath),
                              reason: "'\(word)' is not one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = choice
    }
}

/// The unit of a duration setting given as a plain number (`settle_s = 2`, `flush_ms = 250`).
public enum DurationUnit: Sendable {
    case seconds, milliseconds

    var seconds: Double { self == .seconds ? 1 : 0.001 }
}

/// Settings no driver needs: a driver without keys of its own (file importers) decodes these, so
/// any key in its table is reported as unknown.
public struct NoSettings: Decodable, Sendable, Equatable {
    public init() {}
}

extension KeyedDecodingContainer {
    /// The error for `key`, at its full key path.
    public func configError(_ key: Key, _ reason: String) -> ConfigError {
        ConfigError(keyPath: ConfigDecoder.keyPath(codingPath + [key]), reason: reason)
    }

    /// A sport HealthGate knows (`Sport.normalize`: `"cycling"`, `"run"`, `"indoor_cycling"`), or
    /// nil when absent; any other word is an error.
    public func decodeIfPresent(sport key: Key) throws -> Sport? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        let sport = Sport.normalize(text)
        guard sport != .other || text.lowercased() == "other" else { throw configError(key, "'\(text)' is not a sport HealthGate knows") }
        return sport
    }

    /// A list of strings, or one string as a list of one; nil when absent.
    public func decodeIfPresent(strings key: Key) throws -> [String]? {
        guard contains(key) else { return nil }
        if let list = try? decode([String].self, forKey: key) { return list }
        return [try decode(String.self, forKey: key)]
    }

    /// A required value; its absence is an error that says what it is for (`is required (the
    /// folder to watch)`).
    public func decode<T: Decodable>(_ type: T.Type, forKey key: Key, required what: String) throws -> T {
        guard contains(key) else { throw configError(key, "is required (\(what))") }
        return try decode(type, forKey: key)
    }

    /// A whole number within `range`, or nil when absent.
    public func decodeIfPresent(_ type: Int.Type, forKey key: Key, in range: ClosedRange<Int>) throws -> Int? {
        guard let number = try decodeIfPresent(Int.self, forKey: key) else { return nil }
        guard range.contains(number) else {
            throw configError(key, "\(number) is out of range (\(range.lowerBound) to \(range.upperBound))")
        }
        return number
    }

    /// A number within `range`, or nil when absent.
    public func decodeIfPresent(_ type: Double.Type, forKey key: Key, in range: ClosedRange<Double>) throws -> Double? {
        guard let number = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard range.contains(number) else {
            throw configError(key, "\(Self.text(number)) is out of range (\(Self.text(range.lowerBound)) to \(Self.text(range.upperBound)))")
        }
        return number
    }

    /// A duration within `range`, or nil when absent: a number in `unit`, or a string as people
    /// type durations (`90`, `10s`, `250ms`, `5m`, `1h30m`).
    public func decodeIfPresent(duration key: Key, unit: DurationUnit, in range: ClosedRange<Duration>) throws -> Duration? {
        guard contains(key) else { return nil }
        let seconds: Double
        if let text = try? decode(String.self, forKey: key) {
            guard let parsed = Durations.seconds(text) else {
                throw configError(key, "'\(text)' is not a duration (a number, or like 10s, 250ms, 5m, 1h30m)")
            }
            seconds = parsed
        } else {
            guard let number = try? decode(Double.self, forKey: key) else {
                throw configError(key, "must be a duration (a number, or a string like 10s, 250ms, 5m, 1h30m)")
            }
            seconds = number * unit.seconds
        }
        let bounds = range.lowerBound.inSeconds...range.upperBound.inSeconds
        guard seconds.isFinite, bounds.contains(seconds) else {
            throw configError(key, "is out of range (\(Self.text(range.lowerBound, unit)) to \(Self.text(range.upperBound, unit)))")
        }
        return .clamped(seconds: seconds, maximum: range.upperBound)
    }

    static func text(_ number: Double) -> String { NumberText.plain(number) }

    static func text(_ duration: Duration, _ unit: DurationUnit) -> String {
        text(duration.inSeconds / unit.seconds)
    }
}
