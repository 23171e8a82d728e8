import Foundation
import Testing
import BluetoothCentral
@testable import BLEHost
import GATTProfiles
import TestSupport

/// The committed capture of a HealthGate session against the peer, and the peer's sent log.
enum ReplayFixture {
    static let folder = URL(fileURLWithPath: PackagePaths.fixture("ble"))
    static let hostCapture = folder.appendingPathComponent("hr-csc-watch.btsnoop").path
    static let peerCapture = folder.appendingPathComponent("hr-csc-watch.peer.btsnoop").path
    static let sentLog = folder.appendingPathComponent("hr-csc-watch.sent.jsonl").path
    /// The host capture as pcap and pcapng (link type 201), written by tools/btsnoop-to-pcap.py.
    static let pcapCapture = folder.appendingPathComponent("hr-csc-watch.pcap").path
    static let pcapngCapture = folder.appendingPathComponent("hr-csc-watch.pcapng").path

    static func bytes(_ path: String = hostCapture) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The sent log's lines in order.
    static func sent() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: sentLog, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// Byte offsets where each record of a well-formed capture starts, and the end.
    static func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var at = 16
        while at + 24 <= bytes.count {
            offsets.append(at)
            let included = Int(bytes[at + 4]) << 24 | Int(bytes[at + 5]) << 16 | Int(bytes[at + 6]) << 8 | Int(bytes[at + 7])
            at += 24 + included
        }
        return offsets + [at]
    }
}

/// Builds small captures packet by packet (H4 datalink), for cases the fixture does not hold.
struct CaptureBuilder {
    var records: [BTSnoop.Record] = []
    /// 2023-11-14T22:13:20Z, then one millisecond per packet.
    var time = BTSnoop.unixEpochOffset + 1_700_000_000_000_000

    mutating func add(_ packet: H4Packet, received: Bool) {
        time += 1000
        records.append(.h4(packet, received: received, timestamp: time))
    }

    mutating func event(_ code: UInt8, _ parameters: [UInt8]) {
        add(H4Packet(.event, [code, UInt8(parameters.count)] + parameters), received: true)
    }

    mutating func connected(handle: UInt16, peer: DeviceAddress, enhanced: Bool = false) {
        var p: [UInt8] = [enhanced ? 0x0A : 0x01, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00, peer.kind.rawValue]
        p += peer.littleEndianBytes
        if enhanced { p += [UInt8](repeating: 0, count: 12) }
        p += [0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]
        event(HCIEvent.Code.leMeta, p)
    }

    mutating func disconnected(handle: UInt16, reason: UInt8) {
        event(HCIEvent.Code.disconnectionComplete, [0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), reason])
    }

    /// An ATT PDU in ACL packets of at most `fragment` bytes.
    mutating func att(_ pdu: ATTPDU, handle: UInt16, fromPeer: Bool, fragment: Int = 251) {
        let l2cap = L2CAPFrame(channel: L2CAPFrame.attChannel, payload: pdu.encoded).encoded
        for packet in ACLFragmenter.fragments(of: l2cap, handle: handle, maxDataLength: fragment) {
            add(packet.h4Packet, received: fromPeer)
        }
    }

    /// Service 0x180D (1-5): Heart Rate Measurement declaration 2, value 3, CCCD 4.
    mutating func heartRateDiscovery(handle: UInt16) {
        att(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService), handle: handle, fromPeer: false)
        att(.readByGroupTypeResponse([ATTGroupValue(handle: 1, endGroupHandle: 5, value: [0x0D, 0x18])]), handle: handle, fromPeer: true)
        att(.readByTypeRequest(start: 1, end: 5, type: .characteristic), handle: handle, fromPeer: false)
        att(.readByTypeResponse([ATTHandleValue(handle: 2, value: [0x10, 0x03, 0x00, 0x37, 0x2A])]), handle: handle, fromPeer: true)
        att(.findInformationRequest(start: 4, end: 5), handle: handle, fromPeer: false)
        att(.findInformationResponse([ATTHandleUUID(handle: 4, uuid: .clientCharacteristicConfiguration)]), handle: handle, fromPeer: true)
    }

    func bytes(_ datalink: BTSnoop.Datalink = .h4) -> [UInt8] {
        let writer = BTSnoop.Writer(datalink: datalink)
        return writer.header + records.flatMap { writer.record($0) }
    }
}

/// Rewrites an H4 capture as H1 (no packet type byte; the flags tell commands/events from data).
func h1Capture(_ h4: [UInt8]) throws -> [UInt8] {
    var reader = try BTSnoop.Reader(h4)
    let writer = BTSnoop.Writer(datalink: .h1)
    var out = writer.header
    for r in try reader.readAll() {
        let packet = try r.packet(datalink: .h4)
        out += writer.record(BTSnoop.Record(received: r.received, isCommandOrEvent: packet.type == .command || packet.type == .event,
                                            timestamp: r.timestamp, data: packet.bytes))
    }
    return out
}

let hrPeer = DeviceAddress(0xC0_4E_47_00_00_01, kind: .random)
let cscPeer = DeviceAddress(0xC0_4E_47_00_00_02, kind: .random)

