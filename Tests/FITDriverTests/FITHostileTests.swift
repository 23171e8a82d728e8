import TestSupport
import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

/// Malformed and hostile inputs: a typed error at the exact offset, never a crash or a hang.
@Suite struct FITHostileTests {
    func failure(_ bytes: [UInt8]) -> DecodeError? {
        do {
            _ = try FITDecoder.decodeAll(Data(bytes))
            return nil
        } catch let error as DecodeError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    /// A valid file with one record definition and message, for byte editing.
    func small() -> FITEncoder {
        var e = FITEncoder()
        e.fileID(type: 4)
        e.define(local: 0, global: 20, fields: [F(number: 253, type: .uint32), F(number: 3, type: .uint8)])
        e.data(local: 0, [.int(1_000_000_000), .int(120)])
        return e
    }

    @Test func zeroBytes() {
        let e = failure([])
        #expect(e?.position == .byte(0))
        #expect(e?.reason.contains("zero bytes") == true)
    }

    @Test func oneByte() {
        let e = failure([0x0E])
        #expect(e?.position == .byte(0))
        #expect(e?.reason.contains("not a FIT file") == true)
    }

    @Test func notAFITFile() {
        let e = failure(Array("<?xml version=\"1.0\"?><TrainingCenterDatabase/>".utf8))
        #expect(e?.position == .byte(0))
        #expect(e?.reason.contains("not a FIT file") == true)
        #expect(!FITImporter.canImport(FileProbe(fileExtension: "tcx", head: Array("<?xml version=\"1.0\"?>".utf8))))
        #expect(FITImporter.canImport(FileProbe(fileExtension: "bin", head: small().file())))
        #expect(FITImporter.canImport(FileProbe(fileExtension: "fit", head: [])))
    }

    @Test func absurdHeaderSize() {
        var bytes = small().file()
        bytes[0] = 200
        let e = failure(bytes)
        #expect(e?.position == .byte(0))
        #expect(e?.reason.contains("header size 200") == true)
    }

    @Test func badHeaderCRC() {
        let bytes = small().file(headerCRC: 0x1234)
        let e = failure(bytes)
        #expect(e?.position == .byte(12))
        #expect(e?.reason.contains("bad header CRC") == true)
        // A zero header CRC means "not computed".
        #expect(failure(small().file(headerCRC: 0)) == nil)
    }

    @Test func badFileCRC() {
        let e = small()
        let bytes = e.file(fileCRC: 0xBEEF)
        let error = failure(bytes)
        #expect(error?.position == .byte(bytes.count - 2))
        #expect(error?.reason.contains("bad file CRC") == true)
    }

    @Test func absurdDataSize() async {
        let bytes = small().file(dataSize: 0x7FFF_FFF0)
        let e = failure(bytes)
        #expect(e != nil)
        if case .byte(let offset)? = e?.position { #expect(offset >= 14 && offset <= bytes.count) }
        // Nothing usable precedes: the CRC bytes read as records fail, or the data ends early.
        let (_, error) = await Fixtures.importRecords(Data(bytes))
        #expect(error != nil)
    }

    @Test func definitionPointingPastTheEnd() {
        var e = small()
        e.raw([0x41, 0, 0, 20, 0, 50, 3, 1, 2]) // 50 fields declared, one present
        let bytes = e.file()
        let start = bytes.count - 2 - 9
        let error = failure(bytes)
        #expect(error?.position == .byte(start))
        #expect(error?.reason.contains("definition message with 50 fields") == true)
    }

    @Test func undefinedLocalType() {
        var e = small()
        e.raw([0x07, 1, 2, 3])
        let bytes = e.file()
        let error = failure(bytes)
        #expect(error?.position == .byte(bytes.count - 2 - 4))
        #expect(error?.reason.contains("local message type 7") == true)
    }

    @Test func badArchitecture() {
        var e = small()
        e.raw([0x41, 0, 2, 20, 0, 0])
        let bytes = e.file()
        let error = failure(bytes)
        #expect(error?.position == .byte(bytes.count - 2 - 6 + 2))
    }

    @Test func definitionWith255Fields() throws {
        var e = FITEncoder()
        e.define(local: 0, global: 20, fields: (0..<255).map { F(number: UInt8($0), type: .uint32, count: 63) })
        let valid = e.file()
        let summary = try FITDecoder.decodeAll(Data(valid))
        #expect(summary.definitionMessages == 1)
        // A data message for it (255 x 252 bytes) cut short by the end of the data.
        e.raw([0x00] + Array(repeating: 1, count: 100))
        let bytes = e.file()
        let error = failure(bytes)
        #expect(error?.position == .byte(bytes.count - 2 - 101))
        #expect(error?.reason.contains("record message") == true)
        // ... and one complete: every value decoded.
        var full = FITEncoder()
        full.define(local: 0, global: 20, fields: (0..<255).map { F(number: UInt8($0), type: .uint32, count: 63) })
        full.raw([0x00] + Array(repeating: 1, count: 255 * 252))
        let all = try FITDecoder.decodeAll(Data(full.file()))
        #expect(all.dataMessages == 1)
        #expect(all.values >= 255 * 63)
    }

    @Test func truncatedEverywhere() async throws {
        let bytes = try Array(Fixtures.data("fitsdk-Activity.fit"))
        for length in 0..<bytes.count {
            let (_, error) = await Fixtures.importRecords(Data(bytes.prefix(length)))
            let e = try #require(error, "length \(length)")
            if case .byte(let offset) = e.position { #expect(offset <= length) } else { Issue.record("\(e)") }
        }
    }

    /// A deterministic fuzz loop over mutated fixtures, judged by an independent reading of the
    /// FIT framing (headers, data sizes, header and file CRCs): damaged framing must be refused, at
    /// or before the first damage; with sound framing only message damage can fail, inside a
    /// file's data; whatever decodes stays within its fields' ranges.
    @Test func seededFuzz() throws {
        var rng = SeededGenerator(seed: 0xF17_2024)
        let seeds = try ["fitsdk-Activity.fit", "fitsdk-DeveloperData.fit", "fitsdk-WeightScaleMultiUser.fit",
                         "fitsdk-MonitoringFile.fit", "garmin-fenix5-run.fit", "garmin-edge820-bike.fit",
                         "chained-activity-settings.fit", "corrupt/chained-activity-settings-nodata.fit"].map { try Array(Fixtures.data($0)) }
        var decoded = 0, failed = 0, framingRefused = 0, messageRefused = 0, workouts = 0
        var problems: [String] = [], backwards: [String] = []
        for run in 0..<2000 {
            var bytes = seeds[Int(rng.next() % UInt64(seeds.count))]
            let mutations = 1 + Int(rng.next() % 8)
            for _ in 0..<mutations {
                let position = Int(rng.next() % UInt64(max(1, bytes.count)))
                switch rng.next() % 6 {
                case 0, 1: if !bytes.isEmpty { bytes[position] = UInt8(truncatingIfNeeded: rng.next()) }
                case 2: if !bytes.isEmpty { bytes[position] ^= 1 << UInt8(rng.next() % 8) }
                case 3: bytes.insert(contentsOf: (0..<Int(rng.next() % 16)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: position)
                case 4: bytes.removeSubrange(position..<min(bytes.count, position + Int(rng.next() % 32)))
                default: bytes = Array(bytes.prefix(position))
                }
            }
            // Half the time keep the file CRC right, so decoding gets past the CRC check; a
            // quarter of the time also make the header declare what follows it as one file, so
            // that the damage reaches the message decoder.
            if rng.next() % 2 == 0, bytes.count >= 14, bytes[0] == 14 || bytes[0] == 12 {
                let end = bytes.count - 2
                if rng.next() % 2 == 0, end >= Int(bytes[0]) {
                    let size = UInt32(end - Int(bytes[0]))
                    for i in 0..<4 { bytes[4 + i] = UInt8(truncatingIfNeeded: size >> (8 * UInt32(i))) }
                    if bytes[0] == 14 { bytes[12] = 0; bytes[13] = 0 }
                }
                let crc = FITCRC.compute(bytes[0..<end])
                bytes[end] = UInt8(crc & 0xFF)
                bytes[end + 1] = UInt8(crc >> 8)
            }
            let data = Data(bytes)
            let (records, error) = FITImporter.decode(data, path: "fuzz.fit")
            let framing = Self.referenceFraming(bytes)
            if let error {
                failed += 1
                guard case .byte(let offset) = error.position, (0...bytes.count).contains(offset) else {
                    problems.append("run \(run): \(error) is not at a byte of the \(bytes.count)"); continue
                }
                switch framing {
                case .damaged(let at):
                    framingRefused += 1
                    if offset > at { problems.append("run \(run): \(error), but the framing is damaged first at byte \(at)") }
                case .sound(let dataRegions):
                    messageRefused += 1
                    if !dataRegions.contains(where: { $0.contains(offset) }) { problems.append("run \(run): \(error) outside the data of sound files") }
                }
            } else {
                decoded += 1
                if case .damaged(let at) = framing { problems.append("run \(run): decoded, but the framing is damaged at byte \(at)") }
            }
            for record in records {
                if let p = Self.rangeProblem(record) { problems.append("run \(run): \(p)") }
                guard case .workout(let w) = record else { continue }
                workouts += 1
                if w.end < w.start { backwards.append("run \(run): \(w.start)...\(w.end), elapsed \(w.elapsedS)") }
            }
            // The inspector reads the same bytes: it stops at the same damage, or at none.
            if rng.next() % 4 == 0 {
                var lines = 0
                do {
                    try FITInspector.writeCSV(data, to: { _ in lines += 1 })
                    if let error { problems.append("run \(run): the inspector read what the importer refused (\(error))") }
                } catch let inspected as DecodeError {
                    if inspected.position != error?.position { problems.append("run \(run): inspector \(inspected), importer \(String(describing: error))") }
                }
                if lines == 0, error == nil { problems.append("run \(run): the inspector printed nothing") }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        // A file without a session gets one workout over its records; records out of time order
        // once gave one that ended before it started (found by this loop).
        #expect(backwards.isEmpty, "\(backwards.prefix(5))")
        #expect(decoded + failed == 2000)
        #expect(decoded > 50 && framingRefused > 100 && messageRefused > 100 && workouts > 100,
                "decoded \(decoded), refused for framing \(framingRefused), for messages \(messageRefused), workouts \(workouts)")
    }

    enum Framing {
        /// Every chained file is whole: header, data and a matching CRC. Their data ranges.
        case sound([Range<Int>])
        /// The offset where the decoder must stop at the latest.
        case damaged(at: Int)
    }

    /// FIT framing read independently (FIT protocol, "File Header" and "CRC"): chained files of a
    /// 12- or 14-byte header with ".FIT" at 8, a data size at 4, an optional header CRC (not
    /// checked when zero), the data, and a CRC-16 over header and data.
    static func referenceFraming(_ b: [UInt8]) -> Framing {
        func crc(_ bytes: ArraySlice<UInt8>) -> UInt16 {
            var crc: UInt16 = 0
            for byte in bytes {
                crc ^= UInt16(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
            }
            return crc
        }
        func u16(_ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
        guard !b.isEmpty else { return .damaged(at: 0) }
        var regions: [Range<Int>] = [], start = 0
        while start < b.count {
            let size = Int(b[start])
            guard b.count - start >= 12, b[(start + 8)..<(start + 12)].elementsEqual(Array(".FIT".utf8)), size == 12 || size == 14,
                  b.count - start >= size else { return .damaged(at: start) }
            if size == 14, u16(start + 12) != 0, u16(start + 12) != crc(b[start..<(start + 12)]) { return .damaged(at: start + 12) }
            let dataSize = Int(b[start + 4]) | Int(b[start + 5]) << 8 | Int(b[start + 6]) << 16 | Int(b[start + 7]) << 24
            let end = start + size + dataSize
            guard end <= b.count else { return .damaged(at: b.count) }
            guard end + 2 <= b.count, u16(end) == crc(b[start..<end]) else { return .damaged(at: end) }
            regions.append((start + size)..<end)
            start = end + 2
        }
        return .sound(regions)
    }

    /// The first value of `record` outside what its FIT field can hold (heart rate a uint8, RR
    /// intervals a uint16 in ms, positions in semicircles), or a sample or lap outside its workout.
    static func rangeProblem(_ record: HealthRecord) -> String? {
        guard case .workout(let w) = record else { return nil }
        if abs(w.elapsedS - w.end.timeIntervalSince(w.start)) > 1e-6 { return "workout \(w.start)...\(w.end), elapsed \(w.elapsedS)" }
        let span = min(w.start, w.end)...max(w.start, w.end)
        for s in w.samples {
            if !span.contains(s.time) { return "sample at \(s.time) outside \(w.start)...\(w.end)" }
            if let hr = s.heartRate, !(0...255).contains(hr) { return "heart rate \(hr)" }
            if let lat = s.latitude, !(-180...180).contains(lat) { return "latitude \(lat)" }
            if let lon = s.longitude, !(-180...180).contains(lon) { return "longitude \(lon)" }
        }
        if let rr = w.rrIntervals.first(where: { !(0...65.535).contains($0) }) { return "RR interval \(rr)" }
        if let hr = w.avgHeartRate ?? w.maxHeartRate, !(0...255).contains(hr) { return "workout heart rate \(hr)" }
        for lap in w.laps where lap.end < lap.start || lap.elapsedS < 0 { return "lap \(lap)" }
        return nil
    }
}

