import FuzzSupport
import GPXDriver

/// GPX: the document parser over the XML reader, into workouts. The input is a GPX document.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = try? GPXImporter.decode(input.bytes, path: "fuzz.gpx")
    return 0
}
