@testable import HealthSync
import Testing

/// One drain's decisions without a store or a server: the window of uploads, rows held back,
/// transient failures and when they end the drain.
struct DrainStateTests {
    func configuration(window: Int = 2) -> Forwarder.Configuration {
        var c = Forwarder.Configuration()
        c.concurrentUploads = window
        c.maxConsecutiveFailures = 3
        c.longestServerWait = .seconds(60)
        return c
    }

    func acknowledged(_ seqs: [Int64]) -> Forwarder.Outcome {
        var o = Forwarder.Outcome()
        o.acknowledged = seqs
        o.uploads = 1
        o.accepted = seqs.count
        return o
    }

    /// Batches are read while the window has room; a full window waits for an upload; the end of
    /// the outbox waits for the last uploads, then the drain is done.
    @Test func theWindowOfUploadsIsKeptFullUntilTheOutboxIsRead() {
        var state = DrainState(configuration: configuration())
        #expect(state.next() == .read(after: 0))
        #expect(state.read([1, 2, 3]) == .encode([1, 2, 3]))
        let sent1 = state.encoded(lastSeq: 3, missing: 0, givenUp: 0, sending: true)
        #expect(sent1)
        #expect(state.next() == .read(after: 3))
        #expect(state.read([4, 5]) == .encode([4, 5]))
        // A missing record and an unreadable one are settled without sending.
        let sent2 = state.encoded(lastSeq: 5, missing: 1, givenUp: 1, sending: false)
        #expect(sent2 == false)
        #expect(state.next() == .read(after: 5))
        #expect(state.read([6]) == .encode([6]))
        let sent3 = state.encoded(lastSeq: 6, missing: 0, givenUp: 0, sending: true)
        #expect(sent3)
        #expect(state.next() == .awaitUpload)
        state.uploaded(acknowledged([1, 2, 3]))
        #expect(state.next() == .read(after: 6))
        #expect(state.read([]) == .end)
        #expect(state.next() == .awaitUpload)
        state.uploaded(acknowledged([6]))
        #expect(state.next() == .done)
        #expect(state.settled == 6)
        #expect(state.report.uploads == 2 && state.report.accepted == 4 && state.report.unreadable == 1)
    }

    /// Rows the server held back stay in the outbox and are not sent again by this drain, even
    /// when it reads the outbox from the start after a pause.
    @Test func heldBackRowsAreNotSentAgainByTheSameDrain() {
        var state = DrainState(configuration: configuration(window: 1))
        _ = state.read([1, 2])
        _ = state.encoded(lastSeq: 2, missing: 0, givenUp: 0, sending: true)
        var outcome = acknowledged([1])
        outcome.heldBack = [(seq: 2, reason: "a newer version is on the server")]
        state.uploaded(outcome)
        #expect(state.report.heldBack == 1 && state.report.heldBackReason == "a newer version is on the server")
        #expect(state.read([2]) == .readOn)
        #expect(state.next() == .read(after: 2))
        #expect(state.read([2, 7]) == .encode([7]))
    }

    /// A transient failure stops new batches until the window is empty, then pauses for the
    /// backoff (at least what the server asked) and reads the outbox from the start.
    @Test func aTransientFailurePausesThenReadsFromTheStart() {
        let c = configuration()
        var state = DrainState(configuration: c)
        _ = state.read([1])
        _ = state.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
        _ = state.read([2])
        _ = state.encoded(lastSeq: 2, missing: 0, givenUp: 0, sending: true)
        #expect(state.uploadFailed(.transient("503", retryAfter: nil), random: 0.5) == .retry)
        #expect(state.next() == .awaitUpload)  // the other upload is still out
        state.uploaded(acknowledged([2]))
        #expect(state.next() == .pause(c.backoff.delay(attempt: 1, random: 0.5)))
        state.paused()
        #expect(state.next() == .read(after: 0))
        // The server's Retry-After wins over a shorter backoff.
        _ = state.read([1])
        _ = state.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
        #expect(state.uploadFailed(.transient("429", retryAfter: .seconds(45)), random: 0.5) == .retry)
        #expect(state.next() == .pause(.seconds(45)))
        #expect(state.report.retries == 2 && state.report.uploads == 3)
    }

    /// The drain gives up on a permanent error, on a server asking to wait longer than
    /// `longestServerWait`, and after `maxConsecutiveFailures` transient ones in a row; a success
    /// in between starts the count again.
    @Test func whenAFailureEndsTheDrain() {
        var permanent = DrainState(configuration: configuration())
        _ = permanent.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
        #expect(permanent.uploadFailed(.unauthorized("expired"), random: 0.5) == .giveUp)

        var tooLong = DrainState(configuration: configuration())
        _ = tooLong.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
        #expect(tooLong.uploadFailed(.transient("503", retryAfter: .seconds(3600)), random: 0.5) == .giveUp)

        var state = DrainState(configuration: configuration(window: 1))
        func fail() -> DrainState.Failure {
            _ = state.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
            return state.uploadFailed(.transient("503", retryAfter: nil), random: 0.5)
        }
        #expect(fail() == .retry)
        #expect(fail() == .retry)
        _ = state.encoded(lastSeq: 1, missing: 0, givenUp: 0, sending: true)
        state.uploaded(acknowledged([1]))
        #expect(fail() == .retry)
        #expect(fail() == .retry)
        #expect(fail() == .giveUp)
    }
}
