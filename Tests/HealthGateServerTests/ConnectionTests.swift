import Foundation
import HealthGateServer
import Testing
import TestSupport

/// The server's connections under hostile or heavy load: slow clients, too many connections,
/// the open-file limit, idle connections. Real server processes, real sockets, byte by byte.
@Suite struct ConnectionTests {
    /// A body (or a head) sent a byte at a time, each byte well within the idle timeout, used to
    /// hold its connection for as long as the client liked. The request timeout cuts it off.
    @Test func slowRequestsAreCutOffAtTheRequestTimeout() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--request-timeout", "2"])
        let port = server.url.port!
        let slowBody = try await onOwnThread {
            let connection = try RawConnection(port: port)
            guard connection.send("POST /v1/accounts HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
            else { return -1 }
            return connection.trickle(200, every: 200)
        }
        #expect(slowBody >= 0 && slowBody < 200, "the server waited for a whole body sent a byte every 0.2 s")
        let slowHead = try await onOwnThread {
            let connection = try RawConnection(port: port, from: "127.0.0.2")
            guard connection.send("GET /v1/health HTTP/1.1\r\nHost: test\r\nX-Slow: ") else { return -1 }
            return connection.trickle(200, every: 200)
        }
        #expect(slowHead >= 0 && slowHead < 200, "the server waited for a whole head sent a byte every 0.2 s")
        #expect(server.log.contains("its request did not arrive whole within 2.0 seconds (--request-timeout)"))

        // The timeout runs only while a request comes in: a kept connection may wait between
        // requests (up to the idle timeout), and a quick request on it is answered.
        let answers = try await onOwnThread {
            let connection = try RawConnection(port: port, from: "127.0.0.3")
            let first = connection.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
            Thread.sleep(forTimeInterval: 3)
            let second = connection.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
            return [first.status, second.status]
        }
        #expect(answers == [200, 200])
    }