@Suite struct CaptureReplayFixtureTests {
    @Test func fixtureGivesExactlyTheSentNotifications() throws {
        let result = try CaptureReplay.replay(file: ReplayFixture.hostCapture)
        let sent = try ReplayFixture.sent()
        #expect(sent.count == 24)
        #expect(result.statistics.notifications == sent.count)
        #expect(result.notifications.count == sent.count)
        #expect(result.statistics.decodeErrors == 0 && result.problems.isEmpty)
        #expect(result.statistics.valuesOnUnknownHandles == 0 && result.statistics.valuesWithoutPeer == 0)
        #expect(result.statistics.truncatedRecords == 0)
        #expect(result.format == .btsnoop(.h4))

        for (id, characteristic) in [("hr", 0x2A37), ("csc", 0x2A5B)] as [(String, UInt16)] {
            let entries = sent.filter { $0["peripheral"] as? String == id }
            let text = try #require(entries.first?["address"] as? String)
            let address = try #require(DeviceAddress(text, kind: .random))
            let replayed = result.notifications.filter { $0.peer == address }
            // Same bytes, same order, same count, per device.
            #expect(replayed.map { hexString($0.value) } == entries.compactMap { $0["hex"] as? String }, "\(id)")
            #expect(replayed.allSatisfy { $0.characteristic == BluetoothUUID(characteristic) }, "\(id)")
            #expect(replayed.allSatisfy { Int($0.valueHandle) == entries.first?["handle"] as? Int }, "\(id)")
            #expect(replayed.allSatisfy { $0.peer.kind == .random })
            // The capture's time of each value is just after the peer's time of sending it.
            for (n, entry) in zip(replayed, entries) {
                let sentAt = try #require(entry["t"] as? Double)
                let delay = n.receivedAt.timeIntervalSince1970 - sentAt
                #expect(delay > -0.01 && delay < 1, "\(id) seq \(entry["seq"] ?? "?"): \(delay) s")
            }
        }
        // Decoded like `ble watch` would: the bpm the peer encoded.
        for (n, entry) in zip(result.notifications.filter { $0.peer == hrPeer }, sent.filter { $0["peripheral"] as? String == "hr" }) {
            guard case .heartRate(let m)? = try GATTProfileDecoder.decode(characteristic: 0x2A37, n.value) else {
                Issue.record("not a heart rate value")
                continue
            }
            #expect(Int(m.beatsPerMinute) == (entry["fields"] as? [String: Any])?["bpm"] as? Int)
        }
    }

    @Test func fixtureTimestampsIncreaseWithinTheCapture() throws {
        let result = try CaptureReplay.replay(file: ReplayFixture.hostCapture)
        let first = try #require(result.firstRecordAt), last = try #require(result.lastRecordAt)
        #expect(first < last && last.timeIntervalSince(first) < 60)
        let times = result.values.map(\.receivedAt)
        #expect(times == times.sorted())
        #expect(times.allSatisfy { $0 >= first && $0 <= last })
        #expect(result.values.map(\.record) == result.values.map(\.record).sorted())
    }

    @Test func fixtureConnectionsAndDatabases() throws {
        let result = try CaptureReplay.replay(file: ReplayFixture.hostCapture)
        #expect(result.connections.count == 2 && result.statistics.connections == 2)
        let hr = try #require(result.connections.first { $0.peer == hrPeer })
        let csc = try #require(result.connections.first { $0.peer == cscPeer })
        #expect(hr.handle != csc.handle)
        for c in [hr, csc] {
            #expect(c.role == 0)
            #expect(c.disconnectReason == .localHostTerminated)
            #expect(c.mtu > 23)
            #expect(c.connectedAt! < c.disconnectedAt!)
            #expect(c.notifications == 12)
        }
        let services = Set(hr.database.services.map(\.uuid))
        #expect(services.isSuperset(of: [BluetoothUUID(0x180D), BluetoothUUID(0x180F), BluetoothUUID(0x180A)]))
        let measurement = try #require(hr.database.characteristics(BluetoothUUID(0x2A37)).first)
        #expect(measurement.canNotify && measurement.cccdHandle != nil)
        #expect(csc.database.characteristics(BluetoothUUID(0x2A5B)).count == 1)
        // The reads the session made: Battery Level 87 %, CSC Feature wheel + crank.
        let reads = result.values.filter { $0.kind == .read }
        #expect(reads.map(\.characteristic) == [BluetoothUUID(0x2A19), BluetoothUUID(0x2A5C)])
        #expect(reads.map(\.value) == [[87], [0x03, 0x00]])
        #expect(reads.map(\.peer) == [hrPeer, cscPeer])
    }

    /// The same session as the peer's Bumble writer captured it gives the same values.
    @Test func captureWrittenByThePeerGivesTheSameValues() throws {
        let ours = try CaptureReplay.replay(file: ReplayFixture.hostCapture)
        let theirs = try CaptureReplay.replay(file: ReplayFixture.peerCapture)
        func key(_ v: CaptureReplay.Value) -> String { "\(v.kind) \(v.peer?.text ?? "-") \(v.characteristic?.description ?? "-") \(hexString(v.value))" }
        #expect(theirs.values.map(key) == ours.values.map(key))
        #expect(theirs.statistics.decodeErrors == 0)
        #expect(theirs.statistics.records == ours.statistics.records)
    }

