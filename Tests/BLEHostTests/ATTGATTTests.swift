import Testing
import BluetoothCentral
@testable import BLEHost

let customService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
let customCharacteristic = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
let longName = Array("HealthGate test peer with a name longer than one ATT read".utf8)

/// A small ATT server over a fixed attribute table, answering like a real one (entries of one
/// length, as many as fit in the MTU).
struct FakeGATTServer {
    var attributes: [(handle: UInt16, type: BluetoothUUID, value: [UInt8])]
    var mtu: UInt16 = 23
    var serverMTU: UInt16 = 23
    var failCharacteristicDiscovery: ATTErrorCode?

    static func heartRatePeer() -> FakeGATTServer {
        FakeGATTServer(attributes: [
            (1, .primaryService, h("00 18")),
            (2, .characteristic, h("02 03 00 00 2A")),
            (3, BluetoothUUID(0x2A00), longName),
            (4, .primaryService, h("0D 18")),
            (5, .characteristic, h("10 06 00 37 2A")),
            (6, BluetoothUUID(0x2A37), h("00 48")),
            (7, .clientCharacteristicConfiguration, h("00 00")),
            (8, .characteristic, h("02 09 00 38 2A")),
            (9, BluetoothUUID(0x2A38), h("01")),
            (10, .primaryService, customService.bytes128),
            (11, .characteristic, h("20 0C 00") + customCharacteristic.bytes128),
            (12, customCharacteristic, h("AA")),
            (13, .clientCharacteristicConfiguration, h("00 00")),
            (14, BluetoothUUID(0x2901), Array("x".utf8)),
        ])
    }

    func groupEnd(after i: Int) -> UInt16 {
        attributes[(i + 1)...].first { $0.type == .primaryService }.map { $0.handle - 1 } ?? 0xFFFF
    }

    mutating func handle(_ bytes: [UInt8]) -> [UInt8]? {
        guard let pdu = try? ATTPDU.decode(bytes) else { return ATTPDU.errorResponse(requestOpcode: bytes.first ?? 0, handle: 0, error: .invalidPDU).encoded }
        guard ATTPDU.isRequest(pdu.opcode) else { return nil }
        let room = Int(mtu) - 2
        func notFound(_ start: UInt16) -> [UInt8] { ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: start, error: .attributeNotFound).encoded }
        switch pdu {
        case .exchangeMTURequest(let client):
            mtu = max(23, min(client, serverMTU))
            return ATTPDU.exchangeMTUResponse(serverMTU).encoded
        case .readByGroupTypeRequest(let start, let end, let type):
            var entries: [ATTGroupValue] = []
            for (i, a) in attributes.enumerated() where a.type == type && (start...end).contains(a.handle) {
                let e = ATTGroupValue(handle: a.handle, endGroupHandle: groupEnd(after: i), value: a.value)
                if let first = entries.first, first.value.count != e.value.count { break }
                if (entries.count + 1) * (4 + e.value.count) > room { break }
                entries.append(e)
            }
            return entries.isEmpty ? notFound(start) : ATTPDU.readByGroupTypeResponse(entries).encoded
        case .readByTypeRequest(let start, let end, let type):
            if let code = failCharacteristicDiscovery { return ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: start, error: code).encoded }
            var entries: [ATTHandleValue] = []
            for a in attributes where a.type == type && (start...end).contains(a.handle) {
                if let first = entries.first, first.value.count != a.value.count { break }
                if (entries.count + 1) * (2 + a.value.count) > room { break }
                entries.append(ATTHandleValue(handle: a.handle, value: a.value))
            }
            return entries.isEmpty ? notFound(start) : ATTPDU.readByTypeResponse(entries).encoded
        case .findInformationRequest(let start, let end):
            var entries: [ATTHandleUUID] = []
            for a in attributes where (start...end).contains(a.handle) {
                if let first = entries.first, (first.uuid.uint16 == nil) != (a.type.uint16 == nil) { break }
                if (entries.count + 1) * (2 + a.type.attBytes.count) > room + 1 { break }
                entries.append(ATTHandleUUID(handle: a.handle, uuid: a.type))
            }
            return entries.isEmpty ? notFound(start) : ATTPDU.findInformationResponse(entries).encoded
        case .readRequest(let handle):
            guard let a = attributes.first(where: { $0.handle == handle }) else { return nil }
            return ATTPDU.readResponse(Array(a.value.prefix(Int(mtu) - 1))).encoded
        case .readBlobRequest(let handle, let offset):
            guard let a = attributes.first(where: { $0.handle == handle }) else { return nil }
            guard Int(offset) <= a.value.count else { return ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: handle, error: .invalidOffset).encoded }
            return ATTPDU.readBlobResponse(Array(a.value[Int(offset)...].prefix(Int(mtu) - 1))).encoded
        case .writeRequest(let handle, let value):
            guard let i = attributes.firstIndex(where: { $0.handle == handle && $0.type == .clientCharacteristicConfiguration }) else {
                return ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: handle, error: .writeNotPermitted).encoded
            }
            attributes[i].value = value
            return ATTPDU.writeResponse.encoded
        default:
            return ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: 0, error: .requestNotSupported).encoded
        }
    }
}

