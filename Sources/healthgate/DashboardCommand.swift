import ArgumentParser
import CommandSupport
import Dashboard
import Foundation
import Logging

struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve the pages and charts of a database to a browser on this machine.",
        discussion: """
            Prints the URL to open, then serves until stopped (Ctrl-C, SIGTERM). Pages: today \
            (water, vaping, energy, last night, steps, habits with streaks) and water (days with the \
            goal line, the table, a CSV download). No script, nothing from the network.

            It listens on loopback only: serving other machines needs TLS and a password, which \
            the dashboard does not have yet.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var asOf: AsOfOptions

    @Option(help: ArgumentHelp("Where to listen: a loopback address and port (port 0: any free port).", valueName: "ADDRESS:PORT"))
    var listen = "127.0.0.1:8470"

    /// `127.0.0.1:8470`, `[::1]:8470`, `localhost:0`.
    static func address(_ text: String) -> (host: String, port: Int)? {
        let host: String, portText: Substring
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<end])
            let rest = text[text.index(after: end)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            host = String(parts[0])
            portText = parts[1]
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty else { return nil }
        return (host, port)
    }

    func validate() throws {
        guard let (host, _) = Self.address(listen) else { throw ValidationError("--listen must be ADDRESS:PORT, not \(listen)") }
        guard ["127.0.0.1", "::1", "localhost"].contains(host.lowercased()) else {
            throw ValidationError("--listen \(listen) is not on loopback: serving other machines needs TLS and a password, "
                                  + "which the dashboard does not have yet (use 127.0.0.1, ::1 or localhost)")
        }
    }

    func run() async throws {
        let (host, port) = Self.address(listen)!
        let fixed = asOf.at == nil ? nil : try asOf.now()
        let store = try await database.open()
        let logger = Logger(label: "healthgate.dashboard")
        let app = DashboardServer.application(store: store, host: host == "localhost" ? "127.0.0.1" : host, port: port,
                                              now: { fixed ?? Date() }, onListening: { url in
                                                  // Unbuffered: whoever started it reads the URL at once.
                                                  FileHandle.standardOutput.write(Data("dashboard of \(database.db) on \(url)\n".utf8))
                                              }, logger: logger)
        try await app.runService()
    }
}
