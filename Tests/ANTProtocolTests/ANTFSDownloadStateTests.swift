import ANTFS
import TestSupport
import Testing

@Suite struct ANTFSDownloadStateTests {
    /// The block a watch sends for `file` at `offset`: up to `size` bytes, with the CRC of the
    /// file's bytes up to the block's end (computed over the whole prefix, independently of the
    /// chaining under test).
    static func block(_ file: [UInt8], at offset: Int, size: Int = 512, crcDelta: UInt16 = 0) -> ANTFSDownloadResponse {
        let end = min(file.count, offset + size)
        let data = Array(file[offset..<end])
        return ANTFSDownloadResponse(
            result: .ok, remaining: UInt32(data.count), offset: UInt32(offset), fileSize: UInt32(file.count), data: data,
            crc: ANTFSLayout.crc(0, file[0..<end]) ^ crcDelta)
    }

    @Test("three blocks: each request continues where the kept bytes end, seeded with their CRC; complete after the last")
    func severalBlocks() throws {
        var rng = SeededGenerator(seed: 0xF11E)
        let file = rng.bytes(1300)
        var state = ANTFSDownloadState(index: 5, maxBlockSize: 512)
        #expect(state.nextRequest == .download(index: 5, offset: 0, initial: true, crcSeed: 0, maxBlockSize: 512))
        #expect(!state.isComplete && state.fileSize == nil)
        #expect(try state.receive(Self.block(file, at: 0)) == .accepted(received: 512, total: 1300))
        let seed1 = ANTFSLayout.crc(0, file[0..<512])
        #expect(state.crc == seed1 && state.fileSize == 1300 && state.offset == 512)
        #expect(state.nextRequest == .download(index: 5, offset: 512, initial: false, crcSeed: seed1, maxBlockSize: 512))
        #expect(try state.receive(Self.block(file, at: 512)) == .accepted(received: 1024, total: 1300))
        let seed2 = ANTFSLayout.crc(0, file[0..<1024])
        #expect(state.nextRequest == .download(index: 5, offset: 1024, initial: false, crcSeed: seed2, maxBlockSize: 512))
        #expect(try state.receive(Self.block(file, at: 1024)) == .accepted(received: 1300, total: 1300))
        #expect(state.isComplete && state.nextRequest == nil)
        #expect(state.bytes == file && state.crc == ANTFSLayout.crc(0, file))
    }

    @Test("a bad CRC is asked for again at the same offset with the same seed, then accepted")
    func badCRCRetried() throws {
        var rng = SeededGenerator(seed: 0xBAD1)
        let file = rng.bytes(1000)
        var state = ANTFSDownloadState(index: 2)
        _ = try state.receive(Self.block(file, at: 0))
        let request = state.nextRequest
        #expect(try state.receive(Self.block(file, at: 512, crcDelta: 0x0100)) == .retry)
        #expect(state.crcFailures == 1 && state.offset == 512 && state.nextRequest == request)
        #expect(state.bytes == Array(file[0..<512]))
        #expect(try state.receive(Self.block(file, at: 512)) == .accepted(received: 1000, total: 1000))
        #expect(state.crcFailures == 0 && state.bytes == file)
    }

    @Test("a bad CRC again and again fails, naming the offset and the file")
    func badCRCRepeated() throws {
        var rng = SeededGenerator(seed: 0xBAD2)
        let file = rng.bytes(1000)
        var state = ANTFSDownloadState(index: 7, maxCRCRetries: 2)
        _ = try state.receive(Self.block(file, at: 0))
        #expect(try state.receive(Self.block(file, at: 512, crcDelta: 1)) == .retry)
        #expect(try state.receive(Self.block(file, at: 512, crcDelta: 2)) == .retry)
        let error = ANTFSError.crcCheckFailed(index: 7, offset: 512, attempts: 3)
        #expect(throws: error) { try state.receive(Self.block(file, at: 512, crcDelta: 3)) }
        #expect(error.description == "CRC check failed at offset 512 of file 7 (3 attempts)")
    }

