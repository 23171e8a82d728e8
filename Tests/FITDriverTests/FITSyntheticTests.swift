import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

typealias F = FITEncoder.Field

/// Files built with ``FITEncoder``: sleep, weight scale in big-endian, monitoring with
/// timestamp_16 and heart rate, compressed timestamps, every base type, developer fields, chains.
@Suite struct FITSyntheticTests {
    static let device = "garmin/fenix5/3921234567"
    static let t0: Int64 = 1_000_000_000 // FIT seconds: 2021-09-08T01:46:40Z

    @Test func sleepLevelsBecomeOneSessionWithStages() async throws {
        var e = FITEncoder()
        e.fileID(type: 49) // a sleep file type the profile does not name
        e.define(local: 0, global: 275, fields: [F(number: 253, type: .uint32), F(number: 0, type: .enum)])
        for (offset, level) in [(0, 2), (600, 3), (1800, 4), (2400, 1), (2700, 0)] as [(Int64, Int64)] {
            e.data(local: 0, [.int(Self.t0 + offset), .int(level)])
        }
        e.define(local: 1, global: 21, fields: [F(number: 253, type: .uint32), F(number: 0, type: .enum)])
        e.data(local: 1, [.int(Self.t0 + 3000), .int(0)]) // timer event: the file's last timestamp
        let (records, error) = await Fixtures.importRecords(Data(e.file()))
        #expect(error == nil)
        #expect(records.count == 1)
        let sleep = try #require(Fixtures.sleeps(records).first)
        #expect(sleep.start == FITNormalizer.date(UInt32(Self.t0)))
        #expect(sleep.end == FITNormalizer.date(UInt32(Self.t0 + 3000)))
        #expect(sleep.stages.map(\.stage) == [.light, .deep, .rem, .awake, .unknown])
        #expect(sleep.stages.map { $0.end.timeIntervalSince($0.start) } == [600, 1200, 600, 300, 300])
        #expect(sleep.totalSleepS == 2700)
        #expect(sleep.source == Source(driver: "fit", device: Self.device, file: "test.fit"))
        #expect(sleep.id == RecordID.derive("sleep", "fit", Self.device, String(631_065_600 + Int(Self.t0))))
    }

