/// A Bluetooth device address (BD_ADDR) with its LE address type.
///
/// `value` holds the 48 bits with the most significant byte first in the text form
/// `AA:BB:CC:DD:EE:FF`; on the air and in HCI the six bytes travel least significant first.
public struct DeviceAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: UInt8, Hashable, Sendable {
        case `public` = 0
        case random = 1
    }

    /// Sub-types of random addresses, from the two most significant bits.
    public enum RandomKind: Sendable, Equatable {
        case nonResolvablePrivate, resolvablePrivate, reserved, `static`
    }

    public var value: UInt64
    public var kind: Kind

    public init(_ value: UInt64, kind: Kind = .public) {
        self.value = value & 0xFFFF_FFFF_FFFF
        self.kind = kind
    }

    /// From the six bytes as HCI carries them (least significant first).
    public init(littleEndian bytes: [UInt8], kind: Kind = .public) {
        var v: UInt64 = 0
        for (i, b) in bytes.prefix(6).enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        self.init(v, kind: kind)
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (hex digits, either case). Returns nil for anything else.
    public init?(_ text: String, kind: Kind = .public) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var v: UInt64 = 0
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            v = v << 8 | UInt64(byte)
        }
        self.init(v, kind: kind)
    }

    /// HCI address type to kind: 0 public, 1 random, 2 public identity, 3 random (static) identity.
    public init(littleEndian bytes: [UInt8], hciAddressType: UInt8) {
        self.init(littleEndian: bytes, kind: hciAddressType & 1 == 1 ? .random : .public)
    }

    public var littleEndianBytes: [UInt8] {
        (0..<6).map { UInt8((value >> (8 * UInt64($0))) & 0xFF) }
    }

    public var randomKind: RandomKind? {
        guard kind == .random else { return nil }
        switch value >> 46 {
        case 0b00: return .nonResolvablePrivate
        case 0b01: return .resolvablePrivate
        case 0b11: return .static
        default: return .reserved
        }
    }

    /// `AA:BB:CC:DD:EE:FF`, most significant byte first.
    public var text: String {
        (0..<6).reversed().map { hex(UInt8((value >> (8 * UInt64($0))) & 0xFF)) }.joined(separator: ":")
    }

    public var description: String { kind == .public ? text : "\(text) (random)" }
}
