import ANTFS
import TestSupport
import Testing

/// Byte builders and a CRC written out from the layouts in the notes (not from the module), so
/// that the module's decoders and encoders are checked against an independent reading.
enum ANTFSLayout {
    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
    static func padded(_ b: [UInt8]) -> [UInt8] { b + [UInt8](repeating: 0, count: (8 - b.count % 8) % 8) }

    /// CRC-16/ARC bit by bit: reflected polynomial 0xA001.
    static func crc(_ seed: UInt16, _ bytes: some Sequence<UInt8>) -> UInt16 {
        var c = seed
        for b in bytes {
            c ^= UInt16(b)
            for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0xA001 : c >> 1 }
        }
        return c
    }

    /// A beacon: `43 s1 s2 auth desc[4]` with data available, pairing enabled and 8 Hz.
    static func beacon(state: UInt8, descriptor: [UInt8]) -> [UInt8] { [0x43, 0x2C, state, 0x03] + descriptor }

    /// A burst from the watch in `state` linked to `host`: its beacon, then an authenticate
    /// response.
    static func authReply(result: UInt8, serial: UInt32, data: [UInt8], host: UInt32 = 1337, state: UInt8 = 1) -> [UInt8] {
        beacon(state: state, descriptor: le32(host)) + padded([0x44, 0x84, result, UInt8(data.count)] + le32(serial) + data)
    }

    /// A download block: header, data padded to 8, then the 8-byte packet ending with the CRC.
    static func downloadReply(
        result: UInt8 = 0, remaining: UInt32, offset: UInt32, size: UInt32, data: [UInt8], crc: UInt16, host: UInt32 = 1337
    ) -> [UInt8] {
        let header = [0x44, 0x89, result, 0x00] + le32(remaining) + le32(offset) + le32(size)
        let body = result == 0 ? padded(data) + [0, 0, 0, 0, 0, 0] + le16(crc) : []
        return beacon(state: 2, descriptor: le32(host)) + header + body
    }

    static func bytes(_ hex: String) -> [UInt8] {
        hex.split(separator: " ").map { UInt8($0, radix: 16)! }
    }
}

@Suite struct ANTFSBeaconTests {
    @Test("the FR310XT's link beacon from the antpm capture: product 1018, manufacturer 1, 8 Hz, pairing enabled")
    func linkBeacon() throws {
        // ralovich/antpm src/tests/2012_12_21_antagent1.usbmon (Garmin ANT Agent and a FR310XT).
        let b = try ANTFSBeacon(ANTFSLayout.bytes("43 2c 00 03 fa 03 01 00"))
        #expect(b.dataAvailable && !b.uploadEnabled && b.pairingEnabled)
        #expect(b.periodCode == 4 && b.beaconHz == 8)
        #expect(b.state == .link)
        #expect(b.authenticationType == 3)
        #expect(b.deviceType == 1018 && b.manufacturerID == 1)
        #expect(b.hostSerial == nil)
        #expect(b.bytes == ANTFSLayout.bytes("43 2c 00 03 fa 03 01 00"))
    }

    @Test("an authentication beacon carries the host's serial (antfs-cli #140: 1337, openant's host serial)")
    func authenticationBeacon() throws {
        // Tigge/antfs-cli#140.
        let b = try ANTFSBeacon(ANTFSLayout.bytes("43 3c 01 03 39 05 00 00"))
        #expect(b.dataAvailable && b.uploadEnabled && b.pairingEnabled)
        #expect(b.state == .authentication)
        #expect(b.hostSerial == 1337)
        #expect(b.deviceType == nil && b.manufacturerID == nil)
    }

    @Test(
        "every state of the low nibble, the high nibble ignored",
        arguments: [
            (UInt8(0x00), ANTFSState.link), (0x01, .authentication), (0x02, .transport), (0x03, .busy), (0x04, .other(4)),
            (0x0F, .other(15)), (0xF2, .transport), (0x31, .authentication),
        ])
    func states(byte: UInt8, state: ANTFSState) throws {
        let b = try ANTFSBeacon([0x43, 0x04, byte, 0x03, 0x78, 0x56, 0x34, 0x12])
        #expect(b.state == state)
        #expect(b.state.rawValue == byte & 0x0F)
        #expect(b.hostSerial == (state == .link ? nil : 0x1234_5678))
    }

