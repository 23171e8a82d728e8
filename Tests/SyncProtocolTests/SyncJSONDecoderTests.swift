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

    // MARK: Hostile sizes

    /// `{"k0":0,"k1":1,...}` with `count` members (`duplicates`: each key once more at the end,
    /// with another value, which must not count).
    static func bigObject(_ count: Int, duplicates: Bool = false) -> [UInt8] {
        var members = (0..<count).map { #""k\#($0)":\#($0)"# }
        if duplicates { members += (0..<count).map { #""k\#($0)":-1"# } }
        return Array(("{" + members.joined(separator: ",") + "}").utf8)
    }

    /// Decodes with the decoder's own document, answering the value and the key comparisons made.
    func decodeCounting<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> (T, Int) {
        let document = try JSONDocument(data: Data(bytes), indexLimit: nil)
        let value = try SyncJSONDecoder().decode(type, document: document)
        return (value, document.keyComparisons)
    }

    /// A dictionary of n keys costs O(n) key comparisons, not O(n^2) (a 40,000-key `extra` took
    /// 13 s of the server's CPU with a scan per key).
    @Test func keyLookupsStayLinear() throws {
        for n in [1_000, 9_000] {
            let (map, comparisons) = try decodeCounting([String: Double].self, Self.bigObject(n))
            #expect(map.count == n && map["k\(n - 1)"] == Double(n - 1))
            #expect(comparisons <= 3 * n, "\(n) keys: \(comparisons) key comparisons")
        }
        // A struct read out of a large object (unknown keys around its own): one lookup per key.
        struct Pair: Codable, Equatable { var a: Int; var b: String }
        let padded = Array(#"{"x1":1,"x2":[2],"x3":{"y":3},"b":"first","#.utf8) + Self.bigObject(5_000).dropFirst().dropLast()
            + Array(#","a":7,"b":"second"}"#.utf8)
        let (pair, comparisons) = try decodeCounting(Pair.self, padded)
        #expect(pair == Pair(a: 7, b: "first"))
        #expect(comparisons <= 5_010)
        expectAgreement(Pair.self, padded)
    }

    /// Large objects (hashed) and small ones (scanned) read like `JSONDecoder`: the first of a
    /// repeated key counts, escaped keys match their unescaped spelling.
    @Test func largeObjectsReadAsFoundationReadsThem() {
        for n in [3, JSONDocument.indexedMembers, JSONDocument.indexedMembers + 1, 200] {
            #expect(expectAgreement([String: Double].self, Self.bigObject(n, duplicates: true))?.count == n)
            #expect(expectAgreement([String: Int].self, Self.bigObject(n))?["k0"] == 0)
        }
        struct Keys: Codable, Equatable {
            var a: Int
            var quote: Int?
            enum CodingKeys: String, CodingKey { case a, quote = "q\"\\" }
        }
        // A key holding a quote must not match text that runs past a shorter key's end.
        struct Tricky: Codable, Equatable {
            var t: String?
            enum CodingKeys: String, CodingKey { case t = #"a":"b"# }
        }
        #expect(expectAgreement(Tricky.self, Array(#"{"a":"b"}"#.utf8)) == Tricky(t: nil))
        #expect(expectAgreement(Tricky.self, Array(#"{"a\":\"b":"c"}"#.utf8)) == Tricky(t: "c"))
        for padding in [0, 40] {
            let pad = (0..<padding).map { #""p\#($0)":0,"# }.joined()
            for text in [#"{\#(pad)"\u0061":1,"a":2}"#, #"{\#(pad)"a":1,"\u0061":2,"q\"\\":3}"#,
                         #"{\#(pad)"q\u0022\\":4,"a":5}"#, #"{\#(pad)"a\u0000":1}"#, #"{\#(pad)"aa":1,"a":6}"#] {
                expectAgreement(Keys.self, Array(text.utf8))
            }
        }
    }

    /// More members than `maximumMembers` in one object: refused where the first one too many
    /// starts; as many is fine.
    @Test func objectsWithTooManyMembersAreRefused() throws {
        let limit = SyncJSONDecoder.maximumMembers
        #expect(try SyncJSONDecoder().decode([String: Int].self, from: Self.bigObject(limit)).count == limit)
        let tooMany = Self.bigObject(limit + 1)
        let offset = tooMany.count - #""k\#(limit)":\#(limit)}"#.utf8.count
        do {
            let map = try SyncJSONDecoder().decode([String: Int].self, from: tooMany)
            Issue.record("accepted an object of \(map.count) members")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription == "more than \(limit) members in an object at byte \(offset)")
        }
        // Nested: the limit is per object.
        let nested = Array(#"{"a":"#.utf8) + Self.bigObject(limit) + Array(#","b":"#.utf8) + Self.bigObject(limit) + [UInt8(ascii: "}")]
        #expect(try SyncJSONDecoder().decode([String: [String: Int]].self, from: nested).count == 2)
    }

    /// The index takes 4 bytes per scalar and 12 per container, and `indexLimit` caps it: a
    /// body of nothing but small numbers (what a gzip bomb inflates to) is refused before the
    /// index outgrows the limit, and a realistic upload needs less index than its size.
    @Test func theIndexStaysWithinItsLimit() throws {
        let zeros = Array(#"{"records":["#.utf8) + Array(repeating: Array("0,".utf8), count: 100_000).joined() + Array("0]}".utf8)
        let unlimited = try JSONDocument(data: Data(zeros), indexLimit: nil)
        #expect(unlimited.tape.count == 3 + 1 + 3 + 100_001)
        do {
            _ = try SyncJSONDecoder(indexLimit: zeros.count).decode([String: [Int]].self, from: zeros)
            Issue.record("a body of zeros fitted in an index its size")
        } catch DecodingError.dataCorrupted(let context) {
            let error = try #require(context.underlyingError as? SyncJSONDecoder.IndexLimitExceeded)
            #expect(error.limit == zeros.count / 4 * 4)
            // The value that does not fit: the first past limit/4 words, each "0," two bytes.
            #expect(error.offset == 12 + 2 * (zeros.count / 4 - 7))
            #expect(context.debugDescription.hasPrefix("more values than"))
        }
        #expect(try SyncJSONDecoder(indexLimit: 4 * 100_008).decode([String: [Int]].self, from: zeros)["records"]?.count == 100_001)

        let wire = WireTests()
        let m = HealthModel.Measurement(id: RecordID.derive("m", "1"), kind: .bloodPressure, time: wire.t0, value: 120,
                                        extra: ["diastolic": 80, "mean_arterial": 93.3], source: Source(driver: "ble", device: "cuff"))
        let upload = UploadRequest(records: [WireRecord(.workout(wire.workout()))] + Array(repeating: WireRecord(.measurement(m)), count: 100))
        let bytes = try SyncJSONEncoder().encode(upload)
        let document = try JSONDocument(data: Data(bytes), indexLimit: bytes.count)
        // About half (measurements are many short tokens; samples and rr intervals fewer).
        #expect(document.tape.count * 4 < bytes.count * 3 / 4, "index \(document.tape.count * 4) bytes for \(bytes.count) bytes of text")
        #expect(try SyncJSONDecoder(indexLimit: bytes.count).decode(UploadRequest.self, from: bytes) == upload)
    }
}
