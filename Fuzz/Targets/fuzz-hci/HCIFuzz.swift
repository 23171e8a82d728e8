import BLEHost
import BluetoothCentral
import FuzzSupport

/// HCI: the input is one packet without its H4 type byte, decoded as an event (the advertising
/// data of each report parsed too), as a command, as the return parameters of the command whose
/// opcode are its first two bytes, and as advertising data.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let bytes = input.rest
    switch try? HCIEvent.decode(bytes) {
    case .le(.advertisingReports(let reports)):
        for report in reports { _ = try? AdvertisingData.parse(report.data) }
    case .commandComplete(let complete):
        _ = try? HCICommandReturn.decode(opcode: complete.opcode, complete.returnParameters)
    default:
        break
    }
    _ = try? HCICommand.decode(bytes)
    let opcode = HCIOpcode(rawValue: input.uint16())
    _ = try? HCICommandReturn.decode(opcode: opcode, input.rest)
    _ = try? AdvertisingData.parse(bytes)
    return 0
}
