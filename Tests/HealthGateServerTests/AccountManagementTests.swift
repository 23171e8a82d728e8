import Foundation
import HealthModel
import SyncProtocol
import Testing
import TestSupport

/// Revoking devices, token expiry, password changes, account deletion, email normalisation and
/// password hash costs, against a real server process and its database (SQLite or PostgreSQL).
@Suite struct AccountManagementTests {
    @Test func anyDeviceRevokesAnotherByItsId() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        let (laptop, laptopLogin) = try await api.account("ann@example.org", device: "laptop")
        let (phone, phoneLogin) = try await api.account("ann@example.org", device: "lost phone")
        let (bob, bobLogin) = try await api.account("bob@example.org", device: "bob's box")

        // Another account's device, an unknown id, a malformed id: 404, and nothing changes.
        for id in [bobLogin.deviceId, UUID().uuidString.lowercased(), "not-an-id"] {
            let reply = try await laptop.send(.DELETE, "/v1/devices/\(id)")
            #expect(reply.status == 404, "\(id)")
            #expect(try reply.error().code == "not_found")
        }
        #expect(try await bob.send(.GET, "/v1/devices").status == 200)

        // The lost phone, revoked from the laptop (the id in upper case is the same id).
        let revoked = try await laptop.send(.DELETE, "/v1/devices/\(phoneLogin.deviceId.uppercased())")
        #expect(revoked.status == 204 && revoked.body.isEmpty)
        #expect(try await phone.send(.GET, "/v1/devices").status == 401)
        #expect(try await phone.upload([Make.habit("h", time: "2026-01-01T10:00:00Z")]).status == 401)
        let left = try await laptop.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(left.map(\.id) == [laptopLogin.deviceId])
        #expect(try await laptop.send(.DELETE, "/v1/devices/\(phoneLogin.deviceId)").status == 404, "already revoked")

