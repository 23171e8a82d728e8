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

    /// A deterministic fuzz loop: mutated fixtures either decode or throw DecodeError.
    @Test func seededFuzz() throws {
        var rng = SeededGenerator(seed: 0xF17_2024)
        let seeds = try ["fitsdk-Activity.fit", "fitsdk-DeveloperData.fit", "fitsdk-WeightScaleMultiUser.fit",
                         "fitsdk-MonitoringFile.fit", "garmin-fenix5-run.fit", "garmin-edge820-bike.fit",
                         "chained-activity-settings.fit", "corrupt/chained-activity-settings-nodata.fit"].map { try Array(Fixtures.data($0)) }
        var decoded = 0, failed = 0
        for _ in 0..<2000 {
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
            // Half the time keep the file CRC right, so decoding gets past the CRC check.
            if rng.next() % 2 == 0, bytes.count >= 14, bytes[0] == 14 || bytes[0] == 12 {
                let end = bytes.count - 2
                let crc = FITCRC.compute(bytes[0..<end])
                bytes[end] = UInt8(crc & 0xFF)
                bytes[end + 1] = UInt8(crc >> 8)
            }
            let data = Data(bytes)
            let (_, error) = FITImporter.decode(data, path: "fuzz.fit")
            if error == nil { decoded += 1 } else { failed += 1 }
            if rng.next() % 4 == 0 { _ = try? FITInspector.writeCSV(data, to: { _ in }) }
        }
        #expect(decoded + failed == 2000)
        #expect(failed > 0)
    }
}

