/// Writes a classic pcap file in memory: little-endian, microsecond timestamps, one link type.
/// For tests and fixture generators (a usbmon record's bytes come from `USBMonPacket.encoded`).
public struct PcapWriter: Sendable {
    public let linkType: LinkType
    public let snapshotLength: UInt32
    /// The file so far: the 24-byte header, then every record appended.
    public private(set) var bytes: [UInt8] = []

    public init(linkType: LinkType, snapshotLength: UInt32 = 262_144) {
        self.linkType = linkType
        self.snapshotLength = snapshotLength
        Self.append(&bytes, CaptureReader.pcapMicroseconds)
        Self.append(&bytes, 2 | 4 << 16)  // version 2.4: major, then minor
        Self.append(&bytes, 0)  // time zone offset, always 0
        Self.append(&bytes, 0)  // timestamp accuracy, always 0
        Self.append(&bytes, snapshotLength)
        Self.append(&bytes, linkType.rawValue)
    }

    /// Adds a record. The time is cut to microseconds and kept within what the format holds
    /// (1970 to 2106); `originalLength` defaults to the data's length.
    public mutating func append(data: [UInt8], timestampNanoseconds: Int64, originalLength: UInt32? = nil) {
        let (seconds, remainder) = timestampNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        // Floor division, so that times before a whole second stay before it.
        let floorSeconds = remainder < 0 ? seconds - 1 : seconds
        let floorRemainder = remainder < 0 ? remainder + 1_000_000_000 : remainder
        let clamped = min(max(floorSeconds, 0), Int64(UInt32.max))
        Self.append(&bytes, UInt32(clamped))
        Self.append(&bytes, clamped == floorSeconds ? UInt32(floorRemainder / 1000) : 0)
        Self.append(&bytes, UInt32(clamping: data.count))
        Self.append(&bytes, originalLength ?? UInt32(clamping: data.count))
        bytes += data
    }

    private static func append(_ out: inout [UInt8], _ value: UInt32) {
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
}
