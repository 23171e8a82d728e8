import PacketCapture
import Testing

@Suite struct PcapngTests {
    @Test("two sections of both byte orders, three interfaces, EPB, SPB and OPB; other blocks skipped")
    func sectionsInterfacesAndPacketBlocks() throws {
        let (bytes, _) = mixedPcapng()
        #expect(CaptureReader.isCapture(bytes))
        var reader = try CaptureReader(bytes)
        #expect(reader.format == .pcapng)
        let records = try reader.readAll()
        #expect(reader.sections == 2)
        #expect(reader.interfaces.map(\.linkType) == [201, 220, 189])
        #expect(reader.interfaces.map(\.section) == [0, 0, 1])
        #expect(reader.interfaces.map(\.snapshotLength) == [0, 4096, 0])
        #expect(reader.interfaces.map(\.resolution) == [.microseconds, .nanoseconds, .binary(10)])
        #expect(records == [
            CaptureRecord(linkType: 201, timestampNanoseconds: 1_700_000_000_123_456_000, data: [0, 0, 0, 1, 0x04, 0x0E, 0x01, 0x02]),
            CaptureRecord(linkType: 220, timestampNanoseconds: 1_700_000_001_000_000_123, data: Array(0..<70), interface: 1),
            CaptureRecord(linkType: 201, timestampNanoseconds: 0, data: [0, 0, 0, 0, 0x01, 0x03, 0x0C, 0x00], interface: 0),
            CaptureRecord(linkType: 189, timestampNanoseconds: 1_700_000_002_500_000_000, data: [0xAB, 0xCD], interface: 2),
            CaptureRecord(linkType: 189, timestampNanoseconds: 1_700_000_003_000_000_000, data: [], interface: 2),
        ])
        #expect(try reader.next() == nil)
    }

    @Test("a section reads the same in both byte orders")
    func byteOrders() throws {
        func file(bigEndian: Bool) -> [UInt8] {
            var b = PcapngBuilder()
            b.section(bigEndian: bigEndian)
            b.interface(linkType: 201, snapshotLength: 1000, options: [(2, Array("hci0".utf8)), (9, [6])])
            b.enhancedPacket(interface: 0, units: 0x0006_0A1B_2C3D_4E5F, [1, 2, 3, 4, 5])
            b.obsoletePacket(interface: 0, units: 7, [6])
            b.simplePacket([7, 8, 9])
            return b.bytes
        }
        let little = file(bigEndian: false), big = file(bigEndian: true)
        #expect(little != big)
        let a = try CaptureReader(little).readAllCopy(), b = try CaptureReader(big).readAllCopy()
        #expect(a == b)
        #expect(a.map(\.data) == [[1, 2, 3, 4, 5], [6], [7, 8, 9]])
        #expect(a.first?.timestampNanoseconds == Int64(0x0006_0A1B_2C3D_4E5F) * 1000)
    }

    @Test("if_tsresol: microseconds by default, powers of ten and of two; if_tsoffset is added")
    func timeResolutions() throws {
        let cases: [([(UInt16, [UInt8])], UInt64, Int64)] = [
            ([], 1_700_000_000_250_000, 1_700_000_000_250_000_000),
            ([(9, [6])], 1_700_000_000_250_000, 1_700_000_000_250_000_000),
            ([(9, [9])], 1_700_000_000_250_000_001, 1_700_000_000_250_000_001),
            ([(9, [3])], 1_700_000_000_250, 1_700_000_000_250_000_000),
            ([(9, [0])], 1_700_000_000, 1_700_000_000_000_000_000),
            ([(9, [12])], 5_000_123_456_789, 5_000_123_456),
            ([(9, [0x80])], 1_700_000_000, 1_700_000_000_000_000_000),
            ([(9, [0x80 | 1])], 3_400_000_001, 1_700_000_000_500_000_000),
            ([(9, [0x80 | 3])], 1_700_000_000 * 8 + 3, 1_700_000_000_375_000_000),
            // 1 / 2^20 s is 953.67 ns.
            ([(9, [0x80 | 20])], 1_700_000_000 << 20 | 1, 1_700_000_000_000_000_953),
            ([(9, [0x80 | 32])], 1_700_000_000 << 32 | 0x8000_0000, 1_700_000_000_500_000_000),
            ([(9, [0x80 | 63])], 1 << 63 | 1 << 62, 1_500_000_000),
            ([(14, offset(100)), (9, [3])], 1_700_000_000_250, 1_700_000_100_250_000_000),
            ([(14, offset(-1_700_000_000))], 1_700_000_000_250_000, 250_000_000),
        ]
        for (options, units, expected) in cases {
            for bigEndian in [false, true] {
                var b = PcapngBuilder()
                b.section(bigEndian: bigEndian)
                b.interface(linkType: 201, options: options.map { ($0.0, $0.0 == 14 && bigEndian ? $0.1.reversed() : $0.1) })
                b.enhancedPacket(interface: 0, units: units, [1])
                let records = try CaptureReader(b.bytes).readAllCopy()
                #expect(records.map(\.timestampNanoseconds) == [expected], "\(options)")
            }
        }
    }

    @Test("times beyond 64-bit nanoseconds are clamped, never trapped")
    func extremeTimes() throws {
        for (options, units, expected) in [
            ([(9, [0])], UInt64.max, Int64.max),
            ([(9, [0x80])], UInt64.max, Int64.max),
            ([(9, [0x80 | 32])], UInt64.max, 4_294_967_295_999_999_999),
            ([(9, [18])], UInt64.max, 18_446_744_073),
            ([(14, offset(.min))], 1, Int64.min),
            ([(14, offset(.max))], 1, Int64.max),
        ] as [([(UInt16, [UInt8])], UInt64, Int64)] {
            var b = PcapngBuilder()
            b.section(bigEndian: false)
            b.interface(linkType: 201, options: options)
            b.enhancedPacket(interface: 0, units: units, [1])
            #expect(try CaptureReader(b.bytes).readAllCopy().map(\.timestampNanoseconds) == [expected], "\(options)")
        }
    }

    @Test("a Simple Packet Block's captured length is what the block holds, at most the original length")
    func simplePacketLengths() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 201, snapshotLength: 6)
        b.simplePacket([1, 2, 3, 4, 5])  // padded to 8 in the block
        b.simplePacket([1, 2, 3, 4], originalLength: 100)
        b.simplePacket([1, 2, 3, 4, 5, 6, 7, 8], originalLength: 8)  // snapshot length 6 keeps 6
        let records = try CaptureReader(b.bytes).readAllCopy()
        #expect(records.map(\.data) == [[1, 2, 3, 4, 5], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6]])
        #expect(records.map(\.originalLength) == [5, 100, 8])
        #expect(records.map(\.isTruncated) == [false, true, true])
    }

    @Test("a packet of an interface its section does not describe is an error; a new section forgets the old interfaces")
    func unknownInterfaces() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 201)
        b.enhancedPacket(interface: 0, units: 1, [1])
        b.enhancedPacket(interface: 1, units: 2, [2])
        var (records, error) = readUntilDamage(b.bytes)
        #expect(records.count == 1)
        #expect(error == CaptureError(.pcapng, offset: b.blockOffsets[3] + 8, .unknownInterface(1)))

        var c = PcapngBuilder()
        c.section(bigEndian: false)
        c.interface(linkType: 201)
        c.section(bigEndian: true)
        c.simplePacket([1])
        (records, error) = readUntilDamage(c.bytes)
        #expect(records.isEmpty)
        #expect(error == CaptureError(.pcapng, offset: c.blockOffsets[3], .unknownInterface(0)))
    }

    @Test("block structure errors name the offset; the records before stay")
    func blockErrors() throws {
        let (bytes, b) = mixedPcapng()
        // Trailing total length differs from the leading one (block 3: the first EPB).
        let epb = b.blockOffsets[3]
        let length = Int(bytes[epb + 4]) | Int(bytes[epb + 5]) << 8
        var mismatch = bytes
        mismatch[epb + length - 4] ^= 0x04
        #expect(readUntilDamage(mismatch).error == CaptureError(.pcapng, offset: epb + length - 4,
                                                                  .blockLengthMismatch(leading: length, trailing: length ^ 0x04)))
        #expect(readUntilDamage(mismatch).records.isEmpty)

        // The second EPB (block 5): lengths below 12 or not a multiple of 4, or beyond the file.
        let second = b.blockOffsets[5]
        func withLength(_ value: Int) -> [UInt8] {
            var m = bytes
            for i in 0..<4 { m[second + 4 + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
            return m
        }
        for bad in [0, 8, 13, 10_002] {
            let (records, error) = readUntilDamage(withLength(bad))
            #expect(records.count == 1, "\(bad)")
            #expect(error == CaptureError(.pcapng, offset: second + 4, .invalidValue(field: "block total length", value: bad)), "\(bad)")
        }
        for beyond in [10_004, 0xFFFF_FFFC] {
            let (records, error) = readUntilDamage(withLength(beyond))
            #expect(records.count == 1)
            #expect(error == CaptureError(.pcapng, offset: second,
                                          .truncated(field: "block", needed: beyond, available: bytes.count - second)))
        }

        // A captured (and original) length above what the block holds.
        let secondLength = Int(bytes[second + 4]) | Int(bytes[second + 5]) << 8
        var long = bytes
        long[second + 20] = 200
        long[second + 24] = 200
        let available = secondLength - 4 - 28
        #expect(readUntilDamage(long).error == CaptureError(.pcapng, offset: second + 28,
                                                              .truncated(field: "packet data", needed: 200, available: available)))
    }

    @Test("section header problems: byte-order magic, major version, a short first block")
    func sectionHeaderErrors() throws {
        let (bytes, b) = mixedPcapng()
        var magic = bytes
        magic[8] = 0x4E
        #expect(throws: CaptureError(.pcapng, offset: 8, .invalidValue(field: "byte-order magic", value: 0x4E3C_2B1A))) {
            try CaptureReader(magic)
        }
        var version = bytes
        version[12] = 2
        #expect(throws: CaptureError(.pcapng, offset: 12, .unsupportedVersion(major: 2, minor: 0))) { try CaptureReader(version) }
        // The second section (big-endian) of another major version stops the reading there.
        var second = bytes
        second[b.blockOffsets[7] + 13] = 9
        let (records, error) = readUntilDamage(second)
        #expect(records.count == 3)
        #expect(error == CaptureError(.pcapng, offset: b.blockOffsets[7] + 12, .unsupportedVersion(major: 9, minor: 0)))

        #expect(throws: CaptureError(.pcapng, offset: 0, .truncated(field: "section header", needed: 12, available: 10))) {
            try CaptureReader(Array(bytes.prefix(10)))
        }
        var small = bytes
        small[4] = 24
        #expect(throws: CaptureError(.pcapng, offset: 4, .invalidValue(field: "block total length", value: 24))) {
            try CaptureReader(small)
        }
    }

    @Test("interface options out of bounds or of the wrong size are errors")
    func optionErrors() throws {
        for (options, reason, at) in [
            ([(9, [6, 0])], CaptureError.Reason.invalidValue(field: "if_tsresol length", value: 2), 2),
            ([(9, [19])], .invalidValue(field: "if_tsresol", value: 19), 4),
            ([(9, [0x80 | 64])], .invalidValue(field: "if_tsresol", value: 0xC0), 4),
            ([(14, [1, 2, 3, 4])], .invalidValue(field: "if_tsoffset length", value: 4), 2),
        ] as [([(UInt16, [UInt8])], CaptureError.Reason, Int)] {
            var b = PcapngBuilder()
            b.section(bigEndian: false)
            b.interface(linkType: 201, options: options)
            let (records, error) = readUntilDamage(b.bytes)
            #expect(records.isEmpty)
            #expect(error == CaptureError(.pcapng, offset: b.blockOffsets[1] + 16 + at, reason), "\(options)")
        }
        // An option whose value runs past the block.
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 201, options: [(2, [1, 2, 3, 4])])
        var bytes = b.bytes
        bytes[b.blockOffsets[1] + 16 + 2] = 40
        #expect(readUntilDamage(bytes).error == CaptureError(.pcapng, offset: b.blockOffsets[1] + 20,
                                                               .truncated(field: "option value", needed: 40, available: 8)))
    }

    @Test("records beyond a snapshot length keep that many bytes")
    func snapshotLength() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: true)
        b.interface(linkType: 220, snapshotLength: 4)
        b.enhancedPacket(interface: 0, units: 1, [1, 2, 3, 4, 5, 6, 7])
        let records = try CaptureReader(b.bytes).readAllCopy()
        #expect(records.map(\.data) == [[1, 2, 3, 4]] && records.map(\.originalLength) == [7])
    }

    @Test("a section with only its header, and a file ending after the first section header")
    func emptySections() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        #expect(try CaptureReader(b.bytes).readAllCopy().isEmpty)
        b.section(bigEndian: true)
        b.section(bigEndian: false)
        var reader = try CaptureReader(b.bytes)
        #expect(try reader.readAll().isEmpty && reader.sections == 3)
    }
}

/// An if_tsoffset value, little-endian.
func offset(_ seconds: Int64) -> [UInt8] {
    var w = ByteWriter(bigEndian: false)
    w.u64(UInt64(bitPattern: seconds))
    return w.bytes
}
