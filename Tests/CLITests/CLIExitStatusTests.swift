import Foundation
import Testing
import TestSupport

/// The exit statuses and messages of the built `healthgate`: a usage error (64) prints the
/// message and the usage; a command that cannot do its work prints one line and exits with 1;
/// every duration option takes every duration form; every command that uses the database takes
/// `--db` and `--state-dir`.
@Suite(.serialized) struct CLIExitStatusTests {
    /// A controller address nothing listens on: connecting is refused at once.
    static let deadController = "tcp:127.0.0.1:1"

    /// Exit status 1, one line `healthgate: ...` on standard error containing `words`, no usage
    /// text, nothing on standard output.
    func expectRuntimeFailure(_ arguments: [String], _ words: String, status: Int32 = 1, stdin: String? = nil,
                              sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await CLI.run(arguments, stdin: stdin)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(result.status == status, "\(arguments): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        #expect(lines.count == 1 && lines[0].hasPrefix("healthgate: ") && lines[0].contains(words),
                "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.lowercased().contains("usage"), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)", sourceLocation: sourceLocation)
    }

    /// Exit status 64 with the message and the usage.
    func expectUsageError(_ arguments: [String], _ words: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await CLI.run(arguments)
        #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains("Usage: healthgate"), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func runtimeFailuresExitOneWithOneLine() async throws {
        let scratch = try Scratch()
        let plainFile = try scratch.file("plain.txt", Array("not a folder".utf8))
        let fresh = scratch.dbPath
        // A database under a regular file cannot be created; a file that is not SQLite cannot be opened.
        try await expectRuntimeFailure(["workouts", "--db", plainFile + "/x.sqlite"], "cannot open database \(plainFile)/x.sqlite")
        try await expectRuntimeFailure(["workouts", "--json", "--db", plainFile], "cannot open database \(plainFile)")
        try await expectRuntimeFailure(["stats", "--state-dir", plainFile], "cannot open database \(plainFile)/healthgate.sqlite")
        try await expectRuntimeFailure(["import", "--db", fresh, scratch.folder + "/missing"], "\(scratch.folder)/missing: no such file or folder")
        try await expectRuntimeFailure(["inspect", scratch.folder + "/missing.fit"], "cannot read \(scratch.folder)/missing.fit")
        try await expectRuntimeFailure(["export", "--db", fresh, "-o", plainFile + "/out.csv"], "cannot write \(plainFile)/out.csv")
        try await expectRuntimeFailure(["show", "--db", fresh, "abcdef"], "no workout with id abcdef")
        try await expectRuntimeFailure(["ble", "replay", scratch.folder + "/missing.btsnoop"], "cannot read \(scratch.folder)/missing.btsnoop")
        for command in [["devices"], ["devices", "revoke", UUID().uuidString], ["sync"], ["password", "--password-stdin"],
                        ["account", "delete", "--yes", "--password-stdin"]] {
            try await expectRuntimeFailure(command + ["--db", fresh], "not logged in", stdin: "a passphrase")
        }
        try await expectRuntimeFailure(["register", "--server", "http://127.0.0.1:1", "--email", "eve@example.org", "--password-stdin",
                                        "--ca-file", scratch.folder + "/missing.pem"], "--ca-file \(scratch.folder)/missing.pem",
                                       stdin: "a passphrase")
        // The controller cannot be opened.
        try await expectRuntimeFailure(["ble", "scan", "--hci", Self.deadController], Self.deadController)
        try await expectRuntimeFailure(["ble", "watch", "--hci", Self.deadController, "AA:BB:CC:DD:EE:FF"], Self.deadController)
        try await expectRuntimeFailure(["record", "--json", "--hci", Self.deadController, "--db", fresh], Self.deadController)
        // A daemon configuration that does not load: EX_CONFIG, as one that cannot start.
        let config = try scratch.file("bad.toml", Array("[forwarder]\nserver = \"ftp://example.org\"\n".utf8))
        try await expectRuntimeFailure(["daemon", "--check", "--state-dir", scratch.folder, "--config", config],
                                       "forwarder.server", status: 78)
    }

