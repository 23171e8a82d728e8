import CZlib
public import Foundation

/// Streaming decompression with the system zlib, pulled: compressed bytes are handed in with
/// ``give(_:)`` and inflated bytes taken out a chunk at a time with ``pull(into:)``, so memory
/// holds one input piece and one output chunk whatever the inflated size. The one wrapper of
/// zlib's inflate: ``GzipInflater`` (the server's request bodies) and the zip reader (ZipStream)
/// use it.
public final class Inflater {
    /// What the compressed bytes are framed as.
    public enum Format: Sendable {
        /// gzip members (RFC 1952).
        case gzip
        /// Raw deflate data (RFC 1951), as in zip entries.
        case rawDeflate
    }

    private let stream: UnsafeMutablePointer<z_stream>
    /// The piece being inflated: zlib points into it, so it lives on the heap, where it cannot move.
    private var input: UnsafeMutableRawBufferPointer?
    /// The current deflate stream (gzip: member) ended.
    public private(set) var ended = false
    /// Bytes inflated so far.
    public private(set) var produced = 0
    /// Compressed bytes consumed so far.
    public private(set) var consumed = 0

    public init(_ format: Format) throws(GzipInflater.Failure) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = format == .gzip ? czlib_inflate_init_gzip(stream) : czlib_inflate_init_raw(stream)
        guard status == Z_OK else {
            stream.deallocate()
            throw .malformed("zlib could not start")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
        input?.deallocate()
    }

    /// Compressed bytes not consumed yet.
    public var pendingInput: Int { Int(stream.pointee.avail_in) }

    /// Hands over the next compressed piece; the previous one must be used up
    /// (``pendingInput`` is 0).
    public func give(_ bytes: UnsafeRawBufferPointer) {
        precondition(pendingInput == 0, "Inflater.give: the previous piece is not used up")
        input?.deallocate()
        input = nil
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        copy.copyMemory(from: UnsafeRawBufferPointer(start: base, count: bytes.count))
        input = copy
        stream.pointee.next_in = copy.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_in = uInt(bytes.count)
    }

    /// Starts the next gzip member after one ended (what `cat a.gz b.gz` gives).
    public func restart() throws(GzipInflater.Failure) {
        guard inflateReset(stream) == Z_OK else { throw .malformed("zlib could not restart") }
        ended = false
    }

    /// Inflates into `chunk` from the piece given; returns the bytes written there. 0 means
    /// the stream ended (``ended``) or zlib needs more input. Throws for malformed data.
    public func pull(into chunk: UnsafeMutableRawBufferPointer) throws(GzipInflater.Failure) -> Int {
        guard !ended, chunk.count > 0 else { return 0 }
        while true {
            let before = pendingInput
            stream.pointee.next_out = chunk.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(chunk.count)
            let status = inflate(stream, Z_NO_FLUSH)
            let written = chunk.count - Int(stream.pointee.avail_out)
            produced += written
            consumed += before - pendingInput
            switch status {
            case Z_STREAM_END:
                ended = true
                return written
            case Z_OK where written > 0:
                return written
            case Z_OK where pendingInput > 0 && pendingInput < before:
                continue  // read a header or a block's start without output yet
            case Z_OK, Z_BUF_ERROR:
                // No progress possible without more input (with input left, none at all: stuck).
                guard pendingInput == 0 else { throw .malformed("zlib made no progress") }
                return written
            default:
                let why = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .malformed(why)
            }
        }
    }
}

/// Streaming gzip decompression (zlib) with a cap on the output: input is fed as it arrives and
/// decompression stops with ``Failure/tooLarge`` as soon as the output passes the cap, so a
/// small body that inflates to gigabytes never gets further than the cap.
///
/// Several gzip members in a row (what `cat a.gz b.gz` gives) inflate to their concatenation.
public final class GzipInflater {
    public enum Failure: Error, Equatable {
        case tooLarge
        case malformed(String)
    }

    private let inflater: Inflater
    private let limit: Int
    private var output = Data()
    private static let chunkSize = 64 * 1024

    public init(limit: Int) throws(Failure) {
        self.limit = limit
        inflater = try Inflater(.gzip)
    }

    /// Inflates the next piece of the compressed body.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard bytes.count > 0 else { return }
        inflater.give(bytes)
        try drain()
    }

    /// The inflated body; fails when the compressed body stopped in the middle of a member.
    public func finish() throws(Failure) -> Data {
        try drain()
        guard inflater.ended else { throw .malformed("the compressed body ends early") }
        return output
    }

    /// Inflates all that the input given allows, member after member, within the cap.
    private func drain() throws(Failure) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let produced = try Self.pull(inflater, into: chunk, limit: limit)
            guard produced > 0 else { return }
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<produced]))
        }
    }

    /// The next inflated bytes, in `chunk`, member after member: 0 when the input given is used
    /// up or the last member ended; ``Failure/tooLarge`` once the output passes `limit`.
    private static func pull(_ inflater: Inflater, into chunk: UnsafeMutableRawBufferPointer, limit: Int) throws(Failure) -> Int {
        while true {
            if inflater.ended {
                // Another member follows the one that ended.
                guard inflater.pendingInput > 0 else { return 0 }
                try inflater.restart()
            }
            let produced = try inflater.pull(into: chunk)
            if produced > 0 {
                guard inflater.produced <= limit else { throw .tooLarge }
                return produced
            } else if !inflater.ended {
                return 0  // needs more input
            }
        }
    }

    /// Inflates a whole gzip body a chunk (64 KiB) at a time into `sink`, never holding more:
    /// ``Failure/tooLarge`` once the output passes `limit`, ``Failure/malformed(_:)`` for bad
    /// data or a body that ends early; what `sink` throws ends it.
    public static func stream(_ compressed: UnsafeRawBufferPointer, limit: Int,
                              into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        let inflater = try Inflater(.gzip)
        inflater.give(compressed)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let produced = try pull(inflater, into: chunk, limit: limit)
            guard produced > 0 else { break }
            try sink(UnsafeRawBufferPointer(rebasing: chunk[0..<produced]))
        }
        guard inflater.ended else { throw Failure.malformed("the compressed body ends early") }
    }
}
