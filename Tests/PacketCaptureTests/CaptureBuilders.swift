import PacketCapture

/// Bytes written in one byte order, for captures built by hand.
struct ByteWriter {
    var bigEndian: Bool
    var bytes: [UInt8] = []

    mutating func u16(_ value: UInt16) { number(UInt64(value), 2) }
    mutating func u32(_ value: UInt32) { number(UInt64(value), 4) }
    mutating func u64(_ value: UInt64) { number(value, 8) }
    mutating func raw(_ value: [UInt8]) { bytes += value }

    private mutating func number(_ value: UInt64, _ count: Int) {
        let order = bigEndian ? Array((0..<count).reversed()) : Array(0..<count)
        for i in order { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}

/// One packet for a hand-built file.
struct Packet {
    var seconds: UInt32
    var fraction: UInt32
    var data: [UInt8]
    var originalLength: UInt32? = nil
}

/// A classic pcap file in either byte order and either resolution.
func pcapFile(bigEndian: Bool, nanoseconds: Bool, linkType: UInt32 = 201, snapshotLength: UInt32 = 65_535,
              major: UInt16 = 2, _ packets: [Packet]) -> [UInt8] {
    var w = ByteWriter(bigEndian: bigEndian)
    w.u32(nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4)
    w.u16(major)
    w.u16(4)
    w.u32(0)
    w.u32(0)
    w.u32(snapshotLength)
    w.u32(linkType)
    for p in packets {
        w.u32(p.seconds)
        w.u32(p.fraction)
        w.u32(UInt32(p.data.count))
        w.u32(p.originalLength ?? UInt32(p.data.count))
        w.raw(p.data)
    }
    return w.bytes
}

/// A pcapng file built block by block; each section has its own byte order.
struct PcapngBuilder {
    var bytes: [UInt8] = []
    var bigEndian = false
    /// Where each block starts, in order.
    var blockOffsets: [Int] = []

    /// An option list: each (code, value), then the end-of-options marker.
    func options(_ list: [(UInt16, [UInt8])]) -> [UInt8] {
        guard !list.isEmpty else { return [] }
        var w = ByteWriter(bigEndian: bigEndian)
        for (code, value) in list {
            w.u16(code)
            w.u16(UInt16(value.count))
            w.raw(value + [UInt8](repeating: 0, count: (4 - value.count % 4) % 4))
        }
        w.u32(0)
        return w.bytes
    }

    /// A block: type, total length, the body padded to 32 bits, total length again.
    mutating func block(_ type: UInt32, _ body: [UInt8]) {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(type)
        w.u32(UInt32(12 + padded.count))
        w.raw(padded)
        w.u32(UInt32(12 + padded.count))
        blockOffsets.append(bytes.count)
        bytes += w.bytes
    }

    mutating func section(bigEndian: Bool, major: UInt16 = 1, minor: UInt16 = 0) {
        self.bigEndian = bigEndian
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(0x1A2B_3C4D)
        w.u16(major)
        w.u16(minor)
        w.u64(UInt64.max)  // section length not given
        w.raw(options([(4, Array("HealthGate tests".utf8))]))  // shb_userappl
        block(0x0A0D_0D0A, w.bytes)
    }

    mutating func interface(linkType: UInt16, snapshotLength: UInt32 = 0, options list: [(UInt16, [UInt8])] = []) {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u16(linkType)
        w.u16(0)
        w.u32(snapshotLength)
        w.raw(options(list))
        block(1, w.bytes)
    }

    /// `units` of the interface's time resolution.
    mutating func enhancedPacket(interface: UInt32, units: UInt64, _ data: [UInt8], originalLength: UInt32? = nil) {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(interface)
        w.u32(UInt32(units >> 32))
        w.u32(UInt32(units & 0xFFFF_FFFF))
        w.u32(UInt32(data.count))
        w.u32(originalLength ?? UInt32(data.count))
        w.raw(data + [UInt8](repeating: 0, count: (4 - data.count % 4) % 4))
        w.raw(options([(1, Array("a comment".utf8))]))  // opt_comment
        block(6, w.bytes)
    }

    mutating func obsoletePacket(interface: UInt16, units: UInt64, _ data: [UInt8]) {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u16(interface)
        w.u16(0)  // drops
        w.u32(UInt32(units >> 32))
        w.u32(UInt32(units & 0xFFFF_FFFF))
        w.u32(UInt32(data.count))
        w.u32(UInt32(data.count))
        w.raw(data)
        block(2, w.bytes)
    }

    mutating func simplePacket(_ data: [UInt8], originalLength: UInt32? = nil) {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(originalLength ?? UInt32(data.count))
        w.raw(data)
        block(3, w.bytes)
    }
}

/// Reads records until the end or the first error.
func readUntilDamage(_ bytes: [UInt8]) -> (records: [CaptureRecord], error: CaptureError?) {
    var records: [CaptureRecord] = []
    do {
        var reader = try CaptureReader(bytes)
        while let record = try reader.next() { records.append(record) }
        return (records, nil)
    } catch {
        return (records, error)
    }
}

/// A small pcapng with two sections of both byte orders, three interfaces and every packet block.
func mixedPcapng() -> (bytes: [UInt8], builder: PcapngBuilder) {
    var b = PcapngBuilder()
    b.section(bigEndian: false)
    b.interface(linkType: 201)
    b.interface(linkType: 220, snapshotLength: 4096, options: [(9, [9])])
    b.enhancedPacket(interface: 0, units: 1_700_000_000_123_456, [0, 0, 0, 1, 0x04, 0x0E, 0x01, 0x02])
    b.block(5, [UInt8](repeating: 0, count: 12))  // Interface Statistics: skipped
    b.enhancedPacket(interface: 1, units: 1_700_000_001_000_000_123, Array(0..<70))
    b.simplePacket([0, 0, 0, 0, 0x01, 0x03, 0x0C, 0x00])
    b.section(bigEndian: true)
    b.interface(linkType: 189, options: [(9, [0x80 | 10])])
    b.obsoletePacket(interface: 0, units: 1_700_000_002 << 10 | 512, [0xAB, 0xCD])
    b.block(0x0000_0BAD, [1, 2, 3, 4, 5])  // custom block: skipped
    b.enhancedPacket(interface: 0, units: 1_700_000_003 << 10, [])
    return (b.bytes, b)
}
