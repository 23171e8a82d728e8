/// A link-layer header type: what the bytes of a capture's records are. pcap and pcapng share the
/// numbers (tcpdump.org's list of link types); a pcap file has one for all its records, a pcapng
/// file one per interface.
public enum LinkType: Hashable, Sendable, CustomStringConvertible {
    /// Linux usbmon records with the 48-byte header (the binary interface before its extension).
    case usbLinux
    /// Bluetooth HCI packets with their H4 type byte, after a 4-byte big-endian direction
    /// (0 sent by the host, 1 received from the controller): what libpcap and Wireshark write for
    /// a Bluetooth HCI interface.
    case bluetoothHCIH4WithPHDR
    /// Linux usbmon records with the 64-byte header (the memory-mapped binary interface): what
    /// tcpdump and Wireshark write on Linux, and what umockdev replays.
    case usbLinuxMMapped
    /// Any other number.
    case other(UInt32)

    /// The type with this number; `.other` only for numbers without a case of their own.
    public init(rawValue: UInt32) {
        switch rawValue {
        case 189: self = .usbLinux
        case 201: self = .bluetoothHCIH4WithPHDR
        case 220: self = .usbLinuxMMapped
        default: self = .other(rawValue)
        }
    }

    public var rawValue: UInt32 {
        switch self {
        case .usbLinux: 189
        case .bluetoothHCIH4WithPHDR: 201
        case .usbLinuxMMapped: 220
        case .other(let value): value
        }
    }

    /// The number and, for the types with a case, a name.
    public var description: String {
        switch self {
        case .usbLinux: "189 (USB Linux, 48-byte header)"
        case .bluetoothHCIH4WithPHDR: "201 (Bluetooth HCI H4 with direction)"
        case .usbLinuxMMapped: "220 (USB Linux, 64-byte header)"
        case .other(let value): "\(value)"
        }
    }
}

/// One packet of a capture file, with where and when it was captured.
public struct CaptureRecord: Hashable, Sendable {
    /// The link type of the record's interface (`LinkType`'s raw value).
    public var linkType: UInt32
    /// Nanoseconds since the Unix epoch, in the file's resolution (microseconds for classic
    /// pcap, the interface's for pcapng); 0 for a pcapng Simple Packet Block, which has no time.
    public var timestampNanoseconds: Int64
    /// The length of the packet on the wire; above `data.count` when the writer kept only its
    /// first bytes (a snapshot length).
    public var originalLength: UInt32
    /// The bytes the capture holds.
    public var data: [UInt8]
    /// The interface the packet was captured on: 0 for classic pcap; for pcapng the interface's
    /// index counted over the whole file (a later section's interfaces continue the count).
    public var interface: Int

    public init(linkType: UInt32, timestampNanoseconds: Int64, data: [UInt8], originalLength: UInt32? = nil, interface: Int = 0) {
        self.linkType = linkType
        self.timestampNanoseconds = timestampNanoseconds
        self.data = data
        self.originalLength = originalLength ?? UInt32(clamping: data.count)
        self.interface = interface
    }

    /// `linkType` as a `LinkType`.
    public var link: LinkType { LinkType(rawValue: linkType) }

    /// True when the writer kept fewer bytes than the packet had.
    public var isTruncated: Bool { originalLength > UInt32(clamping: data.count) }
}
