import Foundation
import HealthModel
import SyncProtocol
import Testing
import TestSupport
@testable import HealthGateServer

/// `healthgate-server migrate --from sqlite:FILE --to postgres://...` killed part-way and run
/// again, and refusing what it cannot do.
@Suite struct ServerMoveTests {
    /// An SQLite server database of two accounts and `count` records each (every tenth deleted).
    func sqliteServer(_ path: String, count: Int) async throws {
        let store = try SQLiteServerStore(path: path)
        for email in ["ann@example.org", "bob@example.org"] {
            let account = try await store.createAccount(email: email, passwordHash: "$2b$04$hash", now: Date())
            let device = try await store.createDevice(userId: account.id, name: "box", tokenHash: "token-\(email)", now: Date())
            for batch in stride(from: 0, to: count, by: 1000) {
                let records = (batch..<min(batch + 1000, count)).map { PostgresStoreTests.record($0) }
                _ = try await store.upsert(records, userId: account.id, deviceId: device.id, now: Date())
            }
            for n in stride(from: 0, to: count, by: 10) {
                _ = try await store.deleteRecord(id: PostgresStoreTests.record(n).id, userId: account.id, deviceId: device.id, now: Date())
            }
        }
    }

    @Test func aMoveKilledPartWayFinishesWhenRunAgain() async throws {
        let folder = try temporaryFolder("move-kill")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/server.sqlite"
        try await sqliteServer(path, count: 15_000)
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()

        // Killed (SIGKILL) once the first batches of records are in.
        let killed = try await onOwnThread { () throws -> Bool in
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
            process.arguments = ["migrate", "--from", "sqlite:" + path, "--to", cluster.url(database)]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            var seen = ""
            while process.isRunning {
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { break }
                seen += String(decoding: data, as: UTF8.self)
                if seen.contains("records: 4000 of") {
                    kill(process.processIdentifier, SIGKILL)
                    break
                }
            }
            process.waitUntilExit()
            return process.terminationReason == .uncaughtSignal
        }
        #expect(killed, "the move was killed part-way")
        let partial = Int(try await cluster.psql(database, "SELECT count(*) FROM records")) ?? -1
        #expect(partial >= 4000 && partial < 30_000, "\(partial) records copied before the kill")

        let result = try await Tool.run(ServerProcess.executable, ["migrate", "--from", "sqlite:" + path, "--to", cluster.url(database),
                                                                   "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["records"] as? Int == 30_000 && report["tombstones"] as? Int == 3000)
        let written = report["written"] as? Int ?? 0
        #expect(written > 0 && written <= 30_000 - partial + 4, "only what was missing is written: \(written)")
        #expect(try await cluster.psql(database, "SELECT count(*), count(body) FROM records") == "30000|27000")
        // Each account's counter came over: the next change continues the numbering.
        let counters = try await cluster.psql(database, "SELECT change_seq FROM users ORDER BY email")
        #expect(counters == "16500\n16500")
    }

    @Test func aMoveNamesWhatItCannotDo() async throws {
        let folder = try temporaryFolder("move-refused")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let missing = try await Tool.run(ServerProcess.executable, ["migrate", "--from", "sqlite:\(folder)/none.sqlite", "--to",
                                                                    try await PostgresCluster.shared().url("postgres")])
        #expect(missing.status != 0 && missing.stderr.contains("none.sqlite: no such file"), "\(missing.stderr)")
        let backwards = try await Tool.run(ServerProcess.executable, ["migrate", "--from", "postgres://x@localhost/db", "--to",
                                                                      "sqlite:\(folder)/a.sqlite"])
        #expect(backwards.status != 0 && backwards.stderr.contains("--from must be an SQLite database"), "\(backwards.stderr)")
        let half = try await Tool.run(ServerProcess.executable, ["migrate", "--from", "sqlite:\(folder)/a.sqlite"])
        #expect(half.status != 0 && half.stderr.contains("--from and --to go together"))
        let password = try await Tool.run(ServerProcess.executable, ["migrate", "--database", "postgres://u:s3cret@127.0.0.1:1/db?bad=1"])
        #expect(password.status != 0 && password.stderr.contains("unknown option 'bad'") && !password.stderr.contains("s3cret"),
                "\(password.stderr)")
    }
}