    @Test("each status flag alone, and the period codes with their rates and channel periods")
    func flagsAndPeriods() throws {
        let none = try ANTFSBeacon([0x43, 0x00, 0x02, 0x00, 0, 0, 0, 0])
        #expect(!none.dataAvailable && !none.uploadEnabled && !none.pairingEnabled && none.periodCode == 0)
        #expect(try ANTFSBeacon([0x43, 0x20, 0, 0, 0, 0, 0, 0]).dataAvailable)
        #expect(try ANTFSBeacon([0x43, 0x10, 0, 0, 0, 0, 0, 0]).uploadEnabled)
        #expect(try ANTFSBeacon([0x43, 0x08, 0, 0, 0, 0, 0, 0]).pairingEnabled)
        let rates: [UInt8: Double?] = [0: 0.5, 1: 1, 2: 2, 3: 4, 4: 8, 5: nil, 6: nil, 7: nil]
        let periods: [UInt8: UInt16?] = [0: 65535, 1: 32768, 2: 16384, 3: 8192, 4: 4096, 5: nil, 6: nil, 7: nil]
        for code in UInt8(0)...7 {
            let b = try ANTFSBeacon([0x43, 0xF8 | code, 0, 0, 0, 0, 0, 0])
            #expect(b.periodCode == code)
            #expect(b.beaconHz == rates[code]!)
            #expect(ANTFSBeacon.channelPeriod(periodCode: code) == periods[code]!)
        }
    }

    @Test("a short payload or another first byte is a typed error; bytes after the eighth are ignored")
    func errors() throws {
        #expect(throws: ANTFSError.truncated(field: "beacon", offset: 0, needed: 8, available: 7)) {
            try ANTFSBeacon([0x43, 0x2C, 0, 3, 0xFA, 3, 1])
        }
        #expect(throws: ANTFSError.truncated(field: "beacon", offset: 0, needed: 8, available: 0)) { try ANTFSBeacon([]) }
        #expect(throws: ANTFSError.invalidValue(field: "beacon id", offset: 0, value: 0x44)) {
            try ANTFSBeacon([0x44, 0x2C, 0, 3, 0xFA, 3, 1, 0])
        }
        let extended = try ANTFSBeacon(ANTFSLayout.bytes("43 2c 00 03 fa 03 01 00 80 01 00 01 05"))
        #expect(extended.deviceType == 1018)
    }

    @Test("a beacon built from its fields encodes to the layout and decodes back")
    func roundTrip() throws {
        let b = ANTFSBeacon(
            state: .busy, dataAvailable: false, uploadEnabled: true, pairingEnabled: false, periodCode: 3, descriptor: [1, 2, 3, 4])
        #expect(b.bytes == [0x43, 0x13, 0x03, 0x03, 1, 2, 3, 4])
        #expect(try ANTFSBeacon(b.bytes) == b)
    }
}

@Suite struct ANTFSCommandTests {
    @Test("LINK: 44 02, frequency, period code, host serial LE32; an acknowledged message (antpm capture: 44 02 50 04 …)")
    func link() {
        let c = ANTFSCommand.link(frequency: 0x50, period: 4, hostSerial: 0x1234_5678)
        #expect(c.bytes == ANTFSLayout.bytes("44 02 50 04 78 56 34 12"))
        #expect(!c.isBurst && c.id == 0x02)
    }

