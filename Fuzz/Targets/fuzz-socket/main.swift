import DaemonProtocol
import FuzzSupport

/// The daemon socket's request framing and parsing: the first byte picks how the input is cut
/// into reads (as a connection delivers it), the line the reader frames is parsed as a request,
/// and the whole input is parsed as one line too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let step = Int(input.byte() % 64) + 1
    let bytes = input.rest
    var reader = RequestLineReader(limit: 4096)
    var outcome: RequestLineReader.Outcome?
    var start = 0
    while outcome == nil, start < bytes.count {
        outcome = reader.feed(bytes[start..<min(start + step, bytes.count)])
        start += step
    }
    if case .line(let line) = outcome ?? reader.end() { _ = SocketProtocol.parse(line) }
    _ = SocketProtocol.parse(bytes)
    if case .success(let request) = SocketProtocol.parse(bytes) { _ = try? SocketProtocol.line(request) }
    return 0
}
