import Foundation
import HealthModel
import HealthStore
import NIOCore
import SyncProtocol

/// Drains the outbox to the tracking server and pulls the user's merged history.
///
/// A record leaves the outbox only when the server acknowledged it (accepted, or already held:
/// duplicate); a record the server rejects for good moves to the dead letters with the reason.
/// Everything else (timeouts, 5xx, 429, a connection dropped before the answer) is retried with
/// exponential backoff and jitter, honouring Retry-After: the batch is sent again and the
/// server's upsert by (id, version) makes the repeat harmless. A batch refused as too large or
/// malformed is split in halves down to the single record, which is then a dead letter.
public final class Forwarder: Sendable {
    public struct Configuration: Sendable {
        /// Records per upload.
        public var maxRecords = 1000
        /// Bytes per upload before compression.
        public var maxBytes = 8 << 20
        /// Records per history page.
        public var historyPage = 1000
        /// Retry delays: `initial` doubling up to `maximum`, each moved by up to ±`jitter`.
        public var initialDelay: Duration = .milliseconds(500)
        public var maximumDelay: Duration = .seconds(300)
        public var jitter = 0.2
        /// Batches in flight at once: the next is read and encoded while the server stores the
        /// previous one.
        public var concurrentUploads = 2
        /// Transient failures in a row before `drain` gives up (nil: never, as in the daemon).
        public var maxConsecutiveFailures: Int? = 8

        public init() {}

        /// The delay before retry `attempt` (from 1); `random` in 0...1.
        public func delay(attempt: Int, random: Double) -> Duration {
            let initial = Double(initialDelay.components.seconds) + Double(initialDelay.components.attoseconds) / 1e18
            let maximum = Double(maximumDelay.components.seconds) + Double(maximumDelay.components.attoseconds) / 1e18
            let base = min(maximum, initial * pow(2, Double(max(0, attempt - 1))))
            let factor = 1 + jitter * (2 * min(max(random, 0), 1) - 1)
            return .milliseconds(Int64(base * factor * 1000))
        }
    }

    /// What a drain did.
    public struct DrainReport: Sendable, Equatable, Encodable {
        public var uploads = 0
        public var accepted = 0
        public var duplicates = 0
        public var rejected = 0
        public var retries = 0
        /// Records still in the outbox afterwards.
        public var remaining = 0
        enum CodingKeys: String, CodingKey { case uploads, accepted, duplicates, rejected, retries, remaining }

        mutating func add(_ outcome: Outcome) {
            uploads += outcome.uploads
            accepted += outcome.accepted
            duplicates += outcome.duplicates
            rejected += outcome.refused.count
        }
    }

    /// What a history pull did.
    public struct PullReport: Sendable, Equatable, Encodable {
        public var pages = 0
        public var received = 0
        /// Received records that were new or newer here.
        public var stored = 0
        public var cursor: Int64 = 0
        enum CodingKeys: String, CodingKey { case pages, received, stored, cursor }
    }

    /// Progress of a drain: records settled so far and the outbox depth when it began.
    public struct Progress: Sendable {
        public var settled: Int
        public var total: Int
    }

    public let store: HealthStore
    public let client: SyncClient
    public let token: String
    public let configuration: Configuration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double

    public init(store: HealthStore, client: SyncClient, token: String, configuration: Configuration = Configuration(),
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
                random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.store = store
        self.client = client
        self.token = token
        self.configuration = configuration
        self.sleep = sleep
        self.random = random
    }

    // MARK: Drain

    /// Sends everything in the outbox, oldest first, until it is empty, with up to
    /// `concurrentUploads` batches in flight (the next batch is read and encoded while the
    /// server stores the previous one). Throws on 401 (log in again), when the failures in a row
    /// exceed the limit, or when cancelled; what was acknowledged before stays acknowledged.
    public func drain(progress: (@Sendable (Progress) -> Void)? = nil) async throws -> DrainReport {
        var report = DrainReport()
        let total = try store.outboxDepth()
        var settled = 0
        var failures = 0
        var succeeded = false
        var finished = false
        // Recorded once at the end, not per batch (the drain's hot path); an error recorded on
        // the way stays unless the drain finished.
        defer {
            if succeeded { try? store.setSyncState("last_success_at", ISO8601.string(Date())) }
            if finished { try? store.setSyncState("last_error", nil) }
        }
        try await withThrowingTaskGroup(of: Result<Outcome, SyncError>.self) { group in
            var readUpTo: Int64 = 0  // outbox rows up to here are settled or in flight
            var inFlight = 0
            var exhausted = false
            var retryAfter: Duration?  // set by a transient failure: no new batches until the window is empty
            while true {
                while !exhausted, retryAfter == nil, inFlight < max(1, configuration.concurrentUploads) {
                    try Task.checkCancellation()
                    let entries = try store.outbox(after: readUpTo, limit: configuration.maxRecords)
                    guard !entries.isEmpty else {
                        exhausted = true
                        break
                    }
                    let batch = try encodeBatch(entries)
                    readUpTo = batch.lastSeq
                    if !batch.missing.isEmpty {
                        try store.acknowledge(batch.missing)  // records replaced or deleted since: nothing to send
                        settled += batch.missing.count
                    }
                    guard !batch.entries.isEmpty else { continue }
                    inFlight += 1
                    group.addTask {
                        do throws(SyncError) { return .success(try await self.send(batch.entries, batch.bodies)) } catch {
                            return .failure(error)
                        }
                    }
                }
                guard inFlight > 0 else {
                    guard let wait = retryAfter else { break }
                    // Every batch in flight has come back: wait, then read the outbox from the start
                    // (the failed batch is still in it).
                    try await sleep(wait)
                    retryAfter = nil
                    readUpTo = 0
                    exhausted = false
                    continue
                }
                guard let result = try await group.next() else { break }
                inFlight -= 1
                switch result {
                case .success(let outcome):
                    try store.settle(acknowledged: outcome.acknowledged, refused: outcome.refused)
                    report.add(outcome)
                    settled += outcome.acknowledged.count + outcome.refused.count
                    failures = 0
                    succeeded = true
                    progress?(Progress(settled: settled, total: total))
                case .failure(let error):
                    report.uploads += 1
                    try store.setSyncState("last_error", error.description)
                    try store.setSyncState("last_error_at", ISO8601.string(Date()))
                    guard case .transient(_, let serverWait) = error else { throw error }
                    failures += 1
                    report.retries += 1
                    if let limit = configuration.maxConsecutiveFailures, failures >= limit { throw error }
                    let backoff = max(configuration.delay(attempt: failures, random: random()), serverWait ?? .zero)
                    retryAfter = max(retryAfter ?? .zero, backoff)
                }
            }
        }
        finished = true
        report.remaining = try store.outboxDepth()
        return report
    }

