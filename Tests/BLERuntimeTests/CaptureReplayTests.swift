import Foundation
import Testing
import BLEHost
import GATTProfiles
@testable import BLERuntime
import TestSupport

/// The committed capture of a HealthGate session against the peer, and the peer's sent log.
enum ReplayFixture {
    static let folder = BLEPeer.packageRoot.appendingPathComponent("Fixtures/ble")
    static let hostCapture = folder.appendingPathComponent("hr-csc-watch.btsnoop").path
    static let peerCapture = folder.appendingPathComponent("hr-csc-watch.peer.btsnoop").path
    static let sentLog = folder.appendingPathComponent("hr-csc-watch.sent.jsonl").path

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
        #expect(result.datalink == .h4)

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
        #expect(h1Result.datalink == .h1)
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
