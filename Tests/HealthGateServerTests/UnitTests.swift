import Foundation
import GRDB
import Gzip
import HealthModel
import WebSecurity
import SyncProtocol
import Testing
import TestSupport
@testable import HealthGateServer

/// The server's pure pieces, without a process.
@Suite struct UnitTests {
    let t0 = Date(timeIntervalSince1970: 1_780_000_000)

    @Test func tokensExpireAfterTheIdleDays() {
        let expiry = TokenExpiry(idleDays: 30)
        #expect(!expiry.isExpired(lastSeen: t0, now: t0.addingTimeInterval(30 * 86_400)))
        #expect(expiry.isExpired(lastSeen: t0, now: t0.addingTimeInterval(30 * 86_400 + 1)))
        #expect(expiry.cutoff(now: t0) == t0.addingTimeInterval(-30 * 86_400))
        let never = TokenExpiry(idleDays: 0)
        #expect(never.cutoff(now: t0) == nil && !never.isExpired(lastSeen: .distantPast, now: t0))
        #expect(TokenExpiry().idleDays == 90)
    }

    /// NFKC and case folding: one address, however typed, is one account.
    @Test func emailsAreNormalisedWithNFKCAndCaseFolding() {
        let cases = [
            (" Ann@Example.ORG\n", "ann@example.org"),
            ("Straße@example.org", "strasse@example.org"),
            ("STRASSE@example.org", "strasse@example.org"),
            ("\u{FF21}\u{FF2E}\u{FF2E}@example.org", "ann@example.org"),  // full-width ＡＮＮ
            ("\u{FB01}sh@example.org", "fish@example.org"),  // the ﬁ ligature
            ("e\u{301}@example.org", "\u{E9}@example.org"),  // decomposed é
            ("\u{212A}im@example.org", "kim@example.org"),  // the Kelvin sign
            ("ΟΔΥΣΣΕΥΣ@example.gr", "οδυσσευσ@example.gr"),
        ]
        for (typed, expected) in cases {
            #expect(EmailAddress.normalize(typed) == expected, "\(typed)")
            #expect(EmailAddress.normalize(expected) == expected, "idempotent: \(expected)")
        }
    }

    @Test func bcryptCostsAreReadFromHashes() async {
        #expect(PasswordHasher.cost(of: "$2b$12$abcdefghijklmnopqrstuv") == 12)
        #expect(PasswordHasher.cost(of: "$2a$04$abcdefghijklmnopqrstuv") == 4)
        #expect(PasswordHasher.cost(of: "plain") == nil && PasswordHasher.cost(of: "$2b$x$y") == nil)
        let hasher = PasswordHasher(cost: 5)
        let hash = await hasher.hash("long enough password")
        #expect(!hasher.needsRehash(hash))
        #expect(PasswordHasher(cost: 4).needsRehash(hash))
    }

    @Test func routesWithIdsAnswer405WithTheirMethods() {
        #expect(Routes.methods(forPath: "/v1/devices/0b7c1c5e-3a55-4a51-9d57-8f2b9c6d0e11") == [.delete])
        #expect(Routes.methods(forPath: "/v1/records/abc/") == [.delete])
        #expect(Routes.methods(forPath: "/v1/records") == [.get, .post, .delete])
        #expect(Routes.methods(forPath: "/v1/devices/current/primary") == [.put])
        #expect(Routes.methods(forPath: "/v1/devices/a/b") == nil)
        #expect(Routes.methods(forPath: "/v1/records//") == nil)
    }

