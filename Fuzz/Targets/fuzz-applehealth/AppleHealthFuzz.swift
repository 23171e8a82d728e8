import AppleHealthDriver
import FuzzSupport

/// Apple Health: the export.xml handler (records, correlations, workouts, sleep sessions) over
/// the XML reader. The input is an export.xml.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = try? AppleHealthImporter.decode(input.rest, path: "fuzz.xml")
    return 0
}
