import BluetoothCentral
/// The one error every pure decoder of this module throws: which layer, where in the input, and why.
/// Decoders never trap, whatever the bytes; a caller logs the error and drops the packet (or, for a
/// byte stream that lost its framing, closes the transport).
public struct BLEDecodeError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Layer: String, Sendable {
        case h4, hciCommand, hciEvent, acl, l2cap, signaling, smp, att, gatt, advertisingData, btsnoop
    }

    public enum Reason: Equatable, Hashable, Sendable {
        /// `field` needs `needed` more bytes but only `available` are left.
        case truncated(field: String, needed: Int, available: Int)
        /// A field holds a value the format does not allow.
        case invalidValue(field: String, value: Int)
        /// A length field exceeds an explicit limit of this module.
        case tooLong(field: String, length: Int, limit: Int)
        /// An H4 packet type indicator outside 0x01...0x05: the stream lost its framing.
        case unknownPacketType(UInt8)
        /// Bytes after the end of a fixed-size structure.
        case trailingBytes(Int)
        /// A continuation fragment without a start fragment, or similar sequencing faults.
        case unexpected(String)
    }

    public var layer: Layer
    public var offset: Int
    public var reason: Reason

    public init(_ layer: Layer, offset: Int, _ reason: Reason) {
        self.layer = layer
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        let what: String
        switch reason {
        case .truncated(let field, let needed, let available):
            what = "\(field) truncated: needs \(needed) bytes, \(available) available"
        case .invalidValue(let field, let value):
            what = "invalid \(field) \(value)"
        case .tooLong(let field, let length, let limit):
            what = "\(field) length \(length) exceeds the limit \(limit)"
        case .unknownPacketType(let type):
            what = "unknown H4 packet type 0x" + hex(type)
        case .trailingBytes(let count):
            what = "\(count) unexpected trailing bytes"
        case .unexpected(let text):
            what = text
        }
        return "\(layer.rawValue) at offset \(offset): \(what)"
    }
}

/// Little-endian reads with a length check before every read; errors name the layer and field.
struct ByteReader {
    let bytes: [UInt8]
    let layer: BLEDecodeError.Layer
    /// Added to offsets in errors, for readers over a part of a larger packet.
    let base: Int
    private(set) var offset: Int = 0

    init(_ bytes: [UInt8], layer: BLEDecodeError.Layer, base: Int = 0) {
        self.bytes = bytes
        self.layer = layer
        self.base = base
    }

    init(_ bytes: ArraySlice<UInt8>, layer: BLEDecodeError.Layer, base: Int = 0) {
        self.init(Array(bytes), layer: layer, base: base)
    }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    func error(_ reason: BLEDecodeError.Reason, at position: Int? = nil) -> BLEDecodeError {
        BLEDecodeError(layer, offset: base + (position ?? offset), reason)
    }

    private mutating func unsigned(_ count: Int, _ field: String) throws(BLEDecodeError) -> UInt64 {
        guard remaining >= count else {
            throw error(.truncated(field: field, needed: count, available: remaining))
        }
        var value: UInt64 = 0
        for i in 0..<count { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += count
        return value
    }

    mutating func uint8(_ field: String) throws(BLEDecodeError) -> UInt8 { UInt8(try unsigned(1, field)) }
    mutating func int8(_ field: String) throws(BLEDecodeError) -> Int8 { Int8(bitPattern: try uint8(field)) }
    mutating func uint16(_ field: String) throws(BLEDecodeError) -> UInt16 { UInt16(try unsigned(2, field)) }
    mutating func uint32(_ field: String) throws(BLEDecodeError) -> UInt32 { UInt32(try unsigned(4, field)) }
    mutating func uint48(_ field: String) throws(BLEDecodeError) -> UInt64 { try unsigned(6, field) }
    mutating func uint64(_ field: String) throws(BLEDecodeError) -> UInt64 { try unsigned(8, field) }

    mutating func bytes(_ count: Int, _ field: String) throws(BLEDecodeError) -> [UInt8] {
        guard count >= 0, remaining >= count else {
            throw error(.truncated(field: field, needed: count, available: remaining))
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[min(offset, bytes.count)...])
    }

    func expectEnd() throws(BLEDecodeError) {
        if remaining > 0 { throw error(.trailingBytes(remaining)) }
    }
}

/// Little-endian writes.
struct ByteWriter {
    var bytes: [UInt8] = []
    init(capacity: Int = 16) { bytes.reserveCapacity(capacity) }
    mutating func uint8(_ v: UInt8) { bytes.append(v) }
    mutating func uint16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func uint32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    mutating func uint48(_ v: UInt64) { for i in 0..<6 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    mutating func uint64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    mutating func append(_ b: [UInt8]) { bytes.append(contentsOf: b) }
}

/// A point on the host's monotonic clock, injected by the I/O layer. State machines compare
/// instants and hand back deadlines; they never read a clock themselves.
public struct HostInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static let zero = HostInstant(nanoseconds: 0)
    public static func seconds(_ s: Double) -> HostInstant { HostInstant(nanoseconds: UInt64(s * 1e9)) }

    public func advanced(by duration: Duration) -> HostInstant {
        let (s, atto) = duration.components
        let ns = Double(s) * 1e9 + Double(atto) / 1e9
        if ns <= 0 { return HostInstant(nanoseconds: nanoseconds - min(nanoseconds, UInt64(-ns))) }
        let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(min(ns, 1.8e19)))
        return HostInstant(nanoseconds: overflow ? .max : sum)
    }

    public static func < (a: HostInstant, b: HostInstant) -> Bool { a.nanoseconds < b.nanoseconds }
    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}
