import ArgumentParser
import CommandSupport
import Foundation
import HealthGateDaemon
import HealthModel
import HealthStore
import HealthSync
import SyncProtocol

/// `--server`, `--email`, `--password-stdin`, `--ca-file` for register and login.
struct AccountOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The tracking server, e.g. https://health.example.org.", valueName: "URL"))
    var server: String

    @Option(help: ArgumentHelp("The account's email address.", valueName: "EMAIL"))
    var email: String

    @Flag(help: "Read the password from the first line of standard input instead of the terminal.")
    var passwordStdin = false

    @Option(help: ArgumentHelp("Trust only this CA (PEM) for the server's TLS certificate.", valueName: "FILE"))
    var caFile: String?

    func url() throws -> URL {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host != nil else {
            throw ValidationError("--server '\(server)' is not an http(s) URL")
        }
        return url
    }

    func client() throws -> SyncClient {
        var configuration = SyncClient.Configuration(server: try url())
        configuration.pinnedCAFile = caFile
        do { return try SyncClient(configuration: configuration) } catch {
            throw RuntimeFailure("--ca-file \(caFile ?? ""): \(error)")
        }
    }

    /// The password: from standard input's first line, or asked on the terminal without echo.
    func password(confirm: Bool) throws -> String {
        if passwordStdin {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw RuntimeFailure("--password-stdin: no password on standard input")
            }
            return line
        }
        guard isatty(STDIN_FILENO) == 1 else {
            throw ValidationError("no terminal to ask for the password; use --password-stdin")
        }
        let first = try Terminal.readSecret("Password for \(email): ")
        if confirm {
            guard try Terminal.readSecret("Repeat the password: ") == first else { throw RuntimeFailure("the passwords differ") }
        }
        return first
    }
}

/// Reads a line from the terminal with echo off.
enum Terminal {
    static func readSecret(_ prompt: String) throws -> String {
        Output.stderr(prompt)
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            Output.stderr("\n")
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw RuntimeFailure("no password given") }
        return line
    }
}