    @Test("DISCONNECT: 44 03, type, time duration, application-specific duration, padded")
    func disconnect() {
        #expect(ANTFSCommand.disconnect(type: 0).bytes == ANTFSLayout.bytes("44 03 00 00 00 00 00 00"))
        #expect(
            ANTFSCommand.disconnect(type: 1, timeDuration: 2, applicationSpecificDuration: 3).bytes
                == ANTFSLayout.bytes("44 03 01 02 03 00 00 00"))
        #expect(!ANTFSCommand.disconnect(type: 0).isBurst)
    }

    @Test("AUTHENTICATE: the serial request is acknowledged data; a passkey makes a 16-byte burst (antfs-cli #140: 44 04 03 08 …)")
    func authenticate() {
        let serial = ANTFSCommand.authenticate(type: .serial, hostSerial: 1337, data: [])
        #expect(serial.bytes == ANTFSLayout.bytes("44 04 01 00 39 05 00 00"))
        #expect(!serial.isBurst)
        let key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18]
        let passkey = ANTFSCommand.authenticate(type: .passkey, hostSerial: 1337, data: key)
        #expect(passkey.bytes == ANTFSLayout.bytes("44 04 03 08 39 05 00 00") + key)
        #expect(passkey.isBurst)
        // The host's name for pairing, padded to 8.
        let pairing = ANTFSCommand.authenticate(type: .pairing, hostSerial: 0xAABB_CCDD, data: Array("antfs-cli".utf8))
        #expect(pairing.bytes == [0x44, 0x04, 0x02, 9, 0xDD, 0xCC, 0xBB, 0xAA] + Array("antfs-cli".utf8) + [0, 0, 0, 0, 0, 0, 0])
        #expect(pairing.bytes.count == 24 && pairing.isBurst)
        #expect(ANTFSCommand.authenticate(type: .passthrough, hostSerial: 0, data: []).bytes == [0x44, 0x04, 0, 0, 0, 0, 0, 0])
        // More data than the length byte can say: only 255 bytes go out.
        let long = ANTFSCommand.authenticate(type: .pairing, hostSerial: 0, data: [UInt8](repeating: 0x41, count: 300))
        #expect(long.bytes[3] == 255 && long.bytes.count == 8 + 256)
    }

    @Test("DOWNLOAD: index LE16, offset LE32, 0, initial, CRC seed LE16, maximum block size LE32: a 16-byte burst")
    func download() {
        // The request of the antpm capture's block: index 0x0B at offset 0xA00.
        let c = ANTFSCommand.download(index: 0x0B, offset: 0xA00, initial: false, crcSeed: 0xBEEF, maxBlockSize: 0x200)
        #expect(c.bytes == ANTFSLayout.bytes("44 09 0b 00 00 0a 00 00 00 00 ef be 00 02 00 00"))
        #expect(c.isBurst && c.id == 0x09)
        let first = ANTFSCommand.download(index: 0, offset: 0, initial: true, crcSeed: 0, maxBlockSize: 0)
        #expect(first.bytes == ANTFSLayout.bytes("44 09 00 00 00 00 00 00 00 01 00 00 00 00 00 00"))
    }

    @Test("PING: 44 05, padded")
    func ping() {
        #expect(ANTFSCommand.ping.bytes == ANTFSLayout.bytes("44 05 00 00 00 00 00 00"))
        #expect(!ANTFSCommand.ping.isBurst)
    }

    @Test("descriptions say what the command is, never the passkey")
    func descriptions() {
        let key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18]
        let text = ANTFSCommand.authenticate(type: .passkey, hostSerial: 1, data: key).description
        #expect(text == "the passkey authentication")
        #expect(
            ANTFSCommand.download(index: 3, offset: 512, initial: false, crcSeed: 1, maxBlockSize: 0).description
                == "the download request for file 3 at offset 512")
        #expect(
            ANTFSCommand.download(index: 0, offset: 0, initial: true, crcSeed: 0, maxBlockSize: 0).description
                == "the directory request at offset 0")
    }
}

@Suite struct ANTFSCRCTests {
    @Test("CRC-16/ARC check value: \"123456789\" from 0 is 0xBB3D")
    func checkValue() {
        #expect(CRC16ARC.update(0, Array("123456789".utf8)) == 0xBB3D)
        #expect(CRC16ARC.checksum(Array("123456789".utf8)) == 0xBB3D)
        #expect(CRC16ARC.update(0x1234, []) == 0x1234)
    }

    @Test("chained: a block's CRC continues from the previous block's, so any split gives the whole file's CRC")
    func chaining() {
        var rng = SeededGenerator(seed: 0xC3C3)
        for _ in 0..<300 {
            let data = rng.bytes(Int.random(in: 0...700, using: &rng))
            let whole = CRC16ARC.checksum(data)
            #expect(whole == ANTFSLayout.crc(0, data))
            var crc: UInt16 = 0
            var offset = 0
            while offset < data.count {
                let end = min(data.count, offset + Int.random(in: 1...200, using: &rng))
                crc = CRC16ARC.update(crc, data[offset..<end])
                offset = end
            }
            #expect(crc == whole)
            let seed = UInt16.random(in: 0...UInt16.max, using: &rng)
            #expect(CRC16ARC.update(seed, data) == ANTFSLayout.crc(seed, data))
        }
    }
}

