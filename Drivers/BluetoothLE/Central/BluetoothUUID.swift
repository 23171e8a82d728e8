/// A Bluetooth UUID. 16- and 32-bit UUIDs are shorthands of 128-bit UUIDs on the Bluetooth base
/// UUID 00000000-0000-1000-8000-00805F9B34FB; equality is on the full 128-bit value, so
/// `BluetoothUUID(0x2902)` equals its 128-bit spelling.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// Most and least significant 64 bits of the 128-bit value.
    public var high: UInt64
    public var low: UInt64

    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB
    static let baseHighSuffix: UInt64 = 0x0000_1000

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(_ short: UInt16) { self.init(uuid32: UInt32(short)) }
    public init(uuid32 value32: UInt32) { self.init(high: UInt64(value32) << 32 | Self.baseHighSuffix, low: Self.baseLow) }

    /// The 16-bit alias, when this UUID has one.
    public var uint16: UInt16? {
        guard let v = uint32, v <= 0xFFFF else { return nil }
        return UInt16(v)
    }

    /// The 32-bit alias, when this UUID is on the base UUID.
    public var uint32: UInt32? {
        guard low == Self.baseLow, high & 0xFFFF_FFFF == Self.baseHighSuffix else { return nil }
        return UInt32(high >> 32)
    }

    /// From the 2, 4 or 16 bytes as ATT and advertising data carry them (little-endian).
    public init?(littleEndian bytes: [UInt8]) {
        switch bytes.count {
        case 2: self.init(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        case 4:
            self.init(uuid32: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        case 16:
            var lo: UInt64 = 0, hi: UInt64 = 0
            for i in 0..<8 { lo |= UInt64(bytes[i]) << (8 * UInt64(i)) }
            for i in 0..<8 { hi |= UInt64(bytes[8 + i]) << (8 * UInt64(i)) }
            self.init(high: hi, low: lo)
        default: return nil
        }
    }

    /// The shortest ATT form: 2 bytes when a 16-bit alias exists, else 16 bytes (little-endian).
    public var attBytes: [UInt8] {
        if let s = uint16 { return [UInt8(s & 0xFF), UInt8(s >> 8)] }
        return bytes128
    }

    /// All 16 bytes, little-endian.
    public var bytes128: [UInt8] {
        (0..<8).map { UInt8((low >> (8 * UInt64($0))) & 0xFF) } + (0..<8).map { UInt8((high >> (8 * UInt64($0))) & 0xFF) }
    }

    /// Parses `180D`, `0x180D`, `0000180D` or the 36-character form.
    public init?(_ text: String) {
        var t = Substring(text)
        if t.hasPrefix("0x") || t.hasPrefix("0X") { t = t.dropFirst(2) }
        if t.count == 4, let v = UInt16(t, radix: 16) { self.init(v); return }
        if t.count == 8, let v = UInt32(t, radix: 16) { self.init(uuid32: v); return }
        let groups = t.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        let digits = groups.joined()
        guard let hi = UInt64(digits.prefix(16), radix: 16), let lo = UInt64(digits.suffix(16), radix: 16) else { return nil }
        self.init(high: hi, low: lo)
    }

    public var description: String {
        if let s = uint16 { return "0x" + hex(s, width: 4) }
        let h = hex(high, width: 16), l = hex(low, width: 16)
        return "\(h.prefix(8))-\(h.dropFirst(8).prefix(4))-\(h.suffix(4))-\(l.prefix(4))-\(l.suffix(12))"
    }

    public static let primaryService = BluetoothUUID(0x2800)
    public static let secondaryService = BluetoothUUID(0x2801)
    public static let include = BluetoothUUID(0x2802)
    public static let characteristic = BluetoothUUID(0x2803)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
}
