import ArgumentParser
import Foundation
import HealthGateServer
import Logging

/// Where the server's data is: `--db FILE` (SQLite, the default) or `--database URL`.
struct StorageOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The SQLite database file (created if missing); the default store.", valueName: "path"))
    var db: String?

    @Option(help: ArgumentHelp("""
        The database as a URL: sqlite:PATH, or postgres://USER[:PASSWORD]@HOST[:PORT]/NAME[?sslmode=\
        verify-full&sslrootcert=CA.pem&pool_max=20&pool_wait=5] (host=/run/postgresql for a Unix \
        socket). Also read from HEALTHGATE_DATABASE, which keeps a password out of the process \
        list; PGPASSWORD is used when the URL has none. Default: sqlite:./healthgate-server.sqlite.
        """, valueName: "url"))
    var database: String?

    func validate() throws {
        if db != nil, database != nil { throw ValidationError("give --db or --database, not both") }
        _ = try location()
    }

    /// The store named by the options or the environment.
    func location(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> DatabaseLocation {
        if let db { return .sqlite(path: db) }
        let text = database ?? environment["HEALTHGATE_DATABASE"] ?? "sqlite:./healthgate-server.sqlite"
        do {
            return try DatabaseLocation.parse(text, environment: environment)
        } catch let error as DatabaseLocation.Invalid {
            throw ValidationError("--database \(error)")
        }
    }

    /// Opens the store (an SQLite file is created and migrated here; PostgreSQL connects and
    /// migrates once its pool runs).
    static func open(_ location: DatabaseLocation, logger: Logger) throws -> any ServerStore {
        switch location {
        case .sqlite(let path):
            do {
                return try SQLiteServerStore(path: path, logger: logger)
            } catch {
                throw ValidationError("cannot open the database \(path): \(error)")
            }
        case .postgres(let settings):
            return try PostgresServerStore(settings: settings, logger: logger)
        }
    }
}
