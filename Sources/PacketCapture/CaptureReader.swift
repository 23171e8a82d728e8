/// Reads a pcap or pcapng capture file held in memory, record by record.
///
/// Captures of a USB stick or a Bluetooth link are small, so the reader takes the whole file; it
/// copies only each record's data.
///
/// - Classic pcap (the libpcap file format): a 24-byte header with the magic number 0xA1B2C3D4
///   (microsecond timestamps) or 0xA1B23C4D (nanosecond timestamps), written in either byte order,
///   version 2.x, the snapshot length and the link type (the low 16 bits of the field; the high
///   bits describe a frame check sequence and are ignored), then records of seconds, fraction,
///   captured length, original length and data.
/// - pcapng (IETF draft-ietf-opsawg-pcapng): blocks of type, total length, body and the total
///   length again. A Section Header Block (byte-order magic 0x1A2B3C4D, version 1.x) starts each
///   section and sets its byte order; Interface Description Blocks give each interface of the
///   section its link type, snapshot length and time resolution (`if_tsresol`, microseconds by
///   default; `if_tsoffset` is added); Enhanced, Simple and obsolete Packet Blocks hold records.
///   Other blocks (statistics, name resolution, custom, unknown) are skipped by their length.
///
/// Limits: a record whose captured length exceeds `maxRecordLength` is refused before anything is
/// copied, so a length field claiming 4 GB costs nothing. A record longer than its interface's
/// snapshot length keeps only that many bytes (the rest is skipped and the record reads as
/// truncated), as libpcap does. A captured length above the original length is refused.
///
/// Damage: `next()` returns the records in file order until the end of the file (nil) or the
/// first damaged structure, where it throws a `CaptureError` naming the byte offset; the records
/// returned before it are complete. Calling `next()` again throws the same error: the reader does
/// not move past damage. The constructor throws when the file header (pcap) or the first Section
/// Header Block (pcapng) is damaged.
public struct CaptureReader: Sendable {
    public enum Format: String, Hashable, Sendable {
        case pcap, pcapng
    }

    /// How an interface counts time: units of 10^-n or 2^-n seconds.
    public enum TimestampResolution: Hashable, Sendable {
        case decimal(UInt8)
        case binary(UInt8)

        public static let microseconds = TimestampResolution.decimal(6)
        public static let nanoseconds = TimestampResolution.decimal(9)
    }

    /// What an interface's records share.
    public struct Interface: Hashable, Sendable {
        /// `LinkType`'s raw value.
        public var linkType: UInt32
        /// The most bytes of a packet the writer keeps; 0 when it keeps them all.
        public var snapshotLength: UInt32
        public var resolution: TimestampResolution
        /// Seconds added to every timestamp (pcapng `if_tsoffset`).
        public var timestampOffsetSeconds: Int64
        /// The index of the section that describes the interface (0 for classic pcap).
        public var section: Int
    }

    /// The default of `maxRecordLength`: 1 MiB. An H4 packet is at most 65,540 bytes, an ANT
    /// stick's transfers are 64 bytes, and tcpdump and Wireshark keep at most 262,144 bytes of a
    /// packet by default.
    public static let defaultMaxRecordLength = 1 << 20

    public let format: Format
    /// Records with a longer captured length are refused.
    public let maxRecordLength: Int
    /// Every interface seen so far, in file order (classic pcap: the file's one interface). A
    /// record's `interface` is an index in this list.
    public private(set) var interfaces: [Interface] = []
    /// How many sections have started so far (classic pcap: 1).
    public private(set) var sections = 0
    /// The byte offset of the record `next()` returned last: its pcap record header or pcapng block.
    public private(set) var recordOffset = 0

    private let bytes: [UInt8]
    /// Where the next record header or block starts.
    private var offset = 0
    private var bigEndian = false
    /// Classic pcap: whether the fraction of a second is in nanoseconds.
    private var nanosecondPcap = false
    /// pcapng: the index in `interfaces` of the current section's first interface.
    private var sectionFirstInterface = 0

    static let pcapMicroseconds: UInt32 = 0xA1B2_C3D4
    static let pcapNanoseconds: UInt32 = 0xA1B2_3C4D
    static let sectionHeaderBlock: UInt32 = 0x0A0D_0D0A
    static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    /// True when `head` (the first bytes of a file; 4 are enough) starts like a pcap or pcapng file.
    public static func isCapture(_ head: [UInt8]) -> Bool {
        guard head.count >= 4 else { return false }
        let big = UInt32(head[0]) << 24 | UInt32(head[1]) << 16 | UInt32(head[2]) << 8 | UInt32(head[3])
        let little = big.byteSwapped
        return big == sectionHeaderBlock || [pcapMicroseconds, pcapNanoseconds].contains(big)
            || [pcapMicroseconds, pcapNanoseconds].contains(little)
    }

