import Foundation
import Glibc
import HealthModel
import SyncProtocol
import Testing
import TestSupport
@testable import HealthGateServer

/// One account sending hostile upload bodies must not take the server from everyone else:
/// bounded CPU and memory per body, and the work done in turns between accounts.
@Suite struct HostileBodyTests {
    /// One gzip upload of a measurement whose `extra` has `keys` members.
    static func extraUpload(keys: Int) throws -> Data {
        let extra = Dictionary(uniqueKeysWithValues: (0..<keys).map { ("k\($0)", Double($0)) })
        let m = HealthModel.Measurement(id: Make.id("extra-\(keys)"), kind: .weight, time: Make.date("2026-03-02T07:00:00Z"),
                                        value: 70, extra: extra, source: Source(driver: "ble", device: "scale"))
        return gzip(Data(try SyncJSONEncoder().encode(UploadRequest(records: [WireRecord(.measurement(m))]))))
    }

    /// A measurement `extra` of many keys used to cost a scan of the object per key (40,000 keys:
    /// 13 s of CPU in a release build). Under the per-object cap it now decodes in linear time;
    /// over it the parser refuses it at once.
    @Test func largeObjectsCostLinearTime() async throws {
        let server = try await ServerProcess.start()
        let (api, _) = try await APIClient(server).account("keys@example.org")
        let pid = server.process.processIdentifier

        let under = try Self.extraUpload(keys: SyncJSONDecoder.maximumMembers - 1)
        var cpu = ProcessStats.cpuSeconds(pid)
        let reply = try await api.send(.POST, "/v1/records", body: under, headers: [("Content-Encoding", "gzip")], timeout: .seconds(300))
        // Decoded: accepted, or rejected by the model's own rules, either way one result.
        #expect(reply.status == 200, "\(reply.text)")
        #expect(try reply.decode(UploadResponse.self).results.count == 1)
        // Generous: about 0.2 s in a debug build; the scan per key took over 10 s.
        #expect(ProcessStats.cpuSeconds(pid) - cpu < 3, "CPU for \(SyncJSONDecoder.maximumMembers - 1) keys")

        let over = try Self.extraUpload(keys: 40_000)
        #expect(over.count < 200_000)
        cpu = ProcessStats.cpuSeconds(pid)
        let refused = try await api.send(.POST, "/v1/records", body: over, headers: [("Content-Encoding", "gzip")], timeout: .seconds(300))
        #expect(refused.status == 400)
        let message = try refused.error().message
        #expect(message.hasPrefix("request body is not a valid UploadRequest: not valid JSON (more than 10000 members in an object at byte "),
                "\(message)")
        #expect(ProcessStats.cpuSeconds(pid) - cpu < 3, "CPU for 40,000 keys")
        #expect(try await api.send(.GET, "/v1/health").status == 200)
    }

    /// 32 MiB of `0,` inflated from a 33 KB gzip body made the server allocate about 430 MB
    /// (a copy of the body and 20 bytes per value) before any check. Uploads are read record by
    /// record now: bare numbers are refused at the first one, having cost nothing; the same
    /// numbers inside one record fill that record's text, whose index may not outgrow it:
    /// refused with 413 halfway, the peak resident memory grown by at most the record and its
    /// index.
    @Test func aGzipBombOfNumbersIsRefusedWithinItsSize() async throws {
        let server = try await ServerProcess.start()
        let (api, _) = try await APIClient(server).account("bomb@example.org")
        let pid = server.process.processIdentifier
        // Warm up: one normal upload and history.
        #expect(try await api.uploadStatuses([Make.measurement("warm", time: "2026-03-02T06:00:00Z")]) == [.accepted])
        #expect(try await api.allHistory().count == 1)

        func bomb(head: String, tail: String) -> Data {
            let head = Array(head.utf8), tail = Array(tail.utf8)
            let zeros = (SyncAPI.maxBodyBytes - head.count - tail.count) / 2
            var text = head
            text.reserveCapacity(SyncAPI.maxBodyBytes)
            for _ in 0..<zeros { text.append(contentsOf: [UInt8(ascii: "0"), UInt8(ascii: ",")]) }
            text += tail
            #expect(text.count <= SyncAPI.maxBodyBytes && text.count > SyncAPI.maxBodyBytes - 4)
            return gzip(Data(text), level: 9)
        }

        let bare = bomb(head: #"{"records":["#, tail: "0]}")
        #expect(bare.count < 40_000)
        var before = ProcessStats.statusKB(pid, field: "VmHWM:")
        let bareReply = try await api.send(.POST, "/v1/records", body: bare, headers: [("Content-Encoding", "gzip")], timeout: .seconds(300))
        var after = ProcessStats.statusKB(pid, field: "VmHWM:")
        #expect(bareReply.status == 400)
        #expect(try bareReply.error().message == "request body is not a valid UploadRequest: expected Dictionary<String, Any> at records.[0]")
        #expect(before > 0 && after - before < 16 * 1024, "peak RSS grew by \((after - before) / 1024) MiB")

        let inOne = bomb(head: #"{"records":[{"id":"x","type":"habit","version":1,"data":["#, tail: "0]}]}")
        before = ProcessStats.statusKB(pid, field: "VmHWM:")
        let reply = try await api.send(.POST, "/v1/records", body: inOne, headers: [("Content-Encoding", "gzip")], timeout: .seconds(300))
        after = ProcessStats.statusKB(pid, field: "VmHWM:")
        #expect(reply.status == 413)
        #expect(try reply.error().code == "payload_too_large")
        #expect(try reply.error().message.hasPrefix("request body holds more values than a body of its size can: more values than"))
        // The record's text (32 MiB) and at most as much index: 64 MiB here. It was 384 MiB.
        #expect(before > 0 && after - before < 128 * 1024, "peak RSS grew by \((after - before) / 1024) MiB")

        // And it goes on serving.
        #expect(try await api.send(.GET, "/v1/health").status == 200)
        #expect(try await api.uploadStatuses([Make.measurement("after", time: "2026-03-02T06:01:00Z")]) == [.accepted])
    }

    /// An account may have at most 8 uploads in progress; the next is answered 429 with
    /// Retry-After at once, other accounts are not affected, and the slots come back when the
    /// uploads end (here: their connections close in the middle of their bodies).
    @Test func anAccountsUploadsInProgressAreLimited() async throws {
        let server = try await ServerProcess.start()
        let (flooder, login) = try await APIClient(server).account("flood@example.org")
        let (other, _) = try await APIClient(server).account("other@example.org")
        let port = try #require(server.url.port)

        // Eight uploads whose bodies never finish arriving: each holds a slot.
        let request = "POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(login.token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"records\":["
        func stall() throws -> RawConnection {
            let connection = try RawConnection(port: port)
            guard connection.send(request) else { throw ServerFailure("the server closed a stalled upload at once") }
            return connection
        }
        var stalled = try (0..<UploadWorkers.defaultInProgressPerAccount).map { _ in try stall() }
        let small = [Make.habit("one", time: "2026-03-02T10:00:00Z")]
        // Once the server has taken the eight in, one more is refused at once. (A stalled upload
        // that arrived while a probe held a slot was refused itself: it is replaced.)
        let refused: Reply
        do {
            refused = try await poll("a 429 once eight uploads are in") { () -> Reply? in
                for index in stalled.indices where stalled[index].wasAnswered {
                    stalled[index].close()
                    stalled[index] = try stall()
                }
                let reply = try await flooder.upload(small)
                return reply.status == 429 ? reply : nil
            }
        } catch {
            Issue.record("\(error): \(server.log.suffix(6000))")
            return
        }
        #expect(refused.headers.first(name: "Retry-After") == "1")
        #expect(try refused.error().code == "too_many_requests")
        #expect(try refused.error().message == "this account already has 8 uploads in progress: wait for their answers")
        // Another account uploads as usual.
        #expect(try await other.uploadStatuses(small) == [.accepted])

        // The stalled uploads end with their connections: the account uploads again.
        for connection in stalled { connection.close() }
        let accepted = try await poll("a 200 once the eight are gone") { () -> Reply? in
            let reply = try await flooder.upload(small)
            return reply.status == 200 ? reply : nil
        }
        // (An attempt before the eight were in may have stored it already.)
        #expect(try [[.accepted], [.duplicate]].contains(accepted.decode(UploadResponse.self).results.map(\.status)))
    }

    // MARK: The schedule and the workers

    @Test func theScheduleAdmitsAndTakesTurnsPerAccount() {
        var schedule = UploadSchedule<String>(inProgressPerAccount: 2)
        let admissions = [schedule.admit("a"), schedule.admit("a"), schedule.admit("a"), schedule.admit("b")]
        #expect(admissions == [true, true, false, true])
        schedule.release("a")
        let again = schedule.admit("a")
        #expect(again && schedule.admitted == ["a": 2, "b": 1])

        // a floods, b and c send one each: a's jobs run one at a time, between the others'.
        for job in ["a1", "a2", "a3"] { schedule.submit(job, for: "a", large: false, now: 0) }
        schedule.submit("b1", for: "b", large: false, now: 0)
        schedule.submit("c1", for: "c", large: false, now: 0)
        var order: [String] = []
        // Two workers: each takes a job, and a finished job lets its account's next one queue again.
        let first = schedule.take(.normal)!, second = schedule.take(.normal)!
        order += [first.job, second.job]
        #expect(order == ["a1", "b1"])
        #expect(schedule.running == ["a", "b"])
        schedule.finished("a", cpuSeconds: 0.01, now: 1)
        order.append(schedule.take(.normal)!.job)  // c was in line before a came back
        schedule.finished("b", cpuSeconds: 0.01, now: 1)
        order.append(schedule.take(.normal)!.job)
        var none = schedule.take(.normal)
        #expect(none == nil)  // a runs, c runs: nothing else may start
        schedule.finished("c", cpuSeconds: 0.01, now: 1)
        none = schedule.take(.normal)
        #expect(none == nil)
        schedule.finished("a", cpuSeconds: 0.01, now: 1)
        order.append(schedule.take(.normal)!.job)
        schedule.finished("a", cpuSeconds: 0.01, now: 1)
        #expect(order == ["a1", "b1", "c1", "a2", "a3"])
        none = schedule.take(.normal) ?? schedule.take(.bulk)
        #expect(none == nil && schedule.waitingCount == 0 && schedule.running.isEmpty)
    }

    /// Large bodies run in the bulk lane; so does every job of an account that used more than
    /// 2 s of CPU lately, until its use decays (by e every 10 s).
    @Test func largeBodiesAndHeavyAccountsRunInTheBulkLane() {
        var schedule = UploadSchedule<String>(inProgressPerAccount: 8)
        #expect(schedule.submit("big", for: "a", large: true, now: 0) == .bulk)
        #expect(schedule.submit("small", for: "a", large: false, now: 0) == .normal)
        var none = schedule.take(.normal)
        #expect(none == nil)  // a's next job is in the bulk lane
        #expect(schedule.take(.bulk)?.job == "big")
        none = schedule.take(.normal)
        #expect(none == nil)  // a has a job running
        schedule.finished("a", cpuSeconds: 3, now: 0)
        #expect(schedule.take(.normal)?.job == "small")  // queued in the normal lane, it stays there
        schedule.finished("a", cpuSeconds: 0, now: 0)

        #expect(schedule.isHeavy("a", now: 1))
        #expect(schedule.submit("next", for: "a", large: false, now: 1) == .bulk)
        #expect(schedule.submit("other", for: "b", large: false, now: 1) == .normal)
        #expect(schedule.take(.normal)?.job == "other")
        #expect(schedule.take(.bulk)?.job == "next")
        // 3 s decays below 2 s after 10 * ln(1.5) = 4.05 s.
        #expect(abs(schedule.recentCPU("a", now: 10) - 3 * exp(-1.0)) < 1e-9)
        #expect(schedule.isHeavy("a", now: 4) && !schedule.isHeavy("a", now: 4.1))
        #expect(!schedule.isHeavy("b", now: 1))
    }

    /// Real threads: while one account's job holds a worker, that account's next job waits and
    /// another account's job runs on the other worker, though it was queued later.
    @Test func aBusyAccountDoesNotHoldBackOthers() async throws {
        let workers = UploadWorkers(threads: 2)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let log = Log()
        async let a1: Void = workers.run(for: "a") {
            started.signal()
            gate.wait()
            log.add("a1")
        }
        try await onOwnThread { started.wait() }
        async let a2: Void = workers.run(for: "a") { log.add("a2") }
        // a2 is queued (behind a1) before b1.
        _ = try await poll("a2 waiting") { workers.waitingJobs == 1 ? true : nil }
        let b1Thread = try await workers.run(for: "b") { () -> String in
            log.add("b1")
            return threadStat().name
        }
        #expect(b1Thread.hasPrefix("hg-upload-"))
        #expect(log.entries == ["b1"])
        gate.signal()
        _ = try await (a1, a2)
        #expect(log.entries == ["b1", "a1", "a2"])
    }

    /// Bulk jobs run on threads of lower CPU priority (nice 10).
    @Test func bulkJobsRunWithLowerPriority() async throws {
        let workers = UploadWorkers(threads: 1)
        let normal = try await workers.run(for: "a") { threadStat() }
        let bulk = try await workers.run(for: "a", large: true) { threadStat() }
        #expect(normal.name == "hg-upload-0" && normal.nice == 0, "\(normal)")
        #expect(bulk.name == "hg-bulk-0" && bulk.nice == UploadWorkers.bulkNice, "\(bulk)")
    }

    /// Large uploads take turns in the whole server: the second waits until the first has
    /// ended (even one of another account), then runs; an error of the first passes the turn on.
    @Test func largeUploadsTakeTurns() async throws {
        struct Oops: Error {}
        let workers = UploadWorkers(threads: 2)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let log = Log()
        let first = Task {
            try await workers.oneLargeAtATime {
                try await workers.run(for: "a", large: true) {
                    started.signal()
                    gate.wait()
                    log.add("a")
                }
                throw Oops()
            }
        }
        try await onOwnThread { started.wait() }
        async let second: Void = workers.oneLargeAtATime { log.add("b") }
        _ = try await poll("b waiting") { workers.largeWaitingCount == 1 ? true : nil }
        #expect(log.entries.isEmpty)
        gate.signal()
        await #expect(throws: Oops.self) { try await first.value }
        try await second
        #expect(log.entries == ["a", "b"])
        #expect(workers.largeWaitingCount == 0)
        // The turn is free again.
        #expect(try await workers.oneLargeAtATime { 7 } == 7)
    }

    @Test func workersPassErrorsBack() async throws {
        struct Oops: Error {}
        let workers = UploadWorkers(threads: 1)
        await #expect(throws: Oops.self) { try await workers.run(for: "a") { () throws -> Int in throw Oops() } }
        #expect(try await workers.run(for: "a") { 42 } == 42)
        #expect(workers.admittedCounts.isEmpty)
    }
}

/// Appends from any thread.
private final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ entry: String) { lock.withLock { list.append(entry) } }
    var entries: [String] { lock.withLock { list } }
}

/// Retries `attempt` until it answers a value (at most ``Patience/limit``: a guard against hangs,
/// not a timing).
private func poll<T>(_ what: String, _ attempt: () async throws -> T?) async throws -> T {
    var value: T?
    try await eventually("no \(what)") {
        value = try await attempt()
        return value != nil
    }
    return value!
}

/// The calling thread's name and nice value (/proc/thread-self).
private func threadStat() -> (name: String, nice: Int32) {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
    // After the name in parentheses: state is field 3, nice field 19.
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    return (name.trimmingCharacters(in: .whitespacesAndNewlines), fields.count > 16 ? Int32(fields[16]) ?? -99 : -99)
}
