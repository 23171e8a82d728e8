import ANTProtocol
import TestSupport
import Testing

/// The incremental frame decoder: vectors from the notes (docs: /work/shared/notes/ant-usb.md §1),
/// every way a USB transfer can cut or pad frames, and randomized round trips.
@Suite struct ANTFrameTests {
    static let reset: [UInt8] = [0xA4, 0x01, 0x4A, 0x00, 0xEF]
    static let startup: [UInt8] = [0xA4, 0x01, 0x6F, 0x20, 0xEA]
    /// openant tests/base/test_message.py: the response to a network key, `40 [00 46 00]`.
    static let keyResponse: [UInt8] = [0xA4, 0x03, 0x40, 0x00, 0x46, 0x00, 0xA1]

    func messages(_ outputs: [ANTFrameDecoder.Output]) -> [ANTMessage] {
        outputs.compactMap {
            if case .message(let m) = $0 { return m }
            return nil
        }
    }

    func decode(_ bytes: [UInt8], maxPayload: Int = 41) -> [ANTFrameDecoder.Output] {
        var decoder = ANTFrameDecoder(maxPayload: maxPayload)
        return decoder.feed(bytes)
    }

    @Test("the reset command frames as A4 01 4A 00 EF and the startup reply A4 01 6F 20 EA decodes")
    func notesVectors() {
        #expect(ANTCommand.reset().encoded == Self.reset)
        #expect(decode(Self.startup) == [.message(ANTMessage(0x6F, [0x20]))])
        #expect(decode(Self.reset) == [.message(ANTMessage(0x4A, [0x00]))])
    }

    @Test("openant's channel response vector decodes and encodes back")
    func openantVector() {
        let message = ANTMessage(0x40, [0x00, 0x46, 0x00])
        #expect(decode(Self.keyResponse) == [.message(message)])
        #expect(message.encoded == Self.keyResponse)
    }

    @Test("an empty payload frames as A4 00 id checksum")
    func emptyPayload() {
        let message = ANTMessage(0x4A, [])
        #expect(message.encoded == [0xA4, 0x00, 0x4A, 0xEE])
        #expect(decode(message.encoded) == [.message(message)])
    }

    @Test("two frames in one transfer both decode, in order")
    func twoFramesInOneChunk() {
        #expect(messages(decode(Self.startup + Self.keyResponse)) == [ANTMessage(0x6F, [0x20]), ANTMessage(0x40, [0x00, 0x46, 0x00])])
    }

    @Test("a frame split at every position decodes once, when its last byte arrives")
    func splitEverywhere() {
        let stream = Self.startup + Self.keyResponse
        for cut in 0...stream.count {
            var decoder = ANTFrameDecoder()
            let first = decoder.feed(stream[..<cut])
            let second = decoder.feed(stream[cut...])
            #expect(first + second == decode(stream), "cut at \(cut)")
            #expect(decoder.pendingByteCount == 0)
        }
    }

    @Test("a partial frame waits for more bytes")
    func partialFrame() {
        var decoder = ANTFrameDecoder()
        #expect(decoder.feed(Self.keyResponse.prefix(4)).isEmpty)
        #expect(decoder.pendingByteCount == 4)
        #expect(decoder.feed(Self.keyResponse.dropFirst(4)) == [.message(ANTMessage(0x40, [0x00, 0x46, 0x00]))])
    }

