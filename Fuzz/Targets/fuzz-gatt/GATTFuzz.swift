import FuzzSupport
import GATTProfiles

/// Every GATT profile decoder: the first two bytes (little-endian) are the characteristic's
/// UUID, the rest is its value. A UUID ``GATTProfileDecoder`` does not decode stands for one it
/// does (picked by the UUID modulo their count), so that every input reaches some decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let uuid = input.uint16()
    let characteristic = supported.contains(uuid) ? uuid : ordered[Int(uuid) % ordered.count]
    _ = try? GATTProfileDecoder.decode(characteristic: characteristic, input.rest)
    return 0
}

private let supported = GATTProfileDecoder.supportedCharacteristics
private let ordered = supported.sorted()
