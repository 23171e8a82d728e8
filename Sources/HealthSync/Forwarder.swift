import Foundation
public import HealthModel
public import HealthStore
import NIOCore
import SyncProtocol
public import Timing

/// Drains the outbox to the tracking server and pulls the user's merged history.
///
/// A record leaves the outbox only when the server acknowledged it (accepted, or already held:
/// duplicate). Only the tracking server can make a record a dead letter: by rejecting it in its
/// per-record results, or by an error in the protocol's format that names it. Timeouts, 408,
/// 429, 5xx and answers that make no sense are retried with exponential backoff and jitter,
/// honouring Retry-After (up to ``Configuration/longestServerWait``): the batch is sent again and
/// the server's upsert by (id, version) makes the repeat harmless. Anything else (401, a
/// redirect, a proxy's 403, 404 or 407, a refusal that names no record) ends the drain with the
/// error and the records still queued: nothing is given up because of the path to the server. A
/// batch the server refuses as a whole (400, 413) is split in halves; a single record it still
/// refuses without naming it stays in the outbox, held back for this drain.
public final class Forwarder: Sendable {
    public struct Configuration: Sendable {
        /// Records per upload.
        public var maxRecords = 1000
        /// Bytes per upload before compression.
        public var maxBytes = 8 << 20
        /// Records per history page.
        public var historyPage = 1000
        /// Retry delays: from half a second doubling up to 5 minutes, each moved by up to ±20 %.
        public var backoff = Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(300), jitter: 0.2)
        /// The longest a drain or pull waits because a server asked to (`Retry-After`); a server
        /// asking for longer ends it with a transient error that carries the wait.
        public var longestServerWait: Duration = .seconds(300)
        /// Batches in flight at once: the next are read and encoded while the server stores the
        /// earlier ones. Four drained a million-record backlog into a server on the same two
        /// cores in 39.8 s, two in 46.6 s, three in 42.2 s, six in 39.5 s (README, "Forwarding").
        public var concurrentUploads = 4
        /// What `concurrentUploads` may be set to (the server admits 8 uploads in progress per account).
        public static let concurrentUploadsRange = 1...8
        /// Transient failures in a row before `drain` gives up (nil: never, as in the daemon).
        public var maxConsecutiveFailures: Int? = 8