    @Test("refused, the state unchanged: wrong offset, changed size, data past the end, empty block, refusal, block after the end")
    func inconsistentBlocks() throws {
        var rng = SeededGenerator(seed: 0x1C)
        let file = rng.bytes(1000)
        var state = ANTFSDownloadState(index: 3)
        _ = try state.receive(Self.block(file, at: 0))
        let before = state
        #expect(throws: ANTFSError.inconsistentBlock(index: 3, offset: 512, reason: "the block starts at offset 600")) {
            try state.receive(Self.block(file, at: 600))
        }
        var resized = Self.block(file, at: 512)
        resized.fileSize = 2000
        #expect(throws: ANTFSError.inconsistentBlock(index: 3, offset: 512, reason: "the file size changed from 1000 to 2000")) {
            try state.receive(resized)
        }
        var past = Self.block(file + [1, 2, 3], at: 512, size: 600)
        past.fileSize = 1000
        #expect(throws: ANTFSError.inconsistentBlock(index: 3, offset: 512, reason: "491 bytes run past the end of the file (1000 bytes)"))
        {
            try state.receive(past)
        }
        let empty = ANTFSDownloadResponse(result: .ok, remaining: 0, offset: 512, fileSize: 1000, data: [], crc: state.crc)
        #expect(
            throws: ANTFSError.inconsistentBlock(index: 3, offset: 512, reason: "an empty block before the end of the file (1000 bytes)")
        ) {
            try state.receive(empty)
        }
        var lying = Self.block(file, at: 512)
        lying.remaining = 10
        #expect(throws: ANTFSError.inconsistentBlock(index: 3, offset: 512, reason: "the block holds 488 bytes but says 10")) {
            try state.receive(lying)
        }
        let refused = ANTFSDownloadResponse(result: .notReadable, remaining: 0, offset: 0, fileSize: 0, data: [], crc: 0)
        #expect(throws: ANTFSError.downloadRefused(index: 3, offset: 512, result: .notReadable)) { try state.receive(refused) }
        #expect(state == before)
        _ = try state.receive(Self.block(file, at: 512))
        #expect(throws: ANTFSError.self) { try state.receive(Self.block(file, at: 512)) }
    }

    @Test("a file or directory claiming 4 GB, or a size over the limit, is refused before anything is kept")
    func sizeLimits() throws {
        let huge = ANTFSDownloadResponse(result: .ok, remaining: 8, offset: 0, fileSize: .max, data: [1, 2, 3, 4, 5, 6, 7, 8], crc: 0)
        var directory = ANTFSDownloadState(index: 0, maxFileSize: ANTFSDirectory.maxSize)
        #expect(throws: ANTFSError.tooLarge(field: "the directory", size: Int(UInt32.max), limit: ANTFSDirectory.maxSize)) {
            try directory.receive(huge)
        }
        var file = ANTFSDownloadState(index: 9)
        #expect(file.maxFileSize == 64 << 20)
        #expect(throws: ANTFSError.tooLarge(field: "file 9", size: Int(UInt32.max), limit: 64 << 20)) { try file.receive(huge) }
        var small = ANTFSDownloadState(index: 9, maxFileSize: 100)
        let data = [UInt8](repeating: 7, count: 101)
        #expect(throws: ANTFSError.tooLarge(field: "file 9", size: 101, limit: 100)) {
            try small.receive(Self.block(data, at: 0))
        }
        #expect(small.bytes.isEmpty && small.fileSize == nil)
    }

    @Test("an empty file is complete after its one empty block")
    func emptyFile() throws {
        var state = ANTFSDownloadState(index: 4)
        let block = ANTFSDownloadResponse(result: .ok, remaining: 0, offset: 0, fileSize: 0, data: [], crc: 0)
        #expect(try state.receive(block) == .accepted(received: 0, total: 0))
        #expect(state.isComplete && state.nextRequest == nil && state.bytes.isEmpty)
    }

    @Test("random block sizes and random corruption: what completes is the file, byte for byte")
    func randomBlocks() throws {
        var rng = SeededGenerator(seed: 0xB10C)
        for round in 0..<200 {
            let file = rng.bytes(Int.random(in: 0...3000, using: &rng))
            var state = ANTFSDownloadState(index: UInt16(round + 1), maxCRCRetries: 2)
            var steps = 0
            var failed = false
            while !state.isComplete && steps < 1000 {
                steps += 1
                let corrupt = Int.random(in: 0..<5, using: &rng) == 0
                let block = Self.block(
                    file, at: Int(state.offset), size: Int.random(in: 1...700, using: &rng), crcDelta: corrupt ? 0x8000 : 0)
                do {
                    _ = try state.receive(block)
                } catch {
                    guard case .crcCheckFailed = error else {
                        Issue.record("unexpected \(error)")
                        return
                    }
                    failed = true
                    break
                }
            }
            if !failed {
                #expect(state.isComplete && state.bytes == file)
            }
        }
    }
}
