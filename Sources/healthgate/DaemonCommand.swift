import ArgumentParser
import DriverKit
import DriverRegistry
import Foundation
import HealthGateDaemon
import LinuxAdapters
import Logging

/// `healthgate daemon`: runs the configured drivers, the forwarder and the status socket until
/// stopped (systemd's `Type=notify` service, or in a terminal).
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run as a service: record, import and forward until stopped.",
        discussion: """
            With --config FILE, runs what the TOML file configures (reference: systemd/healthgate.toml). \
            Without it, runs the embedded default for the state directory: the database \
            DIR/healthgate.sqlite, the watch folder DIR/inbox and the status socket DIR/healthgate.sock, \
            no server. The state directory is --state-dir, else $STATE_DIRECTORY (set by systemd), \
            else ./healthgate-state.

            SIGTERM or SIGINT stops it in order (drivers store what they hold first); SIGHUP reloads \
            the configuration file, starting, stopping and restarting drivers as it changed. Under \
            systemd it reports READY, STATUS and watchdog pings through NOTIFY_SOCKET. \
            `healthgate status` asks it through the status socket.
            """)

    @Option(help: ArgumentHelp("The TOML configuration file.", valueName: "FILE"))
    var config: String?

    @Option(help: ArgumentHelp("The state directory (database, inbox, socket).", valueName: "DIR"))
    var stateDir: String?

    @Flag(help: "Check the configuration (every driver checks its own table, opening nothing) and exit.")
    var check = false

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        // systemd may list several directories (colon-separated): the first is ours.
        let stateDirectory = stateDir ?? environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
            ?? "./healthgate-state"
        let options = Daemon.Options(configPath: config, stateDirectory: stateDirectory, drivers: Registry.catalog)
        let loaded: DaemonConfig
        do { loaded = try options.load() } catch {
            // EX_CONFIG, as for a configuration that cannot start below.
            throw RuntimeFailure("\(error)", exitCode: 78)
        }
        if check {
            let drivers = loaded.drivers.values.sorted { $0.name < $1.name }.map { "\($0.name) (\($0.type))" }
            let importers = Registry.catalog.fileImporters.map { loaded.disabledImporters.contains($0.id) ? "\($0.id) (off)" : $0.id }
            print("configuration OK: database \(loaded.database), drivers \(drivers.joined(separator: ", ")); "
                  + "importers \(importers.joined(separator: ", "))")
            for notice in loaded.notices { Output.stderr("healthgate: note: \(notice)\n") }
            return
        }
        let level = Logger.Level(rawValue: loaded.logLevel) ?? .info
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, level: level) }
        let logger = Logger(label: "healthgate")
        do {
            try await Daemon.run(loaded, options: options, logger: logger)
        } catch let error as ConfigError {
            logger.critical("cannot start: \(error)")
            throw ExitCode(78)  // EX_CONFIG: systemd does not restart on it with RestartPreventExitStatus
        }
    }
}
