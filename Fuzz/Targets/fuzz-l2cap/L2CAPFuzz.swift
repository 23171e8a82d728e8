import BLEHost
import FuzzSupport

/// L2CAP: the input is one basic frame; it is decoded and routed as the LE fixed channels are
/// (signaling commands decoded and answered, SMP refused). A decoded frame must encode to an
/// equal frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    guard let frame = try? L2CAPFrame.decode(input.rest) else { return 0 }
    guard (try? L2CAPFrame.decode(frame.encoded)) == frame else {
        fatalError("L2CAP frame does not survive encoding: \(frame)")
    }
    _ = LEFixedChannels.route(frame, handle: 0x0040)
    if let command = try? LESignalingCommand.decode(frame.payload) {
        guard (try? LESignalingCommand.decode(command.encoded)) == command else {
            fatalError("signaling command does not survive encoding: \(command)")
        }
    }
    return 0
}