    /// Reads the file header (pcap) or the first Section Header Block (pcapng).
    public init(_ bytes: [UInt8], maxRecordLength: Int = CaptureReader.defaultMaxRecordLength) throws(CaptureError) {
        self.bytes = bytes
        self.maxRecordLength = maxRecordLength
        guard bytes.count >= 4 else {
            throw CaptureError(.pcap, offset: 0, .truncated(field: "magic number", needed: 4, available: bytes.count))
        }
        let magic = FieldReader(bytes, .pcap, bigEndian: true).uint32(at: 0)
        if magic == Self.sectionHeaderBlock {
            format = .pcapng
            // The magic number is the Section Header Block's type: this reads the first section's header.
            _ = try readBlock()
            return
        }
        format = .pcap
        switch magic {
        case Self.pcapMicroseconds: bigEndian = true
        case Self.pcapNanoseconds: bigEndian = true; nanosecondPcap = true
        case Self.pcapMicroseconds.byteSwapped: bigEndian = false
        case Self.pcapNanoseconds.byteSwapped: bigEndian = false; nanosecondPcap = true
        default: throw CaptureError(.pcap, offset: 0, .notACapture)
        }
        let r = FieldReader(bytes, .pcap, bigEndian: bigEndian)
        try r.need(24, at: 0, "file header")
        let major = r.uint16(at: 4), minor = r.uint16(at: 6)
        guard major == 2 else { throw r.error(.unsupportedVersion(major: Int(major), minor: Int(minor)), at: 4) }
        interfaces = [Interface(linkType: r.uint32(at: 20) & 0xFFFF, snapshotLength: r.uint32(at: 16),
                                resolution: nanosecondPcap ? .nanoseconds : .microseconds, timestampOffsetSeconds: 0, section: 0)]
        sections = 1
        offset = 24
    }

    /// The next record, or nil at the end of the file.
    public mutating func next() throws(CaptureError) -> CaptureRecord? {
        switch format {
        case .pcap:
            return try nextPcapRecord()
        case .pcapng:
            while offset < bytes.count {
                if let record = try readBlock() { return record }
            }
            return nil
        }
    }

    /// Every record; throws at the first damage.
    public mutating func readAll() throws(CaptureError) -> [CaptureRecord] {
        var records: [CaptureRecord] = []
        while let record = try next() { records.append(record) }
        return records
    }

    // MARK: - pcap

    private mutating func nextPcapRecord() throws(CaptureError) -> CaptureRecord? {
        guard offset < bytes.count else { return nil }
        let start = offset
        let r = FieldReader(bytes, .pcap, bigEndian: bigEndian)
        try r.need(16, at: start, "record header")
        let seconds = r.uint32(at: start), fraction = r.uint32(at: start + 4)
        let captured = Int(r.uint32(at: start + 8)), original = r.uint32(at: start + 12)
        try checkCapturedLength(captured, original: original, field: start + 8, r)
        try r.need(captured, at: start + 16, "packet data")
        let interface = interfaces[0]
        let kept = Self.kept(captured, snapshotLength: interface.snapshotLength)
        offset = start + 16 + captured
        recordOffset = start
        let nanoseconds = Int64(seconds) * 1_000_000_000 + Int64(fraction) * (nanosecondPcap ? 1 : 1000)
        return CaptureRecord(linkType: interface.linkType, timestampNanoseconds: nanoseconds,
                             data: Array(bytes[(start + 16)..<(start + 16 + kept)]), originalLength: original, interface: 0)
    }

    /// Refuses captured lengths above the limit or above the original length.
    private func checkCapturedLength(_ captured: Int, original: UInt32, field: Int, _ r: FieldReader) throws(CaptureError) {
        guard captured <= maxRecordLength else {
            throw r.error(.tooLong(field: "captured length", length: captured, limit: maxRecordLength), at: field)
        }
        guard captured <= Int(original) else {
            throw r.error(.invalidValue(field: "captured length above the original length \(original)", value: captured), at: field)
        }
    }

    /// How many of `captured` bytes a record keeps under the snapshot length (0: no limit).
    private static func kept(_ captured: Int, snapshotLength: UInt32) -> Int {
        snapshotLength == 0 ? captured : min(captured, Int(snapshotLength))
    }

    // MARK: - pcapng

