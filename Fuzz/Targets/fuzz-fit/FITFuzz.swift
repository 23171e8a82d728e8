import FITDriver
import Foundation
import FuzzSupport

/// FIT: the decoder (headers, definitions, data messages, chained files, CRCs) and the normalizer
/// over what it collected before any damage. The input is a FIT file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    var collector = FITCollector()
    do {
        try FITDecoder.decode(Data(input.bytes), into: &collector)
    } catch {
        // A typed decode error: fine. The records before the damage are still normalized.
    }
    _ = FITNormalizer.records(from: collector.content, file: "fuzz.fit")
    return 0
}
