/// One file's download, block by block: a pure state machine (no I/O, no clock). The host sends
/// `nextRequest`, feeds the watch's answer to `receive(_:)`, and sends `nextRequest` again until
/// `isComplete`.
///
/// The first request is "initial" with a CRC seed of 0; each later one continues from the end of
/// the bytes kept, seeded with the CRC of those bytes (the CRC the watch sent with the last
/// block). A block is kept only when its CRC verifies: CRC-16/ARC of its data, continuing from
/// the seed, equals the CRC the watch sent. A block that does not verify is asked for again, up
/// to `maxCRCRetries` times in a row, then the download fails with
/// ``ANTFSError/crcCheckFailed(index:offset:attempts:)``.
///
/// Refused with a typed error, the state unchanged: a result other than OK, a block at another
/// offset than asked for, a file size over `maxFileSize` or different from the first block's,
/// data past the end of the file, an empty block before the end. The size a watch claims is
/// never allocated: bytes are kept as they arrive.
public struct ANTFSDownloadState: Hashable, Sendable {
    /// What a block did.
    public enum Outcome: Hashable, Sendable {
        /// The block verified and was kept: `received` of `total` bytes.
        case accepted(received: Int, total: Int)
        /// The block's CRC did not verify: ask for the same offset again (`nextRequest`).
        case retry
    }

    /// The default limit on a file's size (64 MiB; a watch's files are kilobytes).
    public static let defaultMaxFileSize = 64 << 20

    public let index: UInt16
    public let maxBlockSize: UInt32
    public let maxFileSize: Int
    public let maxCRCRetries: Int
    /// The bytes kept so far, from offset 0.
    public private(set) var bytes: [UInt8] = []
    /// The file's size, from the first block.
    public private(set) var fileSize: Int?
    /// The CRC of `bytes` (the next request's seed).
    public private(set) var crc: UInt16 = 0
    /// Blocks in a row at the current offset whose CRC did not verify.
    public private(set) var crcFailures = 0

    public init(index: UInt16, maxBlockSize: UInt32 = 0, maxFileSize: Int = defaultMaxFileSize, maxCRCRetries: Int = 3) {
        self.index = index
        self.maxBlockSize = maxBlockSize
        self.maxFileSize = max(0, maxFileSize)
        self.maxCRCRetries = max(0, maxCRCRetries)
    }

    /// Where the next block starts.
    public var offset: UInt32 { UInt32(truncatingIfNeeded: bytes.count) }

    /// True once every byte of the file arrived.
    public var isComplete: Bool { fileSize == bytes.count }

    /// The request to send next; nil once complete.
    public var nextRequest: ANTFSCommand? {
        guard !isComplete else { return nil }
        return .download(index: index, offset: offset, initial: bytes.isEmpty, crcSeed: crc, maxBlockSize: maxBlockSize)
    }

    /// Takes the watch's answer to `nextRequest`.
    public mutating func receive(_ block: ANTFSDownloadResponse) throws(ANTFSError) -> Outcome {
        guard block.result == .ok else { throw .downloadRefused(index: index, offset: offset, result: block.result) }
        guard !isComplete else { throw .inconsistentBlock(index: index, offset: block.offset, reason: "the file is already complete") }
        guard block.offset == offset else {
            throw .inconsistentBlock(index: index, offset: offset, reason: "the block starts at offset \(block.offset)")
        }
        let size = Int(block.fileSize)
        guard size <= maxFileSize else {
            throw .tooLarge(field: index == 0 ? "the directory" : "file \(index)", size: size, limit: maxFileSize)
        }
        if let fileSize, fileSize != size {
            throw .inconsistentBlock(index: index, offset: offset, reason: "the file size changed from \(fileSize) to \(size)")
        }
        guard block.data.count == Int(block.remaining) else {
            throw .inconsistentBlock(
                index: index, offset: offset, reason: "the block holds \(block.data.count) bytes but says \(block.remaining)")
        }
        guard bytes.count + block.data.count <= size else {
            throw .inconsistentBlock(
                index: index, offset: offset, reason: "\(block.data.count) bytes run past the end of the file (\(size) bytes)")
        }
        guard !block.data.isEmpty || bytes.count == size else {
            throw .inconsistentBlock(index: index, offset: offset, reason: "an empty block before the end of the file (\(size) bytes)")
        }
        guard CRC16ARC.update(crc, block.data) == block.crc else {
            crcFailures += 1
            guard crcFailures <= maxCRCRetries else { throw .crcCheckFailed(index: index, offset: offset, attempts: crcFailures) }
            return .retry
        }
        fileSize = size
        bytes += block.data
        crc = block.crc
        crcFailures = 0
        return .accepted(received: bytes.count, total: size)
    }
}
