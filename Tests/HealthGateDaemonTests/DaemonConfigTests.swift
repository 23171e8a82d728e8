import DriverKit
import DriverRegistry
import Foundation
import HealthGateDaemon
import Testing
import TestSupport

/// The daemon's TOML configuration: what it reads, and that every mistake names its key path.
@Suite struct DaemonConfigTests {
    let full = """
        database = "/var/lib/healthgate/healthgate.sqlite"
        log_level = "debug"

        [api]
        socket = "/run/healthgate/healthgate.sock"
        metrics = "127.0.0.1:9464"

        [dashboard]
        listen = "[::1]:8471"

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
        let config = try DaemonConfig.parse(full, stateDirectory: "/unused", drivers: Registry.catalog)
        #expect(config.database == "/var/lib/healthgate/healthgate.sqlite")
        #expect(config.logLevel == "debug")
        #expect(config.statusSocket == "/run/healthgate/healthgate.sock")
        #expect(config.metricsAddress == "127.0.0.1:9464")
        #expect(config.dashboardAddress == "[::1]:8471")
        let forwarder = try #require(config.forwarder)
        #expect(forwarder.server.absoluteString == "https://tracking.example.org")
        #expect(forwarder.intervalS == 30 && forwarder.batchRecords == 500 && forwarder.concurrentUploads == 1 && !forwarder.pull)
        #expect(forwarder.batchBytes == 8 << 20)  // default
        #expect(config.drivers.keys.sorted() == ["chest", "inbox"])
        #expect(config.drivers["inbox"] == DriverInstance(name: "inbox", type: "watch_folder",
                                                          settings: ["path": .string("/var/lib/healthgate/inbox"), "after_import": .string("move")]))
        #expect(config.drivers["chest"]?.settings == ["hci": .string("hci0"), "devices": .array([.string("auto"), .string("C0:4E:47:00:00:01")]),
                                                      "gap_s": .integer(300)])
    }

    /// The documented sample is a valid configuration.
    @Test func sampleConfigurationIsValid() throws {
        let config = try DaemonConfig.load(path: PackagePaths.root + "/systemd/healthgate.toml", stateDirectory: "/unused", drivers: Registry.catalog)
        #expect(config.database == "/var/lib/healthgate/healthgate.sqlite")
        #expect(config.forwarder == nil)  // commented out until a server is set
        #expect(config.drivers["inbox"]?.type == "watch_folder" && config.drivers["watch"]?.type == "watch")
        // With its [forwarder] table uncommented, it forwards.
        let text = try String(contentsOfFile: PackagePaths.root + "/systemd/healthgate.toml", encoding: .utf8)
        let enabled = text.replacingOccurrences(of: "# [forwarder]\n# server", with: "[forwarder]\nserver")
        #expect(try DaemonConfig.parse(enabled, stateDirectory: "/unused", drivers: Registry.catalog).forwarder?.server.host == "tracking.example.org")
    }

    /// Entries were once a driver that idled: an old file's `manual` table is ignored with a note
    /// (the daemon still starts), and any other type not known is still refused.
    @Test func aRetiredManualTableIsIgnoredWithANote() throws {
        let config = try DaemonConfig.parse("""
            [drivers.entries]
            type = "manual"

