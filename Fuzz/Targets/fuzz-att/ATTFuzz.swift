import BLEHost
import FuzzSupport

/// ATT: the input is one PDU. A decoded PDU must encode to bytes that decode to the same PDU.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    guard let pdu = try? ATTPDU.decode(input.rest) else { return 0 }
    guard (try? ATTPDU.decode(pdu.encoded)) == pdu else {
        fatalError("ATT PDU does not survive encoding: \(pdu)")
    }
    return 0
}
