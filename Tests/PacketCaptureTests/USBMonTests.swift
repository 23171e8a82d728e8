import PacketCapture
import Testing

@Suite struct USBMonTests {
    /// An ANT stick's start: reset out, the startup message in, and a control transfer reading the
    /// device descriptor.
    static func session() -> [USBMonPacket] {
        let reset: [UInt8] = [0xA4, 0x01, 0x4A, 0x00, 0xEF]
        let startup: [UInt8] = [0xA4, 0x01, 0x6F, 0x20, 0xEA]
        let descriptor: [UInt8] = [0x12, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x20, 0xCF, 0x0F, 0x08, 0x10,
                                   0x00, 0x01, 0x01, 0x02, 0x03, 0x01]
        let t: Int64 = 1_700_000_000
        return [
            USBMonPacket(id: 0xFFFF_8881_0000_1000, event: .submit, transferType: .control, endpoint: 0x80, device: 5, bus: 1,
                         status: -115, length: 18, setup: [0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x12, 0x00],
                         timestampSeconds: t, timestampMicroseconds: 1),
            USBMonPacket(id: 0xFFFF_8881_0000_1000, event: .complete, transferType: .control, endpoint: 0x80, device: 5, bus: 1,
                         data: descriptor, timestampSeconds: t, timestampMicroseconds: 900),
            USBMonPacket(id: 0xFFFF_8881_0000_2000, event: .submit, transferType: .bulk, endpoint: 0x01, device: 5, bus: 1,
                         status: -115, data: reset, timestampSeconds: t, timestampMicroseconds: 1000),
            USBMonPacket(id: 0xFFFF_8881_0000_2000, event: .complete, transferType: .bulk, endpoint: 0x01, device: 5, bus: 1,
                         length: 5, timestampSeconds: t, timestampMicroseconds: 1200),
            USBMonPacket(id: 0xFFFF_8881_0000_3000, event: .submit, transferType: .bulk, endpoint: 0x81, device: 5, bus: 1,
                         status: -115, length: 64, timestampSeconds: t, timestampMicroseconds: 1300),
            USBMonPacket(id: 0xFFFF_8881_0000_3000, event: .complete, transferType: .bulk, endpoint: 0x81, device: 5, bus: 1,
                         data: startup, timestampSeconds: t + 1, timestampMicroseconds: 2),
            USBMonPacket(id: 0xFFFF_8881_0000_4000, event: .error, transferType: .interrupt, endpoint: 0x83, device: 5, bus: 1,
                         status: -32, length: 8, timestampSeconds: t + 1, timestampMicroseconds: 3),
        ]
    }

    @Test("64-byte headers round-trip: encoded, written to a pcap, read and parsed")
    func mmappedRoundTrip() throws {
        var packets = Self.session()
        packets[6].interval = 8
        packets[6].transferFlags = 0x0200
        var writer = PcapWriter(linkType: .usbLinuxMMapped)
        for p in packets { writer.append(data: p.encoded(mmapped: true), timestampNanoseconds: p.timestampNanoseconds) }
        let records = try CaptureReader(writer.bytes).readAllCopy()
        #expect(records.map(\.data.count) == packets.map { 64 + $0.data.count })
        #expect(records.map(\.timestampNanoseconds) == packets.map(\.timestampNanoseconds))
        #expect(try records.map { try USBMonPacket($0) } == packets)
    }

    @Test("48-byte headers round-trip; the fields only the 64-byte header has read as 0")
    func legacyRoundTrip() throws {
        var packets = Self.session()
        for p in packets {
            let encoded = p.encoded(mmapped: false)
            #expect(encoded.count == 48 + p.data.count)
            #expect(try USBMonPacket(CaptureRecord(linkType: 189, timestampNanoseconds: 0, data: encoded)) == p)
        }
        packets[0].interval = 4
        let parsed = try USBMonPacket(CaptureRecord(linkType: 189, timestampNanoseconds: 0, data: packets[0].encoded(mmapped: false)))
        #expect(parsed.interval == 0 && parsed.setup == packets[0].setup)
    }

