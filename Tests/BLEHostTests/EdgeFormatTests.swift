import Testing
import BluetoothCentral
@testable import BLEHost

@Suite struct AdvertisingDataTests {
    @Test func heartRateSensorAdvertisement() throws {
        // Flags, complete 16-bit UUIDs (HR, Battery), TX power, appearance (HR belt), complete name,
        // manufacturer data, service data, a 128-bit incomplete list and padding.
        let bytes = h("02 01 06  05 03 0D 18 0F 18  02 0A F8  03 19 41 03  05 09 48 52 4D 31  05 FF 59 00 01 02  04 16 0F 18 5A")
            + [17, 0x06] + customService.bytes128 + h("00 00 00")
        let ad = try AdvertisingData.parse(bytes)
        #expect(ad.flags == 0x06 && ad.isGeneralDiscoverable && !ad.isLimitedDiscoverable)
        #expect(ad.serviceUUIDs == [BluetoothUUID(0x180D), BluetoothUUID(0x180F), customService] && ad.serviceUUIDsIncomplete)
        #expect(ad.txPower == -8 && ad.appearance == 0x0341 && ad.localName == "HRM1" && !ad.localNameIsShortened)
        #expect(ad.manufacturerData == [.init(companyIdentifier: 0x0059, data: [1, 2])])
        #expect(ad.serviceData == [.init(uuid: BluetoothUUID(0x180F), data: [0x5A])])
    }

    @Test func namesAnd32BitAndOther() throws {
        let ad = try AdvertisingData.parse(h("04 08 48 52 4D  05 05 0D 18 00 00  07 20 01 00 00 00 AB CD  02 2A 00"))
        #expect(ad.localName == "HRM" && ad.localNameIsShortened)
        #expect(ad.serviceUUIDs == [BluetoothUUID(0x180D)] && !ad.serviceUUIDsIncomplete)
        #expect(ad.other.count == 1 && ad.other[0].type == 0x2A)
        #expect(ad.serviceData == [.init(uuid: BluetoothUUID(uuid32: 1), data: h("AB CD"))])
        #expect(try AdvertisingData.parse([]) == AdvertisingData())
        // Invalid UTF-8 becomes U+FFFD; a later complete name wins over a shortened one.
        #expect(try AdvertisingData.parse(h("04 09 FF FE 41")).localName == "\u{FFFD}\u{FFFD}A")
        #expect(try AdvertisingData.parse(h("02 08 48 03 09 48 52")).localName == "HR")
    }

    @Test func malformed() {
        for bytes in ["05 09 48", "02 01", "03 03 0D", "03 01 06 06", "02 0A", "02 19 41", "02 FF 59", "03 21 01 02"] {
            #expect(throws: BLEDecodeError.self, "\(bytes)") { try AdvertisingData.parse(h(bytes)) }
        }
        #expect(throws: BLEDecodeError.self) { try AdvertisingData.parse(Array(repeating: 0, count: 1651)) }
    }

    @Test func deviceAddress() {
        let a = DeviceAddress("C1:22:33:44:55:66", kind: .random)!
        #expect(a.littleEndianBytes == h("66 55 44 33 22 C1") && a.text == "C1:22:33:44:55:66" && a.randomKind == .static)
        #expect(DeviceAddress(littleEndian: h("66 55 44 33 22 41"), hciAddressType: 1).randomKind == .resolvablePrivate)
        #expect(DeviceAddress(littleEndian: h("66 55 44 33 22 11"), hciAddressType: 2).kind == .public)
        #expect(DeviceAddress("c1:22:33:44:55:66") == DeviceAddress(0xC1_22_33_44_55_66))
        for bad in ["", "C1:22:33:44:55", "C1:22:33:44:55:6G", "C1-22-33-44-55-66", "C1:22:33:44:55:666"] { #expect(DeviceAddress(bad) == nil) }
        #expect(DeviceAddress(1, kind: .public).randomKind == nil)
    }
}

@Suite struct BTSnoopTests {
    let packets: [(H4Packet, Bool)] = [
        (HCICommand.reset.h4Packet, false),
        (H4Packet(.event, h("0E 04 01 03 0C 00")), true),
        (ACLPacket(handle: 0x40, boundary: .firstNonFlushable, data: h("03 00 04 00 02 F7 00")).h4Packet, false),
        (ACLPacket(handle: 0x40, boundary: .firstFlushable, data: h("03 00 04 00 03 B9 00")).h4Packet, true),
    ]

    @Test func roundTripH4() throws {
        let writer = BTSnoop.Writer(datalink: .h4)
        let t0 = BTSnoop.unixEpochOffset + 1_700_000_000_000_000
        var file = writer.header
        for (i, (p, received)) in packets.enumerated() { file += writer.record(.h4(p, received: received, timestamp: t0 + Int64(i))) }
        #expect(Array(file.prefix(16)) == h("62 74 73 6E 6F 6F 70 00 00 00 00 01 00 00 03 EA"))
        // First record: lengths 4/4, flags 2 (sent command), no drops.
        #expect(Array(file[16..<32]) == h("00 00 00 04 00 00 00 04 00 00 00 02 00 00 00 00"))
        var reader = try BTSnoop.Reader(file)
        let records = try reader.readAll()
        #expect(reader.datalink == .h4 && records.count == 4)
        #expect(try records.map { try $0.packet(datalink: .h4) } == packets.map(\.0))
        #expect(records.map(\.received) == [false, true, false, true])
        #expect(records.map(\.isCommandOrEvent) == [true, true, false, false])
        #expect(records[0].unixMicroseconds == 1_700_000_000_000_000)
        // Replay through the same framer the transports use.
        var framer = H4Framer()
        #expect(try framer.feed(records.flatMap(\.data)) == packets.map(\.0))
    }