    /// Reads the block at `offset` and moves past it: a record for a packet block, nil for the
    /// others. Nothing changes when it throws.
    private mutating func readBlock() throws(CaptureError) -> CaptureRecord? {
        let start = offset
        var r = FieldReader(bytes, .pcapng, bigEndian: bigEndian)
        try r.need(8, at: start, "block header")
        // The Section Header Block's type reads the same in both byte orders; its byte-order
        // magic sets the order of the section, its own length included.
        let type = r.uint32(at: start)
        if type == Self.sectionHeaderBlock {
            try r.need(12, at: start, "section header")
            r.bigEndian = true
            switch r.uint32(at: start + 8) {
            case Self.byteOrderMagic: r.bigEndian = true
            case Self.byteOrderMagic.byteSwapped: r.bigEndian = false
            default: throw r.error(.invalidValue(field: "byte-order magic", value: Int(r.uint32(at: start + 8))), at: start + 8)
            }
        }
        let length = Int(r.uint32(at: start + 4))
        let minimum = type == Self.sectionHeaderBlock ? 28 : 12
        guard length >= minimum, length % 4 == 0 else {
            throw r.error(.invalidValue(field: "block total length", value: length), at: start + 4)
        }
        guard length <= bytes.count - start else {
            throw r.error(.truncated(field: "block", needed: length, available: bytes.count - start), at: start)
        }
        let trailing = Int(r.uint32(at: start + length - 4))
        guard trailing == length else { throw r.error(.blockLengthMismatch(leading: length, trailing: trailing), at: start + length - 4) }
        let bodyEnd = start + length - 4

        var record: CaptureRecord?
        switch type {
        case Self.sectionHeaderBlock:
            let major = r.uint16(at: start + 12), minor = r.uint16(at: start + 14)
            guard major == 1 else { throw r.error(.unsupportedVersion(major: Int(major), minor: Int(minor)), at: start + 12) }
            bigEndian = r.bigEndian
            sections += 1
            sectionFirstInterface = interfaces.count
        case 1:
            // Interface Description Block: link type, reserved, snapshot length, options.
            try r.need(8, at: start + 8, "interface description", end: bodyEnd)
            let (resolution, seconds) = try Self.interfaceOptions(r, from: start + 16, to: bodyEnd)
            interfaces.append(Interface(linkType: UInt32(r.uint16(at: start + 8)), snapshotLength: r.uint32(at: start + 12),
                                        resolution: resolution, timestampOffsetSeconds: seconds, section: sections - 1))
        case 6, 2:
            // Enhanced Packet Block (interface ID 32 bits), or the obsolete Packet Block
            // (interface ID and drop count, 16 bits each); then time high, time low, captured
            // length, original length, data.
            try r.need(20, at: start + 8, type == 6 ? "enhanced packet header" : "packet header", end: bodyEnd)
            let id = type == 6 ? Int(r.uint32(at: start + 8)) : Int(r.uint16(at: start + 8))
            let index = try interfaceIndex(id, at: start + 8, r)
            let units = UInt64(r.uint32(at: start + 12)) << 32 | UInt64(r.uint32(at: start + 16))
            let captured = Int(r.uint32(at: start + 20)), original = r.uint32(at: start + 24)
            try checkCapturedLength(captured, original: original, field: start + 20, r)
            try r.need(captured, at: start + 28, "packet data", end: bodyEnd)
            let interface = interfaces[index]
            let kept = Self.kept(captured, snapshotLength: interface.snapshotLength)
            let time = Self.nanoseconds(units, interface.resolution, offsetSeconds: interface.timestampOffsetSeconds)
            record = CaptureRecord(linkType: interface.linkType, timestampNanoseconds: time,
                                   data: Array(bytes[(start + 28)..<(start + 28 + kept)]), originalLength: original, interface: index)
        case 3:
            // Simple Packet Block: original length and data, on the section's first interface,
            // without a time. The captured length is what the block holds, at most the original.
            try r.need(4, at: start + 8, "simple packet header", end: bodyEnd)
            let index = try interfaceIndex(0, at: start, r)
            let original = r.uint32(at: start + 8)
            let captured = min(Int(original), bodyEnd - (start + 12))
            try checkCapturedLength(captured, original: original, field: start + 8, r)
            let kept = Self.kept(captured, snapshotLength: interfaces[index].snapshotLength)
            record = CaptureRecord(linkType: interfaces[index].linkType, timestampNanoseconds: 0,
                                   data: Array(bytes[(start + 12)..<(start + 12 + kept)]), originalLength: original, interface: index)
        default:
            break
        }
        offset = start + length
        if record != nil { recordOffset = start }
        return record
    }

    /// The index in `interfaces` of the current section's interface `id`.
    private func interfaceIndex(_ id: Int, at position: Int, _ r: FieldReader) throws(CaptureError) -> Int {
        guard id < interfaces.count - sectionFirstInterface else { throw r.error(.unknownInterface(id), at: position) }
        return sectionFirstInterface + id
    }

