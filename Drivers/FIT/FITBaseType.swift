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

    /// Eight tables for processing eight bytes per step ("slicing by 8"): `sliced[k][i]` is the
    /// CRC of byte `i` followed by `k` zero bytes.
    static let sliced: [UInt16] = {
        var tables = table
        for k in 1..<8 {
            for i in 0..<256 {
                let previous = tables[(k - 1) * 256 + i]
                tables.append((previous >> 8) ^ table[Int(previous & 0xFF)])
            }
        }
        return tables
    }()

    /// The CRC of `bytes`, continuing from `crc`.
    public static func update(_ crc: UInt16, _ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc = crc
        sliced.withUnsafeBufferPointer { t in
            var i = 0
            let count = bytes.count
            if let base = bytes.baseAddress {
                while i + 8 <= count {
                    let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) ^ UInt64(crc)
                    crc = t[7 * 256 + Int(word & 0xFF)] ^ t[6 * 256 + Int(word >> 8 & 0xFF)]
                        ^ t[5 * 256 + Int(word >> 16 & 0xFF)] ^ t[4 * 256 + Int(word >> 24 & 0xFF)]
                        ^ t[3 * 256 + Int(word >> 32 & 0xFF)] ^ t[2 * 256 + Int(word >> 40 & 0xFF)]
                        ^ t[1 * 256 + Int(word >> 48 & 0xFF)] ^ t[Int(word >> 56)]
                    i += 8
                }
            }
            while i < count {
                crc = (crc >> 8) ^ t[Int(UInt8(truncatingIfNeeded: crc) ^ bytes[i])]
                i += 1
            }
        }
        return crc
    }

    /// The CRC of `bytes`.
    public static func compute<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        let array = Array(bytes)
        return array.withUnsafeBytes { update(0, $0) }
    }
}
