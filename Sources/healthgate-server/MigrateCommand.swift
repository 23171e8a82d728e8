import ArgumentParser
import Foundation
import HealthGateServer
import Logging

/// `healthgate-server migrate`: brings a database's schema up to date (what a server does on
/// start), so that an operator can do it first, alone, before starting several servers.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring a database's schema up to date.",
        discussion: """
            Applies the named migrations the database has not had yet, in order, each in one \
            transaction (an interrupted run leaves nothing half done: run it again), and lists \
            every migration applied. Several servers starting together do the same safely; this \
            command lets an operator do it first.
            """)

    @OptionGroup var storage: StorageOptions

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let logger = Logger(label: "healthgate-server.migrate")
        let location = try storage.location()
        let (applied, all): ([String], [String])
        switch location {
        case .sqlite(let path):
            let before = FileManager.default.fileExists(atPath: path) ? try SQLiteServerStore.appliedMigrations(path: path) : []
            let store = try SQLiteServerStore(path: path, logger: logger)
            all = try store.appliedMigrations()
            applied = all.filter { !before.contains($0) }
        case .postgres(let settings):
            (applied, all) = try await PostgresServerStore.withStore(settings, migrate: false, logger: logger) { store in
                let applied = try await store.migrate()
                return (applied, try await store.appliedMigrations())
            }
        }
        if json {
            let object: [String: Any] = ["database": location.description, "applied": applied, "migrations": all]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(applied.isEmpty ? "\(location): up to date" : "\(location): applied \(applied.joined(separator: ", "))")
            print("migrations: \(all.joined(separator: ", "))")
        }
    }
}
