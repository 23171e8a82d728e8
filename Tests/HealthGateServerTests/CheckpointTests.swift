import Foundation
import GRDB
import HealthGateServer
import HealthModel
import Logging
import Synchronization
import SyncProtocol
import Testing
import TestSupport

/// The server's write-ahead log under load that never pauses.
@Suite struct CheckpointTests {
    /// With a read always open (every request looks its token up) and uploads always coming,
    /// passive checkpoints can never finish and a writer can never start the log over: at 5,000
    /// devices syncing every 10 s the log grew to 9.75 GB in 4 minutes. Past its limit the
    /// checkpointer now waits for the readers and empties it.
    @Test func theWriteAheadLogStaysBoundedWhileReadersNeverStop() async throws {
        let scratch = try Scratch()
        var policy = CheckpointPolicy()
        policy.interval = .milliseconds(50)
        policy.walLimitBytes = 1 << 20
        let log = LogLines()
        let store = try SQLiteServerStore(path: scratch.dbPath, checkpoints: policy, logger: log.logger)
        let account = try await store.createAccount(email: "a@example.org", passwordHash: "x", now: Date())
        let device = try await store.createDevice(userId: account.id, name: "d", tokenHash: "token-hash", now: Date())

        let stop = Flag()
        // Two connections of the test's own take turns holding a read transaction, the next one
        // opened before the last one closes, so that a reader is always on the log...
        let path = scratch.dbPath
        let heldReads = Task { try await onOwnThread { try holdReadsOpen(path: path, until: stop) } }
        // ...and the server's own reads run alongside: token lookups and history pulls.
        let pulls = (0..<3).map { _ in
            Task {
                var count = 0
                while !stop.isSet {
                    _ = try await store.principal(tokenHash: "token-hash")
                    _ = try await store.history(userId: account.id, after: 0, limit: 50, byteBudget: 1 << 20)
                    count += 1
                }
                return count
            }
        }

        // 30,000 records of over 1 KB each, in uploads of 200, prepared beforehand: two writers
        // then upload them back to back, so that the log never has a quiet moment to catch up in.
        let checker = UploadChecker()
        let note = String(repeating: "n", count: 1000)
        let batches = try (0..<150).map { batch in
            try (0..<200).map { i in
                let number = batch * 200 + i
                let record = WireRecord(.habit(HabitEvent(id: RecordID.derive("wal", String(number)), habit: "water",
                                                          time: Date(timeIntervalSince1970: 1_700_000_000 + Double(number)),
                                                          note: note, source: Source(driver: "test"))))
                return try checker.check(record, now: Date()).get()
            }
        }
        let nextBatch = Counter()
        let walPath = scratch.dbPath + "-wal"
        let (largestLog, accepted) = try await withThrowingTaskGroup(of: (Int64, Int).self) { group in
            for _ in 0..<2 {
                group.addTask {
                    var largest: Int64 = 0
                    var accepted = 0
                    while true {
                        let index = nextBatch.next()
                        guard index < batches.count else { break }
                        let outcomes = try await store.upsert(batches[index], userId: account.id, deviceId: device.id, now: Date())
                        accepted += outcomes.count
                        largest = max(largest, fileSize(walPath))
                    }
                    return (largest, accepted)
                }
            }
            return try await group.reduce((Int64(0), 0)) { (max($0.0, $1.0), $0.1 + $1.1) }
        }
        #expect(accepted == 30_000)
        stop.set()
        let turns = try await heldReads.value
        var pulled = 0
        for pull in pulls { pulled += try await pull.value }

        // The load was real: readers took turns throughout, and the records are in the file.
        #expect(turns > 10 && pulled > 10)
        #expect(fileSize(scratch.dbPath) + fileSize(scratch.dbPath + "-wal") > 30 << 20)
        // The log stayed within a few times its limit (the limit plus what arrives between two
        // checks), where without the forced checkpoints it held all 30+ MB.
        #expect(largestLog < 32 << 20, "the write-ahead log reached \(largestLog) bytes")
        #expect(log.lines.contains { $0.contains("over its 1 MiB limit (readers kept passive checkpoints from finishing): waited for them and emptied it in") })
    }

    @Test func theCheckpointPolicyDefaults() {
        let policy = CheckpointPolicy()
        #expect(policy.interval == .milliseconds(500))
        #expect(policy.walLimitBytes == 64 << 20)
    }
}

/// Reads on two connections of their own, each transaction opened before the previous one is
/// closed, until `stop`; answers how many turns were taken.
private func holdReadsOpen(path: String, until stop: Flag) throws -> Int {
    var configuration = Configuration()
    configuration.allowsUnsafeTransactions = true  // a transaction left open across accesses
    configuration.busyMode = .timeout(10)
    var holding = try DatabaseQueue(path: path, configuration: configuration)
    var next = try DatabaseQueue(path: path, configuration: configuration)
    func begin(_ queue: DatabaseQueue) throws {
        try queue.inDatabase { db in
            try db.execute(sql: "BEGIN")
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM devices")  // the snapshot starts here
        }
    }
    func end(_ queue: DatabaseQueue) throws {
        try queue.inDatabase { db in try db.execute(sql: "COMMIT") }
    }
    try begin(holding)
    var turns = 0
    while !stop.isSet {
        Thread.sleep(forTimeInterval: 0.01)
        try begin(next)
        try end(holding)
        swap(&holding, &next)
        turns += 1
    }
    try end(holding)
    return turns
}

private func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
}

/// A flag set once, read from any thread.
private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// 0, 1, 2... to any thread that asks.
private final class Counter: Sendable {
    private let value = Mutex(0)

    func next() -> Int {
        value.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}
