import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthSync
import SyncProtocol

// The account on the tracking server, through the saved login (`healthgate login`): its
// devices (revoke a lost one), the password, deleting the account.

/// The login saved next to the database, or a ``RuntimeFailure`` saying there is none.
func savedLogin(_ database: DatabaseOptions) throws -> SyncCredentials {
    let saved: SyncCredentials?
    do { saved = try SyncCredentials.load(forDatabase: database.db) } catch {
        throw RuntimeFailure("cannot read the saved login \(SyncCredentials.path(forDatabase: database.db)): \(error)")
    }
    guard let credentials = saved else {
        throw RuntimeFailure("not logged in (no \(SyncCredentials.path(forDatabase: database.db))): "
                             + "run `healthgate login --server URL --email EMAIL` first")
    }
    return credentials
}

/// Runs `body` with a client of the saved login's server; a failure of the server (or of the
/// way to it) is a ``RuntimeFailure`` naming the server.
func withSavedLogin<T>(_ credentials: SyncCredentials, _ body: (SyncClient) async throws -> T) async throws -> T {
    try await withClient(try credentials.client()) { client in
        do { return try await body(client) } catch let error as SyncError {
            throw RuntimeFailure("\(credentials.server): \(error)")
        }
    }
}

/// `--password-stdin`: passwords come from standard input, one a line, in the order the command
/// asks for them; without it they are asked on the terminal with echo off.
struct PasswordInputOptions: ParsableArguments {
    @Flag(help: "Read the password(s) from standard input, one a line, instead of the terminal.")
    var passwordStdin = false

    func read(_ what: String, prompt: String) throws -> String {
        if passwordStdin {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw RuntimeFailure("--password-stdin: no \(what) on standard input")
            }
            return line
        }
        guard isatty(STDIN_FILENO) == 1 else {
            throw ValidationError("no terminal to ask for the \(what); use --password-stdin")
        }
        return try Terminal.readSecret(prompt)
    }
}

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "The account's logged-in devices; revoke a lost one.",
        discussion: "`healthgate devices` lists them; `healthgate devices revoke ID` logs one out from here.",
        subcommands: [DevicesListCommand.self, DevicesRevokeCommand.self], defaultSubcommand: DevicesListCommand.self)
}

struct DevicesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the account's logged-in devices (the default of `devices`).",
        discussion: """
            One line per device: its id (for `devices revoke`), name, whether it is the primary \
            syncing device, when the server last saw it, and which one is this install. Devices \
            unused for longer than the server's token lifetime are logged out and not listed.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    struct Entry: Encodable {
        var id: String
        var name: String
        var primary: Bool
        var createdAt: Date
        var lastSeenAt: Date?
        var thisDevice: Bool
        enum CodingKeys: String, CodingKey {
            case id, name, primary, createdAt = "created_at", lastSeenAt = "last_seen_at", thisDevice = "this_device"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(primary, forKey: .primary)
            try c.encode(createdAt, forKey: .createdAt)
            try c.encode(lastSeenAt, forKey: .lastSeenAt)
            try c.encode(thisDevice, forKey: .thisDevice)
        }
    }

    func run() async throws {
        let credentials = try savedLogin(database)
        let list = try await withSavedLogin(credentials) { client in try await client.devices(token: credentials.token) }
        let entries = list.devices.map {
            Entry(id: $0.id, name: $0.name, primary: $0.primary, createdAt: $0.createdAt, lastSeenAt: $0.lastSeenAt,
                  thisDevice: $0.id == credentials.deviceId)
        }
        if output.json { return try Output.printJSON(entries) }
        Output.printTable(["ID", "PRIMARY", "LAST SEEN", "NAME"], entries.map { e in
            [e.id, e.primary ? "yes" : "", e.lastSeenAt.map { Output.shortTime(ISO8601.string($0)) } ?? "-",
             e.name + (e.thisDevice ? " (this device)" : "")]
        })
    }
}

struct DevicesRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Log one of the account's devices out (a lost one, say).",
        discussion: """
            The device's token stops working at once; its records stay in the account. Take the \
            id from `healthgate devices`. Revoking this install's own device is a logout: the \
            saved login is forgotten too.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: ArgumentHelp("The device's id (from `healthgate devices`).", valueName: "ID"))
    var id: String

    func validate() throws {
        guard UUID(uuidString: id) != nil else { throw ValidationError("'\(id)' is not a device id (a UUID from `healthgate devices`)") }
    }

    func run() async throws {
        let credentials = try savedLogin(database)
        let id = id.lowercased()
        try await withSavedLogin(credentials) { client in try await client.revokeDevice(id: id, token: credentials.token) }
        if id == credentials.deviceId.lowercased() {
            SyncCredentials.remove(forDatabase: database.db)
            return print("This device (\(id)) is logged out of \(credentials.server); its saved login is forgotten.")
        }
        print("Device \(id) is logged out of \(credentials.server).")
    }
}

struct PasswordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "password", abstract: "Change the account's password on the tracking server.",
        discussion: """
            Asks for the current password, then the new one twice (on the terminal, without \
            echo), or reads the current and the new password from the first two lines of \
            standard input with --password-stdin. Every other device of the account is logged \
            out; this one stays logged in.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var passwords: PasswordInputOptions

    func run() async throws {
        let credentials = try savedLogin(database)
        let current = try passwords.read("current password", prompt: "Current password for \(credentials.email): ")
        let new = try passwords.read("new password", prompt: "New password: ")
        if !passwords.passwordStdin {
            guard try passwords.read("new password", prompt: "Repeat the new password: ") == new else {
                throw RuntimeFailure("the new passwords differ: the password is unchanged")
            }
        }
        let answer = try await withSavedLogin(credentials) { client in
            try await client.changePassword(current: current, new: new, token: credentials.token)
        }
        print("Password changed on \(credentials.server); \(answer.revokedDevices) other device(s) logged out.")
    }
}

struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "The account on the tracking server: delete it.",
        subcommands: [AccountDeleteCommand.self])
}

struct AccountDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the account, with every record and device it has on the server.",
        discussion: """
            Asks for the password (or reads it from standard input with --password-stdin) and, \
            unless --yes, for the account's email as a confirmation. The server deletes the \
            account's records, devices and the account itself at once; this cannot be undone. \
            The records in the local database stay; the saved login is forgotten.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var passwords: PasswordInputOptions

    @Flag(help: "Do not ask for a confirmation (needed without a terminal).")
    var yes = false

    func run() async throws {
        let credentials = try savedLogin(database)
        if !yes {
            guard isatty(STDIN_FILENO) == 1, !passwords.passwordStdin else {
                throw ValidationError("deleting the account cannot be undone: add --yes to confirm")
            }
            Output.stderr("This deletes \(credentials.email) and every record it holds on \(credentials.server).\n"
                          + "Type the account's email to confirm: ")
            guard readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces) == credentials.email else {
                throw RuntimeFailure("not confirmed: nothing was deleted")
            }
        }
        let password = try passwords.read("password", prompt: "Password for \(credentials.email): ")
        try await withSavedLogin(credentials) { client in try await client.deleteAccount(password: password, token: credentials.token) }
        SyncCredentials.remove(forDatabase: database.db)
        print("Account \(credentials.email) deleted from \(credentials.server), with its records and devices. "
              + "The local database \(database.db) is unchanged.")
    }
}