        // Revoking the calling device is a logout.
        #expect(try await laptop.send(.DELETE, "/v1/devices/\(laptopLogin.deviceId)").status == 204)
        #expect(try await laptop.send(.GET, "/v1/devices").status == 401)
        #expect(server.log.contains("device revoked"))
    }

    /// A token whose device has not been seen for `--token-idle-days` days answers 401 and is
    /// revoked; a device in use keeps working; 0 turns expiry off.
    @Test func tokensUnusedForTheIdleDaysExpire() async throws {
        let scratch = try Scratch()
        var server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--token-idle-days", "30"])
        let api = APIClient(server)
        let (drawer, drawerLogin) = try await api.account("ann@example.org", device: "in a drawer")
        let (daily, dailyLogin) = try await api.account("ann@example.org", device: "used daily")
        let (spare, spareLogin) = try await api.account("ann@example.org", device: "spare")

        // The drawer device was last seen 31 days ago, the spare one 29 days ago.
        for (id, days) in [(drawerLogin.deviceId, 31.0), (spareLogin.deviceId, 29.0)] {
            let seen = ISO8601.string(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - days * 86_400).rounded(.down)))
            try await server.sql("UPDATE devices SET last_seen_at = '\(seen)' WHERE id = '\(id)'")
        }
        // Listing leaves the expired device out before its token is even presented.
        let listed = try await daily.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(listed.map(\.id) == [dailyLogin.deviceId, spareLogin.deviceId])

        let expired = try await drawer.send(.GET, "/v1/devices")
        #expect(expired.status == 401)
        #expect(try expired.error().message.contains("expired"))
        #expect(try await spare.send(.GET, "/v1/devices").status == 200)
        let revokedAt = try await server.sql("SELECT revoked_at IS NOT NULL FROM devices WHERE id = '\(drawerLogin.deviceId)'")
        #expect(["1", "t"].contains(revokedAt), "an expired token is revoked for good")
        #expect(server.log.contains("device token expired"))
        #expect(await server.stopped() == 0)

        // With expiry off, a device unseen for years still works; the revoked one stays revoked.
        server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--token-idle-days", "0"])
        try await server.sql("UPDATE devices SET last_seen_at = '2020-01-01T00:00:00Z' WHERE id = '\(spareLogin.deviceId)'")
        var again = APIClient(server)
        again.token = spare.token
        #expect(try await again.send(.GET, "/v1/devices").status == 200)
        again.token = drawer.token
        #expect(try await again.send(.GET, "/v1/devices").status == 401)

        for bad in ["-1", "36501", "often"] {
            let result = try await Tool.run(ServerProcess.executable, ["--db", scratch.dbPath, "--token-idle-days", bad])
            #expect(result.status != 0 && result.stderr.contains("--token-idle-days"), "\(bad): \(result.stderr)")
        }
        let help = try await Tool.run(ServerProcess.executable, ["--help"])
        #expect(help.stdout.contains("--token-idle-days") && help.stdout.contains("--login-failures-per-address"))
    }

    @Test func passwordChangeNeedsTheCurrentOneAndLogsOtherDevicesOut() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        let (laptop, _) = try await api.account("ann@example.org", "old password 1", device: "laptop")
        let (phone, _) = try await api.account("ann@example.org", "old password 1", device: "phone")
        let (pi, _) = try await api.account("ann@example.org", "old password 1", device: "pi")
        let (bob, _) = try await api.account("bob@example.org", "bob's password", device: "bob's box")

        func change(_ client: APIClient, _ current: String, _ new: String) async throws -> Reply {
            try await client.send(.PUT, "/v1/accounts/current/password",
                                  json: PasswordChangeRequest(currentPassword: current, newPassword: new))
        }
        let wrong = try await change(laptop, "not the password", "new password 2")
        #expect(try wrong.status == 403 && wrong.error().code == "forbidden")
        let short = try await change(laptop, "old password 1", "short")
        #expect(try short.status == 400 && short.error().message.contains("at least 8"))
        #expect(try await api.login("ann@example.org", "old password 1").status == 201, "nothing changed yet")

        let changed = try await change(laptop, "old password 1", "new password 2")
        #expect(changed.status == 200)
        #expect(try changed.decode(PasswordChangeResponse.self) == PasswordChangeResponse(revokedDevices: 3))  // phone, pi, the login above
        for other in [phone, pi] { #expect(try await other.send(.GET, "/v1/devices").status == 401) }
        #expect(try await laptop.send(.GET, "/v1/devices").decode(DeviceList.self).devices.map(\.name) == ["laptop"])
        #expect(try await bob.send(.GET, "/v1/devices").status == 200, "another account is untouched")
        #expect(try await api.login("ann@example.org", "old password 1").status == 401)
        #expect(try await api.login("ann@example.org", "new password 2").status == 201)

        // Wrong current passwords count as failed logins: a stolen token cannot guess on.
        for _ in 1...5 { #expect(try await change(laptop, "guess", "new password 3").status == 403) }
        let refused = try await change(laptop, "guess", "new password 3")
        #expect(refused.status == 429 && refused.headers.first(name: "Retry-After") != nil)
        #expect(server.log.contains("password changed"))
    }

    @Test func accountDeletionRemovesRecordsDevicesAndTheAccount() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        let (laptop, login) = try await api.account("ann@example.org", "ann's password", device: "laptop")
        let (phone, _) = try await api.account("ann@example.org", "ann's password", device: "phone")
        let (bob, _) = try await api.account("bob@example.org", "bob's password")
        let records = [Make.workout("w"), Make.habit("h", time: "2026-03-02T10:00:00Z")]
        #expect(try await laptop.uploadStatuses(records) == [.accepted, .accepted])
        #expect(try await bob.uploadStatuses(records) == [.accepted, .accepted])
        #expect(try await laptop.send(.DELETE, "/v1/records/\(records[1].id)").status == 204)

        let wrong = try await laptop.send(.POST, "/v1/accounts/current/deletion", json: AccountDeletionRequest(password: "nope nope"))
        #expect(try wrong.status == 403 && wrong.error().code == "forbidden")
        #expect(try await phone.send(.GET, "/v1/devices").status == 200)

        let deleted = try await laptop.send(.POST, "/v1/accounts/current/deletion", json: AccountDeletionRequest(password: "ann's password"))
        #expect(deleted.status == 204 && deleted.body.isEmpty)
        for client in [laptop, phone] { #expect(try await client.send(.GET, "/v1/records?after=0").status == 401) }
        #expect(try await api.login("ann@example.org", "ann's password").status == 401)
        var counts: [String] = []
        for table in ["users", "devices", "records"] {
            counts.append(try await server.sql("SELECT count(*) FROM \(table) WHERE \(table == "users" ? "id" : "user_id") = '\(login.userId)'"))
        }
        #expect(counts == ["0", "0", "0"])
        // Bob's records are all there; the email can be registered again, as a new account.
        #expect(try await bob.allHistory().count == 2)
        let again = try await api.register("ann@example.org", "ann's new password")
        #expect(try again.status == 201 && again.decode(RegisterResponse.self).userId != login.userId)
        #expect(server.log.contains("account deleted"))
    }

    /// NFKC and case folding: one address is one account however it is typed.
    @Test func oneAddressIsOneAccount() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        #expect(try await api.register("Straße@Example.org", "long enough password").status == 201)
        #expect(try await api.register("STRASSE@example.org", "long enough password").status == 409)
        #expect(try await api.register("\u{FF21}\u{FF2E}\u{FF2E}@example.org", "long enough password").status == 201)
        #expect(try await api.register("ann@example.org", "long enough password").status == 409)
        #expect(try await api.login("strasse@EXAMPLE.org", "long enough password").status == 201)
        #expect(try await api.login("ANN@example.org", "long enough password").status == 201)
        let stored = try await server.sql("SELECT email FROM users ORDER BY email")
        #expect(stored == "ann@example.org\nstrasse@example.org")
    }

    /// A login for an unknown email costs what a stored hash costs, not what the configured cost
    /// would (the accounts here were made at cost 4; the server now runs at cost 14, where one
    /// bcrypt takes about a second of CPU: the old decoy spent that on every unknown email).
    @Test func unknownEmailsCostWhatStoredHashesCost() async throws {
        let scratch = try Scratch()
        var server = try await ServerProcess.start(databasePath: scratch.dbPath)
        for name in ["ann", "bob", "cid"] {
            #expect(try await APIClient(server).register("\(name)@example.org", "long enough password").status == 201)
        }
        #expect(await server.stopped() == 0)

        server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--bcrypt-cost", "14"])
        let api = APIClient(server)
        let before = try ProcessStats.cpuTicks(server.process.processIdentifier)
        for i in 0..<4 {
            #expect(try await api.login("nobody\(i)@example.org", "long enough password").status == 401)
            #expect(try await api.login("ann@example.org", "wrong password \(i)").status == 401)
        }
        let spent = try ProcessStats.cpuTicks(server.process.processIdentifier) - before
        let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))
        // Eight checks at cost 4 take milliseconds; four at cost 14 would take seconds.
        #expect(spent < ticksPerSecond, "\(spent) ticks for 8 failed logins")
    }

    /// A correct password made at another cost than the configured one is hashed again at login.
    @Test func loginRehashesAtTheConfiguredCost() async throws {
        let scratch = try Scratch()
        var server = try await ServerProcess.start(databasePath: scratch.dbPath)
        #expect(try await APIClient(server).register("ann@example.org", "long enough password").status == 201)
        #expect(await server.stopped() == 0)
        func storedHash() async throws -> String { try await server.sql("SELECT password_hash FROM users") }
        #expect(try await storedHash().hasPrefix("$2b$04$"))

        server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--bcrypt-cost", "5"])
        let api = APIClient(server)
        #expect(try await api.login("ann@example.org", "wrong password").status == 401)
        #expect(try await storedHash().hasPrefix("$2b$04$"), "a wrong password changes nothing")
        #expect(try await api.login("ann@example.org", "long enough password").status == 201)
        #expect(try await storedHash().hasPrefix("$2b$05$"))
        #expect(try await api.login("ann@example.org", "long enough password").status == 201, "the new hash verifies")
        #expect(server.log.contains("password rehashed"))
    }
}