@Suite struct ANTFSResponseTests {
    @Test("the reply to the serial request: client serial and name (antfs-cli #45: \"Forerunner 610\")")
    func serialReply() throws {
        let name = Array("Forerunner 610".utf8)
        let burst = ANTFSLayout.authReply(result: 0, serial: 3_812_345_678, data: name)
        #expect(burst.count == 8 + 8 + 16)
        let (beacon, response) = try ANTFSResponse.decode(burst)
        #expect(beacon.state == .authentication && beacon.hostSerial == 1337)
        #expect(response == .authenticate(result: .notAvailable, clientSerial: 3_812_345_678, data: name))
        #expect(response.bytes == Array(burst[8...]))
    }

    @Test("pairing accepted with an 8-byte passkey; a reject with no data; unknown results kept")
    func authResults() throws {
        let key: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        #expect(
            try ANTFSResponse.decode(ANTFSLayout.authReply(result: 1, serial: 7, data: key)).response
                == .authenticate(result: .accept, clientSerial: 7, data: key))
        #expect(
            try ANTFSResponse.decode(ANTFSLayout.authReply(result: 2, serial: 7, data: [])).response
                == .authenticate(result: .reject, clientSerial: 7, data: []))
        #expect(
            try ANTFSResponse.decode(ANTFSLayout.authReply(result: 9, serial: 7, data: [])).response
                == .authenticate(result: .other(9), clientSerial: 7, data: []))
        for raw in UInt8(0)...9 { #expect(ANTFSAuthResult(rawValue: raw).rawValue == raw) }
    }

    @Test("the antpm capture's block: file 0x0B at offset 0xA00, 0x200 bytes of a 0x253D-byte file (built by layout)")
    func antpmBlock() throws {
        var rng = SeededGenerator(seed: 0x253D)
        let data = rng.bytes(0x200)
        let crc = ANTFSLayout.crc(0x4321, data)
        let burst = ANTFSLayout.downloadReply(remaining: 0x200, offset: 0xA00, size: 0x253D, data: data, crc: crc)
        #expect(burst.count == 8 + 16 + 0x200 + 8)
        let (beacon, response) = try ANTFSResponse.decode(burst)
        #expect(beacon.state == .transport)
        guard case .download(let block) = response else {
            Issue.record("not a download block: \(response)")
            return
        }
        #expect(block.result == .ok && block.remaining == 0x200 && block.offset == 0xA00 && block.fileSize == 0x253D)
        #expect(block.data == data && block.crc == crc)
        #expect(response.bytes == Array(burst[8...]))
    }

    @Test("the file's last block: 0x13D bytes, padded to 8, then the CRC packet")
    func lastBlock() throws {
        var rng = SeededGenerator(seed: 0x13D)
        let data = rng.bytes(0x13D)
        let burst = ANTFSLayout.downloadReply(remaining: 0x13D, offset: 0x2400, size: 0x253D, data: data, crc: 0xA55A)
        #expect(burst.count == 8 + 16 + 0x140 + 8)
        let response = try ANTFSResponse.decode(burst).response
        #expect(response == .download(.init(result: .ok, remaining: 0x13D, offset: 0x2400, fileSize: 0x253D, data: data, crc: 0xA55A)))
    }

    @Test("a refusal has the header only: no data, CRC 0; every result code", arguments: UInt8(1)...6)
    func refusals(code: UInt8) throws {
        let burst = ANTFSLayout.downloadReply(result: code, remaining: 0, offset: 0, size: 0, data: [], crc: 0)
        #expect(burst.count == 24)
        let response = try ANTFSResponse.decode(burst).response
        let result = ANTFSDownloadResponse.Result(rawValue: code)
        #expect(response == .download(.init(result: result, remaining: 0, offset: 0, fileSize: 0, data: [], crc: 0)))
        #expect(result.rawValue == code)
        let expected: [UInt8: ANTFSDownloadResponse.Result] = [
            1: .doesNotExist, 2: .notReadable, 3: .notReady, 4: .invalidRequest, 5: .crcIncorrect, 6: .other(6),
        ]
        #expect(result == expected[code])
    }

    @Test("other responses keep their ID and bytes (an erase response, 44 8B)")
    func otherResponse() throws {
        let burst = ANTFSLayout.beacon(state: 2, descriptor: [0x39, 5, 0, 0]) + [0x44, 0x8B, 0x00, 0, 0, 0, 0, 0]
        #expect(try ANTFSResponse.decode(burst).response == .other(id: 0x8B, bytes: [0, 0, 0, 0, 0, 0]))
    }

    @Test("truncated and inconsistent bursts are typed errors with the offset")
    func errors() throws {
        let beacon = ANTFSLayout.beacon(state: 2, descriptor: [0x39, 5, 0, 0])
        #expect(throws: ANTFSError.truncated(field: "beacon", offset: 0, needed: 8, available: 3)) {
            try ANTFSResponse.decode([0x43, 0x2C, 0x02])
        }
        #expect(throws: ANTFSError.invalidValue(field: "beacon id", offset: 0, value: 0x44)) {
            try ANTFSResponse.decode([0x44, 0x89] + [UInt8](repeating: 0, count: 30))
        }
        #expect(throws: ANTFSError.truncated(field: "response", offset: 8, needed: 8, available: 0)) { try ANTFSResponse.decode(beacon) }
        #expect(throws: ANTFSError.truncated(field: "response", offset: 8, needed: 8, available: 5)) {
            try ANTFSResponse.decode(beacon + [0x44, 0x84, 0, 0, 0])
        }
        #expect(throws: ANTFSError.invalidValue(field: "response marker", offset: 8, value: 0x43)) {
            try ANTFSResponse.decode(beacon + beacon)
        }
        // An authentication response that says 20 bytes of data but carries 8.
        #expect(throws: ANTFSError.truncated(field: "authentication data", offset: 16, needed: 20, available: 8)) {
            try ANTFSResponse.decode(beacon + [0x44, 0x84, 1, 20, 1, 2, 3, 4] + [UInt8](repeating: 0x41, count: 8))
        }
        // A download header cut short.
        #expect(throws: ANTFSError.truncated(field: "download response header", offset: 8, needed: 16, available: 8)) {
            try ANTFSResponse.decode(beacon + [0x44, 0x89, 0, 0, 0, 2, 0, 0])
        }
        // The data without the CRC packet.
        let data = [UInt8](repeating: 0x5A, count: 0x200)
        let noCRC = Array(ANTFSLayout.downloadReply(remaining: 0x200, offset: 0, size: 0x200, data: data, crc: 0).dropLast(8))
        #expect(throws: ANTFSError.truncated(field: "download data and CRC", offset: 24, needed: 0x208, available: 0x200)) {
            try ANTFSResponse.decode(noCRC)
        }
        // A block claiming 4 GB: refused from the lengths, nothing allocated.
        let huge = ANTFSLayout.downloadReply(remaining: .max, offset: 0, size: .max, data: [1, 2, 3], crc: 0)
        #expect(throws: ANTFSError.truncated(field: "download data and CRC", offset: 24, needed: Int(UInt32.max) + 8, available: 16)) {
            try ANTFSResponse.decode(huge)
        }
    }

    @Test("every prefix of a block is refused, never trapped on")
    func prefixes() throws {
        var rng = SeededGenerator(seed: 0x5EED)
        let data = rng.bytes(96)
        let burst = ANTFSLayout.downloadReply(remaining: 96, offset: 0, size: 96, data: data, crc: ANTFSLayout.crc(0, data))
        for length in 0..<burst.count {
            #expect(throws: ANTFSError.self) { try ANTFSResponse.decode(Array(burst.prefix(length))) }
        }
        _ = try ANTFSResponse.decode(burst)
    }

    @Test("random bursts and mutations of valid ones decode or throw, and what decodes encodes back to a burst that decodes the same")
    func randomBursts() throws {
        var rng = SeededGenerator(seed: 0xB0B5)
        let valid = [
            ANTFSLayout.authReply(result: 0, serial: 42, data: Array("Forerunner 610".utf8)),
            ANTFSLayout.downloadReply(remaining: 40, offset: 8, size: 48, data: rng.bytes(40), crc: 7),
            ANTFSLayout.downloadReply(result: 1, remaining: 0, offset: 0, size: 0, data: [], crc: 0),
        ]
        var decoded = 0
        for i in 0..<20_000 {
            var bytes: [UInt8]
            if i % 3 == 0 {
                bytes = rng.bytes(Int.random(in: 0...64, using: &rng))
                if bytes.count > 9 { bytes[0] = 0x43; bytes[8] = 0x44; bytes[9] = [0x84, 0x89, 0x8A][i % 3] }
            } else {
                bytes = valid[i % valid.count]
                for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                if Bool.random(using: &rng) { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng))) }
            }
            guard let (beacon, response) = try? ANTFSResponse.decode(bytes) else { continue }
            decoded += 1
            let again = try ANTFSResponse.decode(beacon.bytes + response.bytes)
            #expect(again.response == response)
        }
        #expect(decoded > 2_000)
    }
}