    @Test("a completed IN bulk transfer with data, field by field at the kernel's offsets")
    func completedInBulk() throws {
        let packet = Self.session()[5]
        let bytes = packet.encoded(mmapped: true)
        #expect(Array(bytes[0..<8]) == [0x00, 0x30, 0x00, 0x00, 0x81, 0x88, 0xFF, 0xFF])
        #expect(bytes[8] == UInt8(ascii: "C") && bytes[9] == 3 && bytes[10] == 0x81 && bytes[11] == 5)
        #expect(Array(bytes[12..<16]) == [1, 0, UInt8(ascii: "-"), 0])
        #expect(Array(bytes[16..<24]) == [0x01, 0xF1, 0x53, 0x65, 0, 0, 0, 0])  // 1_700_000_001
        #expect(Array(bytes[24..<28]) == [2, 0, 0, 0])
        #expect(Array(bytes[28..<32]) == [0, 0, 0, 0])
        #expect(Array(bytes[32..<40]) == [5, 0, 0, 0, 5, 0, 0, 0])
        #expect(Array(bytes[64...]) == [0xA4, 0x01, 0x6F, 0x20, 0xEA])
        let parsed = try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: bytes))
        #expect(parsed.event == .complete && parsed.transferType == .bulk && parsed.isIn && parsed.endpoint == 0x81)
        #expect(parsed.device == 5 && parsed.bus == 1 && parsed.status == 0)
        #expect(parsed.length == 5 && parsed.capturedLength == 5 && parsed.dataFlag == 0 && parsed.setup == nil)
        #expect(parsed.data == [0xA4, 0x01, 0x6F, 0x20, 0xEA])
        #expect(parsed.timestampNanoseconds == 1_700_000_001_000_002_000)
    }

    @Test("a submitted OUT bulk transfer carries its data; the IN submission and the OUT completion carry none")
    func submitOut() throws {
        let session = Self.session()
        let out = try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: session[2].encoded(mmapped: true)))
        #expect(out.event == .submit && !out.isIn && out.endpoint == 0x01)
        #expect(out.status == -115 && out.data == [0xA4, 0x01, 0x4A, 0x00, 0xEF] && out.length == 5 && out.dataFlag == 0)
        #expect(session[3].dataFlag == UInt8(ascii: ">") && session[3].data.isEmpty && session[3].length == 5)
        #expect(session[4].dataFlag == UInt8(ascii: "<") && session[4].length == 64 && session[4].capturedLength == 0)
    }

    @Test("a control submission carries its setup packet; setting setup sets the flag")
    func controlSetup() throws {
        var submit = Self.session()[0]
        let bytes = submit.encoded(mmapped: false)
        #expect(bytes[14] == 0)
        #expect(Array(bytes[40..<48]) == [0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x12, 0x00])
        let parsed = try USBMonPacket(CaptureRecord(linkType: 189, timestampNanoseconds: 0, data: bytes))
        #expect(parsed.transferType == .control && parsed.setup == [0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x12, 0x00])
        #expect(parsed.length == 18 && parsed.isIn && parsed.data.isEmpty)
        submit.setup = nil
        #expect(submit.setupFlag == UInt8(ascii: "-") && submit.setupBytes == [0, 0, 0, 0, 0, 0, 0, 0])
        submit.setup = [1, 2]
        #expect(submit.setupFlag == 0 && submit.setup == [1, 2, 0, 0, 0, 0, 0, 0])
    }

    @Test("a header written by hand from the kernel's layout parses, isochronous counts included")
    func handWrittenHeader() throws {
        var w = ByteWriter(bigEndian: false)
        w.u64(0x1122_3344_5566_7788)
        w.raw([UInt8(ascii: "C"), 0, 0x82, 7])
        w.u16(3)
        w.raw([UInt8(ascii: "-"), 0])
        w.u64(UInt64(bitPattern: 1_700_000_000))
        w.u32(999_999)
        w.u32(UInt32(bitPattern: -18))  // -EXDEV
        w.u32(48)
        w.u32(4)
        w.u32(UInt32(bitPattern: -1))  // error_count
        w.u32(2)  // numdesc
        w.u32(1)  // interval
        w.u32(UInt32(bitPattern: -5))  // start_frame
        w.u32(0x0002)  // URB_ISO_ASAP
        w.u32(2)  // ndesc
        w.raw([9, 8, 7, 6, 5, 4])  // two bytes more than len_cap
        let p = try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: w.bytes))
        #expect(p.id == 0x1122_3344_5566_7788 && p.event == .complete && p.transferType == .isochronous)
        #expect(p.endpoint == 0x82 && p.isIn && p.device == 7 && p.bus == 3)
        #expect(p.timestampSeconds == 1_700_000_000 && p.timestampMicroseconds == 999_999 && p.status == -18)
        #expect(p.length == 48 && p.capturedLength == 4 && p.data == [9, 8, 7, 6])
        #expect(p.setup == nil && p.isoErrorCount == -1 && p.isoDescriptorCount == 2)
        #expect(p.interval == 1 && p.startFrame == -5 && p.transferFlags == 2 && p.descriptorCount == 2)
        // The same bytes as a 48-byte record: the last 16 header bytes become data.
        let legacy = try USBMonPacket(CaptureRecord(linkType: 189, timestampNanoseconds: 0, data: w.bytes))
        #expect(legacy.data == Array(w.bytes[48..<52]) && legacy.interval == 0)
    }

    @Test("data cut by a snapshot length is what the record holds")
    func cutData() throws {
        let packet = Self.session()[1]
        let bytes = packet.encoded(mmapped: true)
        let record = CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: Array(bytes.prefix(70)), originalLength: UInt32(bytes.count))
        let cut = try USBMonPacket(record)
        #expect(cut.capturedLength == 18 && cut.data == Array(packet.data.prefix(6)))
    }

    @Test("wrong link types, short headers and unknown event or transfer types are errors with offsets")
    func errors() throws {
        let bytes = Self.session()[5].encoded(mmapped: true)
        #expect(throws: CaptureError(.usbmon, offset: 0, .invalidValue(field: "link type", value: 201))) {
            try USBMonPacket(CaptureRecord(linkType: 201, timestampNanoseconds: 0, data: bytes))
        }
        #expect(throws: CaptureError(.usbmon, offset: 0, .truncated(field: "usbmon header", needed: 64, available: 63))) {
            try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: Array(bytes.prefix(63))))
        }
        #expect(throws: CaptureError(.usbmon, offset: 0, .truncated(field: "usbmon header", needed: 48, available: 47))) {
            try USBMonPacket(CaptureRecord(linkType: 189, timestampNanoseconds: 0, data: Array(bytes.prefix(47))))
        }
        var event = bytes
        event[8] = UInt8(ascii: "X")
        #expect(throws: CaptureError(.usbmon, offset: 8, .invalidValue(field: "event type", value: 0x58))) {
            try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: event))
        }
        var transfer = bytes
        transfer[9] = 4
        #expect(throws: CaptureError(.usbmon, offset: 9, .invalidValue(field: "transfer type", value: 4))) {
            try USBMonPacket(CaptureRecord(linkType: 220, timestampNanoseconds: 0, data: transfer))
        }
    }

    @Test("header times beyond 64-bit nanoseconds are clamped")
    func extremeHeaderTimes() {
        var p = Self.session()[0]
        p.timestampSeconds = .max
        #expect(p.timestampNanoseconds == .max)
        p.timestampSeconds = .min
        #expect(p.timestampNanoseconds == .min)
        p.timestampSeconds = Int64.max / 1_000_000_000
        p.timestampMicroseconds = .max
        #expect(p.timestampNanoseconds == .max)
    }
}
