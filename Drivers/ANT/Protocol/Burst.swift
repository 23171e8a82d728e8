/// Why a burst transfer was given up.
public struct ANTBurstDrop: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// A packet arrived with sequence `received` where `expected` was due (nil: no transfer was
        /// in progress, so only a first packet, sequence 0, was acceptable).
        case outOfSequence(expected: UInt8?, received: UInt8)
        /// A new first packet (sequence 0) arrived before the transfer in progress ended.
        case restarted
        /// The transfer grew beyond the assembler's limit.
        case overLimit(limit: Int)
    }

    public var reason: Reason
    /// Data bytes thrown away (the partial transfer, and the packet that ended it).
    public var byteCount: Int

    public init(_ reason: Reason, byteCount: Int) {
        self.reason = reason
        self.byteCount = byteCount
    }

    public var description: String {
        switch reason {
        case .outOfSequence(let expected?, let received):
            "burst packet \(received) out of sequence (expected \(expected)): \(byteCount) bytes dropped"
        case .outOfSequence(nil, let received):
            "burst packet \(received) without a first packet: \(byteCount) bytes dropped"
        case .restarted:
            "burst restarted before its last packet: \(byteCount) bytes dropped"
        case .overLimit(let limit):
            "burst over the limit of \(limit) bytes: \(byteCount) bytes dropped"
        }
    }
}

/// Reassembles the burst packets of one channel into transfers (use one assembler per channel).
///
/// Sequence rules (openant `_on_burst_data`): a transfer starts with sequence 0, continues with
/// 1, 2, 3, 1, 2, 3, ... and ends with the packet flagged last. A packet out of that order drops
/// the transfer in progress and itself. A sequence-0 packet always starts a new transfer; one in
/// progress is dropped and reported. A transfer beyond `limit` bytes is dropped; the packets after
/// it are dropped as out of sequence until the next first packet.
public struct ANTBurstAssembler: Sendable {
    public enum Result: Hashable, Sendable {
        /// The packet was taken; the transfer goes on.
        case incomplete
        /// The packet ended a transfer: its data (whole packets, padding included).
        case complete([UInt8])
        /// The transfer in progress, or the packet, was dropped.
        case dropped(ANTBurstDrop)
        /// A one-packet transfer (sequence 0, flagged last) that also dropped the transfer that was
        /// in progress: both outcomes of that packet.
        case droppedThenComplete(ANTBurstDrop, [UInt8])
    }

    /// The largest transfer kept, in bytes.
    public let limit: Int
    private var buffer: [UInt8] = []
    /// The sequence number due next, or nil when no transfer is in progress.
    private var expected: UInt8?

    public init(limit: Int = 1 << 20) {
        self.limit = max(limit, 8)
    }

    /// True while a transfer has started and not ended.
    public var inProgress: Bool { expected != nil }

    public mutating func add(_ packet: ANTBurstPacket) -> Result {
        let sequence = packet.sequence & 0x03
        var restart: ANTBurstDrop?
        if sequence == 0 {
            if expected != nil { restart = ANTBurstDrop(.restarted, byteCount: buffer.count) }
            buffer.removeAll(keepingCapacity: true)
        } else if sequence != expected {
            let drop = ANTBurstDrop(.outOfSequence(expected: expected, received: sequence), byteCount: buffer.count + packet.data.count)
            abandon()
            return .dropped(drop)
        }
        guard buffer.count + packet.data.count <= limit else {
            let drop = ANTBurstDrop(.overLimit(limit: limit), byteCount: buffer.count + packet.data.count)
            abandon()
            return .dropped(drop)
        }
        buffer.append(contentsOf: packet.data)
        if packet.isLast {
            let data = buffer
            abandon()
            if let restart { return .droppedThenComplete(restart, data) }
            return .complete(data)
        }
        expected = sequence == 3 ? 1 : sequence + 1
        if let restart { return .dropped(restart) }
        return .incomplete
    }

    /// Forgets the transfer in progress (after the channel closed, or a transfer-failed event).
    public mutating func reset() { abandon() }

    private mutating func abandon() {
        buffer.removeAll(keepingCapacity: true)
        expected = nil
    }
}