    @Test func h1DatalinkGivesTheSameValues() throws {
        let h4 = try ReplayFixture.bytes()
        let h4Result = try CaptureReplay.replay(h4)
        let h1Result = try CaptureReplay.replay(try h1Capture(h4))
        #expect(h1Result.format == .btsnoop(.h1))
        #expect(h1Result.values == h4Result.values)
        #expect(h1Result.connections == h4Result.connections)
        #expect(h1Result.statistics == h4Result.statistics)
    }

    /// Like a phone's HCI log switched on mid-session: no Connection Complete, no discovery.
    @Test func captureWithoutConnectionAndDiscoveryCountsEveryValue() throws {
        let bytes = try ReplayFixture.bytes()
        var reader = try BTSnoop.Reader(bytes)
        let records = try reader.readAll()
        let full = try CaptureReplay.replay(bytes)
        let firstNotification = try #require(full.values.first { $0.kind == .notification }?.record)
        let writer = BTSnoop.Writer()
        let late = writer.header + records[firstNotification...].flatMap { writer.record($0) }
        let result = try CaptureReplay.replay(late)
        let notificationsAfter = full.values.filter { $0.kind == .notification }.count
        #expect(result.values.count == notificationsAfter)
        #expect(result.statistics.notifications == notificationsAfter)
        #expect(result.statistics.valuesOnUnknownHandles == notificationsAfter)
        #expect(result.statistics.valuesWithoutPeer == notificationsAfter)
        #expect(result.notifications.isEmpty)
        #expect(result.values.allSatisfy { $0.peer == nil && $0.characteristic == nil })
        #expect(result.connections.count == 2)
        #expect(result.values.map(\.value) == full.values.filter { $0.kind == .notification }.map(\.value))
    }
}

