import Foundation
import HealthModel
import SyncProtocol
import Testing
import TestSupport

/// Accounts, logins, tokens and devices against a real server process.
@Suite struct AccountTests {
    @Test func healthAnswersTheVersion() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let reply = try await APIClient(server).send(.GET, "/v1/health")
        #expect(reply.status == 200)
        #expect(try reply.decode(HealthResponse.self) == HealthResponse(status: "ok", version: "0.1.0", database: "ok"))
        #expect(server.url.absoluteString.hasPrefix("http://127.0.0.1:") && !server.url.absoluteString.hasSuffix(":0"))
        #expect(await server.stopped() == 0)
    }

    @Test func registerAndLogIn() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)

        let created = try await api.register("Ann@Example.org", "long enough password")
        #expect(created.status == 201)
        let userId = try created.decode(RegisterResponse.self).userId
        #expect(userId == userId.lowercased() && UUID(uuidString: userId) != nil)

        // The same email in another case and with spaces is the same account.
        let again = try await api.register("  ann@example.ORG ", "another password")
        #expect(again.status == 409)
        #expect(try again.error().code == "conflict")

        let badEmail = try await api.register("not an email", "long enough password")
        #expect(try badEmail.status == 400 && badEmail.error().message.contains("email"))
        let shortPassword = try await api.register("bob@example.org", "1234567")
        #expect(shortPassword.status == 400)
        #expect(try shortPassword.error().message == "password must have at least 8 characters")

        let login = try await api.login("ann@example.org", "long enough password", device: "laptop")
        #expect(login.status == 201)
        let session = try login.decode(LoginResponse.self)
        #expect(session.userId == userId)
        #expect(session.token.count == 43 && session.token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })

        let wrong = try await api.login("ann@example.org", "wrong password")
        #expect(wrong.status == 401)
        #expect(try wrong.error().code == "unauthorized" && wrong.error().message == "wrong email or password")
        let unknown = try await api.login("nobody@example.org", "long enough password")
        #expect(try unknown.status == 401 && unknown.error().message == "wrong email or password")
        let emptyName = try await api.login("ann@example.org", "long enough password", device: "  ")
        #expect(try emptyName.status == 400 && emptyName.error().message.contains("device_name"))
    }

    @Test func malformedRequestsGetClearJSONErrors() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)

        let notJSON = try await api.send(.POST, "/v1/accounts", body: Data("{\"email\":".utf8))
        #expect(notJSON.status == 400)
        #expect(try notJSON.error().message == "request body is not a valid RegisterRequest: not valid JSON (unexpected end of the text at byte 9)")
        let missingKey = try await api.send(.POST, "/v1/accounts", body: Data(#"{"email":"a@b.c"}"#.utf8))
        #expect(try missingKey.status == 400 && missingKey.error().message.contains("missing key 'password'"))
        let plain = try await api.send(.POST, "/v1/accounts", body: Data("{}".utf8), contentType: "text/plain")
        #expect(try plain.status == 415 && plain.error().code == "unsupported_media_type")
        let noType = try await api.send(.POST, "/v1/sessions", body: Data("{}".utf8), contentType: nil)
        #expect(noType.status == 415)

        let unknown = try await api.send(.GET, "/v1/nothing")
        #expect(try unknown.status == 404 && unknown.error().code == "not_found")
        #expect(unknown.headers.first(name: "Content-Type") == "application/json")
        let root = try await api.send(.GET, "/")
        #expect(try root.status == 404 && root.error().code == "not_found")
        let method = try await api.send(.PATCH, "/v1/records")
        #expect(try method.status == 405 && method.error().code == "method_not_allowed")
        #expect(method.headers.first(name: "Allow") == "GET, POST, DELETE")
        let withId = try await api.send(.GET, "/v1/devices/0b7c1c5e-3a55-4a51-9d57-8f2b9c6d0e11")
        #expect(try withId.status == 405 && withId.error().code == "method_not_allowed")
        #expect(withId.headers.first(name: "Allow") == "DELETE")
    }

    /// Guessing is slow from one address and from many, and nobody can lock the owner out of
    /// the address the owner logs in from (with the old rule, five wrong guesses by anyone
    /// locked the email everywhere for 15 minutes, renewable forever).
    @Test func failedLoginsAreRateLimitedWithoutLockingTheOwnerOut() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        try await api.register("carol@example.org", "the right password")
        // Carol logs in from 127.0.0.1, which becomes known for her account.
        #expect(try await api.login("carol@example.org", "the right password").status == 201)

        // One attacker address: 5 guesses, then 429 for that email, even with the right password.
        let attacker = LoopbackClient(server: server, address: "127.0.0.2")
        for attempt in 1...5 {
            #expect(try await attacker.login("carol@example.org", "wrong password \(attempt)").status == 401, "attempt \(attempt)")
        }
        for password in ["wrong password 6", "the right password"] {
            let reply = try await attacker.login("carol@example.org", password)
            #expect(reply.status == 429 && reply.body.contains("too_many_requests"))
            let retryAfter = try #require(reply.headers["retry-after"].flatMap { Int($0) })
            #expect((1...900).contains(retryAfter))
        }
        // Carol is not locked out.
        #expect(try await api.login("carol@example.org", "the right password").status == 201)

        // Many attacker addresses: 50 failures in all for the email, then every address Carol
        // has not logged in from is refused for it (5 each from 127.0.0.2 ... 127.0.0.11).
        for host in 3...11 {
            let bot = LoopbackClient(server: server, address: "127.0.0.\(host)")
            for attempt in 1...5 {
                #expect(try await bot.login("carol@example.org", "guess \(host).\(attempt)").status == 401, "\(host).\(attempt)")
            }
        }
        let fresh = LoopbackClient(server: server, address: "127.0.0.12")
        #expect(try await fresh.login("carol@example.org", "the right password").status == 429)
        #expect(try await api.login("carol@example.org", "the right password").status == 201, "the owner's address stays open")
        #expect(try await api.login("carol@example.org", "wrong password").status == 401, "and is held to its own count")

        // One address guessing many emails: 20 failures, then it may not try any other email.
        try await api.register("dave@example.org", "the right password")
        let sprayer = LoopbackClient(server: server, address: "127.0.0.20")
        for i in 1...20 {
            #expect(try await sprayer.login("user\(i)@example.org", "guess").status == 401, "email \(i)")
        }
        #expect(try await sprayer.login("dave@example.org", "the right password").status == 429)
        #expect(try await LoopbackClient(server: server, address: "127.0.0.21").login("dave@example.org", "the right password").status == 201)
        #expect(server.log.contains("login refused: too many failures"))
    }

    /// The per-address limit is an option (behind a reverse proxy every client has its address).
    @Test func theAddressLimitIsAnOption() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--login-failures-per-address", "3"])
        let api = APIClient(server)
        try await api.register("erin@example.org", "the right password")
        for i in 1...3 { #expect(try await api.login("user\(i)@example.org", "guess").status == 401) }
        #expect(try await api.login("erin@example.org", "the right password").status == 429)
        let bad = try await Tool.run(ServerProcess.executable, ["--db", scratch.dbPath, "--login-failures-per-address", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--login-failures-per-address must be 1 or more"), "\(bad.stderr)")
    }

    /// Registrations cost a slow hash and tell whether an email has an account: an address gets
    /// `--registrations-per-hour` of them, then 429 with Retry-After; requests refused as
    /// malformed do not count, and accounts made before still log in.
    @Test func registrationsPerAddressAreLimited() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath, extraArguments: ["--registrations-per-hour", "3"])
        let api = APIClient(server)
        #expect(try await api.register("not an email", "long enough password").status == 400)
        #expect(try await api.register("short@example.org", "short").status == 400)
        let firstCounted = Date()
        #expect(try await api.register("gina@example.org", "long enough password").status == 201)
        #expect(try await api.register("gina@example.org", "long enough password").status == 409, "a conflict counts too")
        #expect(try await api.register("hal@example.org", "long enough password").status == 201)
        let refused = try await api.register("ivy@example.org", "long enough password")
        #expect(refused.status == 429)
        #expect(try refused.error().code == "too_many_requests")
        let retryAfter = try #require(refused.headers.first(name: "Retry-After").flatMap { Int($0) })
        // An hour from the first counted registration: what has passed since (slow hashes on a
        // loaded machine) is taken off, never more.
        let elapsed = Int(Date().timeIntervalSince(firstCounted).rounded(.up))
        #expect((3600 - elapsed - 1...3600).contains(retryAfter), "Retry-After \(retryAfter) with \(elapsed) s elapsed")
        #expect(try await api.login("ivy@example.org", "long enough password").status == 401, "ivy was not created")
        #expect(try await api.login("hal@example.org", "long enough password").status == 201)
        #expect(server.log.contains("registration refused: too many from the address"))

        let bad = try await Tool.run(ServerProcess.executable, ["--db", scratch.dbPath, "--registrations-per-hour", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--registrations-per-hour must be 1 or more"), "\(bad.stderr)")
    }

    @Test func wrongAndRevokedTokensAre401() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        let (laptop, _) = try await api.account("erin@example.org", device: "laptop")
        let (phone, _) = try await api.account("erin@example.org", device: "phone")

        var noToken = laptop
        noToken.token = nil
        var wrongToken = laptop
        wrongToken.token = String(laptop.token!.reversed())
        for (client, name) in [(noToken, "no token"), (wrongToken, "wrong token")] {
            for path in ["/v1/devices", "/v1/records?after=0", "/v1/summaries?period=day"] {
                let reply = try await client.send(.GET, path)
                #expect(reply.status == 401, "\(name) \(path)")
                #expect(try reply.error().code == "unauthorized")
                #expect(reply.headers.first(name: "WWW-Authenticate") == "Bearer")
            }
            #expect(try await client.upload([Make.habit("h", time: "2026-01-01T10:00:00Z")]).status == 401)
        }
        let basic = try await api.send(.GET, "/v1/devices", headers: [("Authorization", "Basic \(laptop.token!)")])
        #expect(basic.status == 401)

        #expect(try await laptop.send(.GET, "/v1/devices").status == 200)
        let logout = try await laptop.send(.DELETE, "/v1/sessions/current")
        #expect(logout.status == 204 && logout.body.isEmpty)
        let after = try await laptop.send(.GET, "/v1/devices")
        #expect(after.status == 401)
        #expect(try await laptop.upload([Make.habit("h", time: "2026-01-01T10:00:00Z")]).status == 401)
        #expect(try await laptop.send(.DELETE, "/v1/sessions/current").status == 401)

        // The account's other device keeps working; the logged-out one is gone from the list.
        let list = try await phone.send(.GET, "/v1/devices")
        #expect(list.status == 200)
        #expect(try list.decode(DeviceList.self).devices.map(\.name) == ["phone"])
    }

    @Test func primaryDeviceMarking() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let api = APIClient(server)
        let (laptop, laptopLogin) = try await api.account("frank@example.org", device: "laptop")
        let (pi, piLogin) = try await api.account("frank@example.org", device: "raspberry pi")
        let (other, _) = try await api.account("grace@example.org", device: "grace's box")

        let initial = try await laptop.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(initial.map(\.name) == ["laptop", "raspberry pi"])
        #expect(initial.allSatisfy { !$0.primary && $0.lastSeenAt != nil })

        let marked = try await pi.send(.PUT, "/v1/devices/current/primary")
        #expect(marked.status == 200)
        let device = try marked.decode(DeviceInfo.self)
        #expect(device.id == piLogin.deviceId && device.primary && device.name == "raspberry pi")
        var devices = try await laptop.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(devices.filter(\.primary).map(\.id) == [piLogin.deviceId])

        // Marking another device moves the mark; another user's devices are untouched.
        #expect(try await other.send(.PUT, "/v1/devices/current/primary").status == 200)
        #expect(try await laptop.send(.PUT, "/v1/devices/current/primary").status == 200)
        devices = try await pi.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(devices.filter(\.primary).map(\.id) == [laptopLogin.deviceId])
        let others = try await other.send(.GET, "/v1/devices").decode(DeviceList.self).devices
        #expect(others.map(\.primary) == [true])
        // Idempotent.
        #expect(try await laptop.send(.PUT, "/v1/devices/current/primary").decode(DeviceInfo.self).primary)
    }
}
