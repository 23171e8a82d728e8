import Foundation
import Testing
import TestSupport

/// `healthgate devices`, `devices revoke`, `password` and `account delete`: the real CLI against
/// a real server, as a user runs them.
@Suite struct AccountCommandTests {
    /// Registers an account and logs `installs` databases in to it through the CLI.
    func installs(_ count: Int, on server: ServerProcess, email: String, password: String) async throws -> [Scratch] {
        let url = server.url.absoluteString
        let registered = try await CLI.run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: password)
        #expect(registered.status == 0, "\(registered.stderr)")
        var installs: [Scratch] = []
        for i in 0..<count {
            let scratch = try Scratch()
            let login = try await CLI.run(["login", "--server", url, "--email", email, "--password-stdin", "--db", scratch.dbPath,
                                           "--device-name", "install-\(i)"], stdin: password)
            #expect(login.status == 0, "\(login.stderr)")
            installs.append(scratch)
        }
        return installs
    }

    func deviceId(_ scratch: Scratch) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: scratch.dbPath + ".sync.json"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return try #require(object?["device_id"] as? String)
    }

    @Test func devicesAreListedAndALostOneIsRevoked() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(3, on: server, email: "ann@example.org", password: "a long passphrase")
        let ids = try db.map(deviceId)

        let listed = try #require(try await CLI.json(["devices", "--db", db[0].dbPath, "--json"]) as? [[String: Any]])
        #expect(listed.compactMap { $0["id"] as? String } == ids)
        #expect(listed.compactMap { $0["name"] as? String } == ["install-0", "install-1", "install-2"])
        #expect(listed.map { $0["this_device"] as? Bool } == [true, false, false])
        #expect(listed.map { $0["primary"] as? Bool } == [false, false, true], "each login made itself primary")
        #expect(listed.allSatisfy { $0["created_at"] is String && $0["last_seen_at"] is String })

        let table = try await CLI.run(["devices", "list", "--db", db[1].dbPath])
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ID") == true && lines.count == 4)
        #expect(lines.filter { $0.contains("(this device)") }.map { $0.hasPrefix(ids[1]) } == [true])

        // The lost install-2, revoked from install-0: its next command is refused.
        let revoked = try await CLI.run(["devices", "revoke", ids[2], "--db", db[0].dbPath])
        #expect(revoked.status == 0 && revoked.stdout.contains("Device \(ids[2]) is logged out"), "\(revoked.stderr)")
        let lost = try await CLI.run(["devices", "--db", db[2].dbPath])
        #expect(lost.status == 1 && lost.stderr.contains("refused the token"), "\(lost.stderr)")
        #expect(try await CLI.json(["devices", "--db", db[0].dbPath, "--json"]) as? [[String: Any]] != nil)

        // Again, or an id the account does not have: the server's 404, exit status 1.
        let again = try await CLI.run(["devices", "revoke", ids[2], "--db", db[0].dbPath])
        #expect(again.status == 1 && again.stderr.contains("404"), "\(again.stderr)")
        let malformed = try await CLI.run(["devices", "revoke", "not-an-id", "--db", db[0].dbPath])
        #expect(malformed.status == 64 && malformed.stderr.contains("is not a device id"), "\(malformed.stderr)")

        // Revoking this install's own device is a logout: the saved login goes too.
        let own = try await CLI.run(["devices", "revoke", ids[1], "--db", db[1].dbPath])
        #expect(own.status == 0 && own.stdout.contains("This device"), "\(own.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db[1].dbPath + ".sync.json"))
        let notLoggedIn = try await CLI.run(["devices", "--db", db[1].dbPath])
        #expect(notLoggedIn.status == 1 && notLoggedIn.stderr.contains("not logged in"), "\(notLoggedIn.stderr)")
    }

    @Test func passwordChangeLogsTheOtherInstallsOut() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "bob@example.org", password: "the old passphrase")

        let wrong = try await CLI.run(["password", "--db", db[0].dbPath, "--password-stdin"], stdin: "not it\nthe new passphrase")
        #expect(wrong.status == 1 && wrong.stderr.contains("403"), "\(wrong.stderr)")
        let short = try await CLI.run(["password", "--db", db[0].dbPath, "--password-stdin"], stdin: "the old passphrase\nshort")
        #expect(short.status == 1 && short.stderr.contains("at least 8 characters"), "\(short.stderr)")
        let missing = try await CLI.run(["password", "--db", db[0].dbPath, "--password-stdin"], stdin: "the old passphrase")
        #expect(missing.status == 1 && missing.stderr.contains("no new password on standard input"), "\(missing.stderr)")

        let changed = try await CLI.run(["password", "--db", db[0].dbPath, "--password-stdin"],
                                        stdin: "the old passphrase\nthe new passphrase")
        #expect(changed.status == 0 && changed.stdout.contains("1 other device(s) logged out"), "\(changed.stderr)")
        #expect(try await CLI.run(["devices", "--db", db[1].dbPath]).status == 1)
        #expect(try await CLI.run(["devices", "--db", db[0].dbPath]).status == 0)
        let url = server.url.absoluteString
        let old = try await CLI.run(["login", "--server", url, "--email", "bob@example.org", "--password-stdin", "--db", db[1].dbPath],
                                    stdin: "the old passphrase")
        #expect(old.status == 1)
        let new = try await CLI.run(["login", "--server", url, "--email", "bob@example.org", "--password-stdin", "--db", db[1].dbPath],
                                    stdin: "the new passphrase")
        #expect(new.status == 0, "\(new.stderr)")
    }

    @Test func accountDeletionNeedsTheConfirmationAndThePassword() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "cid@example.org", password: "cid's passphrase")

        let unconfirmed = try await CLI.run(["account", "delete", "--db", db[0].dbPath, "--password-stdin"], stdin: "cid's passphrase")
        #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        let wrong = try await CLI.run(["account", "delete", "--yes", "--db", db[0].dbPath, "--password-stdin"], stdin: "not it")
        #expect(wrong.status == 1 && wrong.stderr.contains("403"), "\(wrong.stderr)")
        #expect(try await CLI.run(["devices", "--db", db[1].dbPath]).status == 0, "nothing was deleted")

        let deleted = try await CLI.run(["account", "delete", "--yes", "--db", db[0].dbPath, "--password-stdin"], stdin: "cid's passphrase")
        #expect(deleted.status == 0 && deleted.stdout.contains("Account cid@example.org deleted"), "\(deleted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db[0].dbPath + ".sync.json"))
        #expect(try await CLI.run(["devices", "--db", db[1].dbPath]).status == 1, "the other install's token is gone")
        let login = try await CLI.run(["login", "--server", server.url.absoluteString, "--email", "cid@example.org", "--password-stdin",
                                       "--db", db[0].dbPath], stdin: "cid's passphrase")
        #expect(login.status == 1 && login.stderr.contains("wrong email or password"), "\(login.stderr)")
    }

    @Test func everyAccountCommandExplainsItself() async throws {
        for (command, words) in [(["devices"], ["revoke", "list"]), (["devices", "list"], ["--json", "--db"]),
                                 (["devices", "revoke"], ["ID", "logout"]), (["password"], ["--password-stdin", "logged out"]),
                                 (["account", "delete"], ["--yes", "--password-stdin", "cannot be undone"])] {
            let help = try await CLI.run(command + ["--help"])
            #expect(help.status == 0, "\(command)")
            for word in words { #expect(help.stdout.contains(word), "\(command): \(word)") }
        }
        let top = try await CLI.run(["--help"])
        for command in ["devices", "password", "account"] { #expect(top.stdout.contains(command)) }
    }
}
