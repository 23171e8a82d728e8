import DriverKit
import Foundation
import HealthGate
import Testing

/// The daemon's TOML configuration: what it reads, and that every mistake names its key path.
@Suite struct DaemonConfigTests {
    let full = """
        database = "/var/lib/healthgate/healthgate.sqlite"
        log_level = "debug"

        [api]
        socket = "/run/healthgate/healthgate.sock"
        metrics = "127.0.0.1:9464"

        [forwarder]
        server = "https://tracking.example.org"
        interval_s = 30
        batch_records = 500
        concurrent_uploads = 1
        pull = false

        [drivers.inbox]
        type = "watch_folder"
        path = "/var/lib/healthgate/inbox"
        after_import = "move"

        [drivers.chest]
        type = "ble"
        hci = "hci0"
        devices = ["auto", "C0:4E:47:00:00:01"]
        gap_s = 300
        """

    @Test func readsEveryTable() throws {
        let config = try DaemonConfig.parse(full, stateDirectory: "/unused")
        #expect(config.database == "/var/lib/healthgate/healthgate.sqlite")
        #expect(config.logLevel == "debug")
        #expect(config.statusSocket == "/run/healthgate/healthgate.sock")
        #expect(config.metricsAddress == "127.0.0.1:9464")
        let forwarder = try #require(config.forwarder)
        #expect(forwarder.server.absoluteString == "https://tracking.example.org")
        #expect(forwarder.intervalS == 30 && forwarder.batchRecords == 500 && forwarder.concurrentUploads == 1 && !forwarder.pull)
        #expect(forwarder.batchBytes == 8 << 20)  // default
        #expect(config.drivers.keys.sorted() == ["chest", "inbox"])
        #expect(config.drivers["inbox"] == DriverInstance(name: "inbox", type: .watchFolder,
                                                          config: DriverConfig(["path": "/var/lib/healthgate/inbox", "after_import": "move"])))
        #expect(config.drivers["chest"]?.config == DriverConfig(["hci": "hci0", "devices": "auto,C0:4E:47:00:00:01", "gap_s": "300"]))
    }

    /// The documented sample is a valid configuration.
    @Test func sampleConfigurationIsValid() throws {
        let config = try DaemonConfig.load(path: packageRoot + "/systemd/healthgate.toml", stateDirectory: "/unused")
        #expect(config.database == "/var/lib/healthgate/healthgate.sqlite")
        #expect(config.forwarder == nil)  // commented out until a server is set
        #expect(config.drivers["inbox"]?.type == .watchFolder && config.drivers["watch"]?.type == .massStorage)
        // With its [forwarder] table uncommented, it forwards.
        let text = try String(contentsOfFile: packageRoot + "/systemd/healthgate.toml", encoding: .utf8)
        let enabled = text.replacingOccurrences(of: "# [forwarder]\n# server", with: "[forwarder]\nserver")
        #expect(try DaemonConfig.parse(enabled, stateDirectory: "/unused").forwarder?.server.host == "tracking.example.org")
    }

    @Test func emptyFileAndEmbeddedDefault() throws {
        let empty = try DaemonConfig.parse("", stateDirectory: "/srv/hg")
        #expect(empty.database == "/srv/hg/healthgate.sqlite")
        #expect(empty.drivers.isEmpty && empty.forwarder == nil && empty.statusSocket == nil)
        let embedded = DaemonConfig.embeddedDefault(stateDirectory: "/srv/hg")
        #expect(embedded.database == "/srv/hg/healthgate.sqlite")
        #expect(embedded.drivers["inbox"]?.config["path"] == "/srv/hg/inbox")
        #expect(embedded.forwarder == nil)
    }

    /// Each mistake fails with its key path and reason.
    @Test func mistakesNameTheirKeyPath() {
        let cases: [(String, String)] = [
            ("databse = \"x\"", "databse: unknown key"),
            ("database = 3", "database: must be a string"),
            ("log_level = \"loud\"", "log_level: 'loud' is not one of trace, debug, info, notice, warning, error, critical"),
            ("[api]\nmetrics = \"localhost\"", "api.metrics: 'localhost' is not HOST:PORT"),
            ("[api]\nsockets = \"/x\"", "api.sockets: unknown key"),
            ("api = 1", "api: must be a table ([api])"),
            ("[forwarder]\ninterval_s = 30", "forwarder.server: is required (the tracking server's URL)"),
            ("[forwarder]\nserver = \"ftp://x\"", "forwarder.server: 'ftp://x' is not an http or https URL"),
            ("[forwarder]\nserver = \"http://x\"\nbatch_records = 0", "forwarder.batch_records: 0 is out of range (1 to 5000)"),
            ("[forwarder]\nserver = \"http://x\"\nbatch_records = 1.5", "forwarder.batch_records: must be a whole number"),
            ("[forwarder]\nserver = \"http://x\"\npull = \"yes\"", "forwarder.pull: must be true or false"),
            ("[drivers.inbox]\npath = \"/x\"", "drivers.inbox.type: is required: one of ble, watch_folder, mass_storage, exec"),
            ("[drivers.inbox]\ntype = \"ftp\"", "drivers.inbox.type: 'ftp' is not a driver: one of ble, watch_folder, mass_storage, exec"),
            ("[drivers.\"in box\"]\ntype = \"exec\"", "drivers.in box: a driver's name may hold letters, digits, '-' and '_' only"),
            ("[drivers.x]\ntype = \"exec\"\ncommand = [\"a,b\"]", "drivers.x.command: must be a list of strings or numbers without commas"),
            ("[drivers.x]\ntype = \"exec\"\nenv = { A = \"1\" }", "drivers.x.env: must be a string, number, boolean or list"),
        ]
        for (text, message) in cases {
            #expect(throws: ConfigError.self, "\(text)") { try DaemonConfig.parse(text, stateDirectory: "/s") }
            do {
                _ = try DaemonConfig.parse(text, stateDirectory: "/s")
            } catch {
                #expect(error.description == message, "\(text)")
            }
        }
    }

    @Test func syntaxErrorsSayWhere() throws {
        let folder = NSTemporaryDirectory() + "hg-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/healthgate.toml"
        try "database = \"a\"\n[api\nsocket = 1\n".write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try DaemonConfig.load(path: path, stateDirectory: folder)
            Issue.record("accepted broken TOML")
        } catch {
            #expect(error.description.hasPrefix(path + ": not valid TOML: "))
            #expect(error.description.contains("line 2"))
        }
        do {
            _ = try DaemonConfig.load(path: folder + "/missing.toml", stateDirectory: folder)
            Issue.record("read a missing file")
        } catch {
            #expect(error.description.hasPrefix(folder + "/missing.toml: cannot read the file"))
        }
    }
}
