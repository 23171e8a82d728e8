import BLEHost
import FuzzSupport

/// Capture replay: the input is a capture file, btsnoop, or pcap or pcapng (link type 201); it is
/// read and replayed as `healthgate ble replay` does (H4 framing, HCI events, ACL reassembly,
/// L2CAP, ATT, GATT discovery).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = try? CaptureReplay.replay(input.rest)
    return 0
}