    /// What `Gzip.compress` writes, at every level and for empty input, is what went in: read
    /// back by the inflater and by the system's `gzip -dc` (an independent implementation).
    @Test func gzipCompressesForAnyReader() async throws {
        let text = Data((0..<5_000).map { "{\"id\":\"\($0)\",\"kind\":\"heart_rate\"}\n" }.joined().utf8)
        for (input, level) in [(text, 0), (text, 1), (text, 6), (text, 9), (Data(), 1), (Data("é".utf8), 9)] as [(Data, Int32)] {
            let zipped = Gzip.compress(input, level: level)
            #expect(zipped.prefix(2) == Data([0x1F, 0x8B]), "gzip magic")
            let inflater = try GzipInflater(limit: 1 << 22)
            try zipped.withUnsafeBytes { try inflater.feed($0) }
            #expect(try inflater.finish() == input, "level \(level)")
            let path = NSTemporaryDirectory() + "hg-gzip-\(UUID().uuidString).gz"
            try zipped.write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let system = try await Tool.run("/bin/gzip", ["-dc", path])
            #expect(system.status == 0 && Data(system.stdout.utf8) == input, "gzip -dc at level \(level): \(system.stderr)")
        }
        #expect(Gzip.compress(text, level: 1).count < text.count / 4, "records repeat their keys")
    }

