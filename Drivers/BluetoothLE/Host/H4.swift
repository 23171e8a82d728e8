/// H4 (UART transport layer) packet type indicators.
public enum H4PacketType: UInt8, Sendable, CaseIterable {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05

    /// Header length after the type byte, and where its length field sits.
    var headerLength: Int {
        switch self {
        case .command, .sco: 3
        case .acl, .iso: 4
        case .event: 2
        }
    }

    func payloadLength(header h: ArraySlice<UInt8>) -> Int {
        let i = h.startIndex
        switch self {
        case .command, .sco: return Int(h[i + 2])
        case .event: return Int(h[i + 1])
        case .acl: return Int(h[i + 2]) | Int(h[i + 3]) << 8
        case .iso: return (Int(h[i + 2]) | Int(h[i + 3]) << 8) & 0x3FFF
        }
    }
}

/// One HCI packet: its type and its bytes after the type indicator (header included).
public struct H4Packet: Equatable, Hashable, Sendable {
    public var type: H4PacketType
    public var bytes: [UInt8]

    public init(_ type: H4PacketType, _ bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
    }

    /// The packet on an H4 stream: type indicator, then the bytes.
    public var encoded: [UInt8] { [type.rawValue] + bytes }
}

/// Incremental decoder of an H4 byte stream: feed chunks of any size with `append`, then call
/// `next()` until it returns nil ("need more bytes").
///
/// An unknown type indicator, or a length beyond the limits, means the stream lost its framing: the
/// error is sticky (every later `next()` throws it again) until `reset()`, and the caller should
/// close or reset the transport.
public struct H4Framer: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Largest ACL data length accepted (the header allows 65535).
        public var maxACLDataLength: Int
        /// Largest ISO data load accepted (the header allows 16383).
        public var maxISODataLength: Int
        /// Largest number of bytes held while waiting for a packet to complete.
        public var maxBufferedBytes: Int

        public init(maxACLDataLength: Int = 8192, maxISODataLength: Int = 8192, maxBufferedBytes: Int = 1 << 20) {
            self.maxACLDataLength = maxACLDataLength
            self.maxISODataLength = maxISODataLength
            self.maxBufferedBytes = maxBufferedBytes
        }
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    private var start = 0
    /// Bytes consumed since the start of the stream, for error offsets.
    private var consumed = 0
    private var failure: BLEDecodeError?

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes received but not yet returned as packets.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes. Throws when more than `maxBufferedBytes` would be pending.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(BLEDecodeError) {
        if let failure { throw failure }
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        guard buffer.count - start + bytes.count <= limits.maxBufferedBytes else {
            let e = BLEDecodeError(.h4, offset: consumed,
                                   .tooLong(field: "buffered bytes", length: buffer.count - start + bytes.count,
                                            limit: limits.maxBufferedBytes))
            failure = e
            throw e
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete packet, or nil when more bytes are needed.
    public mutating func next() throws(BLEDecodeError) -> H4Packet? {
        if let failure { throw failure }
        guard start < buffer.count else { return nil }
        guard let type = H4PacketType(rawValue: buffer[start]) else {
            let e = BLEDecodeError(.h4, offset: consumed, .unknownPacketType(buffer[start]))
            failure = e
            throw e
        }
        let headerEnd = start + 1 + type.headerLength
        guard buffer.count >= headerEnd else { return nil }
        let length = type.payloadLength(header: buffer[(start + 1)..<headerEnd])
        let limit: Int? = switch type {
        case .acl: limits.maxACLDataLength
        case .iso: limits.maxISODataLength
        default: nil
        }
        if let limit, length > limit {
            let e = BLEDecodeError(.h4, offset: consumed, .tooLong(field: "\(type) data", length: length, limit: limit))
            failure = e
            throw e
        }
        let end = headerEnd + length
        guard buffer.count >= end else { return nil }
        let packet = H4Packet(type, Array(buffer[(start + 1)..<end]))
        consumed += end - start
        start = end
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return packet
    }

    /// Appends `bytes` and returns every packet now complete.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(BLEDecodeError) -> [H4Packet] {
        try append(bytes)
        var packets: [H4Packet] = []
        while let p = try next() { packets.append(p) }
        return packets
    }

    /// Drops buffered bytes and any sticky error (after the transport was reset).
    public mutating func reset() {
        buffer.removeAll()
        start = 0
        failure = nil
    }

    public static func encode(_ packet: H4Packet) -> [UInt8] { packet.encoded }
}
