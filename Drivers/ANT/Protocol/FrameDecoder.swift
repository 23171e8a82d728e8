/// Why the frame decoder discarded bytes, and how many.
public struct ANTFrameDrop: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// A whole frame whose checksum did not match: the frame is discarded.
        case badChecksum(messageID: UInt8, expected: UInt8, received: UInt8)
        /// The length byte after a sync byte is larger than the decoder accepts: the sync and
        /// length bytes are discarded and the decoder looks for the next sync byte.
        case lengthOverLimit(length: Int, limit: Int)
        /// Bytes that came before a sync byte. Runs made only of zeros (the padding hosts and
        /// sticks add) are skipped without a report; a run with any other byte is reported whole.
        case skippedBeforeSync
    }

    public var reason: Reason
    /// Bytes discarded.
    public var byteCount: Int

    public init(_ reason: Reason, byteCount: Int) {
        self.reason = reason
        self.byteCount = byteCount
    }

    public var description: String {
        switch reason {
        case .badChecksum(let id, let expected, let received):
            "bad checksum in a 0x\(hex(id)) frame (expected 0x\(hex(expected)), received 0x\(hex(received))): \(byteCount) bytes dropped"
        case .lengthOverLimit(let length, let limit):
            "frame length \(length) over the limit of \(limit): \(byteCount) bytes dropped"
        case .skippedBeforeSync:
            "\(byteCount) bytes skipped before a sync byte"
        }
    }
}

/// Incremental decoder of the byte stream a stick sends: feed it what each USB transfer returned
/// (one 64-byte transfer may hold two frames, or part of one) and it returns the messages now
/// complete, in order, and reports what it had to discard.
///
/// Rules:
/// - A frame starts at a sync byte (0xA4). Bytes before it are skipped; a run of zeros is padding
///   and is skipped silently, any other run is reported as `.skippedBeforeSync` once the next sync
///   byte ends it.
/// - A length byte above `maxPayload` cannot start a frame: the sync and length bytes are dropped
///   and the search for a sync byte resumes with the next byte.
/// - A frame with a wrong checksum is dropped whole, and decoding resumes after it.
/// - A partial frame waits for more bytes: the output depends only on the bytes, never on how
///   they were split into calls.
///
/// Memory is bounded by `maxPayload + 4` bytes.
public struct ANTFrameDecoder: Sendable {
    public enum Output: Hashable, Sendable {
        case message(ANTMessage)
        case dropped(ANTFrameDrop)
    }

    private enum State: Sendable {
        case seekingSync
        case readingLength
        /// Reading the ID, the payload and the checksum: this many bytes are still missing.
        case readingBody(missing: Int)
    }

    /// The largest payload accepted. 41 covers every message a stick sends to the host, flagged
    /// extended data included; GoldenCheetah caps it at 9, which rejects extended messages.
    public let maxPayload: Int
    private var state: State = .seekingSync
    /// The frame being read, from its sync byte.
    private var frame: [UInt8] = []
    /// Bytes skipped since the last sync byte, and whether any of them was not zero.
    private var skipped = 0
    private var skippedNonZero = false

    /// `maxPayload` is clamped to 0...255 (what the length byte can say).
    public init(maxPayload: Int = 41) {
        self.maxPayload = min(max(maxPayload, 0), ANTMessage.maximumPayloadLength)
        frame.reserveCapacity(self.maxPayload + 4)
    }

    /// Bytes held: a partial frame, or skipped bytes not reported yet.
    public var pendingByteCount: Int { frame.count + skipped }

    /// Decodes `bytes` and returns the messages completed and the drops noticed, in stream order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Output] {
        var outputs: [Output] = []
        for byte in bytes { step(byte, into: &outputs) }
        return outputs
    }

    /// Forgets any partial frame and skipped bytes (after the stick was reset).
    public mutating func reset() {
        state = .seekingSync
        frame.removeAll(keepingCapacity: true)
        skipped = 0
        skippedNonZero = false
    }

    private mutating func step(_ byte: UInt8, into outputs: inout [Output]) {
        switch state {
        case .seekingSync:
            guard byte == ANTMessage.sync else {
                skipped += 1
                if byte != 0 { skippedNonZero = true }
                return
            }
            if skippedNonZero { outputs.append(.dropped(ANTFrameDrop(.skippedBeforeSync, byteCount: skipped))) }
            skipped = 0
            skippedNonZero = false
            frame = [byte]
            state = .readingLength
        case .readingLength:
            let length = Int(byte)
            guard length <= maxPayload else {
                outputs.append(.dropped(ANTFrameDrop(.lengthOverLimit(length: length, limit: maxPayload), byteCount: 2)))
                frame.removeAll(keepingCapacity: true)
                state = .seekingSync
                return
            }
            frame.append(byte)
            // The message ID, the payload and the checksum.
            state = .readingBody(missing: length + 2)
        case .readingBody(let missing):
            frame.append(byte)
            if missing > 1 {
                state = .readingBody(missing: missing - 1)
                return
            }
            let expected = ANTMessage.checksum(frame.dropLast())
            if expected == byte {
                outputs.append(.message(ANTMessage(frame[2], Array(frame[3..<(frame.count - 1)]))))
            } else {
                let drop = ANTFrameDrop(.badChecksum(messageID: frame[2], expected: expected, received: byte), byteCount: frame.count)
                outputs.append(.dropped(drop))
            }
            frame.removeAll(keepingCapacity: true)
            state = .seekingSync
        }
    }
}
