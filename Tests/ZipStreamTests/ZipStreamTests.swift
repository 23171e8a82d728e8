import DriverKit
import Foundation
import Testing
import TestSupport
import ZipStream

/// Fixtures/zip/<name>, written by Fixtures/zip/make-zips.py.
func zipFixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/zip").appendingPathComponent(name).path
}

/// The text the generator puts in its entries.
let generatorText = (0..<2000).map { String(format: "line %05d: the quick brown fox jumps over the lazy dog\n", $0) }.joined()

/// Every entry of the archive at `path` read through a file source (pread), whole, by name.
func readAll(_ path: String, limits: ZipLimits = ZipLimits()) async throws -> [String: [UInt8]] {
    let archive = try await ZipArchive.open(try await ImportSource.open(path), limits: limits)
    var out: [String: [UInt8]] = [:]
    for entry in archive.entries where !entry.isDirectory {
        var bytes: [UInt8] = []
        for try await chunk in archive.contents(of: entry) {
            #expect(chunk.count <= ZipEntryDecoder.chunkSize)
            bytes += chunk
        }
        out[entry.name] = bytes
    }
    return out
}

/// The decode error reading every entry of `name` fails with, through the file and in memory
/// (both must agree).
func zipError(_ name: String, limits: ZipLimits = ZipLimits()) async throws -> DecodeError {
    let path = zipFixture(name)
    var fileError: DecodeError?
    do { _ = try await readAll(path, limits: limits) } catch let error as DecodeError { fileError = error }
    var memoryError: DecodeError?
    do { _ = try ZipArchive.read(Array(try Data(contentsOf: URL(fileURLWithPath: path))), limits: limits) } catch let error as DecodeError {
        memoryError = error
    }
    let error = try #require(fileError)
    #expect(error.file == path)
    #expect(memoryError?.position == error.position)
    #expect(memoryError?.reason == error.reason)
    return error
}

@Suite("ZipStream: reading archives")
struct ZipReadingTests {
    @Test("deflate and stored entries inflate to what was written, in chunks, directories listed")
    func goodArchives() async throws {
        let deflated = try await readAll(zipFixture("deflate.zip"))
        #expect(deflated["folder/text.txt"] == Array(generatorText.utf8))
        #expect(deflated["empty.txt"] == [])
        let archive = try await ZipArchive.open(try await ImportSource.open(zipFixture("deflate.zip")))
        #expect(archive.entries.map(\.name) == ["folder/", "folder/text.txt", "empty.txt"])
        #expect(archive.entries[1].method == 8 && archive.entries[1].uncompressedSize == 112_000)
        // 112 000 bytes come out as two 64 KiB chunks at most.
        var chunks = 0
        for try await _ in archive.contents(of: archive.entries[1]) { chunks += 1 }
        #expect(chunks == 2)

        let stored = try await readAll(zipFixture("stored.zip"))
        #expect(stored["a.txt"] == Array("hello, stored world\n".utf8))
        #expect(stored["b/c.txt"] == Array(generatorText.utf8.prefix(1000)))
        #expect(try await readAll(zipFixture("comment.zip"))["a.txt"] == Array("comment follows\n".utf8))
    }

    @Test("Zip64: the end record, its locator and the extra fields give sizes and offsets")
    func zip64() async throws {
        let entries = try await readAll(zipFixture("zip64.zip"))
        #expect(entries["apple_health_export/export.xml"] == Array(generatorText.utf8))
        #expect(entries["second.txt"] == Array("second entry\n".utf8))
        let archive = try await ZipArchive.open(try await ImportSource.open(zipFixture("zip64.zip")))
        #expect(archive.entries.map(\.uncompressedSize) == [112_000, 13])
        #expect(archive.entry(atPath: "./apple_health_export//export.xml")?.name == "apple_health_export/export.xml")
    }

    @Test("the same entries in memory (the fuzz target's path) as through the file")
    func inMemory() throws {
        var seen: [String: Int] = [:]
        let entries = try ZipArchive.read(Array(try Data(contentsOf: URL(fileURLWithPath: zipFixture("zip64.zip"))))) { entry, bytes in
            seen[entry.name] = bytes.count
        }
        #expect(entries.count == 2)
        #expect(seen == ["apple_health_export/export.xml": 112_000, "second.txt": 13])
    }

