import FuzzSupport
import ZipStream

/// ZipStream: the end records, the central directory (Zip64 too), local headers and every
/// entry's data, inflated and checked (sizes, ratio, CRC-32). The input is a zip archive; the
/// limits are small so that bombs are found fast.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let limits = ZipLimits(maxEntries: 1000, maxDirectoryBytes: 1 << 20, maxEntryBytes: 8 << 20, maxRatio: 200, ratioGrace: 1 << 20)
    _ = try? ZipArchive.read(input.rest, limits: limits) { entry, bytes in
        _ = entry.safePath
        precondition(bytes.count == entry.uncompressedSize, "an entry that read whole has its declared size")
    }
    return 0
}
