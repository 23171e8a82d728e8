import CZlib
public import Foundation

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

    private let stream: UnsafeMutablePointer<z_stream>
    private let limit: Int
    private var output = Data()
    /// The current member ended and no byte of a next one has been seen.
    private var atMemberEnd = false
    private static let chunkSize = 64 * 1024

    public init(limit: Int) throws(Failure) {
        self.limit = limit
        // zlib keeps a pointer back to the stream: it must not move, so it lives on the heap.
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard czlib_inflate_init_gzip(stream) == Z_OK else {
            stream.deallocate()
            throw .malformed("zlib could not start")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates the next piece of the compressed body.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(bytes.count)
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        while stream.pointee.avail_in > 0 {
            if atMemberEnd {
                // Another member follows the one that ended.
                guard inflateReset(stream) == Z_OK else { throw .malformed("zlib could not restart") }
                atMemberEnd = false
            }
            let (status, produced) = try inflateStep(into: &chunk)
            switch status {
            case Z_OK:
                continue
            case Z_STREAM_END:
                atMemberEnd = true
            case Z_BUF_ERROR:
                // No progress possible: needs more input (or more room, which the loop gives).
                if produced == 0 && stream.pointee.avail_in == 0 { return }
            default:
                let why = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .malformed(why)
            }
        }
    }

    /// The inflated body; fails when the compressed body stopped in the middle of a member.
    public func finish() throws(Failure) -> Data {
        // Output zlib still holds (input fully consumed, room was the only limit).
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        while !atMemberEnd {
            let (status, produced) = try inflateStep(into: &chunk)
            if status == Z_STREAM_END { atMemberEnd = true; break }
            if status != Z_OK || produced == 0 { throw .malformed("the compressed body ends early") }
        }
        return output
    }

    /// One call of inflate into `chunk`; what it produced is added to the output, within the cap.
    private func inflateStep(into chunk: inout [UInt8]) throws(Failure) -> (status: Int32, produced: Int) {
        let (status, produced) = chunk.withUnsafeMutableBufferPointer { out in
            stream.pointee.next_out = out.baseAddress
            stream.pointee.avail_out = uInt(out.count)
            let status = inflate(stream, Z_NO_FLUSH)
            return (status, out.count - Int(stream.pointee.avail_out))
        }
        if produced > 0 {
            guard output.count + produced <= limit else { throw .tooLarge }
            output.append(contentsOf: chunk[0..<produced])
        }
        return (status, produced)
    }
}
