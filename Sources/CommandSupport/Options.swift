public import ArgumentParser
public import Foundation
import HealthModel

/// `--json`, for every command that prints a table or a list.
public struct OutputOptions: ParsableArguments, Sendable {
    public init() {}

    @Flag(help: "Print JSON instead of a table (shapes in docs/cli.md).")
    public var json = false
}

/// A duration on the command line: `90` (seconds), `1.5`, `10s`, `250ms`, `5m`, `1h30m`, `2d`
/// (``Durations/seconds(_:)``). Every option that takes a duration uses it.
public struct DurationArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
    public var seconds: Double

    /// The accepted forms, for the `--help` of each duration option.
    public static let forms = "seconds (90, 1.5) or with a unit: 250ms, 10s, 5m, 1h30m, 2d"

    public init(seconds: Double) { self.seconds = seconds }

    public init?(argument: String) {
        guard let seconds = Durations.seconds(argument) else { return nil }
        self.seconds = seconds
    }

    /// As a `Duration`, at most a year (longer is as good as forever for a command).
    public var duration: Duration { .clamped(seconds: seconds, maximum: .seconds(365 * 86_400)) }

    /// A usage error naming `option` unless this is longer than zero.
    public func requireLongerThanZero(_ option: String) throws {
        guard seconds > 0 else { throw ValidationError("\(option) must be longer than zero (\(Self.forms))") }
    }

    /// In one of the accepted forms: `90s` is `1m30s`, `5400` is `1h30m`, `0.25` is `250ms`.
    public var description: String {
        guard seconds.isFinite else { return "\(seconds)s" }
        let milliseconds = Int64(saturating: (seconds * 1000).rounded())
        guard milliseconds % 1000 == 0 else {
            return milliseconds < 1000 ? "\(milliseconds)ms" : "\(Double(milliseconds) / 1000)s"
        }
        var rest = milliseconds / 1000
        guard rest > 0 else { return "0s" }
        var text = ""
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60), ("s", 1)] where rest >= size {
            text += "\(rest / size)\(unit)"
            rest %= size
        }
        return text
    }

    public var defaultValueDescription: String { description }
}

/// Dates on the command line.
public enum CommandDates {
    /// `text` as ISO 8601; a date or time without `Z` or an offset is a wall-clock time in
    /// `timeZone` (the machine's, as the day and week buckets of `stats` are).
    public static func localDate(_ text: String, timeZone: TimeZone = .current) -> Date? {
        guard let asUTC = ISO8601.parse(text) else { return nil }
        let time = text.dropFirst(10)
        let hasZone = time.hasSuffix("Z") || time.hasSuffix("z") || time.contains("+") || time.contains("-")
        guard !hasZone else { return asUTC }
        // The offset in force at that wall-clock time (checked once more across a DST change).
        let guess = asUTC.addingTimeInterval(-Double(timeZone.secondsFromGMT(for: asUTC)))
        return asUTC.addingTimeInterval(-Double(timeZone.secondsFromGMT(for: guess)))
    }
}
