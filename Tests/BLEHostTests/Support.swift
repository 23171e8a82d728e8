import TestSupport
import BluetoothCentral
@testable import BLEHost

/// "01 03 0c 00" -> bytes.
func h(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
}

extension SeededGenerator {
    /// A valid vector with a few bytes changed, cut or extended.
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var b = input
        switch Int.random(in: 0..<4, using: &self) {
        case 0 where !b.isEmpty:
            for _ in 0..<Int.random(in: 1...3, using: &self) { b[Int.random(in: 0..<b.count, using: &self)] = UInt8.random(in: 0...255, using: &self) }
        case 1 where !b.isEmpty:
            b = Array(b.prefix(Int.random(in: 0..<b.count, using: &self)))
        case 2:
            b += bytes(Int.random(in: 1...8, using: &self))
        default:
            b = bytes(Int.random(in: 0...64, using: &self))
        }
        return b
    }
}

extension HostInstant {
    static func + (a: HostInstant, d: Duration) -> HostInstant { a.advanced(by: d) }
}
