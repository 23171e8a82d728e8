import ArgumentParser
import Foundation
import HealthGateServer
import Logging

/// `healthgate-server migrate`: brings a database's schema up to date (what a server does on
/// start), so that an operator can do it first, alone, before starting several servers.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring a database's schema up to date, or move an SQLite server to PostgreSQL.",
        discussion: """
            Without --from: applies the named migrations the database (--db or --database) has not \
            had yet, in order, each in one transaction (an interrupted run leaves nothing half \
            done: run it again), and lists every migration applied. Several servers starting \
            together do the same safely; this command lets an operator do it first.

            With --from sqlite:FILE --to postgres://...: copies everything the SQLite server \
            holds into PostgreSQL (accounts, devices with their token hashes, every record version \
            and tombstone with its change number, each account's counter, the history epoch), then \
            counts and checksums both sides. Devices keep their logins and cursors: nothing is \
            pulled twice. Safe to run again (an interrupted move finishes; rows already there are \
            kept unless the file holds a newer change). Stop the old server first, or run the move \
            again after stopping it, before starting servers on PostgreSQL (docs/server.md).
            """)

    @OptionGroup var storage: StorageOptions

    @Option(help: ArgumentHelp("Move from this SQLite server database (sqlite:FILE).", valueName: "url"))
    var from: String?

    @Option(help: ArgumentHelp("Move into this PostgreSQL database (postgres://...).", valueName: "url"))
    var to: String?

    func validate() throws {
        guard (from == nil) == (to == nil) else { throw ValidationError("--from and --to go together") }
        if from != nil, storage.db != nil || storage.database != nil {
            throw ValidationError("--from/--to move a database; --db/--database migrate one: give one or the other")
        }
    }

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let logger = Logger(label: "healthgate-server.migrate")
        if let from, let to {
            try await move(from: from, to: to, logger: logger)
            return
        }
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

    private func move(from: String, to: String, logger: Logger) async throws {
        guard case .sqlite(let path) = try DatabaseLocation.parse(from) else {
            throw ValidationError("--from must be an SQLite database (sqlite:FILE)")
        }
        guard case .postgres(let settings) = try DatabaseLocation.parse(to) else {
            throw ValidationError("--to must be a PostgreSQL database (postgres://...)")
        }
        let json = json
        let report = try await PostgresServerStore.withStore(settings, migrate: false, logger: logger) { store in
            try await ServerMove.run(from: path, to: store) { progress in
                // Progress on standard error, so that --json's standard output stays one object.
                let line: String
                switch progress {
                case .migrated(let names): line = names.isEmpty ? "schema up to date" : "applied \(names.joined(separator: ", "))"
                case .copied(let table, let rows, let total): line = "\(table): \(rows) of \(total)"
                case .checking(let table): line = "checking \(table)"
                }
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print("""
                moved sqlite:\(path) to \(settings): \(report.users) accounts, \(report.devices) devices, \
                \(report.records) records (\(report.tombstones) deleted), \(report.written) rows written this run
                both sides agree: records \(report.recordsChecksum.prefix(16)), accounts \(report.accountsChecksum.prefix(16)), \
                epoch \(report.epoch)
                """)
        }
    }
}