    /// The time resolution (`if_tsresol`, code 9) and offset (`if_tsoffset`, code 14) among an
    /// Interface Description Block's options.
    private static func interfaceOptions(_ r: FieldReader, from: Int, to end: Int) throws(CaptureError) -> (TimestampResolution, Int64) {
        var resolution = TimestampResolution.microseconds
        var seconds: Int64 = 0
        var at = from
        while at < end {
            try r.need(4, at: at, "option header", end: end)
            let code = r.uint16(at: at), length = Int(r.uint16(at: at + 2))
            if code == 0 { break }  // opt_endofopt
            let padded = (length + 3) / 4 * 4
            try r.need(padded, at: at + 4, "option value", end: end)
            switch code {
            case 9:
                guard length == 1 else { throw r.error(.invalidValue(field: "if_tsresol length", value: length), at: at + 2) }
                let value = r.bytes[at + 4]
                let exponent = value & 0x7F
                // 2^-63 and 10^-18 seconds are the finest units whose conversion to nanoseconds
                // stays in 64 bits.
                guard value & 0x80 == 0 ? exponent <= 18 : exponent <= 63 else {
                    throw r.error(.invalidValue(field: "if_tsresol", value: Int(value)), at: at + 4)
                }
                resolution = value & 0x80 == 0 ? .decimal(exponent) : .binary(exponent)
            case 14:
                guard length == 8 else { throw r.error(.invalidValue(field: "if_tsoffset length", value: length), at: at + 2) }
                seconds = Int64(bitPattern: r.uint64(at: at + 4))
            default:
                break
            }
            at += 4 + padded
        }
        return (resolution, seconds)
    }

    /// Nanoseconds since the Unix epoch for a time in `resolution` units plus `offsetSeconds`;
    /// times beyond the range of `Int64` nanoseconds (the years 1677 to 2262) are clamped to it.
    static func nanoseconds(_ units: UInt64, _ resolution: TimestampResolution, offsetSeconds: Int64) -> Int64 {
        let perSecond: UInt64 = 1_000_000_000
        var value: UInt64
        switch resolution {
        case .decimal(let exponent):
            if exponent <= 9 {
                value = saturatingProduct(units, power(of: 10, UInt64(9 - exponent)))
            } else {
                value = units / power(of: 10, UInt64(exponent - 9))
            }
        case .binary(let exponent):
            let shift = UInt64(min(exponent, 63))
            let fraction = units & ((1 << shift) - 1)
            let product = fraction.multipliedFullWidth(by: perSecond)
            // fraction < 2^shift, so (fraction * 10^9) >> shift < 10^9.
            let fractionNanoseconds = shift == 0 ? 0 : product.high << (64 - shift) | product.low >> shift
            value = saturatingProduct(units >> shift, perSecond)
            value = value > UInt64.max - fractionNanoseconds ? UInt64.max : value + fractionNanoseconds
        }
        let (offset, offsetOverflow) = offsetSeconds.multipliedReportingOverflow(by: Int64(perSecond))
        let base = Int64(clamping: value)
        guard !offsetOverflow else { return offsetSeconds < 0 ? .min : .max }
        let (sum, overflow) = base.addingReportingOverflow(offset)
        return overflow ? (offset < 0 ? .min : .max) : sum
    }

    private static func power(of base: UInt64, _ exponent: UInt64) -> UInt64 {
        (0..<exponent).reduce(1) { value, _ in value * base }
    }

    private static func saturatingProduct(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? .max : product
    }
}

/// Integers at absolute offsets of a file in one byte order. `need` checks that a field fits
/// before the reads, which then index the bytes directly.
struct FieldReader {
    let bytes: [UInt8]
    let format: CaptureError.Format
    var bigEndian: Bool

    init(_ bytes: [UInt8], _ format: CaptureError.Format, bigEndian: Bool) {
        self.bytes = bytes
        self.format = format
        self.bigEndian = bigEndian
    }

    func error(_ reason: CaptureError.Reason, at position: Int) -> CaptureError {
        CaptureError(format, offset: position, reason)
    }

    /// Throws unless `count` bytes of `field` start at `position` and end by `end` (default: the
    /// end of the bytes).
    func need(_ count: Int, at position: Int, _ field: String, end: Int? = nil) throws(CaptureError) {
        let available = max(0, min(end ?? bytes.count, bytes.count) - position)
        guard count >= 0, count <= available else {
            throw error(.truncated(field: field, needed: count, available: available), at: position)
        }
    }

    func uint16(at position: Int) -> UInt16 { UInt16(truncatingIfNeeded: unsigned(at: position, 2)) }
    func uint32(at position: Int) -> UInt32 { UInt32(truncatingIfNeeded: unsigned(at: position, 4)) }
    func uint64(at position: Int) -> UInt64 { unsigned(at: position, 8) }

    private func unsigned(at position: Int, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<count {
            let byte = UInt64(bytes[position + (bigEndian ? i : count - 1 - i)])
            value = value << 8 | byte
        }
        return value
    }
}
