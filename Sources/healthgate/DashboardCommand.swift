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
    var listen = DashboardServer.defaultAddress

    func validate() throws {
        if case .failure(let error) = DashboardServer.listenAddress(listen) { throw ValidationError("--listen: \(error)") }
    }

    func run() async throws {
        let (host, port) = try DashboardServer.listenAddress(listen).get()
        let fixed = asOf.at == nil ? nil : try asOf.now()
        let store = try await database.open()
        let logger = Logger(label: "healthgate.dashboard")
        let app = DashboardServer.application(store: store, host: host, port: port,
                                              now: { fixed ?? Date() }, onListening: { url in
                                                  // Unbuffered: whoever started it reads the URL at once.
                                                  FileHandle.standardOutput.write(Data("dashboard of \(database.db) on \(url)\n".utf8))
                                              }, logger: logger)
        try await app.runService()
    }
}