    struct Batch: Sendable {
        var entries: [OutboxEntry] = []
        var bodies: [ByteBuffer] = []
        var missing: [Int64] = []
        /// The last outbox row this batch covers (sent or missing).
        var lastSeq: Int64 = 0
    }

    /// Loads and encodes the records of `entries`, keeping to the byte cap (at least one record).
    func encodeBatch(_ entries: [OutboxEntry]) throws -> Batch {
        var batch = Batch()
        var bytes = 0
        let encoder = SyncJSONEncoder()
        for (entry, record) in zip(entries, try store.records(for: entries)) {
            guard let record else {
                batch.missing.append(entry.seq)
                batch.lastSeq = entry.seq
                continue
            }
            let body = ByteBuffer(bytes: try encoder.encode(WireRecord(record)))
            if !batch.entries.isEmpty, bytes + body.readableBytes > configuration.maxBytes { break }
            bytes += body.readableBytes + 1
            batch.entries.append(entry)
            batch.bodies.append(body)
            batch.lastSeq = entry.seq
        }
        return batch
    }

    /// What the server did with a batch, and the uploads it took.
    struct Outcome: Sendable {
        var acknowledged: [Int64] = []
        var refused: [(seq: Int64, reason: String)] = []
        var uploads = 0
        var accepted = 0
        var duplicates = 0
    }

    /// Uploads one batch; on a refusal of the whole batch (too large, malformed) splits it in
    /// halves, down to the single record that the server refuses, which becomes a dead letter.
    func send(_ entries: [OutboxEntry], _ bodies: [ByteBuffer]) async throws(SyncError) -> Outcome {
        var body = ByteBuffer()
        body.writeString("{\"records\":[")
        for (index, part) in bodies.enumerated() {
            if index > 0 { body.writeString(",") }
            body.writeImmutableBuffer(part)
        }
        body.writeString("]}")
        let response: UploadResponse
        do {
            response = try await client.upload(body: body, token: token)
        } catch .refused(let status, let code, let message) {
            let why = "server refused it: \(status) \(code): \(message)"
            guard entries.count > 1 else { return Outcome(refused: [(entries[0].seq, why)], uploads: 1) }
            let half = entries.count / 2
            var first = try await send(Array(entries[..<half]), Array(bodies[..<half]))
            let second = try await send(Array(entries[half...]), Array(bodies[half...]))
            first.acknowledged += second.acknowledged
            first.refused += second.refused
            first.uploads += second.uploads + 1
            first.accepted += second.accepted
            first.duplicates += second.duplicates
            return first
        }
        guard response.results.count == entries.count else {
            throw SyncError.invalidResponse("\(response.results.count) results for \(entries.count) records")
        }
        var outcome = Outcome(uploads: 1)
        for (entry, result) in zip(entries, response.results) {
            guard result.id.lowercased() == entry.id else {
                throw SyncError.invalidResponse("result for \(result.id) where \(entry.id) was sent")
            }
            switch result.status {
            case .accepted:
                outcome.accepted += 1
                outcome.acknowledged.append(entry.seq)
            case .duplicate:
                outcome.duplicates += 1
                outcome.acknowledged.append(entry.seq)
            case .rejected:
                outcome.refused.append((entry.seq, result.reason ?? "rejected"))
            }
        }
        return outcome
    }

    // MARK: Pull

    /// Pulls the records changed on the server since the saved cursor (the user's other devices'
    /// uploads, and this device's own, which change nothing here) and stores them without
    /// queueing them back. The cursor advances in the same transaction as each page.
    public func pull() async throws -> PullReport {
        var report = PullReport()
        var cursor = Int64(try store.syncState("history_cursor") ?? "0") ?? 0
        var failures = 0
        while true {
            try Task.checkCancellation()
            let page: HistoryPage
            do {
                page = try await client.history(after: cursor, limit: configuration.historyPage, token: token)
                failures = 0
            } catch {
                guard case .transient(_, let retryAfter) = error else { throw error }
                failures += 1
                if let limit = configuration.maxConsecutiveFailures, failures >= limit { throw error }
                try await sleep(max(configuration.delay(attempt: failures, random: random()), retryAfter ?? .zero))
                continue
            }
            let records = page.records.compactMap { try? $0.record() }
            let written = try store.writePulled(records, cursor: page.next)
            report.pages += 1
            report.received += page.records.count
            report.stored += written.stored
            cursor = page.next
            if !page.more || page.records.isEmpty { break }
        }
        report.cursor = cursor
        return report
    }
}