/// Wires a discovery to a bearer to a fake server, the way the runtime will.
struct GATTHarness {
    var bearer: ATTBearer
    var discovery: GATTDiscovery
    var server: FakeGATTServer
    var now = HostInstant.seconds(1)
    var sentByClient: [[UInt8]] = []
    var results: [GATTDiscovery.Action] = []
    var delivered: [ATTBearer.Action] = []
    /// When false, requests reach the server but its answers are held back.
    var serverAnswers = true

    enum Work { case discovery(GATTDiscovery.Action), bearer(ATTBearer.Action) }

    mutating func run(_ initial: [Work]) {
        var work = initial
        while !work.isEmpty {
            switch work.removeFirst() {
            case .discovery(.request(let pdu)):
                let (_, actions) = try! bearer.request(pdu, now: now)
                work += actions.map(Work.bearer)
            case .discovery(let other):
                results.append(other)
            case .bearer(.send(let bytes)):
                sentByClient.append(bytes)
                if serverAnswers, let answer = server.handle(bytes) { work += bearer.receive(answer, now: now).map(Work.bearer) }
            case .bearer(.response(_, let result)):
                work += discovery.receive(result).map(Work.discovery)
            case .bearer(.mtuChanged(let mtu)):
                discovery.mtu = mtu
            case .bearer(let other):
                delivered.append(other)
            }
        }
    }

    mutating func start() {
        run(bearer.start(now: now).map(Work.bearer) + discovery.start().map(Work.discovery))
    }

    mutating func peerSends(_ bytes: [UInt8]) { run(bearer.receive(bytes, now: now).map(Work.bearer)) }
}

