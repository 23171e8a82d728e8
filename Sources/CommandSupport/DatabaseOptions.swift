public import ArgumentParser
import Foundation
public import HealthStore

/// `--db` or `--state-dir`, shared by every command that uses the local database (or the login
/// saved next to it).
public struct DatabaseOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(name: .customLong("db"), help: ArgumentHelp("The SQLite database file (default ./healthgate.sqlite); the saved login is PATH.sync.json.", valueName: "PATH"))
    public var dbPath: String?

    @Option(help: ArgumentHelp("The state directory the daemon uses: its database DIR/healthgate.sqlite (instead of --db).", valueName: "DIR"))
    public var stateDir: String?

    public func validate() throws {
        if dbPath != nil, stateDir != nil { throw ValidationError("give --db or --state-dir, not both") }
    }

    /// The database file.
    public var db: String { dbPath ?? stateDir.map { $0 + "/healthgate.sqlite" } ?? "./healthgate.sqlite" }

    /// Opens (creating and migrating) the database; a ``CommandFailure`` when it cannot.
    public func open() async throws -> HealthStore {
        do {
            return try await HealthStore(path: db)
        } catch {
            throw CommandFailure("cannot open database \(db): \(error)")
        }
    }

    /// Opens the database only if it exists (for dry runs).
    public func openIfExists() async throws -> HealthStore? {
        FileManager.default.fileExists(atPath: db) ? try await open() : nil
    }
}
