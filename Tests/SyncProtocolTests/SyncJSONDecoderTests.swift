import Foundation
import HealthModel
import Testing
import TestSupport
@testable import SyncProtocol

/// `SyncJSONDecoder` must read what `SyncAPI.decoder()` (Foundation's `JSONDecoder`) reads, to
/// the same values, refuse what it refuses, and never crash on hostile text.
@Suite struct SyncJSONDecoderTests {
    /// Both decoders on the same bytes: both succeed with equal values, or both fail.
    @discardableResult
    func expectAgreement<T: Decodable & Equatable>(_ type: T.Type, _ bytes: [UInt8],
                                                   sourceLocation: SourceLocation = #_sourceLocation) -> T? {
        let ours = Result { try SyncJSONDecoder().decode(type, from: bytes) }
        let foundation = Result { try SyncAPI.decoder().decode(type, from: Data(bytes)) }
        switch (ours, foundation) {
        case (.success(let a), .success(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
            return a
        case (.failure(let error), .failure):
            #expect(error is DecodingError, "not a DecodingError: \(error)", sourceLocation: sourceLocation)
            return nil
        case (.success, .failure(let error)):
            Issue.record("accepted what JSONDecoder refuses (\(error)): \(String(decoding: bytes, as: UTF8.self))",
                         sourceLocation: sourceLocation)
        case (.failure(let error), .success):
            Issue.record("refused what JSONDecoder reads (\(error)): \(String(decoding: bytes, as: UTF8.self))",
                         sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func randomValuesReadAsFoundationReadsThem() throws {
        var rng = SeededGenerator(seed: 0xDEC0_0001)
        for _ in 0..<300 {
            let item = RandomItem.random(using: &rng)
            let bytes = try SyncJSONEncoder().encode(item)
            #expect(try SyncJSONDecoder().decode(RandomItem.self, from: bytes) == item)
            expectAgreement([RandomItem].self, try SyncJSONEncoder().encode([item, item]))
        }
    }

    @Test func everyProtocolMessage() throws {
        let wire = WireTests()
        let m = HealthModel.Measurement(id: RecordID.derive("m", "2"), kind: .bloodPressure, time: wire.t0, value: 120.5,
                                        extra: ["diastolic": 80], source: Source(driver: "ble", device: "cuff"))
        let records = [WireRecord(.workout(wire.workout())), WireRecord(.measurement(m), deviceId: "d", seq: 9)]
        let upload = UploadRequest(records: records)
        #expect(expectAgreement(UploadRequest.self, try SyncJSONEncoder().encode(upload)) == upload)
        let page = HistoryPage(records: records, next: 9, more: true)
        #expect(expectAgreement(HistoryPage.self, try SyncJSONEncoder().encode(page)) == page)
        let answer = UploadResponse(results: [UploadResult(id: "a", version: 1, status: .duplicate)])
        #expect(expectAgreement(UploadResponse.self, try SyncJSONEncoder().encode(answer)) == answer)
    }

    /// Text written differently from how the encoder writes it: spaces, escapes (surrogate
    /// pairs too), exponents, integral doubles for integers, keys twice (the first counts),
    /// unknown keys.
    @Test func otherSpellingsOfTheSameValues() {
        struct Small: Codable, Equatable {
            var s: String
            var d: Double
            var i: Int
            var o: Int?
        }
        let texts = [
            #" { "s" : "a\/b\u00e9\ud83d\ude00\n" , "d" : -1.5E+2 , "i" : 7 } "#,
            #"{"s":"","d":0,"i":-0,"o":null}"#,
            #"{"s":"x","d":1e-400,"i":100.0}"#,
            #"{"s":"x","d":2,"i":1e2,"s":"last"}"#,
            #"{"s":"x","d":2,"i":3,"extra":{"deep":[1,2,{"x":null}]}}"#,
            #"{"s":"x","d":2,"i":1.5}"#,
            #"{"s":"x","d":2,"i":9223372036854775808}"#,
            #"{"s":"x","d":1e400,"i":1}"#,
            #"{"s":"x","d":"2","i":1}"#,
            #"{"s":null,"d":2,"i":1}"#,
            #"{"d":2,"i":1}"#,
        ]
        for text in texts { expectAgreement(Small.self, Array(text.utf8)) }
    }

    /// Malformed text: refused with where it goes wrong, never a crash.
    @Test func malformedTextIsRefusedWithItsPosition() {
        let cases: [(String, Int)] = [
            ("", 0), ("{", 1), (#"{"a":1,}"#, 7), ("[1,]", 3), ("[01]", 2), ("[1.]", 3), ("[-]", 2), ("[1e]", 3),
            (#"["a"#, 3), (#"["\x"]"#, 3), ("[\"\u{01}\"]", 2), (#"["\ud800"]"#, 8), (#"["\udc00"]"#, 8),
            (#"["\u12G4"]"#, 6), ("[tru]", 1), ("[NaN]", 1), ("{} {}", 3), (#"{'a':1}"#, 1), ("[1 2]", 3),
        ]
        for (text, offset) in cases {
            do {
                _ = try SyncJSONDecoder().decode([Int].self, from: Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch DecodingError.dataCorrupted(let context) {
                #expect(context.codingPath.isEmpty)
                #expect(context.debugDescription.hasSuffix("at byte \(offset)"), "\(text): \(context.debugDescription)")
            } catch {
                Issue.record("\(text): \(error)")
            }
        }
        // Invalid UTF-8 inside a string.
        #expect(throws: DecodingError.self) { try SyncJSONDecoder().decode(String.self, from: [0x22, 0xC3, 0x28, 0x22]) }
        // Nesting far deeper than any message: refused, not a stack overflow.
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 200_000)
        #expect(throws: DecodingError.self) { try SyncJSONDecoder().decode([Int].self, from: deep) }
    }

    /// Every truncation and many single-byte corruptions of a real upload: the two decoders agree
    /// on what is readable, and on its value.
    @Test func mutatedUploadsAgreeWithFoundation() throws {
        let wire = WireTests()
        let upload = UploadRequest(records: [WireRecord(.workout(wire.workout()))])
        let bytes = try SyncJSONEncoder().encode(upload)
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(expectAgreement(UploadRequest.self, Array(bytes[..<length])) == nil, "a cut upload is no upload")
        }
        var rng = SeededGenerator(seed: 0xBAD_B17E)
        let replacements = Array("{}[]\",:0123456789.eE-+ntfaslrux\\ \u{7F}".utf8) + [0x00, 0xFF, 0xC3]
        var read = 0, refused = 0
        for _ in 0..<1500 {
            var mutated = bytes
            mutated[Int.random(in: 0..<mutated.count, using: &rng)] = replacements.randomElement(using: &rng)!
            if expectAgreement(UploadRequest.self, mutated) != nil { read += 1 } else { refused += 1 }
        }
        // Both outcomes are reached (a corruption inside a string or a number often still reads).
        #expect(read > 100 && refused > 100, "read \(read), refused \(refused)")
    }

    @Test func errorsSayWhereInTheValue() throws {
        let text = Array(#"{"records":[{"id":"x","version":"one","type":"habit"}]}"#.utf8)
        #expect {
            try SyncJSONDecoder().decode(UploadRequest.self, from: text)
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["records", "0", "version"]
        }
    }
}
