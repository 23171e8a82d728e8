import Foundation
import TestSupport

/// A value with every kind of field the codecs handle, for the random agreement tests.
struct RandomItem: Codable, Equatable {
    var name: String
    var value: Double
    var count: Int
    var flag: Bool
    var when: Date
    var note: String?
    var map: [String: Double]
    var list: [[Int64]]
    var small: Int8
    var big: UInt64
    var ratio: Float

    /// Strings with every escape (quotes, backslashes, control characters, slashes, non-ASCII),
    /// doubles of every magnitude (integers, tiny, huge, random bit patterns, binary fractions),
    /// dates with odd fractions, dictionaries whose keys sort differently by other orders.
    static func random(using rng: inout SeededGenerator) -> RandomItem {
        let alphabet: [Character] = ["a", "B", "z", "Z", "0", "9", "_", "/", "\"", "\\", "\n", "\t", "\r", "\u{08}", "\u{0C}",
                                     "\u{01}", "\u{1F}", "\u{7F}", "é", "ß", "€", "😀", " ", "\u{2028}"]
        func string() -> String { String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }) }
        func double() -> Double {
            switch Int.random(in: 0...5, using: &rng) {
            case 0: return Double(Int.random(in: -1_000_000...1_000_000, using: &rng))
            case 1: return Double.random(in: -1...1, using: &rng)
            case 2: return Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng) & 0x7FEF_FFFF_FFFF_FFFF)
            case 3: return Double.random(in: 0...1e-5, using: &rng)
            case 4: return Double.random(in: 1e15...1e22, using: &rng)
            default: return (Double.random(in: 0...1000, using: &rng) * 1024).rounded() / 1024
            }
        }
        var map: [String: Double] = [:]
        for _ in 0..<Int.random(in: 0...6, using: &rng) { map[string()] = double() }
        return RandomItem(name: string(), value: double(), count: Int.random(in: Int.min...Int.max, using: &rng),
                          flag: Bool.random(using: &rng),
                          when: Date(timeIntervalSinceReferenceDate: Double.random(in: -3e9...3e9, using: &rng)),
                          note: Bool.random(using: &rng) ? string() : nil, map: map,
                          list: (0..<Int.random(in: 0...3, using: &rng)).map { _ in [Int64.random(in: Int64.min...Int64.max, using: &rng)] },
                          small: Int8.random(in: -128...127, using: &rng), big: UInt64.random(in: 0...UInt64.max, using: &rng),
                          ratio: Float(double().truncatingRemainder(dividingBy: 1e30)))
    }
}
