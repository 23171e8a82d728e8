import PacketCapture
import Testing
import TestSupport

@Suite struct CaptureDamageTests {
    /// Where each record's header or block ends in a well-formed file, and its records.
    func recordEnds(_ bytes: [UInt8], blockOffsets: [Int]? = nil) throws -> (records: [CaptureRecord], ends: [Int]) {
        var reader = try CaptureReader(bytes)
        var records: [CaptureRecord] = [], ends: [Int] = []
        while let record = try reader.next() {
            records.append(record)
            if let blocks = blockOffsets {
                ends.append(blocks.first { $0 > reader.recordOffset } ?? bytes.count)
            } else {
                ends.append(reader.recordOffset + 16 + record.data.count)
            }
        }
        return (records, ends)
    }

    /// Cuts `bytes` at every length: the records wholly before the cut, then an error at or
    /// before the cut (none when the cut falls between records or blocks).
    func checkEveryCut(_ bytes: [UInt8], headerLength: Int, boundaries: Set<Int>, blockOffsets: [Int]? = nil) throws {
        let (full, ends) = try recordEnds(bytes, blockOffsets: blockOffsets)
        for cut in 0..<bytes.count {
            let prefix = Array(bytes.prefix(cut))
            guard cut >= headerLength else {
                #expect(throws: CaptureError.self, "cut \(cut)") { try CaptureReader(prefix) }
                continue
            }
            let (records, error) = readUntilDamage(prefix)
            let whole = ends.filter { $0 <= cut }.count
            #expect(records == Array(full.prefix(whole)), "cut \(cut)")
            if boundaries.contains(cut) {
                #expect(error == nil, "cut \(cut): \(String(describing: error))")
            } else {
                let e = try #require(error, "cut \(cut)")
                #expect(e.offset >= headerLength && e.offset <= cut, "cut \(cut): \(e)")
                #expect(e.offset >= (ends.last { $0 <= cut } ?? headerLength), "cut \(cut): \(e)")
            }
        }
    }

    @Test("a pcap file cut at every byte gives the whole records before the cut and an error, never a crash")
    func pcapCutEverywhere() throws {
        let packets = [Packet(seconds: 1, fraction: 2, data: [1, 2, 3]), Packet(seconds: 3, fraction: 4, data: []),
                       Packet(seconds: 5, fraction: 6, data: Array(0..<20))]
        for bigEndian in [false, true] {
            let bytes = pcapFile(bigEndian: bigEndian, nanoseconds: bigEndian, packets)
            try checkEveryCut(bytes, headerLength: 24, boundaries: [24, 24 + 19, 24 + 35])
        }
    }

    @Test("a pcapng file cut at every byte gives the whole records before the cut and an error, never a crash")
    func pcapngCutEverywhere() throws {
        let (bytes, b) = mixedPcapng()
        let shbLength = b.blockOffsets[1]
        try checkEveryCut(bytes, headerLength: shbLength, boundaries: Set(b.blockOffsets), blockOffsets: b.blockOffsets)
    }