/// Runs `body` with a client and shuts it down afterwards.
func withClient<T>(_ client: SyncClient, _ body: (SyncClient) async throws -> T) async throws -> T {
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

struct RegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register", abstract: "Create an account on the tracking server.",
        discussion: "Then run `healthgate login` with the same server and email to link this device.")

    @OptionGroup var account: AccountOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let password = try account.password(confirm: true)
        let answer = try await withClient(try account.client()) { client in
            do { return try await client.register(email: account.email, password: password) } catch {
                throw RuntimeFailure("\(account.server): \(error)")
            }
        }
        if output.json { return try Output.printJSON(["user_id": answer.userId, "email": account.email]) }
        print("Account \(account.email) created on \(account.server). Next: healthgate login --server \(account.server) --email \(account.email)")
    }
}

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Log this device in to the tracking server and save its token.",
        discussion: """
            The token is saved next to the database (DB.sync.json, readable by its owner only) \
            and used by `healthgate sync`. Unless --not-primary, this device becomes the \
            account's primary syncing device.
            """)

    @OptionGroup var account: AccountOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("This device's name on the server (default: the host name).", valueName: "NAME"))
    var deviceName: String?

    @Flag(help: "Do not make this device the account's primary syncing device.")
    var notPrimary = false

    func run() async throws {
        let password = try account.password(confirm: false)
        let name = deviceName ?? ProcessInfo.processInfo.hostName
        let (answer, primary) = try await withClient(try account.client()) { client in
            do {
                let answer = try await client.login(email: account.email, password: password, deviceName: name)
                let primary = notPrimary ? nil : try await client.markPrimary(token: answer.token)
                return (answer, primary)
            } catch {
                throw RuntimeFailure("\(account.server): \(error)")
            }
        }
        let credentials = SyncCredentials(server: account.server, email: account.email, userId: answer.userId,
                                          deviceId: answer.deviceId, token: answer.token, caFile: account.caFile)
        do { try credentials.save(forDatabase: database.db) } catch {
            throw RuntimeFailure("logged in, but cannot save the login to \(SyncCredentials.path(forDatabase: database.db)): \(error)")
        }
        if output.json {
            return try Output.printJSON(["user_id": answer.userId, "device_id": answer.deviceId, "primary": primary != nil ? "true" : "false",
                                         "credentials": SyncCredentials.path(forDatabase: database.db)])
        }
        print("Logged in to \(account.server) as \(account.email); device \(name) (\(answer.deviceId))"
              + (primary != nil ? " is the primary syncing device" : "") + ".")
        print("Token saved to \(SyncCredentials.path(forDatabase: database.db)). Run `healthgate sync` to upload.")
    }
}

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout", abstract: "Revoke this device's token on the server and forget it here.",
        discussion: "Records waiting to be sent stay in the outbox until the next login and sync.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        guard let credentials = try SyncCredentials.load(forDatabase: database.db) else {
            return print("Not logged in.")
        }
        var revoked = true
        do {
            try await withClient(try credentials.client()) { client in try await client.logout(token: credentials.token) }
        } catch {
            revoked = false
            Output.stderr("warning: could not revoke the token on \(credentials.server): \(error)\n")
        }
        SyncCredentials.remove(forDatabase: database.db)
        print("Logged out of \(credentials.server)" + (revoked ? "." : " here (the server was not told)."))
    }
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Send the outbox to the tracking server and pull the account's history.",
        discussion: """
            Uploads every record waiting in the outbox, oldest first, in batches; a record leaves \
            the outbox only once the server acknowledged it, so an interrupted sync loses nothing \
            and a repeated one duplicates nothing. Only the tracking server can give a record up: \
            records it rejects become dead letters (`healthgate dead-letters` lists them with the \
            reason; --retry-dead-letters queues them again). Timeouts, 429 and 5xx are retried \
            with backoff (honouring Retry-After up to --longest-wait) up to --max-retries in a \
            row; a redirect, a proxy's error page or a refusal stops the sync with the records \
            still queued. Then pulls what the account's other devices uploaded; records this \
            version cannot read, or that break its rules, are held aside (see `healthgate status`) \
            and tried again at every pull.

            Exit status: 0 when everything was sent and nothing was given up; 1 when the sync did \
            not finish, a record was rejected (a new dead letter) or records were left in the outbox.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("Transient failures in a row before giving up.", valueName: "N"))
    var maxRetries = 8

    @Option(help: ArgumentHelp("The longest wait a server may ask for (Retry-After) before the sync gives up for now, at most 1d; \(DurationArgument.forms).",
                               valueName: "DURATION"))
    var longestWait = DurationArgument(seconds: 60)

    @Flag(help: "Only upload; do not pull the history.")
    var noPull = false

    @Flag(help: "First put every dead letter back in the outbox (after an upgrade, or once the server accepts them).")
    var retryDeadLetters = false

    @Option(help: ArgumentHelp("Records per upload (at most; uploads also stay under 8 MB).", valueName: "N"))
    var batchRecords = 1000

    @Option(help: ArgumentHelp("Uploads in flight at once, 1 to 8 (the daemon's concurrent_uploads).", valueName: "N"))
    var concurrentUploads = Forwarder.Configuration().concurrentUploads

    func validate() throws {
        guard (1...SyncAPI.maxRecordsPerUpload).contains(batchRecords) else {
            throw ValidationError("--batch-records must be 1...\(SyncAPI.maxRecordsPerUpload)")
        }
        let inFlight = Forwarder.Configuration.concurrentUploadsRange
        guard inFlight.contains(concurrentUploads) else {
            throw ValidationError("--concurrent-uploads must be \(inFlight.lowerBound)...\(inFlight.upperBound)")
        }
        guard maxRetries >= 1 else { throw ValidationError("--max-retries must be 1 or more") }
        guard longestWait.seconds <= 86_400 else { throw ValidationError("--longest-wait must be 1d at most (\(DurationArgument.forms))") }
    }

    struct Report: Encodable {
        var requeued: Int
        var upload: Forwarder.DrainReport
        var pull: Forwarder.PullReport?
        var deadLetters: Int
        enum CodingKeys: String, CodingKey { case requeued, upload, pull, deadLetters = "dead_letters" }
    }

    func run() async throws {
        let credentials = try savedLogin(database)
        let store = try await database.open()
        let requeued = retryDeadLetters ? try await store.retryDeadLetters() : 0
        var configuration = Forwarder.Configuration()
        configuration.maxConsecutiveFailures = maxRetries
        configuration.maxRecords = batchRecords
        configuration.concurrentUploads = concurrentUploads
        configuration.longestServerWait = longestWait.duration
        let showProgress = !output.json && Output.stderrIsTerminal
        let report = try await withClient(try credentials.client()) { client in
            let forwarder = Forwarder(store: store, client: client, token: credentials.token, deviceId: credentials.deviceId,
                                      configuration: configuration)
            do {
                let upload = try await forwarder.drain { p in
                    if showProgress { Output.stderr("\r\u{1B}[2Kuploading: \(p.settled)/\(p.total) records") }
                }
                if showProgress { Output.stderr("\r\u{1B}[2K") }
                let pull = noPull ? nil : try await forwarder.pull()
                return Report(requeued: requeued, upload: upload, pull: pull, deadLetters: try await store.deadLetterCount())
            } catch {
                if showProgress { Output.stderr("\r\u{1B}[2K") }
                let waiting = try await store.outboxDepth()
                Output.stderr("healthgate: sync with \(DisplayText.safe(credentials.server)) did not finish: \(error)\n"
                              + "\(waiting) record(s) wait in the outbox; nothing was lost.\n")
                throw ExitCode(1)
            }
        }
        let u = report.upload
        if output.json {
            try Output.printJSON(report)
        } else {
            if requeued > 0 { print("Put \(requeued) dead letter(s) back in the outbox.") }
            print("Uploaded to \(DisplayText.safe(credentials.server)): \(u.accepted) accepted, \(u.duplicates) already there, "
                  + "\(u.rejected) rejected in \(u.uploads) upload(s)"
                  + (u.retries > 0 ? " after \(u.retries) retr\(u.retries == 1 ? "y" : "ies")" : "")
                  + "; \(u.remaining) left in the outbox.")
            if u.unreadable > 0 {
                print("\(u.unreadable) record(s) could not be read or sent by this version and were set aside as dead letters.")
            }
            if u.heldBack > 0 {
                print("\(u.heldBack) record(s) the server would not take were left in the outbox: \(u.heldBackReason ?? "")")
            }
            if let p = report.pull {
                print("Pulled \(p.received) record(s) from the account's history, \(p.stored) new or newer here"
                      + (p.restarted ? " (the server renumbered its history: pulled from the start)" : "") + ".")
                if p.held > 0 || p.stillHeld > 0 {
                    print("\(p.held) pulled record(s) could not be stored and are held aside (\(p.stillHeld) in all; "
                          + "`healthgate status` says why); they are tried again at every pull.")
                }
                if p.released > 0 { print("\(p.released) record(s) held by earlier pulls were stored now.") }
            }
            if u.deadLettered > 0 { print("See `healthgate dead-letters` for the records given up and why.") }
        }
        if u.deadLettered > 0 || u.remaining > 0 { throw ExitCode(1) }
    }
}

struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "The records given up on: rejected by the server, or unreadable by this version.",
        discussion: """
            Each dead letter is a record version that left the outbox without reaching the \
            server, with the reason. The records themselves stay in the database. \
            `healthgate sync --retry-dead-letters` (or --retry here) puts them back in the \
            outbox once the cause is fixed.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Put every dead letter back in the outbox (the next sync sends them).")
    var retry = false

    func run() async throws {
        let store = try await database.open()
        if retry {
            let moved = try await store.retryDeadLetters()
            if output.json { return try Output.printJSON(["requeued": moved]) }
            return print("Put \(moved) dead letter(s) back in the outbox; `healthgate sync` sends them.")
        }
        let letters = try await store.deadLetters(limit: nil)
        if output.json { return try Output.printJSON(letters) }
        guard !letters.isEmpty else { return print("No dead letters.") }
        for d in letters {
            print("\(d.failedAt)  \(d.type) \(d.id) v\(d.version): \(DisplayText.safe(d.reason))")
        }
        print("\(letters.count) dead letter(s); `healthgate dead-letters --retry` queues them again.")
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Status: the running daemon's drivers, outbox, last sync and error, dead letters.",
        discussion: """
            Asks the running daemon through its status socket (--socket; default healthgate.sock next to \
            the database) for its drivers and their states, the last import and the last sync; without \
            a daemon, answers from the database alone.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("The daemon's status socket.", valueName: "PATH"))
    var socket: String?

    struct Status: Encodable {
        var server: String?
        var email: String?
        var deviceId: String?
        var outbox: Int
        var deadLetters: Int
        var lastSuccessAt: String?
        var lastError: String?
        var lastErrorAt: String?
        var historyCursor: Int64
        var heldRecords: Int
        var recentDeadLetters: [DeadLetter]
        /// The running daemon's view (nil: no daemon answered).
        var daemon: DaemonState.Snapshot?
        enum CodingKeys: String, CodingKey {
            case server, email, deviceId = "device_id", outbox, deadLetters = "dead_letters", lastSuccessAt = "last_success_at"
            case lastError = "last_error", lastErrorAt = "last_error_at", historyCursor = "history_cursor"
            case heldRecords = "held_records", recentDeadLetters = "recent_dead_letters", daemon
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(server, forKey: .server)
            try c.encode(email, forKey: .email)
            try c.encode(deviceId, forKey: .deviceId)
            try c.encode(outbox, forKey: .outbox)
            try c.encode(deadLetters, forKey: .deadLetters)
            try c.encode(lastSuccessAt, forKey: .lastSuccessAt)
            try c.encode(lastError, forKey: .lastError)
            try c.encode(lastErrorAt, forKey: .lastErrorAt)
            try c.encode(historyCursor, forKey: .historyCursor)
            try c.encode(heldRecords, forKey: .heldRecords)
            try c.encode(recentDeadLetters, forKey: .recentDeadLetters)
            try c.encode(daemon, forKey: .daemon)
        }
    }

    func run() async throws {
        let socketPath = socket ?? ((database.db as NSString).deletingLastPathComponent.nonEmpty ?? ".") + "/healthgate.sock"
        let daemon = await StatusServer.query(path: socketPath)
        let store = try await database.open()
        let credentials = try SyncCredentials.load(forDatabase: database.db)
        let status = Status(
            server: credentials?.server, email: credentials?.email, deviceId: credentials?.deviceId,
            outbox: try await store.outboxDepth(), deadLetters: try await store.deadLetterCount(),
            lastSuccessAt: try await store.syncState("last_success_at"), lastError: try await store.syncState("last_error"),
            lastErrorAt: try await store.syncState("last_error_at"),
            historyCursor: Int64(try await store.syncState("history_cursor") ?? "0") ?? 0, heldRecords: try await store.heldRecordCount(),
            recentDeadLetters: try await store.deadLetters(limit: 10), daemon: daemon)
        if output.json { return try Output.printJSON(status) }
        if let daemon {
            print("daemon        running (pid \(daemon.pid), since \(daemon.startedAt))")
            for d in daemon.drivers {
                let restarts = d.restarts > 0 ? ", \(d.restarts) restart(s)" : ""
                print("  driver \(d.name) (\(d.type)): \(d.state.rawValue) since \(d.since)\(restarts)"
                      + (d.detail.map { ": \(DisplayText.safe($0))" } ?? ""))
                if !d.devices.isEmpty { print("    connected: \(DisplayText.safe(d.devices.joined(separator: ", ")))") }
            }
            if let last = daemon.lastImport {
                print("last import   \(DisplayText.safe(last.path)): \(last.status), \(last.records) record(s) (\(last.at), \(last.driver))")
            }
            if let error = daemon.lastSyncError { print("sync          failing: \(DisplayText.safe(error))") }
        } else {
            print("daemon        not running (no answer on \(socketPath))")
        }
        print("server        \(status.server.map { "\(DisplayText.safe($0)) as \(DisplayText.safe(status.email ?? "?"))" } ?? "not logged in")")
        print("outbox        \(status.outbox) record(s) waiting")
        print("last success  \(status.lastSuccessAt ?? "never")")
        if let error = status.lastError { print("last error    \(DisplayText.safe(error)) (\(status.lastErrorAt ?? "?"))") }
        print("dead letters  \(status.deadLetters)")
        for d in status.recentDeadLetters {
            print("  \(d.type) \(d.id) v\(d.version): \(DisplayText.safe(d.reason)) (\(d.failedAt))")
        }
        if status.heldRecords > 0 {
            print("held          \(status.heldRecords) pulled record(s) this version could not store, tried again at every pull:")
            for h in try await store.heldRecords().prefix(10) {
                print("  \(DisplayText.safe(h.type ?? "?", limit: 40)) \(DisplayText.safe(h.id ?? "?", limit: 60)) "
                      + "v\(h.version.map(String.init) ?? "?"): \(DisplayText.safe(h.reason))")
            }
        }
    }
}

extension SyncCredentials {
    func client() throws -> SyncClient {
        guard let url = URL(string: server) else { throw RuntimeFailure("the saved login's server '\(server)' is not a URL: log in again") }
        var configuration = SyncClient.Configuration(server: url)
        configuration.pinnedCAFile = caFile
        return try SyncClient(configuration: configuration)
    }
}

extension String {
    /// nil for the empty string.
    var nonEmpty: String? { isEmpty ? nil : self }
}
