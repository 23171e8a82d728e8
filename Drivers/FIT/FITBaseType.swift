/// The FIT base types, numbered by the low five bits of a field definition's base type byte.
public enum FITBaseType: UInt8, Sendable, CaseIterable {
    case `enum` = 0, sint8, uint8, sint16, uint16, sint32, uint32, string, float32, float64
    case uint8z, uint16z, uint32z, byte, sint64, uint64, uint64z

    /// The base type named by a definition's base type byte; unknown numbers read as ``byte``.
    public init(definitionByte: UInt8) {
        self = FITBaseType(rawValue: definitionByte & 0x1F) ?? .byte
    }

    /// Size of one element in bytes.
    public var size: Int {
        switch self {
        case .enum, .sint8, .uint8, .string, .uint8z, .byte: 1
        case .sint16, .uint16, .uint16z: 2
        case .sint32, .uint32, .float32, .uint32z: 4
        case .float64, .sint64, .uint64, .uint64z: 8
        }
    }

    /// The base type byte as written in definition messages (endian-capable types have bit 7 set).
    public var definitionByte: UInt8 { size > 1 ? rawValue | 0x80 : rawValue }

    /// The name used by the FIT profile (`uint16`, `string` ...).
    public var name: String {
        switch self {
        case .enum: "enum"
        case .sint8: "sint8"
        case .uint8: "uint8"
        case .sint16: "sint16"
        case .uint16: "uint16"
        case .sint32: "sint32"
        case .uint32: "uint32"
        case .string: "string"
        case .float32: "float32"
        case .float64: "float64"
        case .uint8z: "uint8z"
        case .uint16z: "uint16z"
        case .uint32z: "uint32z"
        case .byte: "byte"
        case .sint64: "sint64"
        case .uint64: "uint64"
        case .uint64z: "uint64z"
        }
    }

    /// The raw bit pattern that means "no value" for integer types (as an unsigned pattern of
    /// `size` bytes). Floats are invalid when all bits are set; strings when empty; bytes when
    /// every byte is 0xFF.
    public var invalidPattern: UInt64 {
        switch self {
        case .enum, .uint8, .byte: 0xFF
        case .sint8: 0x7F
        case .sint16: 0x7FFF
        case .uint16: 0xFFFF
        case .sint32: 0x7FFF_FFFF
        case .uint32: 0xFFFF_FFFF
        case .string, .uint8z, .uint16z, .uint32z, .uint64z: 0
        case .float32: 0xFFFF_FFFF
        case .float64, .uint64: 0xFFFF_FFFF_FFFF_FFFF
        case .sint64: 0x7FFF_FFFF_FFFF_FFFF
        }
    }
}

/// The FIT CRC-16 (polynomial 0x8005 reflected, initial value 0), over header and data.
public enum FITCRC {
    static let table: [UInt16] = (0..<256).map { byte -> UInt16 in
        var crc = UInt16(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        return crc
    }

    /// Sixteen tables for processing sixteen bytes per step ("slicing by 16"): `sliced[k][i]`
    /// is the CRC of byte `i` followed by `k` zero bytes.
    static let sliced: [UInt16] = {
        var tables = table
        for k in 1..<16 {
            for i in 0..<256 {
                let previous = tables[(k - 1) * 256 + i]
                tables.append((previous >> 8) ^ table[Int(previous & 0xFF)])
            }
        }
        return tables
    }()

    /// The CRC of `bytes`, continuing from `crc`.
    public static func update(_ crc: UInt16, _ bytes: UnsafeRawBufferPointer) -> UInt16 {
        sliced.withUnsafeBufferPointer { t -> UInt16 in
            /// Table `k`'s entry for byte `shift / 8` of `word`.
            @inline(__always) func lookup(_ k: Int, _ word: UInt64, _ shift: UInt64) -> UInt32 {
                UInt32(t[k &* 256 &+ Int(truncatingIfNeeded: (word &>> shift) & 0xFF)])
            }
            var crc = UInt32(crc)
            var i = 0
            let count = bytes.count
            if let base = bytes.baseAddress {
                while i + 16 <= count {
                    let lo = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    let hi = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
                    // The running CRC only meets the first two bytes: the other fourteen lookups
                    // do not wait for it.
                    let rest = (lookup(13, lo, 16) ^ lookup(12, lo, 24)) ^ (lookup(11, lo, 32) ^ lookup(10, lo, 40))
                        ^ (lookup(9, lo, 48) ^ lookup(8, lo, 56)) ^ (lookup(7, hi, 0) ^ lookup(6, hi, 8))
                        ^ (lookup(5, hi, 16) ^ lookup(4, hi, 24)) ^ (lookup(3, hi, 32) ^ lookup(2, hi, 40))
                        ^ (lookup(1, hi, 48) ^ lookup(0, hi, 56))
                    let first = lo ^ UInt64(crc)
                    crc = (lookup(15, first, 0) ^ lookup(14, first, 8)) ^ rest
                    i += 16
                }
            }
            while i < count {
                crc = (crc >> 8) ^ UInt32(t[Int((crc ^ UInt32(bytes[i])) & 0xFF)])
                i += 1
            }
            return UInt16(truncatingIfNeeded: crc)
        }
    }

    /// The CRC of `bytes`.
    public static func compute<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        let array = Array(bytes)
        return array.withUnsafeBytes { update(0, $0) }
    }
}
