import PacketCapture
import Testing

@Suite struct PcapTests {
    let packets = [
        Packet(seconds: 1_700_000_000, fraction: 123_456, data: [0, 0, 0, 1, 0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        Packet(seconds: 1_700_000_001, fraction: 999_999, data: []),
        Packet(seconds: 4_000_000_000, fraction: 1, data: Array(0..<200), originalLength: 300),
    ]

    @Test("classic pcap reads the same in both byte orders and both time resolutions")
    func byteOrdersAndResolutions() throws {
        for bigEndian in [false, true] {
            for nanoseconds in [false, true] {
                let bytes = pcapFile(bigEndian: bigEndian, nanoseconds: nanoseconds, packets)
                #expect(CaptureReader.isCapture(Array(bytes.prefix(4))))
                var reader = try CaptureReader(bytes)
                #expect(reader.format == .pcap)
                #expect(reader.interfaces.count == 1 && reader.sections == 1)
                #expect(reader.interfaces[0].linkType == 201 && reader.interfaces[0].snapshotLength == 65_535)
                #expect(reader.interfaces[0].resolution == (nanoseconds ? .nanoseconds : .microseconds))
                let records = try reader.readAll()
                let unit: Int64 = nanoseconds ? 1 : 1000
                let times = packets.map { Int64($0.seconds) * 1_000_000_000 + Int64($0.fraction) * unit }
                #expect(records.map(\.timestampNanoseconds) == times, "big-endian \(bigEndian), ns \(nanoseconds)")
                #expect(records.map(\.data) == packets.map(\.data))
                #expect(records.map(\.originalLength) == [11, 0, 300])
                #expect(records.map(\.isTruncated) == [false, false, true])
                #expect(records.allSatisfy { $0.linkType == 201 && $0.link == .bluetoothHCIH4WithPHDR && $0.interface == 0 })
                #expect(try reader.next() == nil)
            }
        }
    }

    @Test("the writer's files read back: microseconds, link type, original lengths")
    func writerRoundTrip() throws {
        var writer = PcapWriter(linkType: .usbLinuxMMapped)
        writer.append(data: [1, 2, 3], timestampNanoseconds: 1_700_000_000_123_456_789)
        writer.append(data: [], timestampNanoseconds: 0)
        writer.append(data: [9], timestampNanoseconds: 5_000, originalLength: 64)
        var reader = try CaptureReader(writer.bytes)
        #expect(reader.interfaces.first?.linkType == 220)
        let records = try reader.readAll()
        #expect(records == [
            CaptureRecord(linkType: 220, timestampNanoseconds: 1_700_000_000_123_456_000, data: [1, 2, 3]),
            CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: []),
            CaptureRecord(linkType: 220, timestampNanoseconds: 5_000, data: [9], originalLength: 64),
        ])
        // The header is the little-endian microsecond magic, version 2.4.
        #expect(Array(writer.bytes.prefix(8)) == [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0])
    }

    @Test("the writer keeps times the format cannot hold within its range")
    func writerClampsTimes() throws {
        var writer = PcapWriter(linkType: .other(147))
        writer.append(data: [1], timestampNanoseconds: -1)
        writer.append(data: [2], timestampNanoseconds: .max)
        let records = try CaptureReader(writer.bytes).readAllCopy()
        #expect(records.map(\.timestampNanoseconds) == [0, Int64(UInt32.max) * 1_000_000_000])
        #expect(records.allSatisfy { $0.link == .other(147) })
    }

    @Test("link types: the named ones, and any other number")
    func linkTypes() {
        #expect(LinkType(rawValue: 189) == .usbLinux && LinkType.usbLinux.rawValue == 189)
        #expect(LinkType(rawValue: 220) == .usbLinuxMMapped && LinkType.usbLinuxMMapped.rawValue == 220)
        #expect(LinkType(rawValue: 201) == .bluetoothHCIH4WithPHDR && LinkType.bluetoothHCIH4WithPHDR.rawValue == 201)
        #expect(LinkType(rawValue: 1) == .other(1) && LinkType.other(1).rawValue == 1)
        #expect(LinkType.usbLinuxMMapped.description == "220 (USB Linux, 64-byte header)")
    }

    @Test("the link type is the low 16 bits of the header field (the high bits describe an FCS)")
    func linkTypeFieldHighBitsIgnored() throws {
        let bytes = pcapFile(bigEndian: false, nanoseconds: false, linkType: 0x1400_00C9, [packets[0]])
        var reader = try CaptureReader(bytes)
        #expect(try reader.next()?.linkType == 201)
    }

    @Test("records longer than the snapshot length keep that many bytes and read as truncated")
    func snapshotLengthCaps() throws {
        let bytes = pcapFile(bigEndian: true, nanoseconds: false, snapshotLength: 8, [packets[0], packets[1]])
        let records = try CaptureReader(bytes).readAllCopy()
        #expect(records.map(\.data) == [Array(packets[0].data.prefix(8)), []])
        #expect(records.map(\.originalLength) == [11, 0])
        #expect(records.map(\.isTruncated) == [true, false])
    }

    @Test("magic numbers: pcap in both orders and resolutions, pcapng; nothing else")
    func isCapture() throws {
        #expect(CaptureReader.isCapture([0xA1, 0xB2, 0xC3, 0xD4]))
        #expect(CaptureReader.isCapture([0xD4, 0xC3, 0xB2, 0xA1, 2, 0]))
        #expect(CaptureReader.isCapture([0xA1, 0xB2, 0x3C, 0x4D]))
        #expect(CaptureReader.isCapture([0x4D, 0x3C, 0xB2, 0xA1]))
        #expect(CaptureReader.isCapture([0x0A, 0x0D, 0x0D, 0x0A]))
        #expect(!CaptureReader.isCapture(Array("btsnoop\0".utf8)))
        #expect(!CaptureReader.isCapture([0xA1, 0xB2, 0xC3]))
        #expect(!CaptureReader.isCapture([]))
        #expect(throws: CaptureError(.pcap, offset: 0, .notACapture)) { try CaptureReader(Array("btsnoop\0".utf8)) }
        #expect(throws: CaptureError(.pcap, offset: 0, .truncated(field: "magic number", needed: 4, available: 2))) {
            try CaptureReader([0xD4, 0xC3])
        }
    }

    @Test("header problems: a short header, another major version")
    func headerProblems() throws {
        let bytes = pcapFile(bigEndian: false, nanoseconds: false, [])
        #expect(bytes.count == 24)
        #expect(try CaptureReader(bytes).readAllCopy().isEmpty)
        #expect(throws: CaptureError(.pcap, offset: 0, .truncated(field: "file header", needed: 24, available: 23))) {
            try CaptureReader(Array(bytes.prefix(23)))
        }
        #expect(throws: CaptureError(.pcap, offset: 4, .unsupportedVersion(major: 3, minor: 4))) {
            try CaptureReader(pcapFile(bigEndian: true, nanoseconds: true, major: 3, []))
        }
    }

    @Test("a captured length above the original length is refused")
    func capturedAboveOriginal() throws {
        let bytes = pcapFile(bigEndian: false, nanoseconds: false,
                             [packets[0], Packet(seconds: 1, fraction: 0, data: [1, 2, 3], originalLength: 2)])
        let (records, error) = readUntilDamage(bytes)
        #expect(records.count == 1)
        #expect(error == CaptureError(.pcap, offset: 24 + 16 + 11 + 8,
                                      .invalidValue(field: "captured length above the original length 2", value: 3)))
    }

    @Test("recordOffset names where each record starts")
    func recordOffsets() throws {
        var reader = try CaptureReader(pcapFile(bigEndian: false, nanoseconds: false, packets))
        var offsets: [Int] = []
        while try reader.next() != nil { offsets.append(reader.recordOffset) }
        #expect(offsets == [24, 24 + 16 + 11, 24 + 16 + 11 + 16])
    }
}

extension CaptureReader {
    /// Every record of a reader that is a constant.
    func readAllCopy() throws(CaptureError) -> [CaptureRecord] {
        var copy = self
        return try copy.readAll()
    }
}
