import BLEHost
import FuzzSupport

/// The H4 framer. The input is the byte stream from a controller; it is fed whole and in chunks
/// of a size taken from its length. Both must give the same packets, and the packets encoded
/// again must be the bytes they were framed from.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let whole = frame([input.bytes])
    let chunked = frame(input.chunks(of: 1 + size % 13))
    guard whole.packets == chunked.packets, whole.error == chunked.error else {
        fatalError("chunked framing differs: whole \(whole), chunks of \(1 + size % 13): \(chunked)")
    }
    let encoded = whole.packets.flatMap(\.encoded)
    guard encoded[...] == input.bytes.prefix(encoded.count) else {
        fatalError("packets encode to other bytes than they were framed from: \(whole.packets)")
    }
    return 0
}

private func frame(_ chunks: [ArraySlice<UInt8>]) -> (packets: [H4Packet], error: BLEDecodeError?) {
    var framer = H4Framer(limits: .init(maxACLDataLength: 1024, maxISODataLength: 1024, maxBufferedBytes: 1 << 16))
    var packets: [H4Packet] = []
    do {
        for chunk in chunks {
            try framer.append(chunk)
            while let packet = try framer.next() { packets.append(packet) }
        }
    } catch {
        return (packets, error)
    }
    return (packets, nil)
}