    @Test("zero padding between and after frames is skipped without a report")
    func zeroPadding() {
        // j-antplus and ANT Agent add 2 zeros, GoldenCheetah 5; a 64-byte transfer may be zero-filled.
        var stream = Self.reset + [0, 0] + Self.startup + [0, 0, 0, 0, 0] + Self.keyResponse
        stream += [UInt8](repeating: 0, count: 64 - stream.count)
        #expect(decode(stream) == [.message(ANTMessage(0x4A, [0])), .message(ANTMessage(0x6F, [0x20])),
                                   .message(ANTMessage(0x40, [0x00, 0x46, 0x00]))])
        #expect(decode([0, 0, 0] + Self.startup) == [.message(ANTMessage(0x6F, [0x20]))])
    }

    @Test("garbage before a sync byte is reported with its size, then the frame decodes")
    func garbageBeforeSync() {
        let outputs = decode([0x01, 0x00, 0x55, 0x13] + Self.startup)
        #expect(outputs == [.dropped(ANTFrameDrop(.skippedBeforeSync, byteCount: 4)), .message(ANTMessage(0x6F, [0x20]))])
    }

    @Test("garbage at the end is held until a sync byte ends it")
    func trailingGarbage() {
        var decoder = ANTFrameDecoder()
        #expect(decoder.feed(Self.startup + [0x77, 0x78]) == [.message(ANTMessage(0x6F, [0x20]))])
        #expect(decoder.pendingByteCount == 2)
        #expect(decoder.feed(Self.startup) == [.dropped(ANTFrameDrop(.skippedBeforeSync, byteCount: 2)), .message(ANTMessage(0x6F,
            [0x20]))])
    }

    @Test("a bad checksum drops the frame and the decoder decodes the next good one")
    func badChecksum() {
        var corrupt = Self.keyResponse
        corrupt[5] ^= 0x01
        let outputs = decode(corrupt + Self.startup)
        #expect(outputs == [.dropped(ANTFrameDrop(.badChecksum(messageID: 0x40, expected: 0xA0, received: 0xA1), byteCount: 7)),
                            .message(ANTMessage(0x6F, [0x20]))])
    }

    @Test("a length over the limit drops the sync and length bytes, and the decoder resynchronizes")
    func oversizedLength() {
        #expect(decode([0xA4, 0xFF] + Self.startup) == [.dropped(ANTFrameDrop(.lengthOverLimit(length: 255, limit: 41), byteCount: 2)),
                                                        .message(ANTMessage(0x6F, [0x20]))])
        // The bytes after the bad length are scanned again (and reported) before the next frame.
        #expect(decode([0xA4, 42, 0x4E, 0x01] + Self.startup) == [
            .dropped(ANTFrameDrop(.lengthOverLimit(length: 42, limit: 41), byteCount: 2)),
            .dropped(ANTFrameDrop(.skippedBeforeSync, byteCount: 2)), .message(ANTMessage(0x6F, [0x20])),
        ])
    }

    @Test("a larger limit accepts long frames; the limit is clamped to what the length byte can say")
    func limits() {
        let long = ANTMessage(0x72, (0..<100).map { UInt8($0) })
        #expect(decode(long.encoded, maxPayload: 255) == [.message(long)])
        #expect(ANTFrameDecoder(maxPayload: 1000).maxPayload == 255)
        #expect(ANTFrameDecoder(maxPayload: -3).maxPayload == 0)
        #expect(decode(ANTMessage(0x4A, []).encoded, maxPayload: 0) == [.message(ANTMessage(0x4A, []))])
    }

    @Test("bytes fed one at a time give what the whole stream gives")
    func byteAtATime() {
        var corrupt = Self.startup
        corrupt[4] = 0
        let stream = [0x33, 0x00] + Self.reset + [0, 0] + corrupt + [0xA4, 0xF0] + Self.keyResponse + [0x12]
        var decoder = ANTFrameDecoder()
        let single = stream.flatMap { decoder.feed([$0]) }
        #expect(single == decode(stream))
        #expect(messages(single).count == 2)
    }

    @Test("reset forgets a partial frame")
    func resetDecoder() {
        var decoder = ANTFrameDecoder()
        _ = decoder.feed(Self.keyResponse.prefix(5))
        decoder.reset()
        #expect(decoder.pendingByteCount == 0)
        #expect(decoder.feed(Self.startup) == [.message(ANTMessage(0x6F, [0x20]))])
    }

    @Test("random messages, zero-padded and cut into random chunks, come back the same")
    func randomRoundTrip() {
        var rng = SeededGenerator(seed: 0xA4_0001)
        for _ in 0..<200 {
            let sent = (0..<Int.random(in: 1...12, using: &rng)).map { _ in
                ANTMessage(UInt8.random(in: 0...255, using: &rng), rng.bytes(Int.random(in: 0...41, using: &rng)))
            }
            var stream: [UInt8] = []
            for message in sent {
                stream += message.encoded + [UInt8](repeating: 0, count: Int.random(in: 0...5, using: &rng))
            }
            var decoder = ANTFrameDecoder()
            var outputs: [ANTFrameDecoder.Output] = []
            var rest = stream[...]
            while !rest.isEmpty {
                let size = Int.random(in: 1...70, using: &rng)
                outputs += decoder.feed(rest.prefix(size))
                rest = rest.dropFirst(size)
            }
            #expect(outputs == sent.map { .message($0) })
        }
    }

    @Test("random bytes decode the same whole and in chunks, and every message re-encodes to itself")
    func randomGarbage() {
        var rng = SeededGenerator(seed: 0xA4_0002)
        for _ in 0..<300 {
            var stream = rng.bytes(Int.random(in: 0...300, using: &rng))
            // Sync bytes and short lengths make frame-like runs likely.
            for i in stream.indices where i % 17 == 0 { stream[i] = 0xA4 }
            let whole = decode(stream)
            var decoder = ANTFrameDecoder()
            var chunked: [ANTFrameDecoder.Output] = []
            for start in stride(from: 0, to: stream.count, by: 7) { chunked += decoder.feed(stream[start..<min(start + 7, stream.count)]) }
            #expect(whole == chunked)
            for message in messages(whole) { #expect(decode(message.encoded) == [.message(message)]) }
        }
    }

    @Test("drops and messages describe themselves")
    func descriptions() {
        #expect(ANTFrameDrop(.skippedBeforeSync, byteCount: 3).description == "3 bytes skipped before a sync byte")
        #expect(ANTFrameDrop(.lengthOverLimit(length: 200, limit: 41), byteCount: 2).description.contains("200"))
        #expect(ANTFrameDrop(.badChecksum(messageID: 0x4E, expected: 0x12, received: 0x34), byteCount: 13).description.contains("0x4E"))
        #expect(ANTMessage(0x4E, [0x00, 0xAB]).description == "0x4E [00 AB]")
    }
}