@Suite struct ATTPDUTests {
    @Test func vectors() throws {
        let table: [(ATTPDU, String)] = [
            (.errorResponse(requestOpcode: 0x10, handle: 0x000A, error: .attributeNotFound), "01 10 0A 00 0A"),
            (.exchangeMTURequest(247), "02 F7 00"),
            (.exchangeMTUResponse(185), "03 B9 00"),
            (.findInformationRequest(start: 7, end: 0xFFFF), "04 07 00 FF FF"),
            (.findInformationResponse([ATTHandleUUID(handle: 7, uuid: .clientCharacteristicConfiguration)]), "05 01 07 00 02 29"),
            (.findInformationResponse([ATTHandleUUID(handle: 8, uuid: customCharacteristic)]),
             "05 02 08 00 9E CA DC 24 0E E5 A9 E0 93 F3 A3 B5 03 00 40 6E"),
            (.readByTypeRequest(start: 1, end: 0xFFFF, type: .characteristic), "08 01 00 FF FF 03 28"),
            (.readByTypeRequest(start: 1, end: 0xFFFF, type: customCharacteristic),
             "08 01 00 FF FF 9E CA DC 24 0E E5 A9 E0 93 F3 A3 B5 03 00 40 6E"),
            (.readByTypeResponse([ATTHandleValue(handle: 2, value: h("02 03 00 00 2A")), ATTHandleValue(handle: 4, value: h("12 05 00 01 2A"))]),
             "09 07 02 00 02 03 00 00 2A 04 00 12 05 00 01 2A"),
            (.readRequest(handle: 3), "0A 03 00"),
            (.readResponse(h("48 52")), "0B 48 52"),
            (.readBlobRequest(handle: 3, offset: 22), "0C 03 00 16 00"),
            (.readBlobResponse([]), "0D"),
            (.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService), "10 01 00 FF FF 00 28"),
            (.readByGroupTypeResponse([ATTGroupValue(handle: 1, endGroupHandle: 5, value: h("00 18")), ATTGroupValue(handle: 6, endGroupHandle: 0xFFFF, value: h("0D 18"))]),
             "11 06 01 00 05 00 00 18 06 00 FF FF 0D 18"),
            (.writeRequest(handle: 7, value: h("01 00")), "12 07 00 01 00"),
            (.writeResponse, "13"),
            (.writeCommand(handle: 9, value: [1]), "52 09 00 01"),
            (.handleValueNotification(handle: 6, value: h("16 48 00 04")), "1B 06 00 16 48 00 04"),
            (.handleValueIndication(handle: 12, value: [0xAA]), "1D 0C 00 AA"),
            (.handleValueConfirmation, "1E"),
            (.other(opcode: 0x20, parameters: [1]), "20 01"),
        ]
        for (pdu, bytes) in table {
            #expect(pdu.encoded == h(bytes), "\(pdu)")
            #expect(try ATTPDU.decode(h(bytes)) == pdu, "\(bytes)")
        }
    }

    @Test func malformed() {
        for bytes in ["", "01 10 0A 00", "02 F7", "05 03 07 00 02 29", "05 01 07 00 02", "09 07 02 00 02 03", "09 01 02 00",
                      "11 03 01 00 05", "10 01 00 FF FF 00", "13 00", "1E 00", "0C 03 00 16"] {
            #expect(throws: BLEDecodeError.self, "\(bytes)") { try ATTPDU.decode(h(bytes)) }
        }
    }

    @Test func uuids() {
        #expect(BluetoothUUID(0x180D) == BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!)
        #expect(BluetoothUUID(0x180D).description == "0x180D")
        #expect(customService.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        #expect(BluetoothUUID(littleEndian: customService.bytes128) == customService)
        #expect(BluetoothUUID(uuid32: 0x0001_180D).uint16 == nil && BluetoothUUID(uuid32: 0x180D).uint16 == 0x180D)
        #expect(BluetoothUUID("180D") == BluetoothUUID(0x180D) && BluetoothUUID("nope") == nil)
    }
}

@Suite struct ATTBearerTests {
    let t0 = HostInstant.seconds(10)

    @Test func mtuExchangeThenOneRequestAtATime() throws {
        var b = ATTBearer(configuration: .init(preferredMTU: 247))
        #expect(b.start(now: t0) == [.send(h("02 F7 00"))])
        let (r1, a1) = try b.request(.readRequest(handle: 3), now: t0)
        let (r2, a2) = try b.request(.readRequest(handle: 9), now: t0)
        #expect(a1.isEmpty && a2.isEmpty && b.queuedCount == 2)
        // The MTU response: min(247, 185); then the first read goes out.
        let afterMTU = b.receive(h("03 B9 00"), now: t0)
        #expect(afterMTU.first == .mtuChanged(185) && afterMTU.last == .send(h("0A 03 00")) && b.mtu == 185)
        // A response of the wrong kind does not end the request.
        guard case .unexpected = b.receive(h("13"), now: t0).first else { Issue.record(); return }
        #expect(b.receive(h("0B 48"), now: t0) == [.response(r1, .success(.readResponse([0x48]))), .send(h("0A 09 00"))])
        #expect(b.receive(h("01 0A 09 00 02"), now: t0) == [.response(r2, .failure(.peer(.readNotPermitted, handle: 9)))])
        #expect(b.outstandingRequest == nil)
    }

