import TestSupport
import Testing
@testable import BLEHost

/// Seeded fuzz loops: every decoder returns a value or a typed error, never traps; state machines
/// fed garbage stay within their limits.
@Suite struct FuzzTests {
    static let iterations = 3000

    static let eventSeeds: [String] = [
        "0E 0A 01 09 10 00 66 55 44 33 22 11", "0F 04 00 01 0D 20", "05 04 00 40 00 13", "13 05 01 40 00 02 00",
        "3E 13 01 00 40 00 00 01 66 55 44 33 22 C1 18 00 00 00 90 01 00", "3E 0F 02 01 00 01 66 55 44 33 22 C1 03 02 01 06 C5",
        "3E 1D 0D 01 13 00 01 66 55 44 33 22 C1 01 00 FF 7F C5 00 00 00 00 00 00 00 00 00 03 02 01 06",
        "3E 0A 03 00 40 00 18 00 00 00 90 01", "3E 0B 06 40 00 06 00 0C 00 00 00 C8 00", "3E 0B 07 40 00 FB 00 48 08 FB 00 48 08",
    ]

    @Test func hciEventsAndCommands() {
        var g = SeededGenerator(seed: 0x4845_4C54)
        for i in 0..<Self.iterations {
            let input = g.mutate(h(Self.eventSeeds[i % Self.eventSeeds.count]))
            if case .commandComplete(let cc) = try? HCIEvent.decode(input) {
                _ = try? HCICommandReturn.decode(opcode: cc.opcode, Array(cc.returnParameters.dropFirst()))
            }
            _ = try? HCICommand.decode(input)
            var q = HCICommandQueue()
            _ = try? q.enqueue(.reset, now: .zero)
            if let e = try? HCIEvent.decode(input) { _ = q.receive(e, now: .zero) }
        }
    }

    @Test func h4FramerOverRandomChunks() {
        var g = SeededGenerator(seed: 0x4834)
        for _ in 0..<300 {
            var framer = H4Framer(limits: .init(maxACLDataLength: 300, maxBufferedBytes: 4096))
            for _ in 0..<20 {
                let chunk = g.bytes(Int.random(in: 0...40, using: &g))
                do { _ = try framer.feed(chunk) } catch { #expect(error.layer == .h4); break }
            }
            #expect(framer.bufferedByteCount <= 4096)
        }
    }

    @Test func aclL2CAPAndFlowControl() {
        var g = SeededGenerator(seed: 0x41434C)
        var reassembler = ACLReassembler(limits: .init(maxPDULength: 256, maxHandles: 4))
        var flow = ACLFlowControl(maxDataLength: 27, totalPackets: 4, maxQueuedPacketsPerHandle: 32)
        for h in 0..<4 { flow.open(handle: UInt16(h)) }
        for _ in 0..<Self.iterations {
            let raw = g.bytes(Int.random(in: 0...40, using: &g))
            if let packet = try? ACLPacket.decode(raw) {
                if let done = try? reassembler.receive(packet) {
                    _ = try? L2CAPFrame.decode(done.pdu)
                }
            }
            let packet = ACLPacket(handle: UInt16.random(in: 0...3, using: &g), boundary: Bool.random(using: &g) ? .continuing : .firstFlushable,
                                   data: g.bytes(Int.random(in: 0...30, using: &g)))
            if let done = try? reassembler.receive(packet), let frame = try? L2CAPFrame.decode(done.pdu) {
                _ = LEFixedChannels.route(frame, handle: done.handle)
            }
            _ = LEFixedChannels.route(L2CAPFrame(channel: UInt16.random(in: 4...6, using: &g), payload: raw), handle: 1)
            _ = try? LESignalingCommand.decode(raw)
            _ = try? flow.enqueue(raw, handle: UInt16.random(in: 0...4, using: &g))
            _ = flow.completed([CompletedPackets(handle: UInt16.random(in: 0...4, using: &g), count: UInt16.random(in: 0...3, using: &g))])
            #expect(flow.availableCredits >= 0 && flow.availableCredits <= 4)
        }
        #expect(reassembler.handlesInProgress.count <= 4)
    }

    @Test func attBearerAndDiscovery() {
        var g = SeededGenerator(seed: 0x415454)
        let seeds = ["11 06 01 00 05 00 00 18", "09 07 02 00 02 03 00 00 2A", "05 01 07 00 02 29", "0B 48", "01 10 01 00 0A", "1D 0C 00 AA", "13", "03 B9 00"]
        for i in 0..<Self.iterations {
            let input = g.mutate(h(seeds[i % seeds.count]))
            _ = try? ATTPDU.decode(input)
            var bearer = ATTBearer()
            var discovery = GATTDiscovery(subscribe: [BluetoothUUID(0x2A37)], read: [BluetoothUUID(0x2A38)])
            var pending = discovery.start()
            for _ in 0..<8 {
                for case .request(let pdu) in pending { _ = try? bearer.request(pdu, now: .zero) }
                pending = []
                for action in bearer.receive(g.mutate(h(seeds[Int.random(in: 0..<seeds.count, using: &g)])), now: .zero) {
                    if case .response(_, let result) = action { pending += discovery.receive(result) }
                }
            }
            _ = discovery.disconnected()
            _ = bearer.disconnected()
        }
    }

    @Test func advertisingBtsnoopAndAddresses() {
        var g = SeededGenerator(seed: 0x4144)
        let file = BTSnoop.Writer().header + BTSnoop.Writer().record(.h4(HCICommand.reset.h4Packet, received: false, timestamp: 0))
        for i in 0..<Self.iterations {
            _ = try? AdvertisingData.parse(g.mutate(h("02 01 06 05 03 0D 18 0F 18 05 09 48 52 4D 31 04 16 0F 18 5A")))
            if var reader = try? BTSnoop.Reader(g.mutate(file)) {
                while let record = try? reader.next() { _ = try? record.packet(datalink: reader.datalink) }
            }
            let text = String(decoding: g.mutate(Array(["hci0", "tcp:[::1]:80", "unix:/x", "serial:/dev/tty:9600"][i % 4].utf8)), as: UTF8.self)
            _ = try? TransportAddress(parsing: text)
            _ = DeviceAddress(text)
            _ = BluetoothUUID(text)
        }
    }
}
