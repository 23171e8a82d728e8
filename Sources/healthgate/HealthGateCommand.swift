import ArgumentParser

/// The `healthgate` command line: a thin layer over the HealthGate library.
@main
struct HealthGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthgate",
        abstract: "Ingest wearable and health data into SQLite and forward it to your tracking server.",
        discussion: """
            Every command takes --db PATH (default ./healthgate.sqlite). Listing commands take \
            --since/--until (YYYY-MM-DD or an ISO 8601 time; --until is exclusive, a bare date \
            includes that whole day) and --json for scripting. The JSON shapes are documented in \
            docs/cli.md.
            """,
        version: "0.1.0",
        subcommands: [
            ImportCommand.self, WorkoutsCommand.self, SleepCommand.self, MeasurementsCommand.self,
            ShowCommand.self, StatsCommand.self, ExportCommand.self, InspectCommand.self, RecordCommand.self, BLECommand.self,
            RegisterCommand.self, LoginCommand.self, SyncCommand.self, StatusCommand.self, DeadLettersCommand.self, LogoutCommand.self,
            DevicesCommand.self, PasswordCommand.self, AccountCommand.self,
            DaemonCommand.self, DriversCommand.self,
        ]
    )
}
