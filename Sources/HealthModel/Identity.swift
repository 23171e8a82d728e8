public import Foundation

/// A record's stable identity: a UUID derived from its source and natural key (UUIDv5), so the
/// same reading imported twice, or through two paths that agree on the key, is stored once.
public struct RecordID: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the canonical text form (case-insensitive).
    public init?(string: String) {
        // 8-4-4-4-12 hex digits, parsed here: `UUID(uuidString:)` goes through `sscanf`.
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        var high: UInt8?
        for (index, c) in string.utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard bytes.count == 16, high == nil, string.utf8.count == 36 else { return nil }
        uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                           bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// Namespace of every HealthGate record id (a fixed, random UUID).
    public static let namespace = UUID(uuidString: "6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93")!

    /// The UUIDv5 of `parts` joined by `|` under ``namespace``.
    ///
    /// Callers pass the record type, the driver and device identity and a natural key such as
    /// the start time: `RecordID.derive("workout", "fit", device, "1495129762", "running")`.
    public static func derive(_ parts: String...) -> RecordID { derive(parts) }

    public static func derive(_ parts: [String]) -> RecordID {
        var bytes = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        bytes.append(contentsOf: Array(parts.joined(separator: "|").utf8))
        var digest = SHA1.hash(bytes)
        digest[6] = (digest[6] & 0x0F) | 0x50  // version 5
        digest[8] = (digest[8] & 0x3F) | 0x80  // RFC 4122 variant
        let uuid = UUID(uuid: (digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6],
                               digest[7], digest[8], digest[9], digest[10], digest[11], digest[12],
                               digest[13], digest[14], digest[15]))
        return RecordID(uuid)
    }

    /// Lower-case canonical form, as stored and shown.
    public var description: String {
        let hex = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
                text.append(hex[Int(byte >> 4)])
                text.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    public static func < (a: RecordID, b: RecordID) -> Bool { a.description < b.description }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let uuid = RecordID(string: text)?.uuid else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not a UUID: \(text)"))
        }
        self.uuid = uuid
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// SHA-1 (FIPS 180-4), used only to derive UUIDv5 identities, never for security. Runs once per
/// record an import derives: the message schedule lives on the stack and the padding is built in
/// a last block of its own, so a hash allocates only its result.
enum SHA1 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
                message.withUnsafeBufferPointer { bytes in
                    let whole = bytes.count / 64 * 64
                    var offset = 0
                    while offset < whole {
                        compress(&h, UnsafeBufferPointer(rebasing: bytes[offset..<offset + 64]), w)
                        offset += 64
                    }
                    // The rest, 0x80, zeros and the length in bits: one block or two.
                    let rest = bytes.count - whole
                    let tailLength = rest < 56 ? 64 : 128
                    tail.initialize(repeating: 0)
                    for i in 0..<rest { tail[i] = bytes[whole + i] }
                    tail[rest] = 0x80
                    let bitLength = UInt64(bytes.count) &* 8
                    for i in 0..<8 { tail[tailLength - 1 - i] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * i)) }
                    compress(&h, UnsafeBufferPointer(rebasing: tail[0..<64]), w)
                    if tailLength == 128 { compress(&h, UnsafeBufferPointer(rebasing: tail[64..<128]), w) }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: 20)
        for (index, word) in [h.0, h.1, h.2, h.3, h.4].enumerated() {
            out[index * 4] = UInt8(truncatingIfNeeded: word >> 24)
            out[index * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
            out[index * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
            out[index * 4 + 3] = UInt8(truncatingIfNeeded: word)
        }
        return out
    }

    /// One 64-byte block into the state `h`; `w` holds the 80-word schedule.
    private static func compress(_ h: inout (UInt32, UInt32, UInt32, UInt32, UInt32), _ block: UnsafeBufferPointer<UInt8>,
                                 _ w: UnsafeMutableBufferPointer<UInt32>) {
        for i in 0..<16 {
            let b = i * 4
            w[i] = UInt32(block[b]) << 24 | UInt32(block[b + 1]) << 16 | UInt32(block[b + 2]) << 8 | UInt32(block[b + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = (x << 1) | (x >> 31)
        }
        var (a, b, c, d, e) = h
        for i in 0..<80 {
            let f: UInt32, k: UInt32
            switch i {
            case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
            case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
            case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
            default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
            }
            let t = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
            e = d
            d = c
            c = (b << 30) | (b >> 2)
            b = a
            a = t
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}
