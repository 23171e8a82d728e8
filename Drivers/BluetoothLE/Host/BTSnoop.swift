/// btsnoop capture files: a 16-byte header ("btsnoop\0", version 1, datalink type) and records of
/// original length, included length, flags, cumulative drops and a timestamp in microseconds since
/// midnight, January 1st, 0 AD; all big-endian.
public enum BTSnoop {
    public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    public static let version: UInt32 = 1
    /// Microseconds from 0 AD to the Unix epoch, as btsnoop writers count them.
    public static let unixEpochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

    public enum Datalink: UInt32, Sendable {
        /// Un-encapsulated HCI: no packet type byte; the flags tell command/event from data.
        case h1 = 1001
        /// HCI UART: each record starts with the H4 packet type indicator.
        case h4 = 1002
    }

    public struct Record: Equatable, Sendable {
        /// Flag bit 0: set when the controller sent the packet to the host.
        public var received: Bool
        /// Flag bit 1: set for commands and events.
        public var isCommandOrEvent: Bool
        public var originalLength: UInt32
        public var cumulativeDrops: UInt32
        /// Microseconds since 0 AD.
        public var timestamp: Int64
        public var data: [UInt8]

        public init(received: Bool, isCommandOrEvent: Bool, timestamp: Int64, data: [UInt8],
                    originalLength: UInt32? = nil, cumulativeDrops: UInt32 = 0) {
            self.received = received
            self.isCommandOrEvent = isCommandOrEvent
            self.timestamp = timestamp
            self.data = data
            self.originalLength = originalLength ?? UInt32(data.count)
            self.cumulativeDrops = cumulativeDrops
        }

        /// Microseconds since the Unix epoch.
        public var unixMicroseconds: Int64 { timestamp &- BTSnoop.unixEpochOffset }
        public var isTruncated: Bool { originalLength > UInt32(data.count) }

        /// The record as an HCI packet: for H4 from the type byte, for H1 from the flags.
        public func packet(datalink: Datalink) throws(BLEDecodeError) -> H4Packet {
            switch datalink {
            case .h4:
                guard let first = data.first else {
                    throw BLEDecodeError(.btsnoop, offset: 0, .truncated(field: "packet type", needed: 1, available: 0))
                }
                guard let type = H4PacketType(rawValue: first) else { throw BLEDecodeError(.btsnoop, offset: 0, .unknownPacketType(first)) }
                return H4Packet(type, Array(data.dropFirst()))
            case .h1:
                let type: H4PacketType = isCommandOrEvent ? (received ? .event : .command) : .acl
                return H4Packet(type, data)
            }
        }

        /// A record for an HCI packet; the direction follows from the type for commands and events.
        public static func h4(_ packet: H4Packet, received: Bool, timestamp: Int64) -> Record {
            Record(received: received, isCommandOrEvent: packet.type == .command || packet.type == .event,
                   timestamp: timestamp, data: packet.encoded)
        }
    }

    /// Reads a whole capture held in memory.
    public struct Reader: Sendable {
        public let datalink: Datalink
        public let maxRecordLength: Int
        private let bytes: [UInt8]
        private var offset = 16

        /// Checks the header. `maxRecordLength` bounds included lengths (an H4 ACL packet is at
        /// most 5 + 65535 bytes).
        public init(_ bytes: [UInt8], maxRecordLength: Int = 5 + 0xFFFF) throws(BLEDecodeError) {
            var r = ByteReader(bytes, layer: .btsnoop)
            let magic = try r.bytes(8, "identification pattern")
            guard magic == BTSnoop.magic else { throw r.error(.invalidValue(field: "identification pattern", value: Int(magic[0])), at: 0) }
            let version = try r.bytes(4, "version")
            let v = BTSnoop.bigEndian(version)
            guard v == UInt64(BTSnoop.version) else { throw r.error(.invalidValue(field: "version", value: Int(v)), at: 8) }
            let link = BTSnoop.bigEndian(try r.bytes(4, "datalink type"))
            guard let datalink = Datalink(rawValue: UInt32(link)) else { throw r.error(.invalidValue(field: "datalink type", value: Int(link)), at: 12) }
            self.datalink = datalink
            self.bytes = bytes
            self.maxRecordLength = maxRecordLength
        }

        /// The next record, or nil at the end of the file.
        public mutating func next() throws(BLEDecodeError) -> Record? {
            guard offset < bytes.count else { return nil }
            var r = ByteReader(Array(bytes[offset..<min(bytes.count, offset + 24)]), layer: .btsnoop, base: offset)
            let original = UInt32(BTSnoop.bigEndian(try r.bytes(4, "original length")))
            let included = Int(BTSnoop.bigEndian(try r.bytes(4, "included length")))
            let flags = BTSnoop.bigEndian(try r.bytes(4, "packet flags"))
            let drops = UInt32(BTSnoop.bigEndian(try r.bytes(4, "cumulative drops")))
            let timestamp = Int64(bitPattern: BTSnoop.bigEndian(try r.bytes(8, "timestamp")))
            guard included <= maxRecordLength else {
                throw r.error(.tooLong(field: "included length", length: included, limit: maxRecordLength), at: 4)
            }
            guard UInt32(included) <= original else {
                throw r.error(.invalidValue(field: "included length above original", value: included), at: 4)
            }
            let start = offset + 24
            guard bytes.count - start >= included else {
                throw BLEDecodeError(.btsnoop, offset: start, .truncated(field: "packet data", needed: included, available: bytes.count - start))
            }
            offset = start + included
            return Record(received: flags & 1 != 0, isCommandOrEvent: flags & 2 != 0, timestamp: timestamp,
                          data: Array(bytes[start..<start + included]), originalLength: original, cumulativeDrops: drops)
        }

        /// Every record; throws at the first bad one.
        public mutating func readAll() throws(BLEDecodeError) -> [Record] {
            var records: [Record] = []
            while let record = try next() { records.append(record) }
            return records
        }
    }

    /// Writes a capture: `header` once, then `record` per packet.
    public struct Writer: Sendable {
        public let datalink: Datalink
        public init(datalink: Datalink = .h4) { self.datalink = datalink }

        public var header: [UInt8] { BTSnoop.magic + BTSnoop.bigEndianBytes(UInt64(BTSnoop.version), 4) + BTSnoop.bigEndianBytes(UInt64(datalink.rawValue), 4) }

        public func record(_ record: Record) -> [UInt8] {
            let flags = UInt64((record.received ? 1 : 0) | (record.isCommandOrEvent ? 2 : 0))
            return BTSnoop.bigEndianBytes(UInt64(record.originalLength), 4) + BTSnoop.bigEndianBytes(UInt64(record.data.count), 4)
                + BTSnoop.bigEndianBytes(flags, 4) + BTSnoop.bigEndianBytes(UInt64(record.cumulativeDrops), 4)
                + BTSnoop.bigEndianBytes(UInt64(bitPattern: record.timestamp), 8) + record.data
        }
    }

    static func bigEndian(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
    static func bigEndianBytes(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8((value >> (8 * UInt64($0))) & 0xFF) }
    }
}
