import Foundation
import HealthModel
import Testing
import TestSupport
@testable import SyncProtocol

/// The streaming reader of an upload's records: split at any piece size, it reads what the
/// whole-text decoders read, to the same records, and refuses what they refuse, saying where.
@Suite struct JSONArrayMemberSplitterTests {
    /// The records of an upload text fed `piece` bytes at a time, each decoded on its own.
    static func records(_ bytes: [UInt8], piece: Int) throws -> [WireRecord] {
        var splitter = JSONArrayMemberSplitter(member: "records")
        var records: [WireRecord] = []
        var start = 0
        repeat {
            let end = min(start + piece, bytes.count)
            try bytes[start..<end].withUnsafeBytes { raw in
                try splitter.feed(raw) { element in
                    records.append(try SyncJSONDecoder().decodeElement(
                        WireRecord.self, text: element.text, offset: element.offset,
                        codingPath: [Key(stringValue: "records"), Key(intValue: element.index)]))
                }
            }
            start = end
        } while start < bytes.count
        try splitter.finish()
        return records
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init(intValue: Int) {
            stringValue = "Index \(intValue)"
            self.intValue = intValue
        }
    }

    /// The error's text as the server puts it in its answer.
    static func message(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as DecodingError {
            return SyncAPI.describe(error)
        } catch {
            return "\(error)"
        }
    }

    static let pieces = [1, 2, 3, 7, 64, 4096, Int.max / 2]
    static let t0 = Date(timeIntervalSince1970: 1_763_800_000.25)
    static let measurement = HealthModel.Measurement(id: RecordID.derive("m", "2"), kind: .bloodPressure, time: t0, value: 120,
                                                     extra: ["diastolic": 80, "pulse_rate": 61], source: Source(driver: "ble", device: "cuff"))
    static let habit = HabitEvent(id: RecordID.derive("h", "1"), habit: "water", time: t0, value: 250, category: "hydration",
                                  unit: "ml", label: "glass \"big\" [1]", note: "after {run}", source: Source(driver: "csv"))

    @Test func realUploadsReadTheSameAtEveryPieceSize() throws {
        let wire = WireTests()
        let upload = UploadRequest(records: [WireRecord(.workout(wire.workout())),
                                             WireRecord(.measurement(Self.measurement)),
                                             WireRecord(.habit(Self.habit))])
        let compact = try SyncJSONEncoder().encode(upload)
        // With space everywhere JSON allows it, keys out of order, another member before and after.
        let spaced = Array(" \n{ \"other\" : [ {\"records\": 1} , \"]\" ] ,\t\"records\" :\r\n ".utf8)
            + Array(try SyncJSONEncoder().encode(upload.records).map { $0 == UInt8(ascii: ",") ? UInt8(ascii: ",") : $0 })
            + Array(" , \"after\" : { \"x\" : \"\\\"}\" } } \n".utf8)
        for text in [compact, spaced] {
            let whole = try SyncJSONDecoder().decode(UploadRequest.self, from: text)
            #expect(whole == upload)
            for piece in Self.pieces {
                #expect(try Self.records(text, piece: piece) == upload.records, "piece \(piece)")
            }
        }
        #expect(try Self.records(Array(#"{"records":[]}"#.utf8), piece: 1).isEmpty)
    }

    /// Foundation's `JSONDecoder`, an independent implementation, is the reference: on every cut
    /// and on many single-byte corruptions of a real upload both read the same records or both
    /// refuse, at any piece size.
    @Test func mutatedUploadsAgreeWithFoundation() throws {
        let wire = WireTests()
        let upload = UploadRequest(records: [WireRecord(.workout(wire.workout())), WireRecord(.habit(Self.habit))])
        let bytes = try SyncJSONEncoder().encode(upload)
        var rng = SeededGenerator(seed: 0x5_9117)
        let replacements = Array("{}[]\",:0123456789.eE-+ntfaslrux\\ \u{7F}".utf8) + [0x00, 0xFF, 0xC3]
        var inputs = stride(from: 0, to: bytes.count, by: 5).map { Array(bytes[..<$0]) }
        for _ in 0..<1500 {
            var mutated = bytes
            mutated[Int.random(in: 0..<mutated.count, using: &rng)] = replacements.randomElement(using: &rng)!
            inputs.append(mutated)
        }
        var read = 0, refused = 0
        for input in inputs {
            let foundation = try? SyncAPI.decoder().decode(UploadRequest.self, from: Data(input))
            let piece = Self.pieces[Int.random(in: 0..<Self.pieces.count, using: &rng)]
            let ours = Result { try Self.records(input, piece: piece) }
            switch (ours, foundation) {
            case (.success(let records), let reference?):
                #expect(records == reference.records)
                read += 1
            case (.failure(let error), nil):
                #expect(error is DecodingError, "\(error)")
                refused += 1
            case (.success, nil):
                Issue.record("read what JSONDecoder refuses: \(String(decoding: input, as: UTF8.self))")
            case (.failure(let error), _?):
                Issue.record("refused what JSONDecoder reads (\(error)): \(String(decoding: input, as: UTF8.self))")
            }
        }
        #expect(read > 100 && refused > 100, "read \(read), refused \(refused)")
    }

