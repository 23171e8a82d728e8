import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthStore

/// `--db` or `--state-dir`, shared by every command that uses the local database (or the login
/// saved next to it).
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp("The SQLite database file (default ./healthgate.sqlite); the saved login is PATH.sync.json.", valueName: "PATH"))
    var dbPath: String?

    @Option(help: ArgumentHelp("The state directory the daemon uses: its database DIR/healthgate.sqlite (instead of --db).", valueName: "DIR"))
    var stateDir: String?

    func validate() throws {
        if dbPath != nil, stateDir != nil { throw ValidationError("give --db or --state-dir, not both") }
    }

    /// The database file.
    var db: String { dbPath ?? stateDir.map { $0 + "/healthgate.sqlite" } ?? "./healthgate.sqlite" }

    /// Opens (creating and migrating) the database; a ``RuntimeFailure`` when it cannot.
    func open() async throws -> HealthStore {
        do {
            return try await HealthStore(path: db)
        } catch {
            throw RuntimeFailure("cannot open database \(db): \(error)")
        }
    }

    /// Opens the database only if it exists (for dry runs).
    func openIfExists() async throws -> HealthStore? {
        FileManager.default.fileExists(atPath: db) ? try await open() : nil
    }
}

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