@Suite struct CaptureReplaySyntheticTests {
    @Test func discoveryNamesValuesAndBuildsTheDatabase() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        c.att(.handleValueIndication(handle: 3, value: [0x00, 71]), handle: 0x40, fromPeer: true)
        c.att(.handleValueConfirmation, handle: 0x40, fromPeer: false)
        // The host's own notifications (as a server) are not values it received.
        c.att(.handleValueNotification(handle: 3, value: [0x00, 99]), handle: 0x40, fromPeer: false)
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.values.map(\.kind) == [.notification, .indication])
        #expect(result.notifications.map(\.value) == [[0x00, 70], [0x00, 71]])
        #expect(result.notifications.allSatisfy { $0.peer == hrPeer && $0.characteristic == BluetoothUUID(0x2A37) && $0.valueHandle == 3 })
        #expect(result.statistics.indications == 1 && result.statistics.notifications == 1)
        let db = try #require(result.connections.first).database
        #expect(db.services.map(\.uuid) == [BluetoothUUID(0x180D)])
        let measurement = try #require(db.characteristics.first)
        #expect(measurement.valueHandle == 3 && measurement.endHandle == 5 && measurement.cccdHandle == 4)
        #expect(result.connections.first?.disconnectedAt == nil)
    }

    @Test func reusedHandleIsANewLinkWithItsOwnPeerAndDatabase() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        c.disconnected(handle: 0x40, reason: 0x13)
        c.connected(handle: 0x40, peer: cscPeer, enhanced: true)
        c.att(.handleValueNotification(handle: 3, value: [0x01]), handle: 0x40, fromPeer: true)
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.connections.map(\.peer) == [hrPeer, cscPeer])
        #expect(result.connections[0].disconnectReason == .remoteUserTerminated)
        #expect(result.values.map(\.peer) == [hrPeer, cscPeer])
        #expect(result.values.map(\.characteristic) == [BluetoothUUID(0x2A37), nil])
        #expect(result.values.map(\.connection) == [0, 1])
        #expect(result.statistics.valuesOnUnknownHandles == 1 && result.connections[1].valuesOnUnknownHandles == 1)
        #expect(result.notifications.count == 1)
    }

    @Test func fragmentedPDUsAreReassembledPerHandle() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x01, peer: hrPeer)
        c.connected(handle: 0x02, peer: cscPeer)
        c.heartRateDiscovery(handle: 0x01)
        let long = (0..<60).map { UInt8($0) }
        // Interleaved fragments of two links.
        var a = CaptureBuilder(), b = CaptureBuilder()
        a.att(.handleValueNotification(handle: 3, value: long), handle: 0x01, fromPeer: true, fragment: 27)
        b.att(.handleValueNotification(handle: 9, value: long.reversed()), handle: 0x02, fromPeer: true, fragment: 27)
        for (x, y) in zip(a.records, b.records) {
            c.add(try x.packet(datalink: .h4), received: true)
            c.add(try y.packet(datalink: .h4), received: true)
        }
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.values.map(\.value) == [long, long.reversed()])
        #expect(result.values.map(\.characteristic) == [BluetoothUUID(0x2A37), nil])
        #expect(result.statistics.aclPackets == a.records.count + b.records.count + 6)
        #expect(result.statistics.decodeErrors == 0)
    }

    @Test func longReadsAreAssembledFromReadBlob() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.att(.exchangeMTURequest(247), handle: 0x40, fromPeer: false)
        c.att(.exchangeMTUResponse(40), handle: 0x40, fromPeer: true)
        c.att(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService), handle: 0x40, fromPeer: false)
        c.att(.readByGroupTypeResponse([ATTGroupValue(handle: 1, endGroupHandle: 5, value: [0x0A, 0x18])]), handle: 0x40, fromPeer: true)
        c.att(.readByTypeRequest(start: 1, end: 5, type: .characteristic), handle: 0x40, fromPeer: false, fragment: 10)
        c.att(.readByTypeResponse([ATTHandleValue(handle: 2, value: [0x02, 0x03, 0x00, 0x29, 0x2A]),
                                   ATTHandleValue(handle: 4, value: [0x02, 0x05, 0x00, 0x24, 0x2A])]), handle: 0x40, fromPeer: true)
        let name = Array(repeating: UInt8(ascii: "A"), count: 39) + Array("BCDEFGHIJK".utf8)
        c.att(.readRequest(handle: 3), handle: 0x40, fromPeer: false)
        c.att(.readResponse(Array(name.prefix(39))), handle: 0x40, fromPeer: true)
        c.att(.handleValueNotification(handle: 9, value: [1]), handle: 0x40, fromPeer: true)
        c.att(.readBlobRequest(handle: 3, offset: 39), handle: 0x40, fromPeer: false)
        c.att(.readBlobResponse(Array(name.dropFirst(39))), handle: 0x40, fromPeer: true)
        // Exactly full, then Attribute Not Long ends it.
        c.att(.readRequest(handle: 5), handle: 0x40, fromPeer: false)
        c.att(.readResponse(Array(repeating: 0x4D, count: 39)), handle: 0x40, fromPeer: true)
        c.att(.readBlobRequest(handle: 5, offset: 39), handle: 0x40, fromPeer: false)
        c.att(.errorResponse(requestOpcode: ATTPDU.Opcode.readBlobRequest, handle: 5, error: .attributeNotLong), handle: 0x40, fromPeer: true)
        // A descriptor read is no reading.
        c.att(.readRequest(handle: 6), handle: 0x40, fromPeer: false)
        c.att(.readResponse([0x01, 0x00]), handle: 0x40, fromPeer: true)
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.connections.first?.mtu == 40)
        #expect(result.values.map(\.kind) == [.notification, .read, .read])
        let reads = result.values.filter { $0.kind == .read }
        #expect(reads.map(\.value) == [name, Array(repeating: 0x4D, count: 39)])
        #expect(reads.map(\.characteristic) == [BluetoothUUID(0x2A29), BluetoothUUID(0x2A24)])
        #expect(result.statistics.reads == 2)
    }

    @Test func readByCharacteristicUUIDAndServicesByUUIDNeedNoFullDiscovery() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.att(.readByTypeRequest(start: 1, end: 0xFFFF, type: BluetoothUUID(0x2A19)), handle: 0x40, fromPeer: false)
        c.att(.readByTypeResponse([ATTHandleValue(handle: 0x0B, value: [64])]), handle: 0x40, fromPeer: true)
        c.att(.other(opcode: ATTPDU.Opcode.findByTypeValueRequest, parameters: [0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18]),
              handle: 0x40, fromPeer: false)
        c.att(.other(opcode: 0x07, parameters: [0x09, 0x00, 0x0C, 0x00]), handle: 0x40, fromPeer: true)
        c.att(.handleValueNotification(handle: 0x0B, value: [63]), handle: 0x40, fromPeer: true)
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.values.map(\.kind) == [.read, .notification])
        #expect(result.values.map(\.characteristic) == [BluetoothUUID(0x2A19), BluetoothUUID(0x2A19)])
        #expect(result.connections.first?.database.services.map(\.uuid) == [BluetoothUUID(0x180F)])
    }

    @Test func resetForgetsLinks() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.add(HCICommand.reset.h4Packet, received: false)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.connections.count == 2)
        #expect(result.connections[0].disconnectedAt != nil && result.connections[0].disconnectReason == nil)
        #expect(result.values.first?.peer == nil && result.values.first?.characteristic == nil)
        #expect(result.statistics.valuesWithoutPeer == 1)
        #expect(result.statistics.commands == 1)
    }

    @Test func writerTruncatedRecordsAreCountedAndSkipped() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        // A writer with a snap length keeps the first bytes and the original length.
        var cut = c.records[c.records.count - 1]
        cut.originalLength = UInt32(cut.data.count)
        cut.data = Array(cut.data.prefix(6))
        c.records[c.records.count - 1] = cut
        let result = try CaptureReplay.replay(c.bytes())
        #expect(result.statistics.truncatedRecords == 1)
        #expect(result.values.isEmpty)
        #expect(result.statistics.decodeErrors == 0)
    }
}

