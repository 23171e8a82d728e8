import Foundation
import HealthModel
import HealthStore
import HealthSync
import SyncProtocol
import Testing
import TestSupport

/// A tracking server moved from its SQLite file to PostgreSQL (`healthgate-server migrate --from
/// --to`) under two installs that keep syncing: the same tokens work afterwards, and the cursors
/// too (nothing pulled twice).
@Suite(.serialized) struct ServerMoveSyncTests {
    func migrate(_ arguments: [String]) async throws -> (status: Int32, report: [String: Any], stderr: String) {
        let result = try await Tool.run(ServerProcess.executable, ["migrate"] + arguments + ["--json"])
        let report = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, report, result.stderr)
    }

    @Test func devicesKeepSyncingThroughAMoveWithoutLoggingInOrPullingTwice() async throws {
        let folder = try temporaryFolder("server-move")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let port = try unusedPort()
        let sqlitePath = folder + "/server.sqlite"
        var server = try await ServerProcess.start(databasePath: sqlitePath, port: port, store: .sqlite)

        // Two installs of one account: one uploads (with a deletion: a tombstone), the other pulls.
        let a = try await Install()
        try await a.importFixtures()
        let account = try await Account.create(on: server)
        let second = try await account.login(on: server)
        let client = try SyncClient(configuration: .init(server: server.url))
        defer { Task { await client.shutdown() } }
        #expect(try await fastForwarder(a, client, token: account.token, maxRecords: 4).drain().remaining == 0)
        let gone = try #require(try await a.store.habitEvents().first)
        _ = try await a.store.delete(id: gone.id.description)
        #expect(try await fastForwarder(a, client, token: account.token).drain().accepted == 1)
        let b = try await Install()
        let before = try await fastForwarder(b, client, token: second.token).pull()
        #expect(before.received > 10)
        #expect(await server.stopped() == 0)

        // The move, twice: the second run finds everything there.
        let target = try await onOwnThread { try ServerProcess.postgresDatabase(for: folder + "/moved") }
        let moved = try await migrate(["--from", "sqlite:" + sqlitePath, "--to", target])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.report["users"] as? Int == 1 && moved.report["devices"] as? Int == 2)
        #expect(moved.report["tombstones"] as? Int == 1 && (moved.report["records"] as? Int ?? 0) > 10)
        #expect(moved.stderr.contains("records:") && moved.stderr.contains("checking records"), "progress is shown")
        let again = try await migrate(["--from", "sqlite:" + sqlitePath, "--to", target])
        #expect(again.status == 0 && again.report["written"] as? Int == 0, "\(again.report) \(again.stderr)")
        #expect(again.report["records_checksum"] as? String == moved.report["records_checksum"] as? String)

        // The server on PostgreSQL, at the same address: the same tokens and cursors work.
        server = try await ServerProcess.start(databasePath: folder + "/moved", port: port, store: .postgres)
        let drink = HabitEvent(id: RecordID.derive("habit", "server-move", "1"), habit: "water",
                               time: Date(timeIntervalSince1970: 1_763_950_000), value: 250, unit: "ml", source: Source(driver: "manual"))
        try await a.store.write([.habit(drink)])
        let sent = try await fastForwarder(a, client, token: account.token).drain()
        #expect(sent.accepted == 1 && sent.remaining == 0, "\(sent)")
        let after = try await fastForwarder(b, client, token: second.token).pull()
        #expect(after.received == 1 && after.stored == 1, "only the new record is pulled: \(after)")
        #expect(try await b.store.habitEvents().contains { $0.id == drink.id })
        #expect(try await !b.store.habitEvents().contains { $0.id == gone.id }, "the deletion moved too")
    }
}