    @Test func h1UsesTheFlags() throws {
        let writer = BTSnoop.Writer(datalink: .h1)
        let file = writer.header
            + writer.record(.init(received: false, isCommandOrEvent: true, timestamp: 0, data: h("03 0C 00")))
            + writer.record(.init(received: true, isCommandOrEvent: true, timestamp: 1, data: h("0E 04 01 03 0C 00")))
            + writer.record(.init(received: true, isCommandOrEvent: false, timestamp: 2, data: h("40 20 00 00")))
        var reader = try BTSnoop.Reader(file)
        #expect(try reader.readAll().map { try $0.packet(datalink: .h1).type } == [.command, .event, .acl])
    }

    @Test func truncatedAndGarbage() throws {
        let writer = BTSnoop.Writer()
        let file = writer.header + writer.record(.h4(HCICommand.reset.h4Packet, received: false, timestamp: 5))
        #expect(throws: BLEDecodeError.self) { try BTSnoop.Reader(Array("btsnoo".utf8)) }
        #expect(throws: BLEDecodeError.self) { try BTSnoop.Reader(Array("notsnoop".utf8) + Array(file[8...])) }
        #expect(throws: BLEDecodeError.self) { try BTSnoop.Reader(Array(file[0..<8]) + h("00 00 00 02 00 00 03 EA")) }
        #expect(throws: BLEDecodeError.self) { try BTSnoop.Reader(Array(file[0..<12]) + h("00 00 07 D1")) }
        for cut in 17..<file.count {
            var reader = try BTSnoop.Reader(Array(file[0..<cut]))
            #expect(throws: BLEDecodeError.self, "cut at \(cut)") { _ = try reader.readAll() }
        }
        // Included length above the original length, and above the limit.
        var bad = file
        bad[19] = 3
        var r1 = try BTSnoop.Reader(bad)
        #expect(throws: BLEDecodeError.self) { _ = try r1.readAll() }
        var r2 = try BTSnoop.Reader(file, maxRecordLength: 3)
        #expect(throws: BLEDecodeError.self) { _ = try r2.readAll() }
        // A truncated capture record (snap length) is reported, not an error.
        let snapped = writer.header + writer.record(.init(received: true, isCommandOrEvent: false, timestamp: 0, data: h("02 40 20"), originalLength: 9))
        var r3 = try BTSnoop.Reader(snapped)
        #expect(try r3.next()?.isTruncated == true)
        #expect(try r3.next() == nil)
    }
}

@Suite struct TransportAddressTests {
    @Test func valid() throws {
        let table: [(String, TransportAddress)] = [
            ("hci0", .hci(index: 0)), ("hci12", .hci(index: 12)),
            ("tcp:127.0.0.1:9000", .tcp(host: "127.0.0.1", port: 9000)), ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
            ("tcp:[::1]:9000", .tcp(host: "::1", port: 9000)),
            ("unix:/run/healthgate/h4.sock", .unix(path: "/run/healthgate/h4.sock")),
            ("serial:/dev/ttyACM0", .serial(path: "/dev/ttyACM0", baud: 115_200)),
            ("serial:/dev/ttyACM0:1000000", .serial(path: "/dev/ttyACM0", baud: 1_000_000)),
            ("serial:/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0", .serial(path: "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0", baud: 115_200)),
        ]
        for (text, address) in table {
            #expect(try TransportAddress(parsing: text) == address, "\(text)")
            #expect(try TransportAddress(parsing: address.description) == address)
        }
    }

    @Test func invalidWithMessages() {
        let table: [(String, String)] = [
            ("", "expected hci<N>"), ("hci", "adapter index"), ("hci-1", "adapter index"), ("hci99999", "adapter index"),
            ("tcp:localhost", "missing port"), ("tcp::9000", "missing host"), ("tcp:host:0", "port must be"), ("tcp:host:70000", "port must be"),
            ("tcp:::1:9000", "IPv6 hosts go in brackets"), ("unix:", "missing socket path"),
            ("unix:/" + String(repeating: "a", count: 120), "longer than 107"), ("serial:ttyACM0", "absolute path"),
            ("serial:/dev/ttyACM0:12345", "unsupported baud rate 12345"), ("bluetooth:hci0", "unknown transport 'bluetooth'"),
        ]
        for (text, fragment) in table {
            do {
                _ = try TransportAddress(parsing: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.description.contains(fragment), "\(text): \(error)")
                #expect(error.description.contains("invalid transport address"))
            }
        }
    }
}