    @Test("a record claiming 4 GB is refused before anything is allocated")
    func hugeLengths() throws {
        var pcap = pcapFile(bigEndian: false, nanoseconds: false,
                            [Packet(seconds: 1, fraction: 0, data: [1]), Packet(seconds: 2, fraction: 0, data: [2])])
        for i in 0..<8 { pcap[24 + 17 + 8 + i] = 0xFF }  // the second record's captured and original lengths
        var (records, error) = readUntilDamage(pcap)
        #expect(records.count == 1)
        #expect(error == CaptureError(.pcap, offset: 24 + 17 + 8, .tooLong(field: "captured length", length: 0xFFFF_FFFF, limit: 1 << 20)))
        #expect(error?.description == "pcap at offset 49: captured length 4294967295 exceeds the limit 1048576")

        var b = PcapngBuilder()
        b.section(bigEndian: true)
        b.interface(linkType: 201)
        b.enhancedPacket(interface: 0, units: 1, [1, 2, 3])
        var pcapng = b.bytes
        for i in 0..<8 { pcapng[b.blockOffsets[2] + 20 + i] = 0xFF }
        (records, error) = readUntilDamage(pcapng)
        #expect(records.isEmpty)
        #expect(error == CaptureError(.pcapng, offset: b.blockOffsets[2] + 20,
                                      .tooLong(field: "captured length", length: 0xFFFF_FFFF, limit: 1 << 20)))

        // The limit is the reader's: a lower one refuses a record a byte longer.
        let small = pcapFile(bigEndian: true, nanoseconds: false, [Packet(seconds: 1, fraction: 0, data: Array(repeating: 7, count: 11))])
        var reader = try CaptureReader(small, maxRecordLength: 10)
        #expect(throws: CaptureError(.pcap, offset: 32, .tooLong(field: "captured length", length: 11, limit: 10))) { try reader.next() }
        // It does not move past the damage.
        #expect(throws: CaptureError(.pcap, offset: 32, .tooLong(field: "captured length", length: 11, limit: 10))) { try reader.next() }
    }

    @Test("random bytes, with or without a valid magic number, never crash or loop")
    func randomBytes() throws {
        var random = SeededGenerator(seed: 0xCA97_0001)
        let heads: [[UInt8]] = [[], [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0], [0xA1, 0xB2, 0x3C, 0x4D, 0, 2, 0, 4],
                                [0x0A, 0x0D, 0x0D, 0x0A, 28, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0],
                                [0x0A, 0x0D, 0x0D, 0x0A, 0, 0, 0, 28, 0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0]]
        var headersRead = 0
        for round in 0..<3000 {
            let bytes = heads[round % heads.count] + random.bytes(Int.random(in: 0...400, using: &random))
            if (try? CaptureReader(bytes)) != nil { headersRead += 1 }
            _ = drain(bytes, round)
        }
        // The pcap magic numbers lead to a header at every length of 16 random bytes or more.
        #expect(headersRead > 1000)
    }

    @Test("mutated copies of valid captures never crash or loop; usbmon headers parse or throw")
    func mutatedCopies() throws {
        var writer = PcapWriter(linkType: .usbLinuxMMapped)
        for packet in USBMonTests.session() {
            writer.append(data: packet.encoded(mmapped: true), timestampNanoseconds: packet.timestampNanoseconds)
        }
        var legacy = PcapWriter(linkType: .usbLinux, snapshotLength: 56)
        for packet in USBMonTests.session() { legacy.append(data: packet.encoded(mmapped: false), timestampNanoseconds: 0) }
        let seeds = [mixedPcapng().bytes, writer.bytes, legacy.bytes,
                     pcapFile(bigEndian: true, nanoseconds: true, [Packet(seconds: 9, fraction: 9, data: Array(0..<50))])]
        var random = SeededGenerator(seed: 0xCA97_0002)
        var failed = 0
        for round in 0..<4000 {
            let m = random.mutated(seeds[round % seeds.count], from: 0)
            if readUntilDamage(m).error != nil { failed += 1 }
            _ = drain(m, round)
        }
        #expect(failed > 1000)
    }

    /// Reads every record (parsing usbmon headers) until the end or an error; checks that the
    /// reader ends within a record per 12 bytes and that error offsets lie in the file.
    private func drain(_ bytes: [UInt8], _ round: Int) -> Int {
        var count = 0
        do {
            var reader = try CaptureReader(bytes)
            while let record = try reader.next() {
                count += 1
                #expect(record.data.count <= bytes.count, "round \(round)")
                if record.link == .usbLinux || record.link == .usbLinuxMMapped {
                    do {
                        let packet = try USBMonPacket(record)
                        #expect(packet.data.count <= Int(packet.capturedLength), "round \(round)")
                    } catch {
                        #expect(error.format == .usbmon && error.offset < 64, "round \(round)")
                    }
                }
                guard count <= bytes.count / 12 + 1 else {
                    Issue.record("round \(round): more records than the file can hold")
                    return count
                }
            }
        } catch {
            #expect(error.offset >= 0 && error.offset <= bytes.count, "round \(round): \(error)")
        }
        return count
    }
}
