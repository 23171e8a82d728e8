import TestSupport
import Testing
@testable import GATTProfiles

/// Deterministic seeded fuzzing: random byte strings per decoder. Every input either decodes or
/// throws a `ProfileDecodeError` (the only error type the decoders can throw) that names the
/// right characteristic and an offset inside the input; nothing traps.
@Suite struct FuzzTests {
    static let iterations = 20_000

    @Test("random byte strings never crash a decoder", arguments: GATTProfileDecoder.supportedCharacteristics.sorted())
    func fuzz(characteristic: UInt16) async {
        var rng = SeededGenerator(seed: 0xF022_0000 | UInt64(characteristic))
        var decoded = 0, rejected = 0
        for i in 0..<Self.iterations {
            // A long CPU-bound loop gives the (2-thread) pool to other tests now and then, or
            // their timers and processes starve.
            if i % 500 == 0 { await Task.yield() }
            // Mostly short values (where the flags matter), some long ones, some all-0xFF flags.
            let length = i % 10 == 0 ? Int.random(in: 0...600, using: &rng) : Int.random(in: 0...48, using: &rng)
            var bytes = (0..<length).map { _ in rng.u8() }
            if i % 7 == 0, !bytes.isEmpty { bytes[0] = 0xFF }
            do {
                let reading = try GATTProfileDecoder.decode(characteristic: characteristic, bytes)
                #expect(reading != nil)
                decoded += 1
            } catch {
                if error.characteristic != characteristic || error.offset < 0 || error.offset > bytes.count {
                    Issue.record("\(bytes): \(error)")
                }
                rejected += 1
            }
        }
        #expect(decoded + rejected == Self.iterations)
    }

    @Test("decoding is deterministic and ignores nothing silently")
    func trailingBytesAreCounted() throws {
        var rng = SeededGenerator(seed: 0x7A11)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 2...30, using: &rng)).map { _ in rng.u8() }
            let extra = [rng.u8(), rng.u8()]
            if let a = try? TreadmillData.decode(bytes) {
                let b = try TreadmillData.decode(bytes + extra)
                #expect(b.ignoredTrailingBytes == a.ignoredTrailingBytes + 2)
                var c = b
                c.ignoredTrailingBytes = a.ignoredTrailingBytes
                #expect(c == a)
            }
            if let a = try? GlucoseMeasurement.decode(bytes) {
                #expect(try GlucoseMeasurement.decode(bytes + extra).ignoredTrailingBytes == a.ignoredTrailingBytes + 2)
            }
        }
    }
}