    @Test func notificationsIndicationsAndPeerRequests() throws {
        var b = ATTBearer()
        #expect(b.receive(h("1B 06 00 00 48"), now: t0) == [.notification(handle: 6, value: h("00 48"))])
        #expect(b.receive(h("1D 0C 00 AA"), now: t0) == [.indication(handle: 12, value: [0xAA]), .send(h("1E"))])
        // The peer's own GATT client probing us: an empty server's answers.
        #expect(b.receive(h("02 00 02"), now: t0) == [.send(h("03 F7 00")), .mtuChanged(247)])
        #expect(b.receive(h("10 01 00 FF FF 00 28"), now: t0) == [.send(h("01 10 01 00 0A"))])
        #expect(b.receive(h("0A 05 00"), now: t0) == [.send(h("01 0A 05 00 01"))])
        #expect(b.receive(h("52 05 00 01"), now: t0) == [])
        #expect(b.receive(h("0A"), now: t0) == [.send(h("01 0A 00 00 04"))])
        #expect(throws: ATTBearer.RequestError.notARequest(opcode: 0x1B)) { try b.request(.handleValueNotification(handle: 1, value: []), now: t0) }
    }

    @Test func transactionTimeoutClosesTheBearer() throws {
        var b = ATTBearer(configuration: .init(preferredMTU: 23))
        #expect(b.start(now: t0) == [])  // nothing to negotiate at 23
        let (r1, _) = try b.request(.readRequest(handle: 3), now: t0)
        let (r2, _) = try b.request(.readRequest(handle: 4), now: t0)
        #expect(b.nextDeadline == t0 + .seconds(30))
        #expect(b.tick(now: t0 + .seconds(29)) == [])
        #expect(b.tick(now: t0 + .seconds(30)) == [.response(r1, .failure(.timeout)), .response(r2, .failure(.closed)), .closed])
        #expect(b.isClosed)
        #expect(throws: ATTBearer.RequestError.closed) { try b.request(.readRequest(handle: 3), now: t0) }
        #expect(b.receive(h("0B 00"), now: t0) == [])
    }

    @Test func disconnectFailsEverything() throws {
        var b = ATTBearer()
        let (r1, _) = try b.request(.readRequest(handle: 3), now: t0)
        let (r2, _) = try b.request(.readRequest(handle: 4), now: t0)
        #expect(b.disconnected() == [.response(r1, .failure(.closed)), .response(r2, .failure(.closed))])
        #expect(throws: ATTBearer.RequestError.tooLong(length: 24, mtu: 23)) {
            var c = ATTBearer()
            _ = try c.request(.writeRequest(handle: 1, value: Array(repeating: 0, count: 21)), now: t0)
        }
    }
}

@Suite struct GATTDiscoveryTests {
    func harness(mtu: UInt16 = 23) -> GATTHarness {
        GATTHarness(bearer: ATTBearer(configuration: .init(preferredMTU: mtu)),
                    discovery: GATTDiscovery(subscribe: [BluetoothUUID(0x2A37), customCharacteristic, BluetoothUUID(0x2A38)],
                                             read: [BluetoothUUID(0x2A00), BluetoothUUID(0x2A38)]),
                    server: .heartRatePeer())
    }