    @Test("names that escape are listed but never resolved: ../, absolute, a .. that climbs")
    func traversal() async throws {
        let archive = try await ZipArchive.open(try await ImportSource.open(zipFixture("traversal.zip")))
        #expect(archive.entries.map(\.name) == ["../evil.txt", "/etc/passwd", "ok/../../up.txt", "good.txt"])
        #expect(archive.entries.map(\.safePath) == [nil, nil, nil, "good.txt"])
        #expect(archive.entry(atPath: "../evil.txt") == nil)
        #expect(archive.entry(atPath: "/etc/passwd") == nil)
        #expect(archive.entry(atPath: "etc/passwd") == nil)
        #expect(archive.entry(atPath: "evil.txt") == nil)
        #expect(archive.entry(atPath: "good.txt")?.name == "good.txt")
        #expect(ZipEntry.safePath("C:evil") == nil && ZipEntry.safePath("a\\..\\b") == nil)
    }
}

@Suite("ZipStream: hostile and damaged archives")
struct ZipHostileTests {
    @Test("a zip bomb by ratio stops soon after the grace, counting inflated bytes")
    func bombRatio() async throws {
        let error = try await zipError("bomb-ratio.zip")
        #expect(error.reason.contains("zeros.bin") && error.reason.contains("zip bomb"), "\(error)")
        guard case .byte(let offset) = error.position else { Issue.record("no offset: \(error)"); return }
        #expect(offset > 0 && offset < 20_503)
        // A tighter limit on one entry stops it earlier, whatever the directory declares.
        let capped = try await zipError("bomb-ratio.zip", limits: ZipLimits(maxEntryBytes: 1 << 20))
        #expect(capped.reason.contains("limit of 1048576 bytes"), "\(capped)")
    }

    @Test("an entry inflating past its declared size fails there")
    func declaredSize() async throws {
        let error = try await zipError("bomb-declared-size.zip")
        #expect(error.reason.contains("past its declared size of 100 bytes"), "\(error)")
    }

    @Test("truncated archives: the end record cut away, the data cut short")
    func truncated() async throws {
        let tail = try await zipError("truncated-tail.zip")
        #expect(tail.position == .file && tail.reason.contains("no end of central directory"), "\(tail)")
        let data = try await zipError("truncated-data.zip")
        #expect(data.reason.contains("'text.txt' claims 5188 bytes at 0") && data.reason.contains("truncated archive"), "\(data)")
        #expect(data.position == .byte(138), "\(data)")  // its central directory entry
        let plain = try await zipError("not-a-zip.zip")
        #expect(plain.reason.contains("not a zip archive"), "\(plain)")
    }

    @Test("a CRC mismatch, an encrypted entry, an unsupported method, damaged deflate data")
    func refusals() async throws {
        let crc = try await zipError("crc-mismatch.zip")
        #expect(crc.reason.contains("CRC-32 mismatch") && crc.position == .byte(55), "\(crc)")
        let encrypted = try await zipError("encrypted.zip")
        #expect(encrypted.reason.contains("'secret.txt' is encrypted") && encrypted.position == .byte(0), "\(encrypted)")
        let lzma = try await zipError("lzma.zip")
        #expect(lzma.reason.contains("compression method 14"), "\(lzma)")
        let damaged = try await zipError("deflate-damaged.zip")
        #expect(damaged.reason.contains("text.txt"), "\(damaged)")
    }

    /// Found by fuzz-zip (Fuzz/regressions/fuzz-zip): a Zip64 locator pointing to 2^64 - 1
    /// overflowed the bounds check (a trap) instead of failing the archive.
    @Test("a Zip64 locator pointing past any file fails the archive, it does not trap")
    func zip64LocatorOverflow() throws {
        var bytes: [UInt8] = [0x50, 0x4B, 0x06, 0x07, 0, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8) + [1, 0, 0, 0]
        bytes += [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18)
        #expect {
            _ = try ZipArchive.read(bytes)
        } throws: { error in
            (error as? DecodeError)?.reason.contains("the Zip64 locator points to") == true
        }
        for (_, input) in try fuzzRegressionInputs("fuzz-zip") {
            do { _ = try ZipArchive.read(input) } catch is DecodeError {}
        }
    }

    @Test("cut anywhere or with any byte flipped, an archive fails with a DecodeError or reads, never crashes")
    func everyCut() throws {
        let whole = Array(try Data(contentsOf: URL(fileURLWithPath: zipFixture("zip64.zip"))))
        var failures = 0
        for cut in stride(from: 0, to: whole.count, by: 7) {
            do { _ = try ZipArchive.read(Array(whole[..<cut])) } catch is DecodeError { failures += 1 }
        }
        #expect(failures == (whole.count + 6) / 7)
        for index in stride(from: 0, to: whole.count, by: 3) {
            var flipped = whole
            flipped[index] ^= 0x5A
            do { _ = try ZipArchive.read(flipped) } catch is DecodeError {}
        }
    }
}
