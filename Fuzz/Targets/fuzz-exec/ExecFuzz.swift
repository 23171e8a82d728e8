import ExecDriver
import FuzzSupport

/// Exec: the line parser (one JSON object per line, into a record). The input is the output of
/// a command: each line is parsed as the driver parses it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let parser = ExecLineParser(instance: "fuzz")
    for (number, line) in input.bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
        _ = try? parser.parse(String(decoding: line, as: UTF8.self), number: number + 1)
    }
    return 0
}