            [drivers.inbox]
            type = "watch_folder"
            path = "/srv/inbox"
            """, stateDirectory: "/srv/hg", drivers: Registry.catalog)
        #expect(config.drivers.keys.sorted() == ["inbox"])
        #expect(config.notices.count == 1 && config.notices[0].hasPrefix("[drivers.entries]: type 'manual' is no longer a driver"), "\(config.notices)")
        #expect(throws: ConfigError.self) { try DaemonConfig.parse("[drivers.x]\ntype = \"manuals\"", stateDirectory: "/srv/hg", drivers: Registry.catalog) }
    }

    @Test func emptyFileAndEmbeddedDefault() throws {
        let empty = try DaemonConfig.parse("", stateDirectory: "/srv/hg", drivers: Registry.catalog)
        #expect(empty.database == "/srv/hg/healthgate.sqlite")
        #expect(empty.drivers.isEmpty && empty.forwarder == nil && empty.statusSocket == nil && empty.dashboardAddress == nil)
        // A [dashboard] table alone serves on the default address; `enabled = false` serves none.
        #expect(try DaemonConfig.parse("[dashboard]", stateDirectory: "/srv/hg", drivers: Registry.catalog).dashboardAddress == "127.0.0.1:8470")
        // A Unix socket for a reverse proxy.
        #expect(try DaemonConfig.parse("[dashboard]\nlisten = \"unix:/run/healthgate/dashboard.sock\"", stateDirectory: "/srv/hg",
                                       drivers: Registry.catalog).dashboardAddress == "unix:/run/healthgate/dashboard.sock")
        // Any address with TLS and a password hash.
        let hash = "$2b$12$" + String(repeating: "a", count: 53)
        let secured = try DaemonConfig.parse("""
            [dashboard]
            listen = "0.0.0.0:8443"
            tls_cert = "/etc/healthgate/dashboard.pem"
            tls_key = "/etc/healthgate/dashboard.key"
            password_hash = "\(hash)"
            read_only = true
            """, stateDirectory: "/srv/hg", drivers: Registry.catalog)
        #expect(secured.dashboardAddress == "0.0.0.0:8443")
        #expect(secured.dashboardAccess == DashboardAccessSettings(certificate: "/etc/healthgate/dashboard.pem", key: "/etc/healthgate/dashboard.key",
                                                                   passwordHash: hash, readOnly: true))
        #expect(try DaemonConfig.parse("[dashboard]\nenabled = false\nlisten = \"127.0.0.1:1\"", stateDirectory: "/srv/hg",
                                       drivers: Registry.catalog).dashboardAddress == nil)
        let embedded = DaemonConfig.embeddedDefault(stateDirectory: "/srv/hg")
        #expect(embedded.database == "/srv/hg/healthgate.sqlite")
        #expect(embedded.drivers["inbox"]?.settings["path"] == .string("/srv/hg/inbox"))
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
            ("[dashboard]\nlisten = \"0.0.0.0:8470\"",
             "dashboard.listen: '0.0.0.0:8470' is not on loopback: serving other machines needs TLS and a password (a certificate, its key and a password hash from `healthgate dashboard hash-password`)"),
            // TLS alone, or a password alone, is not enough off loopback.
            ("[dashboard]\nlisten = \"0.0.0.0:8470\"\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"",
             "dashboard.listen: '0.0.0.0:8470' is not on loopback: serving other machines needs TLS and a password (a certificate, its key and a password hash from `healthgate dashboard hash-password`)"),
            ("[dashboard]\ntls_cert = \"/c.pem\"", "dashboard.tls_key: is required with tls_cert (its private key)"),
            ("[dashboard]\ntls_key = \"/k.pem\"", "dashboard.tls_cert: is required with tls_key (its certificate)"),
            ("[dashboard]\npassword_hash = \"hunter22\"", "dashboard.password_hash: is not a password hash: make one with `healthgate dashboard hash-password`"),
            ("[dashboard]\nread_only = \"yes\"", "dashboard.read_only: must be true or false"),
            ("[dashboard]\nlisten = \"8470\"", "dashboard.listen: '8470' is not ADDRESS:PORT"),
            ("[dashboard]\nlisten = \"unix:run/x.sock\"", "dashboard.listen: 'unix:run/x.sock' is not unix:PATH with an absolute path of at most 107 bytes"),
            ("[dashboard]\nport = 8470", "dashboard.port: unknown key"),
            ("[dashboard]\nenabled = 1", "dashboard.enabled: must be true or false"),
            ("[forwarder]\ninterval_s = 30", "forwarder.server: is required (the tracking server's URL)"),
            ("[forwarder]\nserver = \"ftp://x\"", "forwarder.server: 'ftp://x' is not an http or https URL"),
            ("[forwarder]\nserver = \"http://x\"\nbatch_records = 0", "forwarder.batch_records: 0 is out of range (1 to 5000)"),
            ("[forwarder]\nserver = \"http://x\"\nbatch_records = 1.5", "forwarder.batch_records: must be a whole number"),
            ("[forwarder]\nserver = \"http://x\"\npull = \"yes\"", "forwarder.pull: must be true or false"),
            ("[drivers.inbox]\npath = \"/x\"", "drivers.inbox.type: is required: one of watch_folder, mass_storage, watch, exec, ble, ble_replay, ant"),
            ("[drivers.inbox]\ntype = \"ftp\"", "drivers.inbox.type: 'ftp' is not a driver: one of watch_folder, mass_storage, watch, exec, ble, ble_replay, ant"),
            ("[drivers.inbox]\ntype = \"fit\"",
             "drivers.inbox.type: 'fit' is not a driver: one of watch_folder, mass_storage, watch, exec, ble, ble_replay, ant (file importers are set in [importers.fit])"),
            ("[drivers.inbox]\ntype = 3", "drivers.inbox.type: must be a string"),
            ("drivers = 1", "drivers: must be a table ([drivers])"),
            ("[drivers]\ninbox = 1", "drivers.inbox: must be a table ([drivers.inbox])"),
            ("[drivers.\"in box\"]\ntype = \"exec\"", "drivers.in box: a driver's name may hold letters, digits, '-' and '_' only"),
            // The driver checks its own table: names of keys are the driver's.
            ("[drivers.x]\ntype = \"exec\"\ncommand = [\"a,b\"]", "drivers.x.command: 'a,b' must be an absolute path"),
            ("[drivers.x]\ntype = \"exec\"\ncommand = [\"/bin/echo\"]\nenv = { A = \"1\" }", "drivers.x.env: unknown key"),
            ("[drivers.x]\ntype = \"exec\"\ncommand = [\"/bin/echo\", 2]", "drivers.x.command[1]: must be a string"),
            ("[drivers.x]\ntype = \"watch_folder\"", "drivers.x.path: is required (the folder to watch)"),
            ("[drivers.x]\ntype = \"watch_folder\"\npath = \"/x\"\nsettle_s = \"forever\"",
             "drivers.x.settle_s: 'forever' is not a duration (a number, or like 10s, 250ms, 5m, 1h30m)"),
            ("[drivers.x]\ntype = \"ble\"\nhci = \"hci0\"\nflush_ms = 5", "drivers.x.flush_ms: is out of range (10 to 10000)"),
            ("[drivers.x]\ntype = \"mass_storage\"\nroots = [\"media\"]", "drivers.x.roots: must be a list of absolute folders"),
            ("[importers.fit]\nenabled = \"no\"", "importers.fit.enabled: must be true or false"),
            ("[importers.fit]\nspeed = 1", "importers.fit.speed: unknown key"),
            ("[importers.ftp]", "importers.ftp: 'ftp' is not a file importer: one of fit, tcx, gpx, apple-health, loop, habitbull, gadgetbridge, csv"),
            ("[importers.exec]", "importers.exec: 'exec' is not a file importer: one of fit, tcx, gpx, apple-health, loop, habitbull, gadgetbridge, csv"),
            ("[forwarder]\nserver = \"http://x\"\ninterval_s = 0", "forwarder.interval_s: is out of range (1 to 86400)"),
            ("when = 2026-11-24T07:00:00Z", "when: dates and times are not settings here: write a string"),
        ]
        for (text, message) in cases {
            #expect(throws: ConfigError.self, "\(text)") { try DaemonConfig.parse(text, stateDirectory: "/s", drivers: Registry.catalog) }
            do {
                _ = try DaemonConfig.parse(text, stateDirectory: "/s", drivers: Registry.catalog)
            } catch {
                #expect(error.description == message, "\(text)")
            }
        }
    }

    /// Arguments with commas pass as they are; durations take their unit or a duration string;
    /// an importer can be turned off.
    @Test func typedValuesPassThrough() throws {
        let config = try DaemonConfig.parse("""
            [drivers.x]
            type = "exec"
            command = ["/bin/echo", "a,b", "--x=1,2"]
            restart_delay_s = "1m30s"
            [forwarder]
            server = "http://x"
            interval_s = "5m"
            [importers.gpx]
            enabled = false
            [importers.fit]
            """, stateDirectory: "/s", drivers: Registry.catalog)
        #expect(config.drivers["x"]?.settings["command"] == .array([.string("/bin/echo"), .string("a,b"), .string("--x=1,2")]))
        #expect(config.forwarder?.intervalS == 300)
        #expect(config.disabledImporters == ["gpx"] && config.importers["fit"] == [:])
        let importers = try Registry.catalog.makeFileImporters(disabled: config.disabledImporters, context: { .standalone($0) })
        #expect(importers.map { type(of: $0).id } == ["fit", "tcx", "apple-health", "loop", "habitbull", "gadgetbridge", "csv"])
    }

    @Test func syntaxErrorsSayWhere() throws {
        let folder = NSTemporaryDirectory() + "hg-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/healthgate.toml"
        try "database = \"a\"\n[api\nsocket = 1\n".write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try DaemonConfig.load(path: path, stateDirectory: folder, drivers: Registry.catalog)
            Issue.record("accepted broken TOML")
        } catch {
            #expect(error.description.hasPrefix(path + ": not valid TOML: "))
            #expect(error.description.contains("line 2"))
        }
        do {
            _ = try DaemonConfig.load(path: folder + "/missing.toml", stateDirectory: folder, drivers: Registry.catalog)
            Issue.record("read a missing file")
        } catch {
            #expect(error.description.hasPrefix(folder + "/missing.toml: cannot read the file"))
        }
    }
}
