import ArgumentParser
import CommandSupport
import Dashboard
import Foundation
import Logging
import WebSecurity

struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve the pages and charts of a database to a browser.",
        subcommands: [DashboardServe.self, DashboardHashPassword.self],
        defaultSubcommand: DashboardServe.self)
}

struct DashboardServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the pages and charts of a database (the default: `healthgate dashboard --db FILE`).",
        discussion: """
            Prints the URL to open, then serves until stopped (Ctrl-C, SIGTERM). Pages: today, water, \
            vaping, habits, workouts, sleep, body, stats, timeline and the day's entries (docs/dashboard.md). \
            Nothing is loaded from the network.

            On loopback (the default) or a Unix socket (unix:PATH, for a reverse proxy on this machine, \
            mode 0660) nothing else is needed. Any other address needs TLS and a \
            password: --tls-cert, --tls-key and --password-hash-file (a hash made by `healthgate \
            dashboard hash-password`). The certificate is read again on SIGHUP.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var asOf: AsOfOptions

    @Option(help: ArgumentHelp("Where to listen: a loopback address and port (port 0: any free port), unix:PATH (a socket for a reverse proxy), "
                                   + "or any address with TLS and a password.", valueName: "ADDRESS:PORT"))
    var listen = DashboardServer.defaultAddress

    @Option(help: ArgumentHelp("The TLS certificate chain (PEM).", valueName: "FILE"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The TLS private key (PEM).", valueName: "FILE"))
    var tlsKey: String?

    @Option(help: ArgumentHelp("A file holding the password's hash (from `healthgate dashboard hash-password`): the pages ask for the password.",
                               valueName: "FILE"))
    var passwordHashFile: String?

    @Flag(help: "Serve the pages without any form: nothing can be logged, changed or deleted from them.")
    var readOnly = false

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        let secured = tlsCert != nil && passwordHashFile != nil
        if case .failure(let error) = DashboardListen.parse(listen, secured: secured) { throw ValidationError("--listen: \(error)") }
    }

    func run() async throws {
        var access = DashboardAccess(readOnly: readOnly)
        if let file = passwordHashFile {
            let text: String
            do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw RuntimeFailure("--password-hash-file \(file): cannot be read (\(error.localizedDescription))")
            }
            let hash = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard DashboardAccess.isPasswordHash(hash) else {
                throw RuntimeFailure("--password-hash-file \(file): not a password hash (make one with `healthgate dashboard hash-password`)")
            }
            access.passwordHash = hash
        }
        if let tlsCert, let tlsKey {
            do { access.tls = try await TLSCertificates(certificate: tlsCert, key: tlsKey) } catch { throw RuntimeFailure("\(error)") }
            if let warning = TLSCertificates.keyAccessWarning(path: tlsKey) { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
        }
        let place = try DashboardListen.parse(listen, secured: access.secured).get()
        let fixed = asOf.at == nil ? nil : try asOf.now()
        let store = try await database.open()
        let logger = Logger(label: "healthgate.dashboard")
        let app = DashboardServer.application(store: store, listen: place, access: access,
                                              now: { fixed ?? Date() }, onListening: { url in
                                                  // Unbuffered: whoever started it reads the URL at once.
                                                  FileHandle.standardOutput.write(Data("dashboard of \(database.db) on \(url)\n".utf8))
                                              }, logger: logger)
        try await app.runService()
    }
}

/// `healthgate dashboard hash-password`: reads a password (one line on standard input) and prints
/// its bcrypt hash, for `--password-hash-file` or `[dashboard] password_hash`. The password itself
/// is never stored.
struct DashboardHashPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash-password",
        abstract: "Print the hash of a password read from standard input, for the dashboard's password.",
        discussion: """
            Reads one line (the password, at least 8 characters) and prints its bcrypt hash: put it \
            in a file for --password-hash-file or in the daemon's [dashboard] password_hash. \
            Example: `healthgate dashboard hash-password > /etc/healthgate/dashboard.hash` (type the \
            password, then Enter).
            """)

    func run() async throws {
        guard let line = readLine(strippingNewline: true) else { throw RuntimeFailure("no password on standard input") }
        guard line.count >= 8 else { throw RuntimeFailure("the password is too short: at least 8 characters") }
        print(await PasswordHasher().hash(line))
    }
}
