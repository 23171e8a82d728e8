import Foundation
import GRDB
import Gzip
import HealthModel
import SyncProtocol
import Testing
import TestSupport
@testable import HealthGateServer

/// The server's pure pieces, without a process.
@Suite struct UnitTests {
    let t0 = Date(timeIntervalSince1970: 1_780_000_000)

    @Test func loginAttemptsCountPerEmailAndPerClient() {
        var attempts = LoginAttempts(policy: .init(maxFailures: 3, window: 600))
        for i in 0..<3 {
            #expect(attempts.retryAfter(email: "a", client: "1.1.1.1", now: t0) == nil)
            attempts.recordFailure(email: "a", client: "1.1.1.\(i + 1)", now: t0.addingTimeInterval(Double(i)))
        }
        // Three failures for the email from three addresses: the email is blocked everywhere.
        #expect(attempts.retryAfter(email: "a", client: "9.9.9.9", now: t0.addingTimeInterval(10)) == 590)
        #expect(attempts.retryAfter(email: "b", client: "1.1.1.1", now: t0.addingTimeInterval(10)) == nil)
        // ...until the oldest of them is as old as the window.
        #expect(attempts.retryAfter(email: "a", client: "9.9.9.9", now: t0.addingTimeInterval(599.5)) == 1)
        #expect(attempts.retryAfter(email: "a", client: "9.9.9.9", now: t0.addingTimeInterval(600)) == nil)

        // Three failures from one address for three emails: the address is blocked for every email.
        var byClient = LoginAttempts(policy: .init(maxFailures: 3, window: 600))
        for email in ["x", "y", "z"] { byClient.recordFailure(email: email, client: "6.6.6.6", now: t0) }
        #expect(byClient.retryAfter(email: "new", client: "6.6.6.6", now: t0) == 600)
        #expect(byClient.retryAfter(email: "new", client: "7.7.7.7", now: t0) == nil)
        // A success clears its email's count, not the address's.
        byClient.recordSuccess(email: "x")
        #expect(byClient.retryAfter(email: "x", client: "6.6.6.6", now: t0) == 600)
        #expect(byClient.retryAfter(email: "x", client: "7.7.7.7", now: t0) == nil)
    }

    @Test func loginAttemptsStayBounded() {
        var attempts = LoginAttempts(policy: .init(maxFailures: 2, window: 60, maxKeys: 100))
        for i in 0..<1000 {
            attempts.recordFailure(email: "e\(i)", client: "c\(i)", now: t0.addingTimeInterval(Double(i)))
        }
        #expect(attempts.keyCount <= 100)
        // The most recent stay remembered.
        attempts.recordFailure(email: "e999", client: "c999", now: t0.addingTimeInterval(1000))
        #expect(attempts.retryAfter(email: "e999", client: "other", now: t0.addingTimeInterval(1000)) != nil)
    }

    @Test func registrationsAreAdmittedPerAddressWithinTheWindow() {
        let throttle = RegistrationThrottle(policy: .init(limit: 2, window: 3600))
        #expect(throttle.admit(client: "1.1.1.1", now: t0) == nil)
        #expect(throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(100)) == nil)
        #expect(throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(200)) == 3400)
        #expect(throttle.admit(client: "2.2.2.2", now: t0.addingTimeInterval(200)) == nil)
        // A refused attempt does not count: once the first is an hour old, one more is allowed.
        #expect(throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(3600)) == nil)
        #expect(throttle.admit(client: "1.1.1.1", now: t0.addingTimeInterval(3601)) == 99)
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
        let decoded = try SyncAPI.decoder().decode(Workout.self, from: Data(incoming.body.utf8))
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

    @Test func daysAreRealCalendarDays() {
        #expect(Day("2026-03-01")?.description == "2026-03-01")
        #expect(Day("2024-02-29") != nil)
        for bad in ["2026-02-29", "2026-13-01", "2026-3-1", "2026-03-01T00:00:00Z", "", "yesterday"] {
            #expect(Day(bad) == nil, "\(bad)")
        }
        #expect(Day("2026-03-01")!.end == Day("2026-03-02")!.start)
    }

    @Test func deviceTokensAreRandomAndStoredAsSHA256() {
        let tokens = (0..<100).map { _ in DeviceToken.generate() }
        #expect(Set(tokens).count == 100)
        #expect(tokens.allSatisfy { $0.count == 43 && !$0.contains("+") && !$0.contains("/") && !$0.contains("=") })
        #expect(DeviceToken.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
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
                                                        deviceId: "d", seq: 7)], more: true)
        let page = try SyncAPI.decoder().decode(HistoryPage.self, from: RecordRoutes.historyPage(slice, after: 3))
        #expect(page.next == 7 && page.more && page.records.count == 1)
        #expect(page.records[0].problem == nil && page.records[0].seq == 7 && page.records[0].deviceId == "d")
        let empty = try SyncAPI.decoder().decode(HistoryPage.self,
                                                 from: RecordRoutes.historyPage(HistorySlice(records: [], more: false), after: 3))
        #expect(empty == HistoryPage(records: [], next: 3, more: false))
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
        var copied = 0
        for attempt in 0..<100 where copied < 200 {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(100)) }
            let copy = folder + "/copy-\(attempt).sqlite"
            try FileManager.default.copyItem(atPath: folder + "/server.sqlite", toPath: copy)
            let queue = try DatabaseQueue(path: copy)
            copied = (try? await queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM records") }) ?? 0  // no table yet: 0
        }
        #expect(copied == 200)
    }
}
