import Foundation
import DaemonProtocol
import HealthGateDaemon
import HealthModel
import HealthStore
import Testing
import TestSupport

/// Entries through the running daemon's socket: a real `healthgate daemon` process under
/// `TZ=Europe/Berlin`, real Unix-socket connections, the real SQLite file.
@Suite(.serialized) struct DaemonSocketTests {
    static let zone = "Europe/Berlin"

    /// A daemon with a status socket and no forwarder (the outbox keeps what was stored).
    final class Running {
        let folder: String
        let socket: String
        let daemon: DaemonProcess
        var database: String { folder + "/healthgate.sqlite" }

        init(_ tag: String) async throws {
            folder = try temporaryFolder(tag)
            socket = folder + "/healthgate.sock"
            let config = folder + "/healthgate.toml"
            try "[api]\nsocket = \"\(socket)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            daemon = try DaemonProcess(folder: folder, arguments: ["--config", config], environment: ["TZ": DaemonSocketTests.zone])
            _ = try #require(await daemon.notify.waitFor("READY=1"), "no READY: \(daemon.log)")
            #expect(await cameTrue { await StatusServer.query(path: socket) != nil }, "the socket does not answer: \(daemon.log)")
        }

        /// Sends `text` as it is and parses the answer line.
        func send(_ text: String) async throws -> [String: Any] {
            try await send(Array(text.utf8))
        }

        func send(_ bytes: [UInt8], closeOutput: Bool = false) async throws -> [String: Any] {
            try await DaemonSocketTests.send(bytes, to: socket, closeOutput: closeOutput)
        }

        /// Stops the daemon (exit status 0).
        func stop() async {
            daemon.signal(SIGTERM)
            #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// Sends `bytes` to the socket at `path` and parses the answer line (the error's message
    /// under "error" as given).
    static func send(_ bytes: [UInt8], to path: String, closeOutput: Bool = false) async throws -> [String: Any] {
        let answer = try #require(await StatusServer.exchange(bytes: bytes, path: path, closeOutput: closeOutput, timeout: .seconds(60)),
                                  "no answer")
        return try #require(try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any],
                            "\(String(decoding: answer, as: UTF8.self))")
    }

    /// The error message of an answer, or "".
    static func error(_ bytes: [UInt8], to path: String) async throws -> String {
        (try await send(bytes, to: path))["error"] as? String ?? ""
    }

    static func healthgate(_ arguments: [String]) async throws -> Tool.Result {
        try await Tool.run("/usr/bin/env", ["TZ=" + zone, CLI.executable] + arguments)
    }

    /// A habit event as compared: everything but the id.
    static func fields(_ event: HabitEvent) -> String {
        "\(event.habit) \(ISO8601.string(event.time)) \(event.value.map { "\($0)" } ?? "-") \(event.category ?? "-") \(event.unit ?? "-") "
            + "\(event.label ?? "-") \(event.note ?? "-") \(event.source.driver) v\(event.version)"
    }