        public init() {}
    }

    /// What a drain did.
    public struct DrainReport: Sendable, Equatable, Encodable {
        public var uploads = 0
        public var accepted = 0
        public var duplicates = 0
        /// Records the server rejected for good (now dead letters).
        public var rejected = 0
        /// Records this version could not read (now dead letters, until an upgrade).
        public var unreadable = 0
        /// Records the server would not take, without saying they are wrong: left in the outbox.
        public var heldBack = 0
        /// Why the last of them was held back.
        public var heldBackReason: String?
        public var retries = 0
        /// Records still in the outbox afterwards.
        public var remaining = 0
        enum CodingKeys: String, CodingKey {
            case uploads, accepted, duplicates, rejected, unreadable, heldBack = "held_back", heldBackReason = "held_back_reason"
            case retries, remaining
        }

        /// Records given up during this drain.
        public var deadLettered: Int { rejected + unreadable }

        mutating func add(_ outcome: Outcome) {
            uploads += outcome.uploads
            accepted += outcome.accepted
            duplicates += outcome.duplicates
            rejected += outcome.refused.count
            heldBack += outcome.heldBack.count
            if let last = outcome.heldBack.last { heldBackReason = last.reason }
        }
    }

    /// What a history pull did.
    public struct PullReport: Sendable, Equatable, Encodable {
        public var pages = 0
        public var received = 0
        /// Received records that were new or newer here.
        public var stored = 0
        /// Received records that could not be stored (not readable by this version, or breaking
        /// the model's rules): kept aside, tried again at every pull.
        public var held = 0
        /// Records held by earlier pulls that could be stored now.
        public var released = 0
        /// Records deleted on the server (tombstones) applied here.
        public var deleted = 0
        /// Records held in all, after this pull.
        public var stillHeld = 0
        /// The server's cursor numbering changed: the pull started again from 0.
        public var restarted = false
        public var cursor: Int64 = 0
        enum CodingKeys: String, CodingKey {
            case pages, received, stored, deleted, held, released, stillHeld = "still_held", restarted, cursor
        }
    }

    /// Progress of a drain: records settled so far and the outbox depth when it began.
    public struct Progress: Sendable {
        public var settled: Int
        public var total: Int
    }

    public let store: HealthStore
    public let client: SyncClient
    public let token: String
    /// This install's device id on the server (from its login): a pulled version another device
    /// uploaded replaces data of the same version held here (the server kept that one).
    public let deviceId: String?
    public let configuration: Configuration
    /// Applied to pulled records as to every record stored here.
    public let validator: RecordValidator
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double

    public init(store: HealthStore, client: SyncClient, token: String, deviceId: String? = nil, configuration: Configuration = Configuration(),
                validator: RecordValidator = RecordValidator(),
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
                random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.store = store
        self.client = client
        self.token = token
        self.deviceId = deviceId
        self.configuration = configuration
        self.validator = validator
        self.sleep = sleep
        self.random = random
    }

    // MARK: Drain

    /// Sends everything in the outbox, oldest first, until it is empty (but for records held
    /// back), with up to `concurrentUploads` batches in flight. Throws on 401 (log in again), on
    /// an answer that is not the protocol's or a refusal that cannot be split, when the failures
    /// in a row reach the limit, when the server asks to wait too long, or when cancelled; what
    /// was acknowledged before stays acknowledged and the rest stays queued.
    public func drain(progress: (@Sendable (Progress) -> Void)? = nil) async throws -> DrainReport {
        var state = DrainState(configuration: configuration)
        let total = try await store.outboxDepth()
        try await withThrowingTaskGroup(of: Result<Outcome, SyncError>.self) { group in
            loop: while true {
                switch state.next() {
                case .read(let after):
                    try Task.checkCancellation()
                    let rows = try await store.outbox(after: after, limit: configuration.maxRecords)
                    guard case .encode(let seqs) = state.read(rows.map(\.seq)) else { continue }
                    let wanted = Set(seqs)
                    let batch = try await encodeBatch(rows.filter { wanted.contains($0.seq) })
                    if !batch.missing.isEmpty || !batch.givenUp.isEmpty {
                        // No longer stored: nothing to send. Unreadable or too large for the
                        // protocol: kept as dead letters.
                        try await store.settle(acknowledged: batch.missing, refused: batch.givenUp)
                    }
                    if state.encoded(lastSeq: batch.lastSeq, missing: batch.missing.count, givenUp: batch.givenUp.count,
                                     sending: !batch.entries.isEmpty) {
                        group.addTask {
                            do throws(SyncError) { return .success(try await self.send(batch.entries, batch.bodies)) } catch {
                                return .failure(error)
                            }
                        }
                    }
                case .awaitUpload:
                    guard let result = try await group.next() else { break loop }
                    switch result {
                    case .success(let outcome):
                        try await store.settle(acknowledged: outcome.acknowledged, refused: outcome.refused)
                        state.uploaded(outcome)
                        progress?(Progress(settled: state.settled, total: total))
                    case .failure(let error):
                        try await store.setSyncState("last_error", error.description)
                        try await store.setSyncState("last_error_at", ISO8601.string(Date()))
                        if state.uploadFailed(error, random: random()) == .giveUp { throw error }
                    }
                case .pause(let wait):
                    try await sleep(wait)
                    state.paused()
                case .done:
                    break loop
                }
            }
        }
        var report = state.report
        report.remaining = try await store.outboxDepth()
        if report.heldBack == 0 {
            try await store.setSyncState("last_success_at", ISO8601.string(Date()))
            try await store.setSyncState("last_error", nil)
        } else {
            try await store.setSyncState("last_error", "\(report.heldBack) record(s) held back: \(report.heldBackReason ?? "")")
            try await store.setSyncState("last_error_at", ISO8601.string(Date()))
        }
        return report
    }

    /// What a transient failure's server asked to wait (zero when it did not say).
    static func serverWait(_ error: SyncError) -> Duration {
        if case .transient(_, let wait?) = error { return wait }
        return .zero
    }

    struct Batch: Sendable {
        var entries: [OutboxEntry] = []
        var bodies: [ByteBuffer] = []
        /// Outbox entries whose record is gone: settled with nothing to send.
        var missing: [Int64] = []
        /// Outbox entries this version cannot send, with why: dead letters.
        var givenUp: [(seq: Int64, reason: String)] = []
        /// The last outbox row this batch covers (sent, missing or given up).
        var lastSeq: Int64 = 0
    }

    /// Loads and encodes the records of `entries`, keeping to the byte cap (at least one record).
    func encodeBatch(_ entries: [OutboxEntry]) async throws -> Batch {
        var batch = Batch()
        var bytes = 0
        let encoder = SyncJSONEncoder()
        for (entry, content) in zip(entries, try await store.records(for: entries)) {
            let wire: WireRecord
            switch content {
            case .gone:
                batch.missing.append(entry.seq)
                batch.lastSeq = entry.seq
                continue
            case .unreadable(let reason):
                batch.givenUp.append((entry.seq, reason))
                batch.lastSeq = entry.seq
                continue
            case .record(let record):
                wire = WireRecord(record)
            case .tombstone(let type, let id, let version):
                wire = WireRecord(tombstone: id, type: type, version: version)
            }
            let body = ByteBuffer(bytes: try encoder.encode(wire))
            guard body.readableBytes < SyncAPI.maxBodyBytes - 64 else {
                batch.givenUp.append((entry.seq, "\(body.readableBytes) bytes: larger than an upload can be (\(SyncAPI.maxBodyBytes) bytes)"))
                batch.lastSeq = entry.seq
                continue
            }
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
        /// Rejected by the server for good: dead letters.
        var refused: [(seq: Int64, reason: String)] = []
        /// Not taken, but not said to be wrong: left in the outbox.
        var heldBack: [(seq: Int64, reason: String)] = []
        var uploads = 0
        var accepted = 0
        var duplicates = 0

        mutating func merge(_ other: Outcome) {
            acknowledged += other.acknowledged
            refused += other.refused
            heldBack += other.heldBack
            uploads += other.uploads
            accepted += other.accepted
            duplicates += other.duplicates
        }
    }

    /// Uploads one batch. A refusal of the whole batch in the protocol's format (400, 413): when
    /// it names a record, that record is a dead letter and the others are sent again; otherwise
    /// the batch is split in halves, down to the single record, which is then held back. Every
    /// other failure is thrown.
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
        } catch {
            guard case .refused(let status, let answer) = error, status == 400 || status == 413 else { throw error }
            let why = "server refused it: \(status) \(answer.code): \(answer.message)"
            if let recordId = answer.recordId, let named = entries.firstIndex(where: { $0.id == recordId.lowercased() }) {
                var outcome = Outcome(refused: [(entries[named].seq, why)], uploads: 1)
                let others = entries.indices.filter { $0 != named }
                if !others.isEmpty { outcome.merge(try await send(others.map { entries[$0] }, others.map { bodies[$0] })) }
                return outcome
            }
            guard entries.count > 1 else {
                // The server's own limit names this record as well as an id would: it is larger on
                // its own than any upload the server takes.
                let size = bodies[0].readableBytes + 14  // {"records":[...]}
                if status == 413, let limit = answer.maxBytes, size > limit {
                    return Outcome(refused: [(entries[0].seq, "\(size) bytes: larger than the server takes (\(limit) bytes; \(why))")],
                                   uploads: 1)
                }
                return Outcome(heldBack: [(entries[0].seq, why)], uploads: 1)
            }
            let half = entries.count / 2
            var outcome = Outcome(uploads: 1)
            outcome.merge(try await send(Array(entries[..<half]), Array(bodies[..<half])))
            outcome.merge(try await send(Array(entries[half...]), Array(bodies[half...])))
            return outcome
        }
        guard response.results.count == entries.count else {
            throw SyncError.invalidResponse("\(response.results.count) results for \(entries.count) records")
        }
        var outcome = Outcome(uploads: 1)
        for (entry, result) in zip(entries, response.results) {
            guard result.id.lowercased() == entry.id else {
                throw SyncError.invalidResponse("result for \(DisplayText.safe(result.id, limit: 60)) where \(entry.id) was sent")
            }
            switch result.status {
            case .accepted:
                outcome.accepted += 1
                outcome.acknowledged.append(entry.seq)
            case .duplicate:
                outcome.duplicates += 1
                outcome.acknowledged.append(entry.seq)
            case .rejected:
                outcome.refused.append((entry.seq, DisplayText.safe(result.reason ?? "rejected", limit: 300)))
            }
        }
        return outcome
    }

    // MARK: Pull

    /// Pulls the records changed on the server since the saved cursor (the user's other devices'
    /// uploads, and this device's own, which change nothing here) and stores them without
    /// queueing them back. Each pulled record is validated as every record stored here; one that
    /// cannot be read or breaks the rules is held with its text and the reason (and tried again
    /// at the next pull), so the cursor, saved in the same transaction as each page, never moves
    /// past a record that was not kept. A server whose pages do not advance is an error.
    public func pull() async throws -> PullReport {
        var report = PullReport()
        report.released = try await retryHeld()
        var cursor = max(0, Int64(try await store.syncState("history_cursor") ?? "0") ?? 0)
        var epoch = try await store.syncState("history_epoch")
        var failures = 0
        while true {
            try Task.checkCancellation()
            let page: RawHistoryPage
            do {
                page = try await client.rawHistory(after: cursor, limit: configuration.historyPage, token: token)
                failures = 0
            } catch {
                guard error.isTransient else { throw error }
                failures += 1
                if let limit = configuration.maxConsecutiveFailures, failures >= limit { throw error }
                let serverWait = Self.serverWait(error)
                if serverWait > configuration.longestServerWait { throw error }
                try await sleep(max(configuration.backoff.delay(attempt: failures, random: random()), serverWait))
                continue
            }
            if page.epoch != epoch {
                // The server numbers its history differently now (or it is another server): the
                // saved cursor means nothing there. Start again from 0, once.
                guard !report.restarted else {
                    throw SyncError.invalidResponse("the history's epoch changed twice in one pull")
                }
                epoch = page.epoch
                if cursor != 0 {
                    report.restarted = true
                    cursor = 0
                    continue
                }
                report.restarted = true
            }
            guard page.next >= cursor else {
                throw SyncError.invalidResponse("the history went back from cursor \(cursor) to \(page.next)")
            }
            if page.more, page.next == cursor || page.records.isEmpty {
                throw SyncError.invalidResponse("the history did not advance past cursor \(cursor) although it says there is more")
            }
            var records: [HealthRecord] = []
            var serverKept: Set<RecordID> = []
            var deletions: [PulledDeletion] = []
            var held: [HeldRecord] = []
            for raw in page.records {
                switch admit(raw.bytes) {
                case .store(let record, let uploader):
                    records.append(record)
                    // Another device's version is the one the server kept, also against data of
                    // the same version made here (two edits of one version: the first stored wins).
                    if let deviceId, let uploader, uploader != deviceId { serverKept.insert(record.id) }
                case .delete(let deletion): deletions.append(deletion)
                case .hold(let hold): held.append(hold)
                }
            }
            let written = try await store.writePulled(records, deletions: deletions, held: held, cursor: page.next, epoch: epoch,
                                                      serverKept: serverKept)
            report.pages += 1
            report.received += page.records.count
            report.stored += written.stored
            report.held += held.count
            report.deleted += deletions.count
            cursor = page.next
            if !page.more { break }
        }
        report.cursor = cursor
        report.stillHeld = try await store.heldRecordCount()
        return report
    }

    /// Stores the held records that can be read and pass the rules now; answers how many.
    func retryHeld() async throws -> Int {
        let held = try await store.heldRecords()
        guard !held.isEmpty else { return 0 }
        var ready: [(number: Int64, record: HealthRecord)] = []
        var still: [(number: Int64, reason: String)] = []
        for h in held {
            switch admit(Array(h.body.utf8)) {
            case .store(let record, _): ready.append((h.number, record))
            case .hold(let again): still.append((h.number, again.reason))
            // Only a tombstone of an unknown type is held: still unknown, or this would not be held.
            case .delete: still.append((h.number, h.reason))
            }
        }
        try await store.releaseHeld(ready, stillHeld: still)
        return ready.count
    }

    /// What becomes of a pulled record.
    enum Admission {
        /// A record to store, with the device that uploaded it (when the page says).
        case store(HealthRecord, uploader: String?)
        case delete(PulledDeletion)
        case hold(HeldRecord)
    }

    /// A pulled record's text as a record to store, or as a held record with the reason.
    func admit(_ text: [UInt8]) -> Admission {
        let body = String(decoding: text, as: UTF8.self)
        let wire: WireRecord
        do {
            wire = try SyncJSONDecoder().decode(WireRecord.self, from: text)
        } catch {
            let envelope = try? SyncJSONDecoder().decode(LooseEnvelope.self, from: text)
            let why = (error as? DecodingError).map(SyncAPI.describe) ?? "\(error)"
            return .hold(HeldRecord(id: envelope?.id, version: envelope?.version, type: envelope?.type, serverSeq: envelope?.seq,
                                    body: body, reason: "not a record this version can read: " + why))
        }
        func hold(_ reason: String) -> Admission {
            .hold(HeldRecord(id: wire.id.lowercased(), version: wire.version, type: wire.type, serverSeq: wire.seq, body: body,
                                reason: reason))
        }
        if wire.deleted {
            guard let type = RecordType(rawValue: wire.type), RecordID(string: wire.id.lowercased()) != nil,
                  PhysicalLimits.versions.contains(wire.version) else {
                return hold("a deletion of a record this version cannot read (type '\(wire.type)')")
            }
            return .delete(PulledDeletion(type: type, id: wire.id.lowercased(), version: wire.version))
        }
        let record: HealthRecord
        do { record = try wire.record() } catch { return hold(error.description) }
        do { try validator.validate(record) } catch let error as ValidationError { return hold(error.reason) } catch {
            return hold("\(error)")
        }
        return .store(record, uploader: wire.deviceId)
    }

    /// What can be read of a record's envelope when the record itself cannot.
    struct LooseEnvelope: Decodable {
        var id: String?
        var version: Int?
        var type: String?
        var seq: Int64?
        enum CodingKeys: String, CodingKey { case id, version, type, seq }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try? c.decodeIfPresent(String.self, forKey: .id)
            version = try? c.decodeIfPresent(Int.self, forKey: .version)
            type = try? c.decodeIfPresent(String.self, forKey: .type)
            seq = try? c.decodeIfPresent(Int64.self, forKey: .seq)
        }
    }
}
