import ANTProtocol
import TestSupport
import Testing

/// Burst reassembly, with openant's sequence rules (`_on_burst_data`: 0 first, then 1, 2, 3, 1,
/// ..., bit 2 of the sequence on the last packet).
@Suite struct ANTBurstTests {
    func packet(_ sequence: UInt8, last: Bool = false, _ fill: UInt8 = 0) -> ANTBurstPacket {
        ANTBurstPacket(channel: 0, sequence: sequence, isLast: last, data: [UInt8](repeating: fill, count: 8))
    }

    /// The packets of a burst as the stick delivers them: built, framed, decoded and read as replies.
    func received(_ data: [UInt8], channel: UInt8 = 1) throws -> [ANTBurstPacket] {
        var decoder = ANTFrameDecoder()
        return try decoder.feed(ANTCommand.burst(channel: channel, data).flatMap(\.encoded)).map { output in
            guard case .message(let m) = output, case .burst(let p) = try ANTReply(m) else { throw ReplyError.notBurst }
            return p
        }
    }

    enum ReplyError: Error { case notBurst }

    @Test("a burst built by ANTCommand.burst reassembles to its data, zero-padded to whole packets")
    func roundTrip() throws {
        var rng = SeededGenerator(seed: 0xB0_0001)
        for length in [1, 8, 9, 16, 17, 24, 25, 64, 200] + (0..<20).map({ _ in Int.random(in: 1...500, using: &rng) }) {
            let data = rng.bytes(length)
            var assembler = ANTBurstAssembler()
            let results = try received(data).map { assembler.add($0) }
            let padded = data + [UInt8](repeating: 0, count: (8 - length % 8) % 8)
            #expect(results.last == .complete(padded), "length \(length)")
            #expect(results.dropLast().allSatisfy { $0 == .incomplete })
            #expect(!assembler.inProgress)
        }
    }

    @Test("the sequence wraps 3 to 1, not to 0")
    func sequenceWrap() {
        var assembler = ANTBurstAssembler()
        let sequences: [UInt8] = [0, 1, 2, 3, 1, 2, 3]
        for (i, s) in sequences.enumerated() { #expect(assembler.add(packet(s, UInt8(i))) == .incomplete) }
        guard case .complete(let data) = assembler.add(packet(1, last: true, 7)) else {
            Issue.record("not complete")
            return
        }
        #expect(data.count == 64 && data[0] == 0 && data[63] == 7)
    }

    @Test("a packet out of sequence drops the burst and itself; later packets wait for a new first packet")
    func outOfSequence() {
        var assembler = ANTBurstAssembler()
        #expect(assembler.add(packet(0)) == .incomplete)
        #expect(assembler.add(packet(2)) == .dropped(ANTBurstDrop(.outOfSequence(expected: 1, received: 2), byteCount: 16)))
        #expect(assembler.add(packet(3)) == .dropped(ANTBurstDrop(.outOfSequence(expected: nil, received: 3), byteCount: 8)))
        #expect(assembler.add(packet(1, last: true)) == .dropped(ANTBurstDrop(.outOfSequence(expected: nil, received: 1), byteCount: 8)))
        #expect(assembler.add(packet(0, 5)) == .incomplete)
        #expect(assembler.add(packet(1, last: true, 6)) == .complete([UInt8](repeating: 5, count: 8) + [UInt8](repeating: 6, count: 8)))
    }

    @Test("a repeated packet is out of sequence")
    func repeatedPacket() {
        var assembler = ANTBurstAssembler()
        _ = assembler.add(packet(0))
        _ = assembler.add(packet(1))
        #expect(assembler.add(packet(1)) == .dropped(ANTBurstDrop(.outOfSequence(expected: 2, received: 1), byteCount: 24)))
    }

    @Test("a first packet restarts the burst: the one in progress is dropped and reported")
    func restart() {
        var assembler = ANTBurstAssembler()
        _ = assembler.add(packet(0, 1))
        _ = assembler.add(packet(1, 1))
        #expect(assembler.add(packet(0, 2)) == .dropped(ANTBurstDrop(.restarted, byteCount: 16)))
        #expect(assembler.inProgress)
        #expect(assembler.add(packet(1, last: true, 3)) == .complete([UInt8](repeating: 2, count: 8) + [UInt8](repeating: 3, count: 8)))
    }

    @Test("a one-packet burst completes at once, and reports the burst it interrupted")
    func onePacketBurst() {
        var assembler = ANTBurstAssembler()
        #expect(assembler.add(packet(0, last: true, 9)) == .complete([UInt8](repeating: 9, count: 8)))
        _ = assembler.add(packet(0))
        #expect(assembler.add(packet(0, last: true, 4))
            == .droppedThenComplete(ANTBurstDrop(.restarted, byteCount: 8), [UInt8](repeating: 4, count: 8)))
        #expect(!assembler.inProgress)
    }

    @Test("a burst over the limit is dropped")
    func overLimit() {
        var assembler = ANTBurstAssembler(limit: 16)
        #expect(assembler.limit == 16)
        _ = assembler.add(packet(0))
        #expect(assembler.add(packet(1)) == .incomplete)
        #expect(assembler.add(packet(2)) == .dropped(ANTBurstDrop(.overLimit(limit: 16), byteCount: 24)))
        #expect(!assembler.inProgress)
        #expect(ANTBurstAssembler(limit: 0).limit == 8, "at least one packet")
    }

    @Test("reset forgets the burst in progress")
    func reset() {
        var assembler = ANTBurstAssembler()
        _ = assembler.add(packet(0))
        assembler.reset()
        #expect(assembler.add(packet(1)) == .dropped(ANTBurstDrop(.outOfSequence(expected: nil, received: 1), byteCount: 8)))
    }

    @Test("drops describe themselves")
    func descriptions() {
        #expect(ANTBurstDrop(.restarted, byteCount: 16).description == "burst restarted before its last packet: 16 bytes dropped")
        #expect(ANTBurstDrop(.outOfSequence(expected: 1, received: 3), byteCount: 8).description.contains("expected 1"))
        #expect(ANTBurstDrop(.outOfSequence(expected: nil, received: 3), byteCount: 8).description.contains("without a first packet"))
        #expect(ANTBurstDrop(.overLimit(limit: 64), byteCount: 72).description.contains("64"))
    }
}
