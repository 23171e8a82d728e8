import ANTCommands
import BLECommands
import WatchCommands
import ArgumentParser
import Foundation
import HealthModel

/// The `healthgate` command line: a thin layer over the HealthGate library.
@main
struct HealthGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthgate",
        abstract: "Ingest wearable and health data into SQLite and forward it to your tracking server.",
        discussion: """
            Every command that uses the local database takes --db PATH (default ./healthgate.sqlite) \
            or --state-dir DIR (DIR/healthgate.sqlite); the saved login of `login` lives next to it. \
            register, inspect, ble scan and ble watch use no database; daemon takes --state-dir and \
            its configuration names the database. Listing commands take --since/--until (YYYY-MM-DD \
            or an ISO 8601 time; --until is exclusive, a bare date includes that whole day) and \
            --json for scripting. The JSON shapes are documented in docs/cli.md.

            Durations are seconds (90, 1.5) or a number with a unit: 250ms, 10s, 5m, 1h30m, 2d.

            Exit status: 0 on success; 1 when the command could not do its work (a database or file \
            that cannot be opened, a server that refused, a device not found ...: one line \
            `healthgate: REASON` on standard error), or as the command's help says; 64 for a usage \
            error (a bad option or value: the message and the usage); 78 for a daemon configuration \
            error.
            """,
        version: "0.1.0",
        subcommands: [
            ImportCommand.self, WorkoutsCommand.self, SleepCommand.self, MeasurementsCommand.self,
            ShowCommand.self, StatsCommand.self, ExportCommand.self, InspectCommand.self, RecordCommand.self, BLECommand.self, ANTRootCommand.self, WatchRootCommand.self,
            RegisterCommand.self, LoginCommand.self, SyncCommand.self, StatusCommand.self, DeadLettersCommand.self, LogoutCommand.self,
            DevicesCommand.self, PasswordCommand.self, AccountCommand.self,
            DaemonCommand.self, DriversCommand.self,
            LogCommand.self, DefineCommand.self, DefinitionsCommand.self,
            EditCommand.self, DeleteCommand.self, HistoryCommand.self,
            TodayCommand.self, AchievementsCommand.self, DashboardCommand.self, HabitCommand.self,
        ]
    )

    /// Parses and runs a command like ArgumentParser's own `main`, except for the errors of our
    /// own: ArgumentParser's errors (a `ValidationError` is a usage error, exit status 64 with the
    /// usage; `ExitCode`, `CleanExit`, `--help` and parse errors) go its way, any other error is
    /// a failure at run time, printed by ``RuntimeFailure/report(_:)``.
    static func main() async {
        do {
            var command = try await asyncParseAsRoot(nil)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch where String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") {
            exit(withError: error)
        } catch {
            RuntimeFailure.report(error)
        }
    }
}

/// A command that could not do its work although its command line was fine: a database or file
/// that cannot be opened, a server that refused, a device not found. Printed as one line
/// `healthgate: MESSAGE` on standard error, without the usage text a `ValidationError` (a
/// usage error, exit status 64) gets; exit status `exitCode`, 1 unless said otherwise.
struct RuntimeFailure: Error, CustomStringConvertible {
    var description: String
    var exitCode: Int32 = 1

    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }

    /// Prints `error` as one line on standard error and exits: a ``RuntimeFailure`` with its
    /// exit status, any other error with 1.
    static func report(_ error: any Error) -> Never {
        let failure = error as? RuntimeFailure ?? RuntimeFailure("\(error)")
        // Errors carry outside text (paths, server answers, device names): one escaped line.
        Output.stderr("healthgate: \(DisplayText.safe(failure.description, limit: 2000))\n")
        exit(failure.exitCode)
    }
}
