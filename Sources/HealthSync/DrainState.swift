/// One drain of the outbox as decisions, pure: which rows to read next, when to wait and for how
/// long, what a batch's result settles and when a failure ends the drain. `Forwarder.drain` asks
/// `next()`, does the I/O (read the outbox, encode, upload, settle, sleep) and feeds the results
/// back; time and randomness come in as inputs.
struct DrainState {
    enum Step: Equatable {
        /// Read the outbox after this sequence number.
        case read(after: Int64)
        /// Wait for a batch in flight to come back.
        case awaitUpload
        /// Nothing in flight after a transient failure: wait this long, then read from the start
        /// (the failed batch is still in the outbox).
        case pause(Duration)
        /// Everything was read and every batch came back.
        case done
    }

    /// What to do with the rows read.
    enum Rows: Equatable {
        /// Encode these (the rows not held back by this drain) into a batch.
        case encode([Int64])
        /// Nothing to send here; read on.
        case readOn
        /// The outbox is read to its end.
        case end
    }

    /// What a failed upload means.
    enum Failure: Equatable {
        /// Transient: retry after the pause (no new batches until the window is empty).
        case retry
        /// Give up: the drain ends with the error.
        case giveUp
    }

    let configuration: Forwarder.Configuration
    private(set) var report = Forwarder.DrainReport()
    /// Records settled so far (sent, refused, missing, given up or held back), for progress.
    private(set) var settled = 0
    /// Outbox rows up to here are settled, skipped or in flight.
    private var readUpTo: Int64 = 0
    private var inFlight = 0
    private var exhausted = false
    /// Set by a transient failure: no new batches until the window is empty.
    private var retryAfter: Duration?
    private var failures = 0
    /// Held back: left in the outbox, not sent again by this drain.
    private var skipped = Set<Int64>()

    init(configuration: Forwarder.Configuration) { self.configuration = configuration }

    /// The next thing to do.
    func next() -> Step {
        if !exhausted, retryAfter == nil, inFlight < max(1, configuration.concurrentUploads) { return .read(after: readUpTo) }
        if inFlight > 0 { return .awaitUpload }
        if let wait = retryAfter { return .pause(wait) }
        return .done
    }

    /// Outbox rows read after `readUpTo` (sequence numbers, in order).
    mutating func read(_ rows: [Int64]) -> Rows {
        guard let last = rows.last else {
            exhausted = true
            return .end
        }
        let entries = rows.filter { !skipped.contains($0) }
        guard !entries.isEmpty else {
            readUpTo = last
            return .readOn
        }
        return .encode(entries)
    }

    /// A batch was encoded up to `lastSeq`: `missing` (records no longer stored) and `givenUp`
    /// (unreadable, or too large for the protocol) are settled without sending; true when the
    /// batch has entries to upload (then it is in flight).
    mutating func encoded(lastSeq: Int64, missing: Int, givenUp: Int, sending: Bool) -> Bool {
        readUpTo = lastSeq
        settled += missing + givenUp
        report.unreadable += givenUp
        if sending { inFlight += 1 }
        return sending
    }

    /// An upload came back with the server's answers.
    mutating func uploaded(_ outcome: Forwarder.Outcome) {
        inFlight -= 1
        report.add(outcome)
        skipped.formUnion(outcome.heldBack.map(\.seq))
        settled += outcome.acknowledged.count + outcome.refused.count + outcome.heldBack.count
        failures = 0
    }

    /// An upload failed. A transient failure is retried after the backoff (at least what the
    /// server asked), unless too many came in a row or the server asks to wait too long.
    mutating func uploadFailed(_ error: SyncError, random: Double) -> Failure {
        inFlight -= 1
        report.uploads += 1
        guard error.isTransient else { return .giveUp }
        failures += 1
        report.retries += 1
        if let limit = configuration.maxConsecutiveFailures, failures >= limit { return .giveUp }
        let serverWait = Forwarder.serverWait(error)
        if serverWait > configuration.longestServerWait { return .giveUp }
        let backoff = max(configuration.backoff.delay(attempt: failures, random: random), serverWait)
        retryAfter = max(retryAfter ?? .zero, backoff)
        return .retry
    }

    /// The pause is over: read the outbox from the start again.
    mutating func paused() {
        retryAfter = nil
        readUpTo = 0
        exhausted = false
    }
}