    @Test func bigEndianWeightScaleWithUserIndex() async throws {
        var e = FITEncoder()
        e.fileID(type: 9, manufacturer: 15, product: 1, serial: 1234)
        e.define(local: 0, global: 30, fields: [
            F(number: 253, type: .uint32), F(number: 0, type: .uint16), F(number: 1, type: .uint16),
            F(number: 2, type: .uint16), F(number: 4, type: .uint16), F(number: 5, type: .uint16),
            F(number: 7, type: .uint16), F(number: 11, type: .uint8), F(number: 12, type: .uint16), F(number: 13, type: .uint8),
        ], bigEndian: true)
        e.data(local: 0, [.int(Self.t0), .int(8012), .int(2150), .int(5520), .int(310), .int(3530), .int(7000), .int(7),
                          .int(1), .int(241)])
        e.data(local: 0, [.int(Self.t0 + 60), .int(0xFFFE), .invalid, .invalid, .invalid, .invalid, .invalid, .invalid,
                          .int(1), .invalid]) // weight "calculating": nothing usable
        let (records, error) = await Fixtures.importRecords(Data(e.file()))
        #expect(error == nil)
        let m = Fixtures.measurements(records)
        let byKind = Dictionary(uniqueKeysWithValues: m.map { ($0.kind, $0.value) })
        #expect(byKind == [.weight: 80.12, .bodyFat: 21.5, .bodyWater: 55.2, .boneMass: 3.1, .muscleMass: 35.3,
                           .basalMetabolicRate: 1750, .visceralFat: 7, .bmi: 24.1])
        let device = "dynastream/hrm1/1234"
        let epoch = String(631_065_600 + Int(Self.t0))
        let weight = try #require(m.first { $0.kind == .weight })
        #expect(weight.id == RecordID.derive("measurement", "fit", device, "weight", epoch, "1"))
        #expect(weight.source.device == device)
    }

    @Test func monitoringHeartRateWithTimestamp16AndDailyTotals() async throws {
        var e = FITEncoder()
        e.fileID(type: 32)
        // monitoring_info: local time is UTC-6.
        e.define(local: 0, global: 103, fields: [F(number: 253, type: .uint32), F(number: 0, type: .uint32)])
        let midnightUTC: Int64 = 999_993_600 // a FIT time at 00:00 UTC (multiple of 86400)
        let dayStart = midnightUTC + 6 * 3600 // local midnight
        e.data(local: 0, [.int(dayStart), .int(dayStart - 6 * 3600)])
        e.define(local: 1, global: 55, fields: [F(number: 253, type: .uint32), F(number: 5, type: .enum),
                                                F(number: 3, type: .uint32), F(number: 19, type: .uint16)])
        e.data(local: 1, [.int(dayStart + 60), .int(6), .int(200), .int(10)]) // raw cycles = steps when walking
        e.define(local: 2, global: 55, fields: [F(number: 26, type: .uint16), F(number: 27, type: .uint8)])
        var times: [Int64] = []
        var t = dayStart + 60
        for i in 0..<5 { // 5 readings, 20000 s apart: crosses the 16-bit rollover
            t += 20000
            times.append(t)
            e.data(local: 2, [.int(t & 0xFFFF), .int(60 + Int64(i))])
        }
        e.data(local: 1, [.int(dayStart + 3600), .int(6), .int(600), .int(30)]) // 600 walking steps so far
        e.data(local: 1, [.int(dayStart + 7200), .int(1), .int(100), .int(5)]) // running: 100 steps
        e.data(local: 1, [.int(dayStart + 7300), .int(6), .int(40), .int(2)]) // walking counter reset: +40
        let (records, error) = await Fixtures.importRecords(Data(e.file()))
        #expect(error == nil)
        let m = Fixtures.measurements(records)
        let hr = m.filter { $0.kind == .heartRate }
        #expect(hr.map(\.value) == [60, 61, 62, 63, 64])
        #expect(hr.map(\.time) == times.map { FITNormalizer.date(UInt32($0)) })
        let steps = m.filter { $0.kind == .steps }
        // Day 1 (local) holds everything up to dayStart + 86400; the later HR readings are day 2.
        #expect(steps.count == 1)
        let total = try #require(steps.first)
        #expect(total.value == 740) // walking 600, then a reset to 40; running 100
        #expect(steps.first?.time == FITNormalizer.date(UInt32(dayStart)))
        let energy = try #require(m.first { $0.kind == .energy })
        #expect(energy.value == 37) // walking 30 then a reset to 2, running 5
    }

    @Test func compressedTimestampsRollOver() throws {
        var e = FITEncoder()
        e.fileID(type: 4)
        e.define(local: 0, global: 20, fields: [F(number: 253, type: .uint32), F(number: 3, type: .uint8)])
        e.data(local: 0, [.int(Self.t0 - Self.t0 % 32 + 30), .int(100)])
        e.define(local: 1, global: 20, fields: [F(number: 3, type: .uint8)])
        e.compressed(local: 1, timeOffset: 31, [.int(101)]) // +1
        e.compressed(local: 1, timeOffset: 2, [.int(102)]) // rolls over: +3
        e.compressed(local: 1, timeOffset: 2, [.int(103)]) // same time
        struct Times: FITVisitor {
            var times: [UInt32] = []
            var synthesized = 0
            mutating func message(_ m: FITMessage) throws {
                guard m.globalNumber == 20, let t = m.timestamp else { return }
                times.append(t)
                if m.field(253)?.kind == .synthesized { synthesized += 1 }
            }
        }
        var v = Times()
        try FITDecoder.decode(Data(e.file()), into: &v)
        let base = UInt32(Self.t0 - Self.t0 % 32 + 30)
        #expect(v.times == [base, base + 1, base + 4, base + 4])
        #expect(v.synthesized == 3)
    }

    @Test func everyBaseTypeAndInvalidValues() throws {
        var e = FITEncoder()
        let types: [FITBaseType] = FITBaseType.allCases
        // An unknown message (global 65000): fields numbered by base type, first valid then invalid.
        e.define(local: 0, global: 65000, fields: types.enumerated().map { F(number: UInt8($0.offset), type: $0.element,
                                                                            count: $0.element == .string ? 6 : 1) })
        let valid: [FITEncoder.Value] = types.map { type in
            switch type {
            case .sint8, .sint16, .sint32, .sint64: .int(-5)
            case .float32: .float(1.5)
            case .float64: .float(-2.25)
            case .string: .string("héllo")
            case .byte: .bytes([0x01])
            default: .int(7)
            }
        }
        e.data(local: 0, valid)
        e.data(local: 0, types.map { _ in .invalid })
        // Arrays: uint16[3] with an invalid middle element, byte[3] with some 0xFF, misaligned uint32 of 3 bytes.
        e.define(local: 1, global: 65001, fields: [F(number: 0, type: .uint16, count: 3), F(number: 1, type: .byte, count: 3)])
        e.data(local: 1, [.ints([1, 0xFFFF, 3]), .bytes([0xFF, 5, 0xFF])])
        e.raw([0x41, 0, 0, 0xE9, 0xFD, 1, 2, 3, 0x86]) // local 1 redefined: field 2 size 3 as uint32 (misaligned)
        e.raw([0x01, 0x10, 0x00, 0x11])
        struct Grab: FITVisitor {
            var messages: [[UInt8: [Double]]] = []
            var strings: [String] = []
            var types: [UInt8: FITBaseType] = [:]
            mutating func message(_ m: FITMessage) throws {
                var fields: [UInt8: [Double]] = [:]
                for i in 0..<m.fieldCount {
                    let f = m.field(at: i)
                    fields[f.number] = m.values(of: f)
                    types[f.number] = f.baseType
                    if f.baseType == .string { strings.append(m.string(of: f)) }
                }
                messages.append(fields)
            }
        }
        let file = e.file()
        var g = Grab()
        try FITDecoder.decode(Data(file), into: &g)
        #expect(g.messages.count == 4)
        let first = g.messages[0]
        for (index, type) in types.enumerated() where type != .string {
            let want: Double = switch type {
            case .sint8, .sint16, .sint32, .sint64: -5
            case .float32: 1.5
            case .float64: -2.25
            case .byte: 1
            default: 7
            }
            #expect(first[UInt8(index)] == [want], "\(type)")
        }
        #expect(g.strings == ["héllo"])
        #expect(g.messages[1].isEmpty, "every invalid value makes its field absent")
        let array = try #require(g.messages[2][0])
        #expect(array[0] == 1 && array[1].isNaN && array[2] == 3)
        #expect(g.messages[2][1] == [255, 5, 255], "bytes are invalid only when all are 0xFF")
        // The misaligned 3-byte uint32 is read as bytes.
        #expect(g.messages[3][2] == [16, 0, 17])
        #expect(g.types[2] == .byte)
    }

    @Test func arraysKeepInvalidElementsAsNaN() throws {
        var e = FITEncoder()
        e.define(local: 0, global: 78, fields: [F(number: 0, type: .uint16, count: 4)]) // hrv.time
        e.data(local: 0, [.ints([812, 0xFFFF, 790, 0xFFFF])])
        var v = ValueGrabber(number: 0)
        try FITDecoder.decode(Data(e.file()), into: &v)
        #expect(v.values.count == 4)
        #expect(v.values[0] == 0.812 && v.values[2] == 0.79)
        #expect(v.values[1].isNaN && v.values[3].isNaN)
    }

    @Test func developerFieldsUseTheirDescription() throws {
        var e = FITEncoder()
        e.fileID(type: 4)
        e.define(local: 0, global: 207, fields: [F(number: 3, type: .uint8)]) // developer_data_id.developer_data_index
        e.data(local: 0, [.int(0)])
        e.define(local: 1, global: 206, fields: [
            F(number: 0, type: .uint8), F(number: 1, type: .uint8), F(number: 2, type: .uint8),
            F(number: 3, type: .string, count: 8), F(number: 6, type: .uint8), F(number: 7, type: .sint8),
            F(number: 8, type: .string, count: 6),
        ])
        e.data(local: 1, [.int(0), .int(5), .int(Int64(FITBaseType.uint16.definitionByte)), .string("power2"), .int(10),
                          .int(-3), .string("watts")])
        e.define(local: 2, global: 20, fields: [F(number: 253, type: .uint32)], developer: [(5, 2, 0)], bigEndian: true)
        e.data(local: 2, [.int(Self.t0)], developerBytes: [[0x04, 0xD2]]) // 1234 big-endian -> 1234/10 - (-3)
        var lines: [String] = []
        try FITInspector.writeCSV(Data(e.file()), to: { lines.append($0) })
        let record = try #require(lines.first { $0.hasPrefix("Data,2,record") })
        #expect(record.contains("power2,126.4,watts"), "\(record)")
    }

    @Test func chainedFilesAndEmptySecondFile() async throws {
        var a = FITEncoder()
        a.fileID(type: 4)
        a.define(local: 0, global: 20, fields: [F(number: 253, type: .uint32), F(number: 3, type: .uint8)])
        for i in 0..<10 { a.data(local: 0, [.int(Self.t0 + Int64(i)), .int(100 + Int64(i))]) }
        var b = FITEncoder()
        b.fileID(type: 2) // settings: no records
        let chained = a.file() + b.file(headerSize: 12)
        let (records, error) = await Fixtures.importRecords(Data(chained))
        #expect(error == nil)
        let w = try #require(Fixtures.workoutsOf(records).first)
        #expect(w.samples.count == 10)
        #expect(w.sport == "other")
        #expect(w.maxHeartRate == 109)
        // The same first file followed by a header whose data is missing: partial.
        let broken = a.file() + Array(b.file(headerSize: 12).prefix(16))
        let (kept, failure) = await Fixtures.importRecords(Data(broken))
        #expect(Fixtures.workoutsOf(kept).count == 1)
        #expect(failure?.position == .byte(a.file().count + 12))
    }
}

/// Collects the values of one field of every message.
struct ValueGrabber: FITVisitor {
    var number: UInt8
    var values: [Double] = []
    mutating func message(_ m: FITMessage) throws { values += m.values(number) }
}