    @Test func fullConversation() throws {
        var g = harness()
        g.start()
        #expect(Array(g.sentByClient.prefix(15)) == [
            "10 01 00 FF FF 00 28", "10 0A 00 FF FF 00 28",                     // services
            "08 01 00 03 00 03 28", "08 03 00 03 00 03 28",                     // GAP characteristics
            "08 04 00 09 00 03 28", "08 09 00 09 00 03 28",                     // Heart Rate characteristics
            "08 0A 00 FF FF 03 28", "08 0C 00 FF FF 03 28",                     // custom service characteristics
            "04 07 00 07 00", "04 0D 00 FF FF", "04 0F 00 FF FF",               // descriptors
            "12 07 00 01 00", "12 0D 00 02 00",                                 // CCCD: notify, indicate
            "0A 03 00", "0C 03 00 16 00",                                       // long read
        ].map(h))
        #expect(g.sentByClient.count == 17)  // the second blob (13 bytes ends it), then Body Sensor Location
        guard case .discovered(let db) = g.results.first else { Issue.record("\(g.results)"); return }
        #expect(db.services.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x180D), customService])
        #expect(db.services.map(\.endHandle) == [3, 9, 0xFFFF])
        let hrm = try #require(db.characteristics(BluetoothUUID(0x2A37)).first)
        #expect(hrm.valueHandle == 6 && hrm.endHandle == 7 && hrm.canNotify && hrm.cccdHandle == 7)
        let custom = try #require(db.characteristics(customCharacteristic).first)
        #expect(custom.canIndicate && custom.descriptors.map(\.uuid) == [.clientCharacteristicConfiguration, BluetoothUUID(0x2901)])
        #expect(Array(g.results.dropFirst()) == [
            .subscriptionFailed(BluetoothUUID(0x2A38), reason: "neither notify nor indicate"),
            .subscribed(hrm, .notify),
            .subscribed(custom, .indicate),
            .value(db.characteristics(BluetoothUUID(0x2A00))[0], longName),
            .value(db.characteristics(BluetoothUUID(0x2A38))[0], [0x01]),
            .finished(db),
        ])
        #expect(g.server.attributes[6].value == h("01 00") && g.server.attributes[12].value == h("02 00"))

        // Notifications and indications now arrive and map back to characteristics.
        g.peerSends(h("1B 06 00 16 48 00 04"))
        g.peerSends(h("1D 0C 00 AA"))
        #expect(g.delivered == [.notification(handle: 6, value: h("16 48 00 04")), .indication(handle: 12, value: [0xAA])])
        #expect(g.sentByClient.last == h("1E"))
        #expect(db.characteristic(valueHandle: 6)?.uuid == BluetoothUUID(0x2A37))
    }

    @Test func largerMTUSavesRoundTrips() {
        var g = harness(mtu: 247)
        g.server.serverMTU = 185
        g.start()
        #expect(g.bearer.mtu == 185 && g.discovery.mtu == 185)
        #expect(g.sentByClient.first == h("02 F7 00"))
        #expect(!g.sentByClient.contains { $0.first == ATTPDU.Opcode.readBlobRequest })
        guard case .finished = g.results.last else { Issue.record("\(g.results)"); return }
    }

    @Test func disconnectMidDiscovery() {
        var g = harness()
        g.serverAnswers = false
        g.start()
        #expect(g.sentByClient == [h("10 01 00 FF FF 00 28")])
        g.run(g.bearer.disconnected().map(GATTHarness.Work.bearer))
        #expect(g.results == [.failed(.disconnected)])
        #expect(g.discovery.isFinished && g.discovery.disconnected() == [])
        var d = GATTDiscovery()
        _ = d.start()
        #expect(d.disconnected() == [.failed(.disconnected)])
        #expect(d.receive(.success(.readByGroupTypeResponse([]))) == [])
    }

    @Test func peerErrorsAndViolations() {
        var g = harness()
        g.server.failCharacteristicDiscovery = .insufficientAuthentication
        g.start()
        #expect(g.results == [.failed(.peer(.insufficientAuthentication, handle: 1))])

        var d = GATTDiscovery()
        _ = d.start()
        // A group that starts before the requested start makes no progress.
        #expect(d.receive(.success(.readByGroupTypeResponse([ATTGroupValue(handle: 0, endGroupHandle: 5, value: h("0D 18"))])))
            == [.failed(.protocolViolation("service group 0x0000-0x0005"))])
        var e = GATTDiscovery()
        _ = e.start()
        #expect(e.receive(.success(.writeResponse)).first == .failed(.protocolViolation("expected Read By Group Type Response, got writeResponse")))
        var t = GATTDiscovery()
        _ = t.start()
        #expect(t.receive(.failure(.timeout)) == [.failed(.timeout)])
        // No services at all: discovery still finishes.
        var n = GATTDiscovery(read: [BluetoothUUID(0x2A19)])
        _ = n.start()
        #expect(n.receive(.failure(.peer(.attributeNotFound, handle: 1)))
            == [.discovered(GATTDatabase(services: [])), .readFailed(BluetoothUUID(0x2A19), .attributeNotFound), .finished(GATTDatabase(services: []))])
    }
}

@Suite struct ATTBearerMTUTests {
    @Test func ownMTUExchangeGivesNoResponseAction() throws {
        var b = ATTBearer(configuration: .init(preferredMTU: 100))
        _ = b.start(now: .zero)
        #expect(b.receive(h("03 40 00"), now: .zero) == [.mtuChanged(64)])
        var refused = ATTBearer(configuration: .init(preferredMTU: 100))
        _ = refused.start(now: .zero)
        #expect(refused.receive(h("01 02 00 00 06"), now: .zero) == [])
        #expect(refused.mtu == 23 && refused.outstandingRequest == nil)
    }
}
