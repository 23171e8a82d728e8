/// Little-endian reads over a characteristic value. Every read checks the length first and throws
/// a `ProfileDecodeError` naming the characteristic, the field and its offset; nothing traps.
public struct ByteCursor: Sendable {
    public let bytes: [UInt8]
    public let characteristic: UInt16
    public private(set) var offset: Int = 0

    public init(_ bytes: [UInt8], characteristic: UInt16) {
        self.bytes = bytes
        self.characteristic = characteristic
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    /// Reads `count` bytes as an unsigned little-endian integer (count <= 8).
    mutating func unsigned(_ count: Int, _ field: String) throws(ProfileDecodeError) -> UInt64 {
        guard remaining >= count else {
            throw ProfileDecodeError(characteristic: characteristic, offset: offset,
                                     reason: .truncated(field: field, needed: count, available: remaining))
        }
        var value: UInt64 = 0
        for i in 0..<count { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += count
        return value
    }

    public mutating func uint8(_ field: String) throws(ProfileDecodeError) -> UInt8 {
        UInt8(try unsigned(1, field))
    }
    public mutating func uint16(_ field: String) throws(ProfileDecodeError) -> UInt16 {
        UInt16(try unsigned(2, field))
    }
    public mutating func uint24(_ field: String) throws(ProfileDecodeError) -> UInt32 {
        UInt32(try unsigned(3, field))
    }
    public mutating func uint32(_ field: String) throws(ProfileDecodeError) -> UInt32 {
        UInt32(try unsigned(4, field))
    }
    public mutating func sint16(_ field: String) throws(ProfileDecodeError) -> Int16 {
        Int16(bitPattern: try uint16(field))
    }
    /// IEEE 11073-20601 16-bit SFLOAT.
    public mutating func sfloat(_ field: String) throws(ProfileDecodeError) -> MedicalFloat {
        MedicalFloat(sfloat: try uint16(field))
    }
    /// IEEE 11073-20601 32-bit FLOAT.
    public mutating func float(_ field: String) throws(ProfileDecodeError) -> MedicalFloat {
        MedicalFloat(float: try uint32(field))
    }
    /// The 7-byte Date Time characteristic format (0x2A08).
    public mutating func dateTime(_ field: String) throws(ProfileDecodeError) -> GATTDateTime {
        guard remaining >= 7 else {
            throw ProfileDecodeError(characteristic: characteristic, offset: offset,
                                     reason: .truncated(field: field, needed: 7, available: remaining))
        }
        let year = try uint16(field)
        return GATTDateTime(year: year, month: try uint8(field), day: try uint8(field),
                            hours: try uint8(field), minutes: try uint8(field), seconds: try uint8(field))
    }
    /// The rest of the value.
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[min(offset, bytes.count)...])
    }

    func invalid(_ field: String, _ value: Int, at fieldOffset: Int) -> ProfileDecodeError {
        ProfileDecodeError(characteristic: characteristic, offset: fieldOffset,
                           reason: .invalidValue(field: field, value: value))
    }
}