    /// A drink and a vape logged through the socket are stored with their outbox rows, as
    /// `healthgate log` stores them (the same builder: the same fields but the id) and answered as
    /// `healthgate log --json` prints them; refused entries get the CLI's message and store nothing.
    @Test func entriesThroughTheSocketAreWhatTheCLIStores() async throws {
        let running = try await Running("daemon-log")
        let drink = #"{"request":"log","entry":{"kind":"drink","at":"2025-06-01T09:05"}}"# + "\n"
        let vape = #"{"request":"log","entry":{"kind":"vape","trigger":"stress","thoughts":"deadline","pod_finished":true,"at":"2025-06-01T10:00"}}"#
            + "\n"
        let byDaemon = [try await running.send(drink), try await running.send(vape)]
        let cliDB = running.folder + "/cli.sqlite"
        var byCLI: [[String: Any]] = []
        for arguments in [["drink", "--at", "2025-06-01T09:05"],
                          ["vape", "--trigger", "stress", "--thoughts", "deadline", "--pod-finished", "--at", "2025-06-01T10:00"]] {
            let result = try await Self.healthgate(["log"] + arguments + ["--json", "--db", cliDB])
            #expect(result.status == 0, "\(result.stderr)")
            byCLI.append(try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]))
        }
        for (answer, printed) in zip(byDaemon, byCLI) {
            let stored = try #require(answer["stored"] as? [[String: Any]], "\(answer)")
            #expect(stored.count == 1)
            var one = try #require(stored.first)
            var cli = printed
            #expect((one.removeValue(forKey: "id") as? String)?.count == 36)
            cli.removeValue(forKey: "id")
            #expect(NSDictionary(dictionary: one).isEqual(to: cli), "\(one) vs \(cli)")
        }
        let first = try #require((byDaemon[0]["stored"] as? [[String: Any]])?.first)
        #expect(first["what"] as? String == "water" && first["value"] as? Double == 118.3 && first["category"] as? String == "drink")
        #expect(first["time"] as? String == "2025-06-01T07:05:00Z" && first["local_time"] as? String == "2025-06-01 09:05")

        // Refused: the message `healthgate log` prints for the same entry, nothing stored.
        let refusals: [(entry: String, cli: [String])] = [
            (#"{"kind":"habit","name":"chess","value":"1"}"#, ["habit", "chess", "1"]),
            (#"{"kind":"water","value":"50l"}"#, ["water", "50l"]),
            (#"{"kind":"vape","trigger":"rain"}"#, ["vape", "--trigger", "rain"]),
            (#"{"kind":"glass","at":"2999-01-01T10:00"}"#, ["glass", "--at", "2999-01-01T10:00"]),
        ]
        for refusal in refusals {
            let answer = try await running.send(#"{"request":"log","entry":"# + refusal.entry + "}\n")
            let message = try #require(answer["error"] as? String, "\(answer)")
            let cli = try await Self.healthgate(["log"] + refusal.cli + ["--db", running.folder + "/refused.sqlite"])
            #expect(cli.status == 1)
            #expect(cli.stderr == "healthgate: \(message)\n", "\(refusal.entry): \(message) vs \(cli.stderr)")
        }

        // `healthgate status` still asks the daemon.
        let status = try await CLI.run(["status", "--db", running.database, "--socket", running.socket, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let statusJSON = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((statusJSON["daemon"] as? [String: Any])?["pid"] as? Int == Int(running.daemon.process.processIdentifier))
        #expect(statusJSON["outbox"] as? Int == 2)
        await running.stop()

        let daemonStore = try await HealthStore(path: running.database)
        let cliStore = try await HealthStore(path: cliDB)
        let stored = try await daemonStore.habitEvents()
        #expect(stored.map(\.id.description) == byDaemon.map { ($0["stored"] as? [[String: Any]])?.first?["id"] as? String ?? "" })
        #expect(stored.map(Self.fields) == (try await cliStore.habitEvents()).map(Self.fields))
        #expect(try await daemonStore.outboxDepth() == 2)
        #expect(try await daemonStore.tableCounts()["habit_events"] == 2)
        #expect(running.daemon.log.contains("entry stored"), "\(running.daemon.log)")
    }

    /// Bad requests, an oversized line, garbage bytes, silent and trickling clients and more
    /// connections than the bound: each gets an error answer, nothing is stored, and the daemon
    /// answers status afterwards.
    @Test func hostileClientsGetErrorsAndTheDaemonGoesOn() async throws {
        let running = try await Running("daemon-hostile")
        let cases: [(String, String)] = [
            (#"{"request":"log"}"#, "a log request needs an 'entry'"),
            (#"{"request":"dance"}"#, "unknown request 'dance': status or log"),
            (#"{"request":7}"#, "'request' must be a string"),
            (#"{"entry":{}}"#, "'request' is missing"),
            (#"[1,2,3]"#, "the request must be a JSON object"),
            (#"{"request":"log","entry":"water"}"#, "'entry' must be an object"),
            (#"{"request":"log","entry":{"value":"250ml"}}"#, "entry.kind is missing: one of drink, glass"),
            (#"{"request":"log","entry":{"kind":"beer"}}"#, "entry.kind 'beer' is not one of drink"),
            (#"{"request":"log","entry":{"kind":"water","value":250}}"#, "entry.value must be a string"),
            (#"{"request":"log","entry":{"kind":"vape","pod_finished":"yes"}}"#, "entry.pod_finished must be true or false"),
            (#"{"request":"log","entry":{"kind":"meal","name":"soup","kcal":"300"}}"#, "entry.kcal must be a number"),
            (#"{"request":"log","entry":{"kind":"water","volume":"250ml"}}"#, "entry has no key 'volume'"),
            (#"{"request":"status","extra":1}"#, "a status request has no key 'extra'"),
            (#"{"request":"log","entry":{"kind":"water","value":"250ml"}"#, "the request is not JSON"),
            ("", "the request is not JSON"),
        ]
        for (line, message) in cases {
            let answer = try await running.send(line + "\n")
            #expect((answer["error"] as? String)?.contains(message) == true, "\(line): \(answer)")
        }

        // Longer than 64 KiB before a newline: refused without reading on.
        var long = Array(#"{"request":"log","entry":{"kind":"habit","name":""#.utf8)
        long += [UInt8](repeating: UInt8(ascii: "a"), count: 100_000)
        let oversized = try await running.send(long + Array("\"}}\n".utf8))
        #expect((oversized["error"] as? String)?.contains("longer than 65536 bytes") == true, "\(oversized)")

        // Garbage bytes (no newline among them but the last).
        var generator = SeededGenerator(seed: 13)
        for _ in 0..<5 {
            let garbage = generator.bytes(2000).map { $0 == 0x0A ? 0x20 : $0 } + [0x0A]
            let answer = try await running.send(garbage)
            #expect(answer["error"] is String, "\(answer)")
        }

        // A client that sends nothing, and one that stops half-way: cut off with an error, while
        // others are served.
        let socket = running.socket
        async let silent = Self.error([], to: socket)
        async let trickle = Self.error(Array(#"{"request":"#.utf8), to: socket)
        let served = try await running.send(#"{"request":"status"}"# + "\n")
        #expect(served["pid"] as? Int == Int(running.daemon.process.processIdentifier), "\(served)")
        for answer in [try await silent, try await trickle] {
            #expect(answer.hasPrefix("no request within 5 s: send one JSON line"), "\(answer)")
        }

        // More connections than the bound: the ones over it are told so at once.
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<(SocketProtocol.maxConnections + 16) {
                group.addTask { try await Self.error([], to: socket) }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        let busy = answers.filter { $0.hasPrefix("busy: \(SocketProtocol.maxConnections) connections open") }.count
        let timedOut = answers.filter { $0.hasPrefix("no request within") }.count
        #expect(busy >= 1 && busy + timedOut == answers.count, "\(answers)")

        // A client that closes its side after the request without a newline is answered; one
        // that closes it without a request is told what to send.
        let status = try await running.send(Array(#"{"request":"status"}"#.utf8), closeOutput: true)
        #expect(status["pid"] as? Int == Int(running.daemon.process.processIdentifier), "\(status)")
        let nothing = try await running.send([], closeOutput: true)
        #expect((nothing["error"] as? String)?.hasPrefix("no request: send one JSON line") == true, "\(nothing)")
        #expect(await StatusServer.query(path: running.socket)?.pid == running.daemon.process.processIdentifier)
        #expect(running.daemon.process.isRunning)
        await running.stop()
        let store = try await HealthStore(path: running.database)
        #expect(try await store.habitEvents().isEmpty)
        #expect(try await store.outboxDepth() == 0)
    }

    /// The socket stays the daemon's user's and group's.
    @Test func socketIsOwnerAndGroupOnly() async throws {
        let running = try await Running("daemon-mode")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: running.socket)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o660, "\(String(mode, radix: 8))")
        await running.stop()
    }
}

/// The pure framing and parsing of the socket's requests.
@Suite struct SocketProtocolTests {
    @Test func framing() {
        var reader = RequestLineReader(limit: 10)
        #expect(reader.feed(Array("abc".utf8)) == nil)
        #expect(reader.feed(Array("de\r\nxyz".utf8)) == .line(Array("abcde".utf8)))
        var exact = RequestLineReader(limit: 4)
        #expect(exact.feed(Array("abcd\n".utf8)) == .line(Array("abcd".utf8)))
        var over = RequestLineReader(limit: 4)
        #expect(over.feed(Array("abcde\n".utf8)) == .tooLong)
        var creeping = RequestLineReader(limit: 4)
        #expect(creeping.feed(Array("ab".utf8)) == nil)
        #expect(creeping.feed(Array("cde".utf8)) == .tooLong)
        var unterminated = RequestLineReader(limit: 10)
        _ = unterminated.feed(Array("{}".utf8))
        #expect(unterminated.end() == .line(Array("{}".utf8)))
        #expect(RequestLineReader().end() == .empty)
    }

    @Test func parsing() throws {
        #expect(SocketProtocol.parse(Array(#"{"request":"status"}"#.utf8)) == .success(.status))
        let parsed = SocketProtocol.parse(Array(#"{"request":"log","entry":{"kind":"vape","trigger":"stress","pod_finished":true,"kcal":null}}"#.utf8))
        guard case .success(.log(let entry)) = parsed else { Issue.record("\(parsed)"); return }
        #expect(entry.kind == .vape && entry.trigger == "stress" && entry.podFinished == true && entry.kcal == nil)
        // What a client sends parses back to the same request.
        let line = try SocketProtocol.line(.log(entry))
        #expect(line.last == 0x0A)
        #expect(SocketProtocol.parse(Array(line.dropLast())) == .success(.log(entry)))
    }
}