    @Test func gzipInflaterStreamsWithACap() throws {
        let text = Data((0..<20_000).map { "line \($0)\n" }.joined().utf8)
        let zipped = gzip(text)
        // Fed in small pieces, as a body arrives.
        let inflater = try GzipInflater(limit: 1 << 20)
        var offset = 0
        while offset < zipped.count {
            let piece = zipped[offset..<min(offset + 777, zipped.count)]
            try piece.withUnsafeBytes { try inflater.feed($0) }
            offset += 777
        }
        #expect(try inflater.finish() == text)

        // Two members in a row inflate to their concatenation.
        let two = try GzipInflater(limit: 1 << 20)
        try (gzip(Data("one ".utf8)) + gzip(Data("two".utf8))).withUnsafeBytes { try two.feed($0) }
        #expect(try two.finish() == Data("one two".utf8))

        let capped = try GzipInflater(limit: text.count - 1)
        #expect(throws: GzipInflater.Failure.tooLarge) {
            try zipped.withUnsafeBytes { try capped.feed($0) }
            _ = try capped.finish()
        }
        let truncated = try GzipInflater(limit: 1 << 20)
        #expect(throws: GzipInflater.Failure.self) {
            try zipped.prefix(zipped.count - 10).withUnsafeBytes { try truncated.feed($0) }
            _ = try truncated.finish()
        }
        let garbage = try GzipInflater(limit: 1 << 20)
        #expect(throws: GzipInflater.Failure.self) {
            try Data("{\"records\":[]}".utf8).withUnsafeBytes { try garbage.feed($0) }
        }
    }

    @Test func uploadCheckerPreparesOrRejects() throws {
        let checker = UploadChecker()
        let now = Date()
        let run = Make.workout("run", start: "2026-03-02T07:00:00Z", minutes: 30, timerS: 1700, distanceM: 5000, energyKcal: 300)
        let incoming = try checker.check(run, now: now).get()
        #expect(incoming.id == Make.id("run").description && incoming.version == 1 && incoming.type == .workout)
        #expect(incoming.figures == RecordFigures(activeS: 1700, distanceM: 5000, energyKcal: 300))
        // The stored body is the record as the protocol encodes it: it decodes back to the same record.
        let decoded = try SyncAPI.decoder().decode(Workout.self, from: Data(try #require(incoming.body).utf8))
        #expect(HealthRecord.workout(decoded) == run.data)

        var upper = run
        upper.id = upper.id.uppercased()
        #expect(try checker.check(upper, now: now).get().id == Make.id("run").description)

        let future = Make.habit("h", time: ISO8601.string(now.addingTimeInterval(3600)))
        #expect(throws: UploadRejection.self) { try checker.check(future, now: now).get() }
        let old = Make.habit("h", time: "1980-01-01T00:00:00Z")
        let reason = try #require(checker.check(old, now: now).failure?.reason)
        #expect(reason.contains("device clock was not set"))

        // What would make summaries negative or infinite.
        let negativeTimer = Make.workout("t", timerS: -5)
        #expect(checker.check(negativeTimer, now: now).failure?.reason == "timer_s -5 s is outside 0...1209600 s")
        let farRun = Make.workout("far", distanceM: 1e300)
        #expect(checker.check(farRun, now: now).failure?.reason == "distance_m 1e+300 m is outside 0...10000000 m")
        var sleep = try #require(Make.sleep("s", start: "2026-03-01T22:00:00Z", hours: 8).data)
        if case .sleep(var session) = sleep {
            session.stages = [SleepStageSpan(start: session.end, end: session.start, stage: .deep)]
            sleep = .sleep(session)
        }
        #expect(checker.check(WireRecord(sleep), now: now).failure?.reason == "stages[0] ends before it starts")
    }

    /// Summary periods by the one day rule: a 04:00 day start in Berlin across the spring change
    /// (the 28th lasts 23 hours), cut to since/until, a half-open lookup, and a limit.
    @Test func summaryPeriodsFollowTheDayRule() throws {
        let days = DayBoundary(timeZone: TimeZone(identifier: "Europe/Berlin")!, startMinutes: 240)
        let t = { (s: String) in ISO8601.parse(s)!.timeIntervalSince1970 }
        let span = t("2026-03-28T02:59:00Z")...t("2026-03-30T05:00:00Z")
        let periods = try SummaryPeriods(period: .day, days: days, span: span, since: nil, until: nil)
        #expect(periods.labels == ["2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"])
        #expect(periods.edges == [t("2026-03-27T03:00:00Z"), t("2026-03-28T03:00:00Z"), t("2026-03-29T02:00:00Z"),
                                  t("2026-03-30T02:00:00Z"), t("2026-03-31T02:00:00Z")])
        #expect(periods.index(of: t("2026-03-29T01:59:59Z")) == 1 && periods.index(of: t("2026-03-29T02:00:00Z")) == 2)
        #expect(periods.index(of: t("2026-03-31T02:00:00Z")) == nil && periods.index(of: t("2026-03-27T02:59:59Z")) == nil)
        // Cut to the 28th and 29th: the week of Monday the 23rd, bounded by those days.
        let week = try SummaryPeriods(period: .week, days: days, span: span, since: LocalDay("2026-03-28"), until: LocalDay("2026-03-29"))
        #expect(week.labels == ["2026-03-23"] && week.edges == [t("2026-03-28T03:00:00Z"), t("2026-03-30T02:00:00Z")])
        #expect(try SummaryPeriods(period: .month, days: days, span: span, since: LocalDay("2027-01-01"), until: nil).labels.isEmpty)
        #expect(periods.json.hasPrefix("[[\"2026-03-27\",1774580400.0,1774666800.0],"))
        // A thousand years of days is refused, not laid out.
        #expect(throws: SummaryPeriods.TooMany.self) {
            try SummaryPeriods(period: .day, days: days, span: t("1000-01-01T00:00:00Z")...t("2026-01-01T00:00:00Z"), since: nil, until: nil)
        }
        #expect(SummaryScope.dayStart(preferencesBody: #"{"kind":"preferences","preferences":{"day_start":"04:30"}}"#) == 270)
        #expect(SummaryScope.dayStart(preferencesBody: #"{"preferences":{"day_start":"25:00"}}"#) == 0)
        #expect(SummaryScope.dayStart(preferencesBody: nil) == 0)
    }

    @Test func deviceTokensAreRandomAndStoredAsSHA256() {
        let tokens = (0..<100).map { _ in SecretToken.generate() }
        #expect(Set(tokens).count == 100)
        #expect(tokens.allSatisfy { $0.count == 43 && !$0.contains("+") && !$0.contains("/") && !$0.contains("=") })
        #expect(SecretToken.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// Token and password hashes come from swift-crypto's SHA-256 now; what existing databases
    /// hold must still match: FIPS 180-4 vectors, lengths around the padding boundary (against
    /// Python's hashlib), a token hashed and a bcrypt hash made by the former hand-written SHA-256.
    @Test func hashesStoredBeforeStillMatch() async {
        #expect(SecretToken.hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SecretToken.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SecretToken.hash(String(repeating: "a", count: 55)) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(SecretToken.hash(String(repeating: "a", count: 56)) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(SecretToken.hash(String(repeating: "a", count: 64)) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
        #expect(SecretToken.hash(String(repeating: "a", count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(SecretToken.hash("q3JrWc0Yx9Qb8m1o2n4p6r8t0v2x4z6B8D0F2H4J6L8")
                == "a87e0a2a956655e388e46d27ed7eb720603f2b503371455529f33f1f7ba2a9ef")
        // The bcrypt input: base64 of the password's SHA-256.
        #expect(PasswordHasher.prehash("abc") == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
        #expect(PasswordHasher.prehash("correct horse battery staple ü🔑") == "jgSgUN5XSPJ8hFdVsqOYD3fv1VEqx76zJj+qGQB9A68=")
        let madeBefore = "$2b$04$Xf/jRrzkdnj.x8Bxr/nIw.ruqEa25U08QPEw7TNKfc/yk9xo3RunC"
        let hasher = PasswordHasher(cost: 4)
        #expect(await hasher.verify("correct horse battery staple ü🔑", hash: madeBefore))
        #expect(await !hasher.verify("correct horse battery staple", hash: madeBefore))
    }

    @Test func passwordHashesAreBcryptOfTheWholePassword() async {
        let hasher = PasswordHasher(cost: 4)
        let long = String(repeating: "x", count: 100)
        let hash = await hasher.hash(long + "a")
        #expect(hash.hasPrefix("$2b$04$"))
        #expect(await hasher.verify(long + "a", hash: hash))
        // bcrypt alone would stop reading after 72 bytes.
        #expect(await !hasher.verify(long + "b", hash: hash))
        #expect(await !hasher.verify("x", hash: hash))
    }

    @Test func faultsFollowTheSeed() {
        let plan = FaultPlan(rate: 0.3, seed: 42, kinds: [.unavailable, .drop])
        let a = (0..<200).map { _ in FaultInjector(plan: plan) }.first!
        let b = FaultInjector(plan: plan)
        let first = (0..<200).map { _ in a.next() }
        #expect(first == (0..<200).map { _ in b.next() })
        let faults = first.compactMap { $0 }
        #expect((40...80).contains(faults.count))
        #expect(Set(faults) == [.unavailable, .drop])
        #expect((0..<100).allSatisfy { _ in FaultInjector(plan: FaultPlan(rate: 0, seed: 1)).next() == nil })
    }

    @Test func historyPagesAreHistoryPageJSON() throws {
        let body = try UploadChecker().check(Make.habit("h", time: "2026-03-02T10:00:00Z"), now: Date()).get().body
        let slice = HistorySlice(records: [StoredRecord(id: Make.id("h").description, version: 1, type: "habit", body: body,
                                                        deviceId: "d", seq: 7)], more: true, epoch: "e1")
        let page = try SyncAPI.decoder().decode(HistoryPage.self, from: RecordRoutes.historyPage(slice, after: 3))
        #expect(page.next == 7 && page.more && page.records.count == 1 && page.epoch == "e1")
        #expect(page.records[0].problem == nil && page.records[0].seq == 7 && page.records[0].deviceId == "d")
        let empty = try SyncAPI.decoder().decode(HistoryPage.self,
                                                 from: RecordRoutes.historyPage(HistorySlice(records: [], more: false, epoch: "e1"), after: 3))
        #expect(empty == HistoryPage(records: [], next: 3, more: false, epoch: "e1"))

        // A tombstone: deleted, no data; the client reads it as a deletion.
        let tombstone = HistorySlice(records: [StoredRecord(id: Make.id("h").description, version: 2, type: "habit", body: nil,
                                                            deviceId: "d", seq: 8)], more: false, epoch: "e1")
        let json = RecordRoutes.historyPage(tombstone, after: 7)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let entry = try #require((object["records"] as? [[String: Any]])?.first)
        #expect(entry["deleted"] as? Bool == true && entry["data"] == nil && entry["seq"] as? Int == 8 && entry["version"] as? Int == 2)
        let decoded = try SyncAPI.decoder().decode(HistoryPage.self, from: json)
        #expect(decoded.records.count == 1 && decoded.records[0].data == nil && decoded.records[0].deleted
                && decoded.records[0].problem == nil)
        #expect(String(decoding: json, as: UTF8.self).hasPrefix(#"{"epoch":"e1","more":false,"next":8,"records":[{"deleted":true,"#))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The SQLite store in process.
