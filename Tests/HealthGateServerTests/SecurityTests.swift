import Foundation
import HealthGateServer
import HealthModel
import WebSecurity
import SyncProtocol
import Testing
import TestSupport

/// Isolation between users, secrets at rest and in logs, restarts.
@Suite struct SecurityTests {
    @Test func usersWithTheSameRecordIdStaySeparate() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (ann, _) = try await APIClient(server).account("ann@example.org")
        let (bob, _) = try await APIClient(server).account("bob@example.org")

        // The same record id under both users: two unrelated records.
        let annRecord = Make.habit("shared", version: 1, time: "2026-03-02T10:00:00Z", note: "ann's")
        let bobRecord = Make.habit("shared", version: 5, time: "2026-03-02T10:00:00Z", value: 500, note: "bob's")
        #expect(annRecord.id == bobRecord.id)
        #expect(try await bob.uploadStatuses([bobRecord]) == [.accepted])
        // Bob's version 5 does not make Ann's version 1 a duplicate...
        #expect(try await ann.uploadStatuses([annRecord]) == [.accepted])
        // ...and Ann's version 9 does not overwrite Bob's.
        let annNewer = Make.habit("shared", version: 9, time: "2026-03-02T10:00:00Z", note: "ann's, edited")
        #expect(try await ann.uploadStatuses([annNewer]) == [.accepted])
        #expect(try await bob.uploadStatuses([bobRecord]) == [.duplicate])

        let annHistory = try await ann.allHistory()
        let bobHistory = try await bob.allHistory()
        #expect(annHistory.count == 1 && bobHistory.count == 1)
        #expect(try annHistory[0].record() == annNewer.data)
        #expect(try bobHistory[0].record() == bobRecord.data)
        // Cursors are global change numbers, but each user only ever sees their own records.
        #expect(try await bob.history(after: 0).records.map(\.version) == [5])

        #expect(try await ann.uploadStatuses([Make.workout("ann-run")]) == [.accepted])
        let bobSummary = try await bob.summaries("period=year").decode(SummaryResponse.self)
        #expect(bobSummary.buckets == [SummaryResponse.Bucket(start: "2026-01-01", habitEvents: 1, habits: [.init(habit: "hydration", events: 1, value: 500, unit: "ml")])])
        let bobDevices = try await bob.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(bobDevices.count == 1)
    }

    @Test func passwordsAndTokensNeverAppearInTheDatabaseOrTheLog() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--log-level", "trace"])
        let api = APIClient(server)
        let password = "Plain-Password-\(UUID().uuidString)"
        let wrongPassword = "Wrong-Password-\(UUID().uuidString)"
        let (client, login) = try await api.account("Secret.Keeper@example.org", password)
        let (second, secondLogin) = try await api.account("Secret.Keeper@example.org", password, device: "second")
        #expect(try await api.login("secret.keeper@example.org", wrongPassword).status == 401)
        #expect(try await client.uploadStatuses([Make.workout("w")]) == [.accepted])
        #expect(try await second.send(.GET, "/v1/records?after=0").status == 200)
        #expect(try await second.send(.DELETE, "/v1/sessions/current").status == 204)
        var wrong = client
        wrong.token = "Wrong-Token-\(UUID().uuidString)"
        #expect(try await wrong.send(.GET, "/v1/devices").status == 401)
        #expect(await server.stopped() == 0)

        let database = try await server.databaseBytes()
        let log = Data(server.log.utf8)
        #expect(!log.isEmpty && !database.isEmpty)
        for secret in [password, wrongPassword, login.token, secondLogin.token, wrong.token!] {
            #expect(database.range(of: Data(secret.utf8)) == nil, "a secret is in the database")
            #expect(log.range(of: Data(secret.utf8)) == nil, "a secret is in the log")
        }
        // An SQLite database is its owner's only.
        if server.store == .sqlite {
            let mode = try FileManager.default.attributesOfItem(atPath: scratch.dbPath)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        // What is kept instead: the token's SHA-256, and a bcrypt hash of the password.
        #expect(database.range(of: Data(SecretToken.hash(login.token).utf8)) != nil)
        #expect(database.range(of: Data("$2b$04$".utf8)) != nil)
    }

    @Test func aRestartKeepsEverything() async throws {
        let scratch = try Scratch()
        var server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, login) = try await APIClient(server).account("ann@example.org", device: "pi")
        let records = [Make.workout("w"), Make.sleep("s", start: "2026-03-01T22:00:00Z", hours: 8),
                       Make.habit("h", time: "2026-03-02T10:00:00Z"), Make.measurement("m", time: "2026-03-02T06:00:00Z")]
        #expect(try await api.uploadStatuses(records) == [.accepted, .accepted, .accepted, .accepted])
        #expect(try await api.send(.PUT, "/v1/devices/current/primary").status == 200)
        let history = try await api.allHistory()
        let summary = try await api.summaries("period=week").decode(SummaryResponse.self)
        #expect(await server.stopped(by: SIGINT) == 0)
        #expect(server.log.contains("stopped"))

        server = try await ServerProcess.start(databasePath: scratch.dbPath)
        var again = APIClient(server)
        again.token = login.token
        #expect(try await again.allHistory() == history)
        #expect(try await again.summaries("period=week").decode(SummaryResponse.self) == summary)
        let devices = try await again.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(devices.map(\.id) == [login.deviceId] && devices[0].primary)
        #expect(try await again.uploadStatuses(records) == [.duplicate, .duplicate, .duplicate, .duplicate])
        #expect(try await APIClient(server).login("ann@example.org", "long enough password").status == 201)
        #expect(try await APIClient(server).register("ann@example.org", "long enough password").status == 409)
        #expect(await server.stopped() == 0)
    }
}
