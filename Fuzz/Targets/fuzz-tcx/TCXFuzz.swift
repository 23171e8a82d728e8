import FuzzSupport
import TCXDriver

/// TCX: the document parser over the XML reader, into workouts. The input is a TCX document.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = try? TCXImporter.decode(input.bytes, path: "fuzz.tcx")
    return 0
}
