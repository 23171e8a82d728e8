import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HealthGateDaemon
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate daemon` as a real process, with a stand-in for systemd's notify socket.
final class DaemonProcess {
    let folder: String
    let notify: NotifySocket
    let process = ChildProcess()
    var logPath: String { folder + "/daemon.log" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts `healthgate daemon` with `arguments` in a fresh folder (the state directory).
    /// `executable`: another copy of `healthgate` to run (default: the built one).
    init(folder: String, arguments: [String], environment: [String: String] = [:], executable: String = CLI.executable) throws {
        self.folder = folder
        notify = try NotifySocket()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["daemon", "--state-dir", folder] + arguments
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify.path
        env.merge(environment) { $1 }
        process.environment = env
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardError = log
        process.standardOutput = log
        try process.run()
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits (at most ``Patience/limit``) for the process to end; its exit status, or nil.
    /// (Polls with `Task.sleep`: blocking would hold one of the few threads concurrent tests share.)
    func waitForExit() async -> Int32? {
        _ = await cameTrue { !process.isRunning }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Waits (at most ``Patience/limit``) for the log to contain `text`.
    func waitForLog(_ text: String) async -> Bool {
        await cameTrue { log.contains(text) }
    }

    deinit { end(process, signal: SIGKILL) }
}

@Suite(.serialized) struct DaemonTests {
    /// READY after start, the status socket answers, SIGHUP reloads (a bad file keeps the running
    /// configuration), SIGTERM stops it in order with STOPPING and exit status 0.
    @Test func lifecycleUnderTheNotifyProtocol() async throws {
        let folder = try temporaryFolder("daemon")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/healthgate.toml"
        let socket = folder + "/status.sock"
        try """
            log_level = "debug"
            [api]
            socket = "\(socket)"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // A private copy of the executable: the kernel pages out only pages no other process maps,
        // and the parallel tests run other `healthgate` processes from the built one meanwhile.
        // Copied by `cp`, not in this process: a file descriptor open for writing here would be
        // inherited by children other tests start meanwhile, and running the copy would then
        // fail with ETXTBSY ("Text file busy", seen once).
        let executable = folder + "/healthgate-private"
        let copied = try await Tool.run("/bin/cp", [CLI.executable, executable])
        try #require(copied.status == 0, "cp: \(copied.stderr)")
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config], environment: ["WATCHDOG_USEC": "400000"],
                                       executable: executable)

        let startup = try #require(await daemon.notify.waitFor("READY=1"), "no READY: \(daemon.log)")
        #expect(startup.last?.contains { $0.hasPrefix("STATUS=") } == true)
        #expect(await daemon.notify.waitFor("WATCHDOG=1") != nil, "no watchdog ping")
        #expect(FileManager.default.fileExists(atPath: folder + "/healthgate.sqlite"))

        // The status socket answers with the daemon's own view.
        var snapshot: DaemonState.Snapshot?
        _ = await cameTrue {
            snapshot = await StatusServer.query(path: socket)
            return snapshot != nil
        }
        let status = try #require(snapshot, "status socket: \(daemon.log)")
        #expect(status.pid == daemon.process.processIdentifier)
        #expect(status.database == folder + "/healthgate.sqlite")

        // `healthgate status` answers from the running daemon, and from the database alone after.
        let answer = try #require(try await CLI.json(["status", "--state-dir", folder, "--socket", socket, "--json"]) as? [String: Any])
        #expect((answer["daemon"] as? [String: Any])?["pid"] as? Int == Int(daemon.process.processIdentifier))
        #expect(answer["outbox"] as? Int == 0)

        // A broken file on SIGHUP: reported, the daemon keeps running.
        try "log_level = \"debug\"\n[api]\nsocket = \"\(socket)\"\n[drivers.x]\ntype = \"nope\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(await daemon.notify.waitFor("RELOADING=1") != nil)
        #expect(await daemon.waitForLog("configuration not reloaded"), "\(daemon.log)")
        #expect(daemon.log.contains("drivers.x.type: 'nope' is not a driver"))
        #expect(await daemon.notify.waitFor("READY=1") != nil)
        #expect(daemon.process.isRunning)

        // Once started it gives back the pages start-up touched, and goes on working.
        #expect(await daemon.waitForLog("released start-up pages"), "\(daemon.log)")
        let trim = try #require(daemon.log.split(separator: "\n").first { $0.contains("released start-up pages") })
        func megabytes(_ key: String) -> Double? {
            trim.split(separator: " ").first { $0.hasPrefix(key + "=") }.flatMap { Double($0.dropFirst(key.count + 1)) }
        }
        let rssBefore = try #require(megabytes("rss_before_mb")), rssAfter = try #require(megabytes("rss_after_mb"))
        #expect(rssAfter < rssBefore, "\(trim)")
        #expect(await daemon.notify.waitFor("WATCHDOG=1") != nil, "no watchdog ping after the trim")
        #expect(await StatusServer.query(path: socket)?.pid == daemon.process.processIdentifier)

        daemon.signal(SIGTERM)
        #expect(await daemon.notify.waitFor("STOPPING=1") != nil)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: socket))
        #expect(await StatusServer.query(path: socket) == nil)
        let after = try await CLI.run(["status", "--state-dir", folder, "--socket", socket])
        #expect(after.status == 0 && after.stdout.contains("daemon        not running"), "\(after.stdout)\(after.stderr)")
    }

    /// A configuration that cannot run stops the daemon at start with the key path and reason
    /// (exit status 78, EX_CONFIG), before anything starts.
    /// `[dashboard]`: the daemon serves the pages on its loopback address, from its own store,
    /// and stops serving with it.
    @Test func theDaemonServesTheDashboard() async throws {
        let folder = try temporaryFolder("daemon-dashboard")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let port = try unusedPort()
        let config = folder + "/healthgate.toml"
        try """
            database = "\(folder)/healthgate.sqlite"
            [dashboard]
            listen = "127.0.0.1:\(port)"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let logged = try await CLI.run(["log", "water", "330ml", "--db", folder + "/healthgate.sqlite"])
        #expect(logged.status == 0, "\(logged.stderr)")
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
        #expect(await daemon.waitForLog("dashboard"), "\(daemon.log)")
        let page = try await DashboardCLITests.get("http://127.0.0.1:\(port)", "/")
        #expect(page.status == 200 && DashboardCLITests.fields(page.body)["water-ml"] == 330, "\(page.status) \(daemon.log)")
        // The box's own card, from the daemon's state: no driver, no server, the drink waiting in the outbox.
        let outbox = try await Tool.run("/usr/bin/env", ["python3", "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM outbox').fetchone()[0])",
                                                         folder + "/healthgate.sqlite"])
        #expect(DashboardCLITests.fields(page.body)["outbox"] == Double(outbox.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(DashboardCLITests.fields(page.body)["devices-connected"] == 0)
        #expect(page.body.contains("No server configured") && page.body.contains("No drivers configured."))
        #expect(try await DashboardCLITests.get("http://127.0.0.1:\(port)", "/water?days=7").status == 200)
        #expect(page.body.contains("id=\"live-status\"") && page.body.contains("<script src=\"/static/live.js\" defer></script>"))

        // Live (server-sent events): the card at once; after a drink logged elsewhere, the card
        // again with the outbox one longer; on SIGTERM the stream ends and the daemon exits.
        let live = try await Tool.run("/usr/bin/env", ["python3", "-c", """
            import http.client, json, os, re, signal, subprocess, sys
            c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
            c.request("GET", "/events/status")
            r = c.getresponse()
            def event():
                data = []
                while True:
                    line = r.readline()
                    if not line: return None
                    line = line.decode().rstrip("\\n")
                    if line == "" and data: return "\\n".join(data)
                    if line.startswith("data: "): data.append(line[6:])
            def outbox(card): return int(re.search(r'data-field="outbox" data-value="([0-9]+)"', card).group(1))
            first = event()
            subprocess.run([sys.argv[2], "log", "water", "250ml", "--db", sys.argv[3]], check=True, capture_output=True)
            second = event()
            # Seven more streams make eight; a ninth is told to come back in 30 s, and closed.
            others = []
            for _ in range(7):
                o = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
                o.request("GET", "/events/status")
                others.append(o.getresponse())
                others[-1].readline()
            n = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
            n.request("GET", "/events/status")
            ninth = n.getresponse().read().decode()
            os.kill(int(sys.argv[4]), signal.SIGTERM)
            r.read()  # raises on the 30 s timeout unless the stream ends
            print(json.dumps({"type": r.getheader("Content-Type"), "first": outbox(first), "second": outbox(second),
                              "live": 'id="live-status"' in second, "ninth": ninth}))
            """, String(port), CLI.executable, folder + "/healthgate.sqlite", String(daemon.process.processIdentifier)])
        #expect(live.status == 0, "\(live.stderr)")
        let events = try #require(try JSONSerialization.jsonObject(with: Data(live.stdout.utf8)) as? [String: Any], "\(live.stdout)")
        #expect(events["type"] as? String == "text/event-stream; charset=utf-8")
        #expect(events["first"] as? Int == DashboardCLITests.fields(page.body)["outbox"].map { Int($0) }, "\(events)")
        #expect(events["second"] as? Int == (events["first"] as? Int ?? -9) + 1, "\(events)")
        #expect(events["live"] as? Bool == true && events["ninth"] as? String == "retry: 30000\n\n", "\(events)")
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
    }

    @Test func invalidConfigurationFailsAtStart() async throws {
        let folder = try temporaryFolder("daemon-bad")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/healthgate.toml"
        try "[forwarder]\nserver = \"ftp://example.org\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try await CLI.run(["daemon", "--state-dir", folder, "--config", config])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(config): forwarder.server: 'ftp://example.org' is not an http or https URL"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/healthgate.sqlite"))

        try "[drivers.strap]\ntype = \"ble\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
        #expect(await daemon.waitForExit() == 78)
        #expect(daemon.log.contains("drivers.strap.hci: is required"), "\(daemon.log)")
    }

    /// A driver added as a folder and a registry line (`ble_replay`) runs in the daemon from its
    /// table alone, and stores what `healthgate ble replay --record` stores from the same capture.
    @Test func aRegisteredDriverRunsFromItsTable() async throws {
        let folder = try temporaryFolder("daemon-replay")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let capture = PackagePaths.fixtures + "/ble/hr-csc-watch.btsnoop"
        let config = folder + "/healthgate.toml"
        try """
            database = "\(folder)/daemon.sqlite"
            [drivers.capture]
            type = "ble_replay"
            capture = "\(capture)"
            sport = "running"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
        #expect(await daemon.waitForLog("replayed \(capture)"), "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")

        let cli = folder + "/cli.sqlite"
        let replayed = try await CLI.run(["ble", "replay", capture, "--record", "--db", cli, "--sport", "running"])
        #expect(replayed.status == 0, "\(replayed.stderr)")
        for command in [["workouts"], ["measurements"]] {
            let byDaemon = try #require(try await CLI.json(command + ["--db", folder + "/daemon.sqlite", "--json"]) as? [[String: Any]])
            let byCLI = try #require(try await CLI.json(command + ["--db", cli, "--json"]) as? [[String: Any]])
            #expect(!byDaemon.isEmpty)
            #expect(byDaemon.map { $0["id"] as? String } == byCLI.map { $0["id"] as? String }, "\(command)")
            #expect(byDaemon.map { $0["samples"] as? Int } == byCLI.map { $0["samples"] as? Int }, "\(command)")
        }
    }

    /// The daemon records a heart-rate strap (the emulated peer) and forwards the workout to a
    /// running healthgate-server; a second install of the account pulls exactly that workout.
    @Test func recordedWorkoutReachesTheServer() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let (first, second) = try await twoInstallsOfOneAccount(on: server, tag: "daemon-ble")
        defer { for f in [first, second] { try? FileManager.default.removeItem(atPath: f) } }
        guard case .tcp(let host, let port) = peer.h4 else { throw PeerError("peer without TCP transport") }
        let config = first + "/healthgate.toml"
        let metricsPort = try unusedPort()
        try """
            [api]
            metrics = "127.0.0.1:\(metricsPort)"
            socket = "\(first)/healthgate.sock"
            [forwarder]
            server = "\(server.url.absoluteString)"
            interval_s = 1
            [drivers.strap]
            type = "ble"
            hci = "tcp:\(host):\(port)"
            sport = "running"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: first, arguments: ["--config", config])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        // Record until the strap has sent a few seconds of readings.
        try await eventually("the strap sends 30 readings", every: .milliseconds(200), detail: daemon.log) {
            peer.sentSamples("hr").count >= 30
        }
        // Prometheus metrics while it records: one device connected, the battery reading stored.
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
        } catch {
            Issue.record("metrics: \(error); daemon log: \(daemon.log)")
            return
        }
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let exposition = String(decoding: data, as: UTF8.self)
        #expect(exposition.contains("healthgate_devices_connected{driver=\"strap\"} 1"), "\(exposition)")
        #expect(exposition.contains("healthgate_outbox_records"), "\(exposition)")
        // The status socket lists the connected strap.
        let view = try #require(try await CLI.json(["status", "--state-dir", first, "--json"]) as? [String: Any])
        let drivers = try #require((view["daemon"] as? [String: Any])?["drivers"] as? [[String: Any]], "\(view)")
        #expect(drivers.first?["name"] as? String == "strap" && drivers.first?["state"] as? String == "running")
        #expect((drivers.first?["devices"] as? [String])?.count == 1, "\(drivers)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")

        let recorded = try #require(try await CLI.json(["workouts", "--state-dir", first, "--json"]) as? [[String: Any]])
        #expect(recorded.count == 1, "\(recorded) \(daemon.log)")
        let status = try #require(try await CLI.json(["status", "--state-dir", first, "--json"]) as? [String: Any])
        #expect(status["outbox"] as? Int == 0, "not forwarded at stop: \(status) \(daemon.log)")

        let pulled = try await CLI.run(["sync", "--state-dir", second, "--json"])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        let received = try #require(try await CLI.json(["workouts", "--state-dir", second, "--json"]) as? [[String: Any]])
        #expect(received.map { $0["id"] as? String } == recorded.map { $0["id"] as? String })
        #expect(received.map { $0["samples"] as? Int } == recorded.map { $0["samples"] as? Int })
        #expect((recorded.first?["samples"] as? Int ?? 0) >= 20)
    }

    /// The BLE controller gone for good while the daemon records (the peer's process ends, so
    /// its H4 link closes): the driver ends with the transport's error and the supervisor
    /// restarts it (state `restarting`), the workout recorded so far is stored and completed.
    /// Before, the recorder waited for ever and the driver stayed `running` with nothing to do.
    /// The restarted driver finds nothing listening and waits for the controller: `healthgate
    /// status` shows it `waiting` with the reason, and so does the systemd status line.
    @Test func aLostControllerEndsTheDriverForTheSupervisorToRestart() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        let folder = try temporaryFolder("daemon-ble-lost")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        guard case .tcp(let host, let port) = peer.h4 else { throw PeerError("peer without TCP transport") }
        let config = try writeBLEConfiguration(in: folder, driver: "strap", peer: peer)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config], environment: ["WATCHDOG_USEC": "400000"])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        func driver() async throws -> [String: Any]? {
            let view = try await CLI.json(["status", "--state-dir", folder, "--json"]) as? [String: Any]
            return ((view?["daemon"] as? [String: Any])?["drivers"] as? [[String: Any]])?.first
        }
        func driverState() async throws -> String? { try await driver()?["state"] as? String }
        try await eventually("the strap sends 20 readings", every: .milliseconds(200), detail: daemon.log) {
            peer.sentSamples("hr").count >= 20
        }
        #expect(try await driverState() == "running")
        peer.stop()
        // Restarting lasts the backoff's first delay (1 s): a loaded machine's status polls may
        // miss it, so the restart is read from the count the status keeps (and the log).
        var restarted: [String: Any]?
        #expect(try await cameTrue(every: .milliseconds(200)) {
            restarted = try await driver()
            return restarted?["state"] as? String == "restarting" || (restarted?["restarts"] as? Int ?? 0) >= 1
        }, "the driver was not restarted: \(restarted ?? [:]) \(daemon.log)")
        #expect(daemon.log.contains("driver stopped; restarting"), "\(daemon.log)")
        var waiting: [String: Any]?
        #expect(try await cameTrue(every: .milliseconds(200)) {
            waiting = try await driver()
            return waiting?["state"] as? String == "waiting"
        }, "the restarted driver is not waiting: \(waiting ?? [:]) \(daemon.log)")
        #expect(waiting?["detail"] as? String == "tcp:\(host):\(port): connect: Connection refused (ECONNREFUSED); waiting for the controller",
                "\(waiting ?? [:])")
        #expect(await daemon.notify.waitFor("STATUS=0/1 drivers running, 1 waiting") != nil, "\(daemon.log)")
        let text = try await CLI.run(["status", "--state-dir", folder])
        #expect(text.stdout.contains("driver strap (ble): waiting since ") && text.stdout.contains("; waiting for the controller"),
                "\(text.stdout)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        let recorded = try #require(try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(recorded.count == 1 && recorded.first?["in_progress"] as? Bool != true, "\(recorded)")
        #expect((recorded.first?["samples"] as? Int ?? 0) >= 10, "\(recorded)")
    }

    /// A glucose meter's records through the daemon's `ble` driver, across a restart: the first
    /// daemon stores the meter's 3 records with its cursor (the `ble` driver's checkpoint, as `ble
    /// download` stores it); the meter gains 2 records; a second daemon process on the same database
    /// asks the meter only for the records from 3 on (3 to check it), and stores exactly the 2 new.
    /// Before, a restarted daemon asked for every record again.
    @Test func aRestartedDaemonAsksAGlucoseMeterOnlyForTheRecordsAfterThoseStored() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        let meter = try #require(peer.peripherals["glucose"]).address
        let folder = try temporaryFolder("daemon-glucose")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = try writeBLEConfiguration(in: folder, driver: "meter", peer: peer, devices: [meter.text])
        func glucose(_ store: HealthStore) async throws -> (rows: Int, last: UInt16?) {
            // The ble driver's checkpoint for the meter: {"record": "hex", "sequence": N}.
            let checkpoint = try await store.checkpoint(CheckpointKey(driver: "ble", device: meter.text))
            let object = try checkpoint.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return (try await store.measurements(kind: .glucose).count, (object??["sequence"] as? Int).flatMap(UInt16.init(exactly:)))
        }
        func requests() async throws -> [String]? {
            ((try await peer.control("status")["peripherals"] as? [String: Any])?["glucose"] as? [String: Any])?["racp_requests"] as? [String]
        }
        for (run, expected) in [(1, 3), (2, 5)] {
            if run == 2 { try await peer.control("add-records glucose 2") }
            let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
            #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
            let store = try await HealthStore(path: folder + "/healthgate.sqlite")
            #expect(try await cameTrue { try await glucose(store).rows >= expected }, "run \(run): \(daemon.log)")
            daemon.signal(SIGTERM)
            #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
            let (rows, last) = try await glucose(store)
            #expect(rows == expected && last == UInt16(expected), "run \(run): \(rows) rows, last sequence \(String(describing: last))")
        }
        // Every record, then (restarted) those from the last one stored, 3, which comes again to
        // be checked (the meter was not reset); each new record once.
        #expect(try await requests() == ["0101", "0103010300"])
        let sent = peer.sentLog().filter { $0["characteristic"] as? String == "2A18" }.compactMap { $0["seq"] as? Int }
        #expect(sent == [1, 2, 3, 3, 4, 5])
    }

    /// Writes `folder`/healthgate.toml: the status socket in `folder` and one `ble` driver named
    /// `driver` on the peer's controller (over TCP), limited to `devices` when given; returns its path.
    func writeBLEConfiguration(in folder: String, driver: String, peer: BLEPeer, devices: [String]? = nil) throws -> String {
        guard case .tcp(let host, let port) = peer.h4 else { throw PeerError("peer without TCP transport") }
        let config = folder + "/healthgate.toml"
        try """
            [api]
            socket = "\(folder)/healthgate.sock"
            [drivers.\(driver)]
            type = "ble"
            hci = "tcp:\(host):\(port)"
            """.appending(devices.map { "\ndevices = [\($0.map { "\"\($0)\"" }.joined(separator: ", "))]" } ?? "")
            .write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    /// Two state folders logged in to one new account on `server` (through the CLI, as a user
    /// does): the daemon runs on the first, the second pulls what the first forwarded.
    func twoInstallsOfOneAccount(on server: ServerProcess, tag: String) async throws -> (first: String, second: String) {
        let first = try temporaryFolder(tag), second = try temporaryFolder(tag + "-2")
        let url = server.url.absoluteString, email = "\(tag)-\(UUID().uuidString.prefix(8))@example.org", password = "a long passphrase"
        let registered = try await CLI.run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: password)
        #expect(registered.status == 0, "\(registered.stderr)")
        for folder in [first, second] {
            let login = try await CLI.run(["login", "--server", url, "--email", email, "--password-stdin", "--state-dir", folder], stdin: password)
            #expect(login.status == 0, "\(login.stderr)")
        }
        return (first, second)
    }

    /// A FIT file dropped into the watch folder (written in two parts) is imported once it is
    /// closed, moved to `imported/`, and reaches a running server: a second install pulls it.
    @Test func fileDroppedIntoTheInboxReachesTheServer() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let (first, second) = try await twoInstallsOfOneAccount(on: server, tag: "daemon-inbox")
        defer { for f in [first, second] { try? FileManager.default.removeItem(atPath: f) } }
        let config = first + "/healthgate.toml"
        try """
            [api]
            socket = "\(first)/healthgate.sock"
            [forwarder]
            server = "\(server.url.absoluteString)"
            interval_s = 3600
            [drivers.inbox]
            type = "watch_folder"
            path = "\(first)/inbox"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: first, arguments: ["--config", config])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")

        // Written in two parts with a pause: nothing is imported until the file is closed.
        let fit = try Data(contentsOf: URL(fileURLWithPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"))
        let target = first + "/inbox/run.fit"
        let fd = open(target, O_CREAT | O_WRONLY, 0o644)
        try #require(fd >= 0)
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        handle.write(fit.prefix(fit.count / 2))
        try await Task.sleep(for: .seconds(3))  // longer than the settle time
        #expect((try await CLI.json(["workouts", "--state-dir", first, "--json"]) as? [[String: Any]])?.isEmpty == true)
        handle.write(fit.suffix(from: fit.count / 2))
        try handle.close()

        #expect(await cameTrue { FileManager.default.fileExists(atPath: first + "/inbox/imported/run.fit") }, "\(daemon.log)")
        let recorded = try #require(try await CLI.json(["workouts", "--state-dir", first, "--json"]) as? [[String: Any]])
        #expect(recorded.count == 1)
        // Forwarded because it was stored (the interval is an hour).
        #expect(try await cameTrue {
            (try await CLI.json(["status", "--state-dir", first, "--json"]) as? [String: Any])?["outbox"] as? Int == 0
        }, "\(daemon.log)")
        let view = try #require(try await CLI.json(["status", "--state-dir", first, "--json"]) as? [String: Any])
        let last = (view["daemon"] as? [String: Any])?["last_import"] as? [String: Any]
        #expect(last?["status"] as? String == "imported" && last?["driver"] as? String == "inbox", "\(view)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0)

        #expect(try await CLI.run(["sync", "--state-dir", second]).status == 0)
        let received = try #require(try await CLI.json(["workouts", "--state-dir", second, "--json"]) as? [[String: Any]])
        #expect(received.map { $0["id"] as? String } == recorded.map { $0["id"] as? String })
    }

    /// Stopped (SIGTERM) right after a large file landed, then started again on the embedded
    /// default (no configuration file): the file is imported exactly once.
    @Test func stoppedMidImportImportsOnceAfterRestart() async throws {
        let folder = try temporaryFolder("daemon-restart")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = PackagePaths.fixtures + "/fit/garmin-fenix2-multisport.fit"
        // What the file holds, imported directly into a database of its own.
        let direct = try temporaryFolder("daemon-direct")
        defer { try? FileManager.default.removeItem(atPath: direct) }
        #expect(try await CLI.run(["import", file, "--state-dir", direct]).status == 0)
        let expected = try #require(try await CLI.json(["workouts", "--state-dir", direct, "--json"]) as? [[String: Any]])

        let daemon = try DaemonProcess(folder: folder, arguments: [])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        try FileManager.default.copyItem(atPath: file, toPath: folder + "/inbox/multisport.fit")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")

        let again = try DaemonProcess(folder: folder, arguments: [])
        #expect(await again.notify.waitFor("READY=1") != nil, "\(again.log)")
        #expect(await cameTrue { FileManager.default.fileExists(atPath: folder + "/inbox/imported/multisport.fit") }, "\(again.log)")
        again.signal(SIGTERM)
        #expect(await again.waitForExit() == 0)
        let stored = try #require(try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(stored.map { $0["id"] as? String } == expected.map { $0["id"] as? String })
        // The ledger knows it: importing it again adds nothing.
        let repeatRun = try await CLI.run(["import", file, "--state-dir", folder, "--json"])
        #expect(repeatRun.stdout.contains("already_imported"), "\(repeatRun.stdout)")
    }

    /// A fake watch (a folder laid out like a Garmin's storage, announced in a test mountinfo
    /// file) is imported when it appears, read-only; files already imported are not imported
    /// again when it is plugged in again.
    @Test func mountedWatchIsImportedOnce() async throws {
        let folder = try temporaryFolder("daemon-mount")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let watch = folder + "/media/ann/GARMIN WATCH"
        let fm = FileManager.default
        try fm.createDirectory(atPath: watch + "/GARMIN/Activity", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: watch + "/GARMIN/Monitor", withIntermediateDirectories: true)
        try fm.copyItem(atPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit", toPath: watch + "/GARMIN/Activity/run.fit")
        try fm.copyItem(atPath: PackagePaths.fixtures + "/fit/fitsdk-MonitoringFile.fit", toPath: watch + "/GARMIN/Monitor/mon.fit")
        // The device is read-only to the daemon: nothing may change there.
        try fm.setAttributes([.posixPermissions: 0o555], ofItemAtPath: watch + "/GARMIN/Activity")
        defer { try? fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: watch + "/GARMIN/Activity") }
        let mountinfo = folder + "/mountinfo"
        let base = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        let plugged = base + "412 22 8:17 / \(folder)/media/ann/GARMIN\\040WATCH rw,nosuid shared:230 - vfat /dev/sdb1 rw\n"
        try base.write(toFile: mountinfo, atomically: true, encoding: .utf8)
        let config = folder + "/healthgate.toml"
        try """
            [drivers.watch]
            type = "mass_storage"
            roots = ["\(folder)/media"]
            mountinfo = "\(mountinfo)"
            poll_s = 0.2
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        try await Task.sleep(for: .milliseconds(500))
        #expect((try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])?.isEmpty == true)

        try plugged.write(toFile: mountinfo, atomically: true, encoding: .utf8)
        #expect(try await cameTrue(every: .milliseconds(200)) { (try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])?.count == 1 },
                "\(daemon.log)")
        #expect(await daemon.waitForLog("mon.fit"), "\(daemon.log)")
        let measurements = try #require(try await CLI.json(["measurements", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(!measurements.isEmpty)
        #expect(try fm.contentsOfDirectory(atPath: watch + "/GARMIN/Activity") == ["run.fit"])

        // While it stays mounted, a file written to it later (a data folder created meanwhile)
        // arrives through inotify, not at the next plug-in.
        try fm.createDirectory(atPath: watch + "/GARMIN/Sleep", withIntermediateDirectories: true)
        try fm.copyItem(atPath: PackagePaths.fixtures + "/fit/garmin-edge500-cycling.fit", toPath: watch + "/GARMIN/Sleep/later.fit")
        #expect(try await cameTrue(every: .milliseconds(200)) { (try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])?.count == 2 },
                "\(daemon.log)")

        // Unplugged and plugged in again: nothing new is stored.
        try base.write(toFile: mountinfo, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(600))
        try plugged.write(toFile: mountinfo, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(1000))
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0)
        #expect((try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])?.count == 2)
        let again = try #require(try await CLI.json(["measurements", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(again.count == measurements.count)
        #expect(daemon.log.components(separatedBy: "run.fit").count == 2, "imported twice? \(daemon.log)")
        #expect(daemon.log.components(separatedBy: "later.fit").count == 2, "imported twice? \(daemon.log)")
    }

    /// An exec driver whose program crashes after each run is restarted and its records arrive;
    /// its malformed line is reported and skipped. SIGHUP with a changed file removes it and
    /// adds a watch folder without a restart.
    @Test func execDriverAndReloadAddingAndRemovingDrivers() async throws {
        let folder = try temporaryFolder("daemon-exec")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let program = folder + "/bridge.sh"
        try """
            #!/bin/sh
            echo run >> "\(folder)/runs"
            echo '{"type":"measurement","kind":"weight","time":"2026-11-20T07:30:00Z","value":71.4,"device":"scale"}'
            echo '{"type":"measurement","kind":"weight","time":"2026-11-21T07:30:00Z","value":"heavy"}'
            echo '{"type":"habit","habit":"water","time":"2026-11-21T09:00:00Z","value":250,"unit":"ml"}'
            exit 3
            """.write(toFile: program, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: program)
        let config = folder + "/healthgate.toml"
        let socket = folder + "/healthgate.sock"
        try """
            [api]
            socket = "\(socket)"
            [drivers.bridge]
            type = "exec"
            command = ["\(program)"]
            restart_delay_s = 0.2
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        #expect(await cameTrue {
            ((try? String(contentsOfFile: folder + "/runs", encoding: .utf8))?.split(separator: "\n").count ?? 0) >= 2
        }, "not restarted: \(daemon.log)")
        #expect(await daemon.waitForLog("skipped line 2: value: must be a number"), "\(daemon.log)")
        #expect(daemon.log.contains("exited with status 3"))
        let measurements = try #require(try await CLI.json(["measurements", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(measurements.count == 1, "\(measurements)")  // the same reading each run: stored once
        let view = try #require(try await CLI.json(["status", "--state-dir", folder, "--json"]) as? [String: Any])
        let bridge = ((view["daemon"] as? [String: Any])?["drivers"] as? [[String: Any]])?.first
        // The supervisor starts the program again after the exec driver's own delay (0.2 s, not its
        // default 1 s), and counts each restart.
        #expect(bridge?["name"] as? String == "bridge" && (bridge?["restarts"] as? Int ?? 0) >= 1, "\(view)")
        #expect(daemon.log.contains("driver stopped; restarting") && daemon.log.contains("after_s=0.2"), "\(daemon.log)")

        try """
            [api]
            socket = "\(socket)"
            [drivers.inbox2]
            type = "watch_folder"
            path = "\(folder)/inbox2"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(await daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        #expect(daemon.log.contains("stopping driver driver=bridge") && daemon.log.contains("starting driver driver=inbox2"))
        let reloaded = try #require(try await CLI.json(["status", "--state-dir", folder, "--json"]) as? [String: Any])
        let names = ((reloaded["daemon"] as? [String: Any])?["drivers"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["inbox2"], "\(reloaded)")
        try FileManager.default.copyItem(atPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit", toPath: folder + "/inbox2/run.fit")
        #expect(await cameTrue { FileManager.default.fileExists(atPath: folder + "/inbox2/imported/run.fit") }, "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0)
    }
}
