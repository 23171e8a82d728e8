import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthStore

/// `--since` / `--until`.
struct RangeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only records starting at or after this date or time (local unless it says Z or an offset).",
                               valueName: "DATE"))
    var since: String?

    @Option(help: ArgumentHelp("Only records starting before this time; a bare date includes that day.", valueName: "DATE"))
    var until: String?

    func validate() throws { _ = try range() }

    func range(timeZone: TimeZone = .current) throws -> DateRange {
        func parse(_ text: String, option: String) throws -> Date {
            guard let date = Self.localDate(text, timeZone: timeZone) else {
                throw ValidationError("\(option) '\(text)' is not a date (use YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ)")
            }
            return date
        }
        let since = try since.map { try parse($0, option: "--since") }
        var until = try until.map { try parse($0, option: "--until") }
        if let text = self.until, text.count == 10, let day = until {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            until = calendar.date(byAdding: .day, value: 1, to: day)
        }
        if let since, let until, until <= since { throw ValidationError("--until must be after --since") }
        return DateRange(since: since, until: until)
    }

    /// `text` as ISO 8601, a time without a zone in `timeZone` (``CommandDates/localDate(_:timeZone:)``).
    static func localDate(_ text: String, timeZone: TimeZone) -> Date? { CommandDates.localDate(text, timeZone: timeZone) }
}