@Suite struct CaptureReplayDamageTests {
    func damage(_ bytes: [UInt8]) -> CaptureReplayError? {
        do {
            _ = try CaptureReplay.replay(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func emptyFile() throws {
        let error = try #require(damage([]))
        #expect(error.offset == 0)
        #expect(error.description == "empty file, not a btsnoop capture")
    }

    @Test func badMagic() throws {
        var bytes = try ReplayFixture.bytes()
        bytes[3] = UInt8(ascii: "X")
        let error = try #require(damage(bytes))
        #expect(error.offset == 0)
        #expect(error.description.contains("not a btsnoop capture"))
        #expect(damage(Array("PK\u{3}\u{4} not a capture at all".utf8))?.offset == 0)
    }

    @Test func wrongVersionAndDatalink() throws {
        var version = try ReplayFixture.bytes()
        version[11] = 2
        let v = try #require(damage(version))
        #expect(v.offset == 8)
        #expect(v.description.contains("byte 8") && v.description.contains("version"))

        var datalink = try ReplayFixture.bytes()
        datalink[14] = 0x07; datalink[15] = 0xD1  // 2001, a Linux monitor capture
        let d = try #require(damage(datalink))
        #expect(d.offset == 12)
        #expect(d.description.contains("unsupported btsnoop datalink type 2001"))
    }

    @Test func truncatedHeader() throws {
        let bytes = try ReplayFixture.bytes()
        for length in [1, 7, 8, 10, 15] {
            let error = try #require(damage(Array(bytes.prefix(length))), "\(length) bytes")
            #expect(error.offset == (length < 8 ? 0 : length < 12 ? 8 : 12), "\(length) bytes: \(error)")
        }
        // A header alone is a capture without records.
        let empty = try CaptureReplay.replay(Array(bytes.prefix(16)))
        #expect(empty.statistics.records == 0 && empty.values.isEmpty)
    }

    @Test func truncatedRecordKeepsWhatCameBefore() throws {
        let bytes = try ReplayFixture.bytes()
        let offsets = ReplayFixture.recordOffsets(bytes)
        let full = try CaptureReplay.replay(bytes)
        // Cut inside the last record's data (named by where the data starts), then inside its
        // header (named by the field cut short).
        let last = offsets[offsets.count - 2]
        for (cut, range) in [(bytes.count - 2, (last + 24)...(last + 24)), (last + 10, last...(last + 23))] {
            let error = try #require(damage(Array(bytes.prefix(cut))))
            let offset = try #require(error.offset)
            #expect(range.contains(offset), "\(error)")
            #expect(error.description.contains("byte \(offset)"))
            guard case .damaged(_, let partial) = error else { Issue.record("\(error)"); continue }
            #expect(partial.statistics.records == full.statistics.records - 1)
            #expect(partial.notifications == full.notifications)
        }
    }

    @Test func absurdRecordLengths() throws {
        let bytes = try ReplayFixture.bytes()
        let offsets = ReplayFixture.recordOffsets(bytes)
        let third = offsets[2]
        var huge = bytes
        for i in 0..<8 { huge[third + i] = 0xFF }  // original and included length 0xFFFFFFFF
        let error = try #require(damage(huge))
        #expect(error.offset == third + 4)
        guard case .damaged(let e, let partial) = error else { Issue.record("\(error)"); return }
        #expect(e.reason == .tooLong(field: "included length", length: 0xFFFF_FFFF, limit: 5 + 0xFFFF))
        #expect(partial.statistics.records == 2)

        var above = bytes  // included length above the original length
        above[third + 3] = 0x00
        #expect(damage(above)?.offset == third + 4)
    }

    @Test func garbagePacketsInAValidFileAreCounted() throws {
        let bytes = try ReplayFixture.bytes()
        let offsets = ReplayFixture.recordOffsets(bytes)
        let full = try CaptureReplay.replay(bytes)
        var garbled = bytes
        // Record 1: an unknown H4 packet type; the first Disconnection Complete: a parameter
        // length that disagrees with the packet.
        garbled[offsets[1] + 24] = 0xFF
        let disconnection = try #require(offsets.indices.dropLast().first { i in
            bytes[offsets[i] + 24] == 0x04 && bytes[offsets[i] + 25] == HCIEvent.Code.disconnectionComplete
        })
        garbled[offsets[disconnection] + 24 + 2] = 0xEE
        let result = try CaptureReplay.replay(garbled)
        #expect(result.statistics.decodeErrors == 2)
        #expect(result.problems.map(\.record) == [1, disconnection])
        #expect(result.problems.map(\.offset) == [offsets[1], offsets[disconnection]])
        #expect(result.connections.filter { $0.disconnectedAt == nil }.count == 1)
        #expect(result.problems[0].description.contains("unknown H4 packet type 0xFF"))
        #expect(result.notifications == full.notifications)
    }

    @Test func randomBytesAfterAValidPrefix() throws {
        let bytes = try ReplayFixture.bytes()
        let offsets = ReplayFixture.recordOffsets(bytes)
        var random = SeededGenerator(seed: 0x5EED_0001)
        for round in 0..<300 {
            let cut = offsets[Int.random(in: 0..<offsets.count, using: &random)]
            let prefix = Array(bytes.prefix(cut))
            let clean = try CaptureReplay.replay(prefix)
            let noisy = prefix + random.bytes(Int.random(in: 1...300, using: &random))
            let result: CaptureReplay.Result
            do {
                result = try CaptureReplay.replay(noisy)
            } catch {
                guard case .damaged(let e, let partial) = error else { Issue.record("round \(round): \(error)"); continue }
                #expect(e.offset >= cut && e.offset <= noisy.count, "round \(round): \(e)")
                result = partial
            }
            #expect(Array(result.values.prefix(clean.values.count)) == clean.values, "round \(round)")
        }
    }

    /// A few thousand mutated copies of the fixture: a typed error or counted problems, never a
    /// crash or a hang.
    @Test func mutatedCopiesNeverCrash() throws {
        let bytes = try ReplayFixture.bytes()
        var random = SeededGenerator(seed: 0xB75_400B)
        var damaged = 0, withProblems = 0
        let started = Date()
        for round in 0..<3000 {
            var m = bytes
            switch Int.random(in: 0..<5, using: &random) {
            case 0:
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    m[Int.random(in: 0..<m.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                m = Array(m.prefix(Int.random(in: 0..<m.count, using: &random)))
            case 2:
                let at = Int.random(in: 16..<m.count, using: &random)
                m.insert(contentsOf: random.bytes(Int.random(in: 1...40, using: &random)), at: at)
            case 3:
                let at = Int.random(in: 16..<m.count, using: &random)
                m.removeSubrange(at..<min(m.count, at + Int.random(in: 1...40, using: &random)))
            default:
                // Bits flipped only inside packet data (after the header), keeping the framing.
                let at = Int.random(in: 40..<m.count, using: &random)
                m[at] ^= 1 << UInt8.random(in: 0...7, using: &random)
            }
            do {
                let r = try CaptureReplay.replay(m)
                if r.statistics.decodeErrors > 0 { withProblems += 1 }
                check(r, round)
            } catch {
                damaged += 1
                if let offset = error.offset { #expect(offset >= 0 && offset <= m.count, "round \(round)") }
                if case .damaged(_, let partial) = error { check(partial, round) }
            }
        }
        #expect(damaged > 100 && withProblems > 100, "damaged \(damaged), with problems \(withProblems)")
        #expect(Date().timeIntervalSince(started) < 120)
    }

    private func check(_ r: CaptureReplay.Result, _ round: Int) {
        let s = r.statistics
        #expect(r.values.count == s.notifications + s.indications + s.reads, "round \(round)")
        #expect(r.problems.count == min(s.decodeErrors, CaptureReplay.maxProblems), "round \(round)")
        #expect(r.values.map(\.record) == r.values.map(\.record).sorted(), "round \(round)")
        #expect(r.values.allSatisfy { $0.connection < r.connections.count }, "round \(round)")
    }
}

/// pcap and pcapng files of link type 201 built here, independently of PacketCapture (which reads
/// them in the replay): little-endian, microsecond timestamps.
enum PcapBytes {
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) } }
    static func be32(_ value: UInt32) -> [UInt8] { le32(value).reversed() }

    /// A btsnoop record as a link type 201 packet: the direction, then the H4 packet.
    static func withDirection(_ record: BTSnoop.Record, direction: UInt32? = nil) -> [UInt8] {
        be32(direction ?? (record.received ? 1 : 0)) + record.data
    }

    /// Classic pcap: the records (a truncated btsnoop record stays truncated) under `linkType`.
    static func pcap(_ records: [BTSnoop.Record], linkType: UInt32 = 201) -> [UInt8] {
        var out = le32(0xA1B2_C3D4) + [2, 0, 4, 0] + le32(0) + le32(0) + le32(65_540) + le32(linkType)
        for r in records {
            let data = withDirection(r)
            let micros = r.unixMicroseconds
            out += le32(UInt32(micros / 1_000_000)) + le32(UInt32(micros % 1_000_000))
            out += le32(UInt32(data.count)) + le32(r.originalLength + 4) + data
        }
        return out
    }

    static func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        return le32(type) + le32(UInt32(12 + padded.count)) + padded + le32(UInt32(12 + padded.count))
    }