    /// A controller that cannot be opened is named once, with the cause: every command that
    /// opens one says the same line (it used to say `tcp:127.0.0.1:1: tcp:127.0.0.1:1: connect: ...`).
    @Test func aControllerThatCannotBeOpenedIsNamedOnce() async throws {
        let scratch = try Scratch()
        let line = "healthgate: \(Self.deadController): connect: Connection refused (ECONNREFUSED)\n"
        for command in [["ble", "scan"], ["ble", "watch", "AA:BB:CC:DD:EE:FF"], ["ble", "download", "AA:BB:CC:DD:EE:FF", "--db", scratch.dbPath],
                        ["record", "--db", scratch.dbPath]] {
            let result = try await CLI.run(command + ["--hci", Self.deadController])
            // `record` says what it records first; the failure is the last line.
            #expect(result.status == 1 && (result.stderr.hasSuffix("\n" + line) || result.stderr == line),
                    "\(command): \(result.status) \(result.stderr)")
        }
    }

    /// A benchmark whose tool is missing (here Bumble, hidden behind a `python3` that cannot
    /// import it) says what is missing and how to get it, and exits 1: no "Fatal error" and no
    /// stack trace (it used to end in "Error raised at top level" and "Illegal instruction").
    @Test func aBenchmarkWithoutItsToolSaysWhatIsMissing() async throws {
        let scratch = try Scratch()
        let shim = scratch.folder + "/python3"
        try """
            #!/bin/sh
            if [ "$2" = "import bumble" ]; then echo "ModuleNotFoundError: No module named 'bumble'" >&2; exit 1; fi
            exec /usr/bin/python3 "$@"

            """.write(toFile: shim, atomically: true, encoding: .utf8)
        #expect(chmod(shim, 0o755) == 0)
        let path = scratch.folder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try await Tool.run(Tool.path("healthgate-bench"), ["ble"], environment: ["PATH": path])
        #expect(result.status == 1, "\(result.status) \(result.stderr)")
        #expect(result.stderr.hasPrefix("healthgate-bench: ble: the BLE test peer needs Bumble") && result.stderr.contains("make setup"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Backtrace"), "\(result.stderr)")
    }

    @Test func usageErrorsExitSixtyFourWithTheUsage() async throws {
        let scratch = try Scratch()
        try await expectUsageError(["workouts", "--since", "yesterday"], "--since 'yesterday' is not a date")
        try await expectUsageError(["workouts", "--db", scratch.dbPath, "--state-dir", scratch.folder], "give --db or --state-dir, not both")
        try await expectUsageError(["record", "--hci", "bogus:1"], "--hci")
        try await expectUsageError(["ble", "scan", "--hci", "bogus:1"], "--hci")
        try await expectUsageError(["record", "--hci", Self.deadController, "--for", "10x"], "--for")
        try await expectUsageError(["record", "--hci", Self.deadController, "--for", "0"], "--for must be longer than zero")
        try await expectUsageError(["ble", "scan", "--hci", Self.deadController, "--for", "0s"], "--for must be longer than zero")
        try await expectUsageError(["ble", "watch", "--hci", Self.deadController, "--scan-for", "0", "HR"], "--scan-for must be longer than zero")
        try await expectUsageError(["record", "--hci", Self.deadController, "--gap", "500ms"], "--gap must be from 1s to 1d")
        try await expectUsageError(["sync", "--longest-wait", "2d", "--db", scratch.dbPath], "--longest-wait must be 1d at most")
        try await expectUsageError(["sync", "--concurrent-uploads", "9", "--db", scratch.dbPath], "--concurrent-uploads must be 1...8")
        try await expectUsageError(["sync", "--concurrent-uploads", "0", "--db", scratch.dbPath], "--concurrent-uploads must be 1...8")
        try await expectUsageError(["devices", "revoke", "not-an-id", "--db", scratch.dbPath], "is not a device id")
        try await expectUsageError(["import"], "Missing expected argument")
    }

    /// Every form of duration reaches the command (which then fails for want of a controller or
    /// a login, a runtime failure, not a usage error about the duration).
    @Test func everyDurationOptionTakesEveryForm() async throws {
        let scratch = try Scratch()
        for form in ["90", "1.5", "10s", "250ms", "5m", "1h30m", "2d"] {
            try await expectRuntimeFailure(["record", "--json", "--hci", Self.deadController, "--for", form, "--db", scratch.dbPath],
                                           Self.deadController)
            try await expectRuntimeFailure(["ble", "scan", "--hci", Self.deadController, "--for", form], Self.deadController)
            try await expectRuntimeFailure(["ble", "watch", "--hci", Self.deadController, "--for", form, "--scan-for", form, "HR"],
                                           Self.deadController)
        }
        try await expectRuntimeFailure(["record", "--json", "--hci", Self.deadController, "--gap", "1h30m", "--db", scratch.dbPath],
                                       Self.deadController)
        try await expectRuntimeFailure(["sync", "--longest-wait", "1h30m", "--db", scratch.dbPath], "not logged in")
        // --help names the forms and shows defaults in one of them.
        for (command, defaults) in [(["record"], ["(default: 2m)"]), (["ble", "scan"], ["(default: 5s)"]),
                                    (["ble", "watch"], ["(default: 10s)"]), (["ble", "replay"], ["(default: 2m)"]),
                                    (["sync"], ["(default: 1m)"])] {
            let help = try await CLI.run(command + ["--help"])
            #expect(help.status == 0)
            let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains("250ms, 10s, 5m, 1h30m, 2d"), "\(command): \(help.stdout)")
            for d in defaults { #expect(text.contains(d), "\(command): \(d) in \(help.stdout)") }
        }
    }

    /// The commands that use the local database (`devices` is `devices list`), and those that do not.
    static let databaseCommands: [[String]] = [
        ["import"], ["workouts"], ["sleep"], ["measurements"], ["show"], ["stats"], ["export"], ["record"], ["habit", "explain"], ["ble", "replay"],
        ["login"], ["logout"], ["sync"], ["status"], ["dead-letters"], ["devices", "list"], ["devices", "revoke"],
        ["password"], ["account", "delete"],
    ]
    static let otherCommands: [[String]] = [["inspect"], ["ble", "scan"], ["ble", "watch"], ["register"], ["daemon"]]

    /// Every command that uses the database takes --db and --state-dir (the others neither, but
    /// the daemon its --state-dir), and the README's command line section says which.
    @Test func databaseCommandsTakeDbAndStateDir() async throws {
        for command in Self.databaseCommands {
            let help = try await CLI.run(command + ["--help"])
            #expect(help.status == 0 && help.stdout.contains("--db <PATH>") && help.stdout.contains("--state-dir <DIR>"),
                    "\(command): \(help.stdout)")
        }
        for command in Self.otherCommands {
            let help = try await CLI.run(command + ["--help"])
            #expect(help.status == 0 && !help.stdout.contains("--db"), "\(command): \(help.stdout)")
            #expect(help.stdout.contains("--state-dir") == (command == ["daemon"]), "\(command): \(help.stdout)")
        }
        let readme = try String(contentsOfFile: PackagePaths.root + "/README.md", encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Command line").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        let prose = section.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let takes = try #require(prose.range(of: "take `--db PATH`"), "the README says which commands take --db")
        let noDatabase = try #require(prose.range(of: "use no database and take neither"))
        let databaseList = prose[takes.upperBound..<noDatabase.lowerBound]
        for command in Self.databaseCommands {
            let name = command.first == "devices" ? "devices" : command.joined(separator: " ")
            #expect(databaseList.contains("`\(name)`"), "README: \(name)")
        }
        let otherList = prose[..<noDatabase.lowerBound].suffix(80)
        for command in Self.otherCommands where command != ["daemon"] {
            #expect(otherList.contains("`\(command.joined(separator: " "))`"), "README: \(command) in \(otherList)")
        }
    }

    /// The same state directory through --state-dir and through --db DIR/healthgate.sqlite,
    /// for the local commands.
    @Test func stateDirIsTheDatabaseInIt() async throws {
        let scratch = try Scratch()
        let dir = ["--state-dir", scratch.folder]
        let imported = try await CLI.run(["import"] + dir + [PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch.folder + "/healthgate.sqlite"))
        let replayed = try await CLI.run(["ble", "replay", "--record"] + dir + [PackagePaths.fixtures + "/ble/hr-csc-watch.btsnoop"])
        #expect(replayed.status == 0 && replayed.stderr.contains("stored into \(scratch.folder)/healthgate.sqlite"), "\(replayed.stderr)")
        for options in [dir, ["--db", scratch.dbPath]] {
            let workouts = try #require(try await CLI.json(["workouts", "--json"] + options) as? [[String: Any]])
            #expect(!workouts.isEmpty, "\(options)")
            let id = try #require(workouts.first?["id"] as? String)
            #expect(try await CLI.run(["show", String(id.prefix(8))] + options).status == 0)
            for command in [["sleep"], ["measurements"], ["stats"], ["export"], ["dead-letters"], ["status"], ["logout"]] {
                let result = try await CLI.run(command + options)
                #expect(result.status == 0, "\(command) \(options): \(result.stderr)")
            }
        }
        // The saved login is looked for next to the state directory's database.
        try await expectRuntimeFailure(["devices"] + dir, "not logged in (no \(scratch.folder)/healthgate.sqlite.sync.json)")
        try await expectRuntimeFailure(["sync"] + dir, "not logged in (no \(scratch.folder)/healthgate.sqlite.sync.json)")
    }

    /// login, devices, sync, status and logout with --state-dir against a real server.
    @Test func loginAndSyncWithStateDir() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let scratch = try Scratch()
        let dir = ["--state-dir", scratch.folder]
        let url = server.url.absoluteString
        let registered = try await CLI.run(["register", "--server", url, "--email", "dee@example.org", "--password-stdin"],
                                           stdin: "dee's passphrase")
        #expect(registered.status == 0, "\(registered.stderr)")
        let login = try await CLI.run(["login", "--server", url, "--email", "dee@example.org", "--password-stdin"] + dir,
                                      stdin: "dee's passphrase")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch.folder + "/healthgate.sqlite.sync.json"))
        #expect(try await CLI.run(["import"] + dir + [PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"]).status == 0)
        let devices = try #require(try await CLI.json(["devices", "--json"] + dir) as? [[String: Any]])
        #expect(devices.count == 1 && devices.first?["this_device"] as? Bool == true)
        let sync = try await CLI.run(["sync"] + dir)
        #expect(sync.status == 0 && sync.stdout.contains("0 left in the outbox"), "\(sync.stdout)\(sync.stderr)")
        let status = try #require(try await CLI.json(["status", "--json"] + dir) as? [String: Any])
        #expect(status["server"] as? String == url && status["outbox"] as? Int == 0)
        let logout = try await CLI.run(["logout"] + dir)
        #expect(logout.status == 0 && logout.stdout.contains("Logged out of"), "\(logout.stdout)\(logout.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.folder + "/healthgate.sqlite.sync.json"))
    }
}
