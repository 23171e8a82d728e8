/// SplitMix64: a small deterministic generator, so every fuzz loop and random vector is the
/// same on every run (a failure names a seed that reproduces it).
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// `bytes` (not empty) with one random mutation, as a damaged file has: up to 8 bytes changed,
    /// cut short, up to 40 random bytes inserted, or up to 40 removed; insertions and removals at
    /// or after `from` (a header kept whole).
    public mutating func mutated(_ bytes: [UInt8], from: Int = 0) -> [UInt8] {
        var m = bytes
        let start = min(from, max(0, m.count - 1))
        switch Int.random(in: 0..<4, using: &self) {
        case 0:
            for _ in 0..<Int.random(in: 1...8, using: &self) {
                m[Int.random(in: 0..<m.count, using: &self)] = UInt8.random(in: 0...255, using: &self)
            }
        case 1:
            m = Array(m.prefix(Int.random(in: 0..<m.count, using: &self)))
        case 2:
            let inserted = self.bytes(Int.random(in: 1...40, using: &self))
            m.insert(contentsOf: inserted, at: Int.random(in: start..<m.count, using: &self))
        default:
            let at = Int.random(in: start..<m.count, using: &self)
            m.removeSubrange(at..<min(m.count, at + Int.random(in: 1...40, using: &self)))
        }
        return m
    }
}