@Suite struct SQLiteStoreTests {
    /// Uploads reach the database file itself soon after they are stored (the background
    /// checkpoint), so a copy of the file alone, as a naive backup takes it, holds them.
    @Test func storedRecordsReachTheDatabaseFile() async throws {
        let folder = NSTemporaryDirectory() + "hg-server-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try SQLiteServerStore(path: folder + "/server.sqlite")
        let account = try await store.createAccount(email: "a@example.org", passwordHash: "x", now: Date())
        let device = try await store.createDevice(userId: account.id, name: "d", tokenHash: "h", now: Date())
        let checker = UploadChecker()
        let records = (0..<200).map { i in
            WireRecord(.habit(HabitEvent(id: RecordID.derive("ckpt", String(i)), habit: "water",
                                         time: Date(timeIntervalSince1970: 1_700_000_000 + Double(i)), source: Source(driver: "test"))))
        }
        let incoming = try records.map { try checker.check($0, now: Date()).get() }
        let outcomes = try await store.upsert(incoming, userId: account.id, deviceId: device.id, now: Date())
        #expect(outcomes.count == 200)

        // Poll a copy of the main file (no -wal beside it) until it holds every record.
        var copied = 0, attempt = 0
        #expect(try await cameTrue(every: .milliseconds(100)) {
            defer { attempt += 1 }
            let copy = folder + "/copy-\(attempt).sqlite"
            try FileManager.default.copyItem(atPath: folder + "/server.sqlite", toPath: copy)
            // A copy taken while a checkpoint writes the file can be torn ("database disk image is
            // malformed", seen in a full run), as a naive backup's can: not yet, copied again.
            // No table yet: 0.
            guard let queue = try? DatabaseQueue(path: copy) else { return false }
            copied = (try? await queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM records") }) ?? 0
            return copied == 200
        }, "a copy of the file holds \(copied) of the 200 records")
    }

    /// A database as a release left it: migrated up to `upTo` (the first release's
    /// `server-v1-records` unless told), with rows.
    private func releasedDatabase(_ folder: String, upTo: String = "server-v1-records", _ fill: (Database) throws -> Void) throws -> String {
        let path = folder + "/server.sqlite"
        let queue = try DatabaseQueue(path: path)
        try SQLiteServerSchema.migrator.migrate(queue, upTo: upTo)
        try queue.write(fill)
        try queue.close()
        return path
    }

    /// History cursors become per user: existing rows are renumbered 1, 2, 3 ... per user in
    /// their old order, the counters continue from there, and the epoch is set.
    @Test func migrationRenumbersHistoryPerUser() async throws {
        let folder = NSTemporaryDirectory() + "hg-server-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try releasedDatabase(folder) { db in
            for user in ["a", "b"] {
                try db.execute(sql: "INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, 'x', '2026-01-01T00:00:00Z')",
                               arguments: [user, user + "@example.org"])
                try db.execute(sql: "INSERT INTO devices (id, user_id, name, token_hash, created_at) VALUES (?, ?, 'd', ?, '2026-01-01T00:00:00Z')",
                               arguments: [user + "-device", user, user + "-token"])
            }
            // Interleaved global change numbers, with a gap (a replaced version).
            for (user, record) in [("a", "r1"), ("b", "r1"), ("a", "r2"), ("b", "r2"), ("a", "gone"), ("a", "r3")] {
                try db.execute(sql: """
                    INSERT INTO records (user_id, record_id, version, type, start_time, end_time, body, device_id, received_at)
                    VALUES (?, ?, 1, 'habit', 1, 1, '{}', ?, '2026-01-01T00:00:00Z')
                    """, arguments: [user, record, user + "-device"])
            }
            try db.execute(sql: "DELETE FROM records WHERE record_id = 'gone'")
        }
        let store = try SQLiteServerStore(path: path)
        #expect(try store.appliedMigrations().suffix(4) == ["server-v2-history-per-user", "server-v2-email-nfkc-casefold", "server-v3-definitions",
                                                             "server-v4-record-keys"])
        let a = try await store.history(userId: "a", after: 0, limit: 100, byteBudget: 1 << 20)
        let b = try await store.history(userId: "b", after: 0, limit: 100, byteBudget: 1 << 20)
        #expect(a.records.map(\.id) == ["r1", "r2", "r3"] && a.records.map(\.seq) == [1, 2, 3])
        #expect(b.records.map(\.id) == ["r1", "r2"] && b.records.map(\.seq) == [1, 2])
        #expect(a.epoch.count == 32 && a.epoch == b.epoch)

        // The user's counter continues after the renumbered rows, whatever the other user does.
        let checker = UploadChecker()
        let record = try checker.check(Make.habit("new", time: "2026-03-02T10:00:00Z"), now: Date()).get()
        #expect(try await store.upsert([record], userId: "b", deviceId: "b-device", now: Date()) == [.accepted(seq: 3)])
        #expect(try await store.upsert([record], userId: "a", deviceId: "a-device", now: Date()) == [.accepted(seq: 4)])

        // Another database gets another epoch.
        let other = try SQLiteServerStore(path: folder + "/other.sqlite")
        #expect(try await other.history(userId: "a", after: 0, limit: 1, byteBudget: 1).epoch != a.epoch)
    }

    /// Records are found by a 16-byte key of (user, record id) once `server-v4-record-keys` has
    /// rebuilt the table: every row keeps its number, version and body; the same record id under
    /// two accounts stays two records; uploads and deletions after the move find the old rows.
    @Test func migrationKeysRecordsPerUser() async throws {
        let folder = NSTemporaryDirectory() + "hg-server-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shared = Make.id("shared").description, gone = Make.id("gone").description
        let path = try releasedDatabase(folder, upTo: "server-v3-definitions") { db in
            for user in ["a", "b"] {
                try db.execute(sql: "INSERT INTO users (id, email, password_hash, created_at, change_seq) VALUES (?, ?, 'x', '2026-01-01T00:00:00Z', 2)",
                               arguments: [user, user + "@example.org"])
                try db.execute(sql: "INSERT INTO devices (id, user_id, name, token_hash, created_at) VALUES (?, ?, 'd', ?, '2026-01-01T00:00:00Z')",
                               arguments: [user + "-device", user, user + "-token"])
            }
            // The same record id under both accounts; user a also holds a tombstone of version 2.
            for (user, record, seq, version, body) in [("a", shared, 1, 1, "{\"a\":1}"), ("b", shared, 1, 1, "{\"b\":1}"),
                                                      ("a", gone, 2, 2, nil), ("b", Make.id("other").description, 2, 1, "{}")] {
                try db.execute(sql: """
                    INSERT INTO records (user_id, seq, record_id, version, type, start_time, end_time, body, device_id, received_at)
                    VALUES (?, ?, ?, ?, 'habit', 1, 1, ?, ?, '2026-01-01T00:00:00Z')
                    """, arguments: [user, seq, record, version, body, user + "-device"])
            }
        }
        let store = try SQLiteServerStore(path: path)
        #expect(try store.appliedMigrations().last == "server-v4-record-keys")
        let a = try await store.history(userId: "a", after: 0, limit: 10, byteBudget: 1 << 20)
        let b = try await store.history(userId: "b", after: 0, limit: 10, byteBudget: 1 << 20)
        #expect(a.records.map(\.id) == [shared, gone] && a.records.map(\.seq) == [1, 2] && a.records.map(\.body) == ["{\"a\":1}", nil])
        #expect(b.records.map(\.id) == [shared, Make.id("other").description] && b.records.map(\.body) == ["{\"b\":1}", "{}"])
        let keys = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, record_id, record_key FROM records").map { row -> Bool in
                let key: Data = row["record_key"]
                return key == SQLiteServerSchema.recordKey(userId: row["user_id"], recordId: row["record_id"])
            }
        }
        #expect(keys == [true, true, true, true])

        // The old rows are found: the same version is a duplicate for both accounts, a newer one
        // replaces only its own account's record, and the tombstone's version still holds.
        let checker = UploadChecker()
        let first = try checker.check(Make.habit("shared", time: "2026-03-02T10:00:00Z"), now: Date()).get()
        let second = try checker.check(Make.habit("shared", version: 2, time: "2026-03-02T10:00:00Z"), now: Date()).get()
        let overTombstone = try checker.check(Make.habit("gone", version: 2, time: "2026-03-02T10:00:00Z"), now: Date()).get()
        #expect(try await store.upsert([first], userId: "a", deviceId: "a-device", now: Date()) == [.duplicate])
        #expect(try await store.upsert([first], userId: "b", deviceId: "b-device", now: Date()) == [.duplicate])
        #expect(try await store.upsert([second, overTombstone], userId: "a", deviceId: "a-device", now: Date()) == [.accepted(seq: 3), .duplicate])
        let bAfter = try await store.history(userId: "b", after: 0, limit: 10, byteBudget: 1 << 20)
        #expect(bAfter.records.first?.version == 1 && bAfter.records.first?.body == "{\"b\":1}")
        #expect(try await store.deleteRecord(id: shared, userId: "b", deviceId: "b-device", now: Date()))
        let aAfter = try await store.history(userId: "a", after: 2, limit: 10, byteBudget: 1 << 20)
        #expect(aAfter.records.map(\.version) == [2] && aAfter.records.first?.body != nil)

        // The key is unique: a second row of one (user, record id) is refused by the database itself.
        await #expect(throws: DatabaseError.self) {
            try await store.pool.write { db in
                try db.execute(sql: """
                    INSERT INTO records (user_id, seq, record_id, record_key, version, type, start_time, end_time, body, device_id, received_at)
                    VALUES ('a', 99, ?, ?, 1, 'habit', 1, 1, '{}', 'a-device', '2026-01-01T00:00:00Z')
                    """, arguments: [shared, SQLiteServerSchema.recordKey(userId: "a", recordId: shared)])
            }
        }
    }

    /// Stored emails are normalised; accounts that collide keep their emails and are listed.
    @Test func migrationNormalisesEmailsAndListsCollisions() async throws {
        let folder = NSTemporaryDirectory() + "hg-server-store-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let users = [
            ("u1", "straße@example.org", "2026-01-01T00:00:00Z"),   // the oldest of its group
            ("u2", "strasse@example.org", "2026-01-02T00:00:00Z"),  // already the normalised form: keeps it
            ("u3", "\u{FB01}sh@example.org", "2026-01-03T00:00:00Z"),  // alone: normalised
            ("u4", "ａｎｎ@example.org", "2026-01-04T00:00:00Z"),     // oldest of a group without the normal form
            ("u5", "ann\u{FF20}example.org", "2026-01-05T00:00:00Z"),  // full-width @: same group, newer
            ("u6", "bob@example.org", "2026-01-06T00:00:00Z"),      // untouched
        ]
        let path = try releasedDatabase(folder) { db in
            for (id, email, created) in users {
                try db.execute(sql: "INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, 'x', ?)",
                               arguments: [id, email, created])
            }
        }
        let store = try SQLiteServerStore(path: path)
        #expect(try await store.account(email: "strasse@example.org")?.id == "u2")
        #expect(try await store.account(id: "u1")?.email == "straße@example.org")
        #expect(try await store.account(email: "fish@example.org")?.id == "u3")
        #expect(try await store.account(email: "ann@example.org")?.id == "u4")
        #expect(try await store.account(id: "u5")?.email == "ann\u{FF20}example.org")
        #expect(try await store.account(email: "bob@example.org")?.id == "u6")
        let collisions = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, normalized, holder_id FROM email_collisions ORDER BY user_id").map {
                [$0["user_id"], $0["normalized"], $0["holder_id"]] as [String]
            }
        }
        #expect(collisions == [["u1", "strasse@example.org", "u2"], ["u5", "ann@example.org", "u4"]])
    }
}