    /// Past a cap a connection is answered 503 with Retry-After and closed; the log says why.
    @Test func connectionsOverTheCapsAreAnswered503AndClosed() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--max-connections", "3", "--max-connections-per-address", "2"])
        let port = server.url.port!
        let held = try await onOwnThread { try (0..<3).map { _ in try RawConnection(port: port) } }
        // Which of the three is refused depends on which event loop sets it up first.
        let answers = try await onOwnThread { held.map { $0.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n") } }
        #expect(answers.map(\.status).sorted() == [200, 200, 503])
        let refused = try #require(answers.firstIndex { $0.status == 503 })
        #expect(answers[refused].head.contains("Retry-After: 5\r\n"))
        #expect(answers[refused].head.contains("Connection: close\r\n"))
        #expect(answers[refused].body.contains(#""code":"unavailable""#))
        #expect(try await onOwnThread { held[refused].read(timeout: 10_000) } == .closed)

        // Another address still gets in (the third connection), then the total cap is reached.
        let other = try await onOwnThread { try RawConnection(port: port, from: "127.0.0.2") }
        #expect(try await onOwnThread { other.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n").status } == 200)
        let third = try await onOwnThread {
            try RawConnection(port: port, from: "127.0.0.3").request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
        }
        #expect(third.status == 503)
        #expect(server.log.contains("refused a connection from 127.0.0.1 with 503: 2 connections open from this address, the most allowed (--max-connections-per-address)"))
        #expect(server.log.contains("refused a connection from 127.0.0.3 with 503: 3 connections open, the most allowed (--max-connections)"))

        // Once a connection closes, its place is free again.
        held[(refused + 1) % 3].close()
        let answered1 = try await onOwnThread { Self.answeredOK(port: port, from: "127.0.0.1") }
        #expect(answered1 == nil, "the last try got \(answered1 ?? ""); \(Self.describe(server))")
    }

    /// At the open-file limit the server used to accept nothing more (accept failed with EMFILE),
    /// new clients got a TCP connection and never an answer, nothing was logged, and a network
    /// thread spun a core retrying. Now the total cap keeps it below the limit: past it a client
    /// gets a 503 or a clean close, the log says why, and the waiting costs no CPU.
    @Test func atTheOpenFileLimitClientsGetAnAnswerAndNothingSpins() async throws {
        // No new options here, so that the same test runs against a server without the caps.
        let server = try await ServerProcess.start(launcher: ["/usr/bin/env", "prlimit", "--nofile=256:256"])
        let port = server.url.port!
        // 300 connections (more than the 256 descriptors), 30 from each of 10 addresses (each
        // under the per-address cap), all left open.
        let held = try await onOwnThread {
            try (0..<300).map { i in try RawConnection(port: port, from: "127.0.0.\(1 + i % 10)") }
        }
        let ticks = try await onOwnThread { () -> Int in
            Thread.sleep(forTimeInterval: 1)
            let before = try ProcessStats.cpuTicks(server.process.processIdentifier)
            Thread.sleep(forTimeInterval: 5)
            return try ProcessStats.cpuTicks(server.process.processIdentifier) - before
        }
        // A core spinning for 5 s is about 500 ticks (less on a busy machine); an idle server, none.
        #expect(ticks < 30, "the server used \(ticks) ticks of CPU in 5 s while its connections waited")
        let answer = try await onOwnThread {
            try RawConnection(port: port, from: "127.0.0.11").request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
        }
        #expect(answer.status == 503 || answer.ending == .closed, "a new client got \(answer)")
        #expect(server.log.contains("the most allowed (--max-connections)"))

        for connection in held { connection.close() }
        let answered12 = try await onOwnThread { Self.answeredOK(port: port, from: "127.0.0.12") }
        #expect(answered12 == nil, "the last try got \(answered12 ?? ""); \(Self.describe(server))")
    }

    /// The caps are fitted under the open-file limit at start, but the limit can be lowered under
    /// a running server. Reaching it would stop the process: libdispatch, under Swift's
    /// concurrency pool, opens a file for each worker thread every second and traps when it
    /// cannot (this test, run under load, once ended the server with SIGILL). So admission
    /// follows the limit in force now: with it lowered to 128, the server refuses connections
    /// past that budget with 503, never runs out of descriptors, does not spin, stays up and
    /// accepts again once connections close.
    /// A PostgreSQL pool's connections come out of the clients' share, not the reserve: with
    /// 128 descriptors and a pool of 20, 32 are left for connections and refusals.
    @Test func thePoolsConnectionsAreKeptOutOfTheClientsShare() {
        let plain = OpenFileLimit.budget(openFileLimit: 128), pooled = OpenFileLimit.budget(openFileLimit: 128, storeDescriptors: 20)
        #expect(plain.connections + plain.refusing == 128 - OpenFileLimit.reserved())
        #expect(pooled.connections + pooled.refusing == 128 - OpenFileLimit.reserved() - 20)
        var counts = ConnectionCounts(limits: ConnectionLimits(openFileLimit: 10_000, storeDescriptors: 20))
        for _ in 0..<pooled.connections { #expect(counts.admit(address: "a", openFileLimit: 128) == .admitted) }
        #expect(counts.admit(address: "b", openFileLimit: 128) == .refused(.openFiles(pooled.connections)))
    }

    @Test func aLimitLoweredUnderTheServerIsNeverReached() async throws {
        let server = try await ServerProcess.start()
        let port = server.url.port!
        let pid = server.process.processIdentifier
        let lowered = try await Tool.run("/usr/bin/env", ["prlimit", "--pid", String(pid), "--nofile=128:128"])
        #expect(lowered.status == 0, "\(lowered.stderr)")
        // The PostgreSQL pass's store holds up to its pool's connections besides the reserve.
        let budget = OpenFileLimit.budget(openFileLimit: 128, storeDescriptors: TestStore.current == .postgres ? 20 : 0)
        let held = try await onOwnThread {
            try (0..<200).map { i in try RawConnection(port: port, from: "127.0.0.\(1 + i % 4)") }
        }
        // An admitted connection waits for its request; the others were answered 503 or closed.
        let (admitted, measured) = try await onOwnThread { () -> (Int, Int?) in
            let admitted = held.filter { $0.read(timeout: 50) == .timedOut }.count
            guard let before = try? ProcessStats.cpuTicks(pid) else { return (admitted, nil) }
            Thread.sleep(forTimeInterval: 5)
            return (admitted, (try? ProcessStats.cpuTicks(pid)).map { $0 - before })
        }
        // The server must still be there: if it is not, say how it ended and what it logged.
        let ticks = try #require(measured, "\(Self.describe(server))")
        #expect(ticks < 30, "the server used \(ticks) ticks of CPU in 5 s with its open-file budget taken")
        #expect(admitted >= 1 && admitted <= budget.connections, "\(admitted) of 200 admitted, room for \(budget.connections)")
        #expect(server.log.contains("leaves room for"), "\(Self.describe(server))")
        #expect(!server.log.contains("cannot accept connections"), "\(Self.describe(server))")
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        #expect(fds < 128, "the server has \(fds) descriptors open under a limit of 128")

        for connection in held { connection.close() }
        let answered5 = try await onOwnThread { Self.answeredOK(port: port, from: "127.0.0.5") }
        #expect(answered5 == nil, "the last try got \(answered5 ?? ""); \(Self.describe(server))")
    }

    /// The daemon syncs every 60 s by default. With the server's idle timeout at 60 s too, a
    /// connection kept for the next sync was closed just as the client sent on it. An idle
    /// connection now outlives a sync interval; `--idle-timeout` sets it.
    @Test func aConnectionIdleForASyncIntervalIsStillOpen() async throws {
        let server = try await ServerProcess.start()
        let port = server.url.port!
        let statuses = try await onOwnThread {
            let connection = try RawConnection(port: port)
            let first = connection.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
            Thread.sleep(forTimeInterval: 65)
            let second = connection.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
            return [first.status, second.status]
        }
        #expect(statuses == [200, 200])

        let short = try await ServerProcess.start(extraArguments: ["--idle-timeout", "1"])
        let (status, ending) = try await onOwnThread {
            let connection = try RawConnection(port: short.url.port!)
            let status = connection.request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n").status
            return (status, connection.read(timeout: 30_000))
        }
        #expect(status == 200 && ending == .closed)
    }

    @Test func theOptionsAreDocumentedAndChecked() async throws {
        let help = try await Tool.run(ServerProcess.executable, ["--help"])
        for option in ["--max-connections", "--max-connections-per-address", "--request-timeout", "--idle-timeout"] {
            #expect(help.stdout.contains(option), "\(option)")
        }
        for bad in [["--max-connections", "0"], ["--max-connections-per-address", "0"], ["--request-timeout", "0"],
                    ["--request-timeout", "nan"], ["--idle-timeout", "-1"]] {
            let result = try await Tool.run(ServerProcess.executable, bad)
            #expect(result.status != 0, "\(bad)")
            #expect(result.stderr.contains(bad[0]), "\(bad): \(result.stderr)")
        }
        let scratch = try Scratch()
        let tooMany = try await Tool.run("/usr/bin/env", ["prlimit", "--nofile=256:256", ServerProcess.executable, "--db", scratch.dbPath,
                                                                "--port", "0", "--max-connections", "1000"])
        #expect(tooMany.status != 0)
        #expect(tooMany.stderr.contains("--max-connections 1000 does not fit under the open-file limit (256): at most 166"))
    }

    /// Whether the server answers a health check from `source` with 200, tried every half second
    /// within the tests' patience (a server resting after failed accepts, on a loaded machine, may
    /// take longer than any fixed count of tries); `nil` if it did, else what the last try got.
    static func answeredOK(port: Int, from source: String) -> String? {
        let deadline = Date().addingTimeInterval(Patience.seconds)
        var last = "no try"
        while Date() < deadline {
            do {
                let answer = try RawConnection(port: port, from: source).request("GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
                if answer.status == 200 { return nil }
                last = "\(answer)"
            } catch {
                last = "\(error)"
            }
            Thread.sleep(forTimeInterval: 0.5)
        }
        return last
    }

    /// For a failure message: the server's state, open descriptors and log end.
    static func describe(_ server: ServerProcess) -> String {
        let pid = server.process.processIdentifier
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count).map(String.init) ?? "?"
        let state = server.process.isRunning ? "running, \(fds) descriptors open" : "ended (\(server.process.terminationStatus))"
        return "the server is \(state); its log ends: \(server.log.suffix(3000))"
    }
}

/// The pure parts: admission counts, log windows, the descriptor budget.
@Suite struct ConnectionLimitTests {
    @Test func admissionCountsPerAddressAndInTotal() {
        var limits = ConnectionLimits(openFileLimit: 1000)
        limits.maxConnections = 3
        limits.maxConnectionsPerAddress = 2
        limits.maxRefusing = 1
        var counts = ConnectionCounts(limits: limits)
        #expect(counts.admit(address: "a") == .admitted)
        #expect(counts.admit(address: "a") == .admitted)
        #expect(counts.admit(address: "a") == .refused(.perAddress))
        // One refusal in progress is the most: the next is closed without an answer.
        #expect(counts.admit(address: "a") == .dropped(.perAddress))
        counts.release(.refused(.perAddress), address: "a")
        #expect(counts.admit(address: "b") == .admitted)
        #expect(counts.admit(address: "c") == .refused(.total))
        counts.release(.refused(.total), address: "c")
        counts.release(.admitted, address: "a")
        #expect(counts.open == 2 && counts.open(from: "a") == 1 && counts.refusing == 0)
        #expect(counts.admit(address: "c") == .admitted)
    }

    @Test func aLoweredOpenFileLimitBoundsTheCaps() {
        var counts = ConnectionCounts(limits: ConnectionLimits(openFileLimit: 10_000))
        let lowered = OpenFileLimit.budget(openFileLimit: 128)
        for i in 0..<lowered.connections {
            #expect(counts.admit(address: "a\(i)", openFileLimit: 128) == .admitted)
        }
        #expect(counts.admit(address: "b", openFileLimit: 128) == .refused(.openFiles(lowered.connections)))
        for _ in 1..<lowered.refusing {
            #expect(counts.admit(address: "b", openFileLimit: 128) == .refused(.openFiles(lowered.connections)))
        }
        // Refusals in progress are bounded by the lowered budget too.
        #expect(counts.admit(address: "b", openFileLimit: 128) == .dropped(.openFiles(lowered.connections)))
        // The limit raised again: the configured caps are back.
        #expect(counts.admit(address: "b", openFileLimit: 10_000) == .admitted)
    }

    @Test func aLogWindowLetsOneLineThroughPerInterval() {
        var window = LogWindow(interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(window.admit(now: start) == 0)
        #expect(window.admit(now: start + .seconds(1)) == nil)
        #expect(window.admit(now: start + .seconds(9)) == nil)
        #expect(window.admit(now: start + .seconds(10)) == 2)
        #expect(window.admit(now: start + .seconds(25)) == 0)
    }

    @Test func theCapsFitUnderTheOpenFileLimit() {
        for limit in [64, 256, 1024, 20_000, 1_048_576] {
            let budget = OpenFileLimit.budget(openFileLimit: limit)
            #expect(budget.connections >= 1 && budget.refusing >= 1)
            if limit > 200 {
                #expect(budget.connections + budget.refusing + OpenFileLimit.reserved() == limit)
            }
        }
        #expect(OpenFileLimit.current() >= 1)
    }
}