    /// pcapng with one interface per link type (microseconds), then the packets in order.
    static func pcapng(interfaces: [UInt32], _ packets: [(interface: UInt32, data: [UInt8], micros: Int64)]) -> [UInt8] {
        var out = block(0x0A0D_0D0A, le32(0x1A2B_3C4D) + [1, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8))
        for linkType in interfaces { out += block(1, le32(linkType) + le32(0)) }
        for p in packets {
            let units = UInt64(p.micros)
            out += block(6, le32(p.interface) + le32(UInt32(units >> 32)) + le32(UInt32(units & 0xFFFF_FFFF))
                         + le32(UInt32(p.data.count)) + le32(UInt32(p.data.count)) + p.data)
        }
        return out
    }

    /// Records as packets of interface 0 for `pcapng`.
    static func packets(_ records: [BTSnoop.Record]) -> [(interface: UInt32, data: [UInt8], micros: Int64)] {
        records.map { (0, withDirection($0), $0.unixMicroseconds) }
    }

    /// Where each block of a little-endian pcapng file starts.
    static func blockOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = [], at = 0
        while at + 8 <= bytes.count {
            offsets.append(at)
            at += bytes[(at + 4)..<(at + 8)].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        return offsets
    }
}

@Suite struct CaptureReplayPcapTests {
    @Test("the fixture as pcap and pcapng gives exactly the btsnoop's values, links and statistics")
    func fixtureInEveryFormat() throws {
        let btsnoop = try CaptureReplay.replay(file: ReplayFixture.hostCapture)
        let pcap = try CaptureReplay.replay(file: ReplayFixture.pcapCapture)
        let pcapng = try CaptureReplay.replay(file: ReplayFixture.pcapngCapture)
        #expect(btsnoop.format == .btsnoop(.h4) && pcap.format == .pcap && pcapng.format == .pcapng)
        #expect(btsnoop.notifications.count == 24)
        for (name, other) in [("pcap", pcap), ("pcapng", pcapng)] {
            #expect(other.values == btsnoop.values, "\(name)")
            #expect(other.notifications == btsnoop.notifications, "\(name)")
            #expect(other.connections == btsnoop.connections, "\(name)")
            #expect(other.firstRecordAt == btsnoop.firstRecordAt && other.lastRecordAt == btsnoop.lastRecordAt, "\(name)")
            var statistics = other.statistics
            statistics.skippedRecords = 0
            #expect(statistics == btsnoop.statistics, "\(name)")
        }
        #expect(pcap.statistics.skippedRecords == 0 && pcap.problems.isEmpty)
        // The pcapng's USB packet comes after the Bluetooth records, before the statistics block.
        #expect(pcapng.statistics.skippedRecords == 1)
        let usbBlock = try #require(PcapBytes.blockOffsets(try ReplayFixture.bytes(ReplayFixture.pcapngCapture)).dropLast().last)
        #expect(pcapng.problems.map(\.description) == [
            "record 152 (byte \(usbBlock)): link type 220 (USB Linux, 64-byte header) is not Bluetooth H4 with direction (201); "
                + "1 record of other link types skipped",
        ])
    }

    @Test("H4 records in a pcap replay exactly as in btsnoop, writer-truncated ones included")
    func syntheticSessionInBothFormats() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: Array(0..<60)), handle: 0x40, fromPeer: true, fragment: 27)
        c.att(.handleValueIndication(handle: 3, value: [0x00, 71]), handle: 0x40, fromPeer: true)
        c.att(.handleValueConfirmation, handle: 0x40, fromPeer: false)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 99]), handle: 0x40, fromPeer: false)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 72]), handle: 0x40, fromPeer: true)
        var cut = c.records[c.records.count - 1]
        cut.originalLength = UInt32(cut.data.count)
        cut.data = Array(cut.data.prefix(6))
        c.records[c.records.count - 1] = cut
        c.disconnected(handle: 0x40, reason: 0x13)
        let btsnoop = try CaptureReplay.replay(c.bytes())
        let pcap = try CaptureReplay.replay(PcapBytes.pcap(c.records))
        #expect(pcap.format == .pcap)
        #expect(pcap.values == btsnoop.values && pcap.connections == btsnoop.connections && pcap.statistics == btsnoop.statistics)
        #expect(pcap.values.map(\.value) == [Array(0..<60), [0x00, 71]])
        #expect(pcap.statistics.truncatedRecords == 1)
    }

    @Test("records of other link types in a pcapng are skipped and counted, with one problem line; indexes count them")
    func otherLinkTypesAreSkipped() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        let usb: [UInt8] = Array(repeating: 0, count: 64)
        var packets = PcapBytes.packets(c.records)
        packets.insert((1, usb, c.records[2].unixMicroseconds), at: 2)
        packets.insert((2, [1, 2, 3], c.records[3].unixMicroseconds), at: 4)
        let bytes = PcapBytes.pcapng(interfaces: [201, 220, 189], packets)
        let result = try CaptureReplay.replay(bytes)
        let reference = try CaptureReplay.replay(c.bytes())
        #expect(result.statistics.skippedRecords == 2)
        #expect(result.statistics.records == c.records.count)
        #expect(result.statistics.decodeErrors == 0)
        let blocks = PcapBytes.blockOffsets(bytes)
        #expect(result.problems == [CaptureReplay.Problem(
            record: 2, offset: blocks[1 + 3 + 2],  // after the section header and the three interfaces
            reason: "link type 220 (USB Linux, 64-byte header) is not Bluetooth H4 with direction (201); "
                + "2 records of other link types skipped")])
        // The same values, at the records' indexes in the file (the skipped ones counted).
        #expect(result.values.map(\.value) == reference.values.map(\.value))
        #expect(result.values.map(\.record) == reference.values.map { $0.record + 2 })
        #expect(result.connections == reference.connections)
    }

    @Test("a pcap of another link type replays nothing, without an error")
    func wholeFileOfAnotherLinkType() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        let result = try CaptureReplay.replay(PcapBytes.pcap(c.records, linkType: 187))
        #expect(result.format == .pcap && result.values.isEmpty && result.connections.isEmpty)
        #expect(result.statistics.records == 0 && result.statistics.skippedRecords == 2)
        #expect(result.problems.map(\.description) == ["record 0 (byte 24): link type 187 is not Bluetooth H4 with direction (201); "
                                                           + "2 records of other link types skipped"])
        #expect(result.firstRecordAt == nil)
    }

    @Test("direction bit 0 tells received from sent; records shorter than the direction are counted")
    func directionsAndShortRecords() throws {
        var c = CaptureBuilder()
        c.connected(handle: 0x40, peer: hrPeer)
        c.heartRateDiscovery(handle: 0x40)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 70]), handle: 0x40, fromPeer: true)
        c.att(.handleValueNotification(handle: 3, value: [0x00, 71]), handle: 0x40, fromPeer: true)
        let n = c.records.count
        var packets = PcapBytes.packets(c.records)
        // 0xFFFFFFFF has bit 0 set: received; 2 has it clear: sent by the host, so no value received.
        packets[n - 2].data = PcapBytes.withDirection(c.records[n - 2], direction: 0xFFFF_FFFF)
        packets[n - 1].data = PcapBytes.withDirection(c.records[n - 1], direction: 2)
        packets.append((0, [0, 0], c.records[n - 1].unixMicroseconds + 1))
        let result = try CaptureReplay.replay(PcapBytes.pcapng(interfaces: [201], packets))
        #expect(result.values.map(\.value) == [[0x00, 70]])
        #expect(result.statistics.records == n + 1 && result.statistics.decodeErrors == 1)
        #expect(result.problems.map(\.reason) == ["record of 2 bytes, shorter than its 4-byte direction"])
        #expect(result.problems.first?.record == n)
    }

    @Test("a damaged pcap or pcapng keeps what came before and names the byte")
    func damage() throws {
        let full = try CaptureReplay.replay(file: ReplayFixture.pcapCapture)
        let pcap = try ReplayFixture.bytes(ReplayFixture.pcapCapture)
        // The last record's data starts after its 16-byte header; cutting 2 bytes cuts the data.
        var last = 24
        while true {
            let captured = pcap[(last + 8)..<(last + 12)].reversed().reduce(0) { $0 << 8 | Int($1) }
            if last + 16 + captured >= pcap.count { break }
            last += 16 + captured
        }
        do {
            _ = try CaptureReplay.replay(Array(pcap.dropLast(2)))
            Issue.record("no error")
        } catch {
            #expect(error.offset == last + 16)
            #expect(error.description.hasPrefix("damaged pcap capture at byte \(last + 16): packet data truncated"), "\(error)")
            let partial = try #require(error.partial)
            #expect(partial.format == .pcap && partial.statistics.records == full.statistics.records - 1)
            #expect(partial.notifications == full.notifications)
        }

        let pcapng = try ReplayFixture.bytes(ReplayFixture.pcapngCapture)
        let blocks = PcapBytes.blockOffsets(pcapng)
        var mismatch = pcapng
        let middle = blocks[80]
        mismatch[blocks[81] - 4] ^= 0x10
        do {
            _ = try CaptureReplay.replay(mismatch)
            Issue.record("no error")
        } catch {
            guard case .damagedCapture(let e, let partial) = error else { Issue.record("\(error)"); return }
            #expect(e.offset == blocks[81] - 4)
            #expect(e.reason == .blockLengthMismatch(leading: blocks[81] - middle, trailing: (blocks[81] - middle) ^ 0x10))
            // Blocks 0 to 2 are the section header and two interfaces: block 80 is record 77.
            #expect(partial.statistics.records == 77 && partial.format == .pcapng)
            #expect(partial.values == full.values.filter { $0.record < 77 })
        }

        var version = pcap
        version[4] = 3
        do {
            _ = try CaptureReplay.replay(version)
            Issue.record("no error")
        } catch {
            #expect(error.offset == 4 && error.partial?.format == nil)
            #expect(error.description == "damaged pcap capture at byte 4: unsupported version 3.4")
        }
    }

    /// Mutated copies of both fixtures: a typed error or counted problems, never a crash or a hang.
    @Test("mutated pcap and pcapng copies never crash")
    func mutatedCopiesNeverCrash() throws {
        let seeds = [try ReplayFixture.bytes(ReplayFixture.pcapCapture), try ReplayFixture.bytes(ReplayFixture.pcapngCapture)]
        var random = SeededGenerator(seed: 0x9CA9_0001)
        var damaged = 0
        for round in 0..<2000 {
            let m = random.mutated(seeds[round % 2], from: 24)
            do {
                check(try CaptureReplay.replay(m), round)
            } catch {
                damaged += 1
                #expect((error.offset ?? 0) <= m.count, "round \(round)")
                if let partial = error.partial { check(partial, round) }
            }
        }
        #expect(damaged > 200, "damaged \(damaged)")
    }

    private func check(_ r: CaptureReplay.Result, _ round: Int) {
        let s = r.statistics
        #expect(r.values.count == s.notifications + s.indications + s.reads, "round \(round)")
        #expect(r.problems.count == min(s.decodeErrors, CaptureReplay.maxProblems) + (s.skippedRecords > 0 ? 1 : 0), "round \(round)")
        #expect(r.values.map(\.record) == r.values.map(\.record).sorted(), "round \(round)")
        #expect(r.values.allSatisfy { $0.connection < r.connections.count }, "round \(round)")
    }
}
