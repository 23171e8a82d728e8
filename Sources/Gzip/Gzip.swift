import CZlib
public import Foundation

/// gzip compression with the system zlib: upload bodies on the client, and the tests'.
/// (``GzipInflater`` is the other direction, streaming, for the server.)
public enum Gzip {
    /// `bytes` as one gzip member at `level` (1: fastest ... 9: smallest; 6 is zlib's default).
    public static func compress(_ bytes: UnsafeRawBufferPointer, level: Int32 = 6) -> [UInt8] {
        // zlib keeps a pointer back to the stream: it lives on the heap, where it cannot move.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        guard czlib_deflate_init_gzip(stream, min(max(level, 0), 9)) == Z_OK else {
            preconditionFailure("zlib: deflateInit2 failed (out of memory)")
        }
        defer { deflateEnd(stream) }
        // deflateBound is enough room to finish in one call; the gzip header and trailer add 18.
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(bytes.count))) + 18)
        let written = output.withUnsafeMutableBufferPointer { out -> Int in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(bytes.count)
            stream.pointee.next_out = out.baseAddress
            stream.pointee.avail_out = uInt(out.count)
            let status = deflate(stream, Z_FINISH)
            precondition(status == Z_STREAM_END, "zlib: deflate with deflateBound's room did not finish (\(status))")
            return out.count - Int(stream.pointee.avail_out)
        }
        output.removeSubrange(written...)
        return output
    }

    /// `data` as one gzip member at `level`.
    public static func compress(_ data: Data, level: Int32 = 6) -> Data {
        Data(data.withUnsafeBytes { compress($0, level: level) })
    }
}
