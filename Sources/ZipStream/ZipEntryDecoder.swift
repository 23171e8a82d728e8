import CZlib
public import DriverKit
import Gzip

/// One entry's data, decompressed as it is pulled: compressed pieces go in with ``give(_:)``,
/// inflated chunks come out of ``pull()``, at most ``chunkSize`` bytes each, so memory holds one
/// piece and one chunk whatever the entry's size. Pure: the caller reads the bytes.
///
/// Declared sizes are never trusted: the bytes actually inflated are counted, and the entry fails
/// (``DecodeError`` at its byte offset) as soon as they pass its declared size, the limit on one
/// entry, or the limit on the inflation ratio (a zip bomb); at the end, the size and CRC-32 must
/// match what the directory says.
public final class ZipEntryDecoder {
    public let entry: ZipEntry
    /// Where the entry's data starts in the archive (``ZipLayout/dataOffset(of:localHeader:dataEnd:)``).
    public let dataOffset: Int
    public let limits: ZipLimits
    public static let chunkSize = 64 * 1024

    private let inflater: Inflater?
    /// Stored entries: the piece given, handed out as it is.
    private var stored: [UInt8] = []
    private var given = 0
    private var produced = 0
    private var crc: uLong = crc32(0, nil, 0)
    /// Where deflate data is inflated to, one chunk at a time.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ZipEntryDecoder.chunkSize, alignment: 1)

    deinit { buffer.deallocate() }

    public init(entry: ZipEntry, dataOffset: Int, limits: ZipLimits = ZipLimits()) throws(DecodeError) {
        self.entry = entry
        self.dataOffset = dataOffset
        self.limits = limits
        if entry.method == 8 {
            do { inflater = try Inflater(.rawDeflate) } catch { throw DecodeError(at: .byte(dataOffset), "zlib could not start") }
        } else {
            inflater = nil
        }
    }

    /// Compressed bytes still to give: the data's declared length minus what was given.
    public var remainingInput: Int { entry.compressedSize - given }

    /// Whether ``pull()`` can give more without another piece.
    public var needsInput: Bool {
        if let inflater { return inflater.pendingInput == 0 && !inflater.ended }
        return stored.isEmpty
    }

    /// Whether the data is over: the deflate stream ended, or every declared byte was given and
    /// pulled (``finish()`` then says whether it ended well).
    public var isDone: Bool {
        if let inflater, inflater.ended { return true }
        return needsInput && remainingInput == 0
    }

    /// The next compressed piece (call when ``needsInput``); more than ``remainingInput`` is cut.
    public func give(_ piece: [UInt8]) {
        let piece = piece.prefix(max(0, remainingInput))
        given += piece.count
        if let inflater { piece.withUnsafeBytes { inflater.give($0) } } else { stored = Array(piece) }
    }

    /// The next inflated chunk; empty when a piece is needed (``needsInput``) or the data ended.
    public func pull() throws(DecodeError) -> [UInt8] {
        var chunk: [UInt8]
        if let inflater {
            let count: Int
            do {
                count = try inflater.pull(into: buffer)
            } catch {
                let why = if case .malformed(let reason) = error { reason } else { "\(error)" }
                throw failure("its deflate data is damaged (\(why))", at: dataOffset + inflater.consumed)
            }
            chunk = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        } else {
            chunk = Array(stored.prefix(Self.chunkSize))
            stored.removeFirst(chunk.count)
        }
        produced += chunk.count
        let position = dataOffset + (inflater?.consumed ?? given - stored.count)
        if produced > entry.uncompressedSize {
            throw failure("it inflates past its declared size of \(entry.uncompressedSize) bytes (a zip bomb or a damaged archive)", at: position)
        }
        if produced > limits.maxEntryBytes {
            throw failure("it inflates past the limit of \(limits.maxEntryBytes) bytes for one entry", at: position)
        }
        if produced > limits.ratioGrace, let consumed = inflater?.consumed, produced / max(1, consumed) > limits.maxRatio {
            throw failure("it inflates \(produced / max(1, consumed)) times its compressed size, more than the \(limits.maxRatio) allowed (a zip bomb)",
                          at: position)
        }
        chunk.withUnsafeBytes { crc = crc32(crc, $0.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
        return chunk
    }

    /// Checks the end, once every piece was given and pulled: the data ended where it should,
    /// its size and CRC-32 are the directory's.
    public func finish() throws(DecodeError) {
        let end = dataOffset + given
        if let inflater {
            guard inflater.ended else { throw failure("its deflate data ends early (truncated or damaged archive)", at: end) }
            guard inflater.pendingInput == 0, given == entry.compressedSize else {
                throw failure("its deflate data ends before its declared \(entry.compressedSize) bytes", at: dataOffset + inflater.consumed)
            }
        }
        guard given == entry.compressedSize else { throw failure("its data is cut short (truncated archive)", at: end) }
        guard produced == entry.uncompressedSize else {
            throw failure("it inflates to \(produced) bytes, not its declared \(entry.uncompressedSize)", at: end)
        }
        guard UInt32(truncatingIfNeeded: crc) == entry.crc32 else {
            throw failure(
                "CRC-32 mismatch: the data gives \(hex(UInt32(truncatingIfNeeded: crc))), the directory says \(hex(entry.crc32)) (damaged archive)",
                at: end)
        }
    }

    private func failure(_ reason: String, at offset: Int) -> DecodeError {
        DecodeError(at: .byte(offset), "entry '\(entry.name.prefix(200))': \(reason)")
    }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
