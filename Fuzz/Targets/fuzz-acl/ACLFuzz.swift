import BLEHost
import FuzzSupport

/// ACL: the input is a sequence of HCI ACL data packets (without H4 type bytes; each carries its
/// own length). Each is decoded and reassembled into L2CAP PDUs, which are decoded as frames.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    var reassembler = ACLReassembler(limits: .init(maxPDULength: 4 + 512, maxHandles: 4))
    while !input.bytes.isEmpty {
        let header = input.take(4)
        let length = header.count == 4 ? Int(header[2]) | Int(header[3]) << 8 : 0
        let packet: ACLPacket
        do {
            packet = try ACLPacket.decode(header + input.take(length))
        } catch {
            continue
        }
        guard let (_, pdu) = try? reassembler.receive(packet) else { continue }
        guard let frame = try? L2CAPFrame.decode(pdu) else {
            fatalError("a reassembled PDU does not decode as an L2CAP frame: \(pdu)")
        }
        _ = frame
    }
    return 0
}
