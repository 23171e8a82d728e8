import Foundation
import HealthModel
import Testing
import TestSupport
@testable import SyncProtocol

/// `SyncJSONEncoder` must write exactly the bytes `SyncAPI.encoder()` (Foundation's
/// `JSONEncoder`) writes: the server stores records as canonical JSON and the two must agree.
@Suite struct SyncJSONEncoderTests {
    /// Both encoders' output for `value`, as text (for readable failures).
    func both<T: Encodable>(_ value: T) throws -> (fast: String, foundation: String) {
        (String(decoding: try SyncJSONEncoder().encode(value), as: UTF8.self),
         String(decoding: try SyncAPI.encoder().encode(value), as: UTF8.self))
    }

    func expectSame<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (fast, foundation) = try both(value)
        #expect(fast == foundation, sourceLocation: sourceLocation)
    }

    @Test func everyRecordKind() throws {
        let wire = WireTests()
        let t0 = wire.t0
        let m = HealthModel.Measurement(id: RecordID.derive("m", "2"), kind: .bloodPressure, time: t0, value: 120.5,
                                        extra: ["diastolic": 80, "pulse_rate": 61, "meanArterial": 93, "Zeta": 1, "alpha": 2],
                                        source: Source(driver: "ble", device: "cuff"))
        let sleep = SleepSession(id: RecordID.derive("s", "1"), start: t0, end: t0.addingTimeInterval(28_800),
                                 stages: [SleepStageSpan(start: t0, end: t0.addingTimeInterval(600), stage: .light)],
                                 source: Source(driver: "fit", device: nil, file: "sleep/2026 night \"1\".fit"))
        let habit = HabitEvent(id: RecordID.derive("h", "1"), habit: "water", time: t0, value: 250, category: "hydration",
                               unit: "ml", label: "glass\tbig", note: "after run\n🏃 über", source: Source(driver: "csv"))
        let records = [HealthRecord.workout(wire.workout()), .measurement(m), .sleep(sleep), .habit(habit)]
        for record in records {
            try expectSame(WireRecord(record))
            try expectSame(WireRecord(record, deviceId: "d1", seq: 42))
        }
        try expectSame(UploadRequest(records: records.map { WireRecord($0) }))
        try expectSame(UploadResponse(results: [UploadResult(id: "a", version: 1, status: .accepted),
                                                UploadResult(id: "b", version: 2, status: .rejected, reason: "why / not")]))
    }

    /// Random doubles of every magnitude, strings with every escape, dates with odd fractions,
    /// dictionaries with keys whose byte order differs from other orders.
    @Test func randomValuesAgreeWithFoundation() throws {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<500 {
            let item = RandomItem.random(using: &rng)
            try expectSame(item)
            try expectSame([item])
        }
    }

    /// Hand-written `encode(to:)` shapes: nested containers, a super encoder, a single value
    /// inside an array, an empty object, and keys written in reverse order.
    @Test func handWrittenEncodersAgree() throws {
        struct Shapes: Encodable {
            enum Keys: String, CodingKey { case z, y, inner, list, parent, super_ }
            enum Inner: String, CodingKey { case b, a }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode("last", forKey: .z)
                var inner = c.nestedContainer(keyedBy: Inner.self, forKey: .inner)
                try inner.encode(2, forKey: .b)
                try inner.encode([1.5, 2], forKey: .a)
                var list = c.nestedUnkeyedContainer(forKey: .list)
                try list.encode("x")
                var nested = list.nestedContainer(keyedBy: Inner.self)
                try nested.encodeNil(forKey: .a)
                try list.encode(Empty())
                try c.encode(true, forKey: .y)
                let parent = c.superEncoder(forKey: .parent)
                var single = parent.singleValueContainer()
                try single.encode("from super")
                try Empty().encode(to: c.superEncoder())
            }
        }
        struct Empty: Encodable {
            func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: SyncJSONEncoderTests.NoKeys.self) }
        }
        try expectSame(Shapes())
        try expectSame([Shapes(), Shapes()])
        try expectSame([String: [String: Int]]())
        try expectSame(["b": ["y": 1, "x": 2], "a": [:]])
    }

    enum NoKeys: CodingKey {}

    /// A time logged at .32 s is written `.32`, not with the binary fraction's noise
    /// (0.3200000524520874), by both encoders, and decodes to the same Date.
    @Test func timesCarryOnlyTheDigitsTheyHad() throws {
        let time = try #require(ISO8601.parse("2026-11-28T18:26:47.32Z"))
        let habit = HabitEvent(id: RecordID.derive("h", "32"), habit: "water", time: time, value: 250, source: Source(driver: "manual"))
        let (fast, foundation) = try both(habit)
        #expect(fast == foundation && fast.contains("\"time\":\"2026-11-28T18:26:47.32Z\""), "\(fast)")
        #expect(try SyncAPI.decoder().decode(HabitEvent.self, from: Data(fast.utf8)).time == time)
    }

    @Test func nonFiniteNumbersAreRefused() {
        for value in [Double.nan, .infinity, -.infinity] {
            #expect(throws: EncodingError.self) { try SyncJSONEncoder().encode(["v": value]) }
        }
    }
}