    /// Each refusal says what and at which byte of the whole text, whatever the piece size.
    @Test func errorsSayWhereInTheWholeText() throws {
        let cases: [(String, String)] = [
            (#"{"records":[{"id":"x""#, "not valid JSON (unexpected end of the text at byte 21)"),
            (#"["records"]"#, "not valid JSON (expected an object at byte 0)"),
            (#"{"records":{}}"#, "expected Array<Any> at records"),
            (#"{"other":[]}"#, "missing key 'records'"),
            (#"{"records":[]} x"#, "not valid JSON (unexpected text after the JSON value at byte 15)"),
            (#"{"records":[],}"#, "not valid JSON (expected a key at byte 14)"),
            (#"{"records":[,]}"#, "not valid JSON (expected a value at byte 12)"),
            (#"{"records" []}"#, "not valid JSON (expected ':' after a key at byte 11)"),
            (#"{"a":tru,"records":[]}"#, "not valid JSON (unexpected character 't' at byte 5)"),
            (#"{"records":[{"id":"x" "v":1}]}"#, "not valid JSON (expected ',' or '}' in an object at byte 22)"),
            (#"{"records":[1]}"#, "expected Dictionary<String, Any> at records.[0]"),
        ]
        for (text, expected) in cases {
            for piece in [1, 5, 4096] {
                let got = Self.message { try Self.records(Array(text.utf8), piece: piece) }
                #expect(got == expected, "\(text), piece \(piece)")
            }
        }
        // The same position as the whole-text decoder gives.
        let habit = try SyncJSONEncoder().encode(WireRecord(.habit(Self.habit)))
        let corrupt = Array(#"{"records":["#.utf8) + habit + Array(#",{"id":"b","version":1e}]}"#.utf8)
        let whole = Self.message { try SyncJSONDecoder().decode(UploadRequest.self, from: corrupt) }
        #expect(whole != nil && Self.message { try Self.records(corrupt, piece: 3) } == whole)
    }

    @Test func theFirstMemberCountsAndKeysAreUnescaped() throws {
        let habit = try SyncJSONEncoder().encode(WireRecord(.habit(Self.habit)))
        let text = Array(#"{"rec\u006frds":["#.utf8) + habit + Array(#"],"records":[1,2,3]}"#.utf8)
        #expect(try Self.records(text, piece: 2).count == 1)
        // The member read second is still checked as JSON.
        let bad = Array(#"{"records":[],"records":[01]}"#.utf8)
        #expect(Self.message { try Self.records(bad, piece: 1) }?.hasPrefix("not valid JSON (") == true)
    }

    /// Nesting is counted from the whole text: an element's own limit is two levels less.
    @Test func nestingIsRefusedEarlyAndCountedFromTheTop() throws {
        let deep = Array(#"{"records":["#.utf8) + [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let got = Self.message { try Self.records(deep, piece: 4096) }
        #expect(got == "not valid JSON (nested deeper than 512 at byte \(12 + 510))", "\(got ?? "")")
        let fits = Array(#"{"records":["#.utf8) + [UInt8](repeating: UInt8(ascii: "["), count: 510)
            + [UInt8](repeating: UInt8(ascii: "]"), count: 510) + Array("]}".utf8)
        // Deep enough to pass the nesting check, and not a record.
        #expect(Self.message { try Self.records(fits, piece: 100) } == "expected Dictionary<String, Any> at records.[0]")
    }
}
