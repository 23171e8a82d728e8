@testable import BLEHost

/// "01 03 0c 00" -> bytes.
func h(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
}

/// SplitMix64: a deterministic generator for the fuzz loops.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) } }

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
