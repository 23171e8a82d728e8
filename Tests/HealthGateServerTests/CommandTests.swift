import AsyncHTTPClient
import Foundation
import SyncProtocol
import Testing
import TestSupport

/// The executable's options, and fault injection for client tests.
@Suite struct CommandTests {
    @Test func helpExplainsTheOptions() async throws {
        let help = try await Tool.run(ServerProcess.executable, ["--help"])
        #expect(help.status == 0)
        for option in ["--db", "--host", "--port", "--bcrypt-cost", "--log-level", "listening on", "--help-hidden"] {
            #expect(help.stdout.contains(option), "\(option)")
        }
        #expect(!help.stdout.contains("--fault-rate"))
        let hidden = try await Tool.run(ServerProcess.executable, ["--help-hidden"])
        for option in ["--fault-rate", "--fault-seed", "--fault-kinds", "--fault-stall"] {
            #expect(hidden.stdout.contains(option), "\(option)")
        }
        for bad in [["--port", "70000"], ["--bcrypt-cost", "3"], ["--fault-rate", "2"], ["--fault-kinds", "explode"]] {
            let result = try await Tool.run(ServerProcess.executable, bad)
            #expect(result.status != 0, "\(bad)")
            #expect(result.stdout.isEmpty)
        }
        let unusable = try await Tool.run(ServerProcess.executable, ["--db", "/proc/healthgate/server.sqlite", "--port", "0"])
        #expect(unusable.status != 0 && unusable.stderr.contains("cannot open the database"))
    }

    @Test func faultsUnavailableAndDropAfterStore() async throws {
        let scratch = try Scratch()
        let unavailable = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--fault-rate", "1", "--fault-kinds", "unavailable"])
        let (api, login) = try await APIClient(unavailable).account("ann@example.org")
        let reply = try await api.upload([Make.habit("h", time: "2026-03-02T10:00:00Z")])
        #expect(reply.status == 503)
        #expect(reply.headers.first(name: "Retry-After") == "1")
        #expect(try reply.error().code == "unavailable")
        #expect(try await api.history().records.isEmpty)  // only uploads fail
        #expect(await unavailable.stopped() == 0)

        // Stored, then the connection is closed without an answer.
        let drop = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--fault-rate", "1", "--fault-kinds", "drop"])
        var client = APIClient(drop)
        client.token = login.token
        await #expect(throws: (any Error).self) {
            try await client.upload([Make.habit("h", time: "2026-03-02T10:00:00Z")])
        }
        #expect(try await client.history().records.map(\.id) == [Make.id("h").description])
        #expect(drop.log.contains("fault injection: drop"))
        #expect(await drop.stopped() == 0)
    }

    /// The stall (10 s) is far longer than the client timeout (0.5 s), so a loaded machine still
    /// sees the timeout first.
    @Test func faultsStallPastTheClientTimeout() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--fault-rate", "1", "--fault-kinds", "stall", "--fault-stall", "10"])
        let (api, _) = try await APIClient(server).account("ann@example.org")
        let body = try SyncAPI.encoder().encode(UploadRequest(records: [Make.habit("h", time: "2026-03-02T10:00:00Z")]))
        await #expect(throws: HTTPClientError.self) {
            try await api.send(.POST, "/v1/records", body: body, timeout: .milliseconds(500))
        }
        #expect(try await api.history().records.isEmpty)
        #expect(await server.stopped() == 0)
    }

    @Test func faultsAreTheSameForTheSameSeed() async throws {
        func outcomes(seed: Int) async throws -> [Int] {
            let scratch = try Scratch()
            let server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--fault-rate", "0.5", "--fault-seed", "\(seed)",
                                                                "--fault-kinds", "unavailable"])
            let (api, _) = try await APIClient(server).account("ann@example.org")
            var statuses: [Int] = []
            for i in 0..<24 {
                statuses.append(try await api.upload([Make.habit("h\(i)", time: "2026-03-02T10:00:00Z")]).status)
            }
            #expect(await server.stopped() == 0)
            return statuses
        }
        let first = try await outcomes(seed: 7)
        #expect(Set(first) == [200, 503])
        #expect(try await outcomes(seed: 7) == first)
        #expect(try await outcomes(seed: 8) != first)
    }
}
