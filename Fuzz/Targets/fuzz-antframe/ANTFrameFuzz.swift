import ANTProtocol
import FuzzSupport

/// The ANT frame decoder and the replies. The first byte picks a chunk size (1 to 64 bytes, what
/// one USB transfer returns at most); the rest is the stick's byte stream, decoded whole and in
/// chunks of that size: both must give the same messages and drops. Every message must encode to
/// bytes that decode to the same message; each is read as an `ANTReply` (a typed error is fine),
/// and burst packets go through an `ANTBurstAssembler`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let step = Int(input.byte() % 64) + 1
    var whole = ANTFrameDecoder()
    let expected = whole.feed(input.bytes)
    var chunked = ANTFrameDecoder()
    var outputs: [ANTFrameDecoder.Output] = []
    for chunk in input.chunks(of: step) { outputs += chunked.feed(chunk) }
    guard outputs == expected, chunked.pendingByteCount == whole.pendingByteCount else {
        fatalError("chunked decoding differs: whole \(expected), chunks of \(step): \(outputs)")
    }
    var assembler = ANTBurstAssembler(limit: 4096)
    for output in expected {
        guard case .message(let message) = output else { continue }
        guard message.payload.count <= whole.maxPayload else { fatalError("payload over the limit: \(message)") }
        var again = ANTFrameDecoder()
        guard again.feed(message.encoded) == [.message(message)] else {
            fatalError("message does not re-encode to itself: \(message)")
        }
        guard let reply = try? ANTReply(message) else { continue }
        if case .burst(let packet) = reply { _ = assembler.add(packet) }
    }
    return 0
}
