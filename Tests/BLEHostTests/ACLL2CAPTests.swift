import Testing
import BluetoothCentral
@testable import BLEHost

@Suite struct ACLTests {
    @Test func header() throws {
        let p = ACLPacket(handle: 0x040, boundary: .firstFlushable, data: h("01 00 04 00 0A"))
        #expect(p.encoded == h("40 20 05 00 01 00 04 00 0A"))
        #expect(try ACLPacket.decode(p.encoded) == p)
        let c = try ACLPacket.decode(h("41 10 01 00 FF"))
        #expect(c.handle == 0x041 && c.boundary == .continuing && c.broadcast == 0 && c.data == [0xFF])
        #expect(throws: BLEDecodeError.self) { try ACLPacket.decode(h("40 20 05 00 01")) }
        #expect(throws: BLEDecodeError.self) { try ACLPacket.decode(h("40 20 01 00 01 02")) }
    }

    @Test func fragmentsToAnnouncedSize() {
        let pdu = L2CAPFrame(channel: 4, payload: Array(0..<60)).encoded  // 64 bytes
        let fragments = ACLFragmenter.fragments(of: pdu, handle: 0x40, maxDataLength: 27)
        #expect(fragments.map(\.data.count) == [27, 27, 10])
        #expect(fragments.map(\.boundary) == [.firstNonFlushable, .continuing, .continuing])
        #expect(fragments.flatMap(\.data) == pdu)
        #expect(ACLFragmenter.fragments(of: [], handle: 1, maxDataLength: 27).count == 1)
    }

    @Test func reassemblesFragmentsAndInterleavedHandles() throws {
        let a = L2CAPFrame(channel: 4, payload: Array(repeating: 0xAA, count: 60)).encoded
        let b = L2CAPFrame(channel: 4, payload: Array(repeating: 0xBB, count: 30)).encoded
        let fa = ACLFragmenter.fragments(of: a, handle: 0x40, maxDataLength: 27)
        let fb = ACLFragmenter.fragments(of: b, handle: 0x41, maxDataLength: 27)
        var r = ACLReassembler()
        #expect(try r.receive(fa[0]) == nil)
        #expect(try r.receive(fb[0]) == nil)
        #expect(r.handlesInProgress == [0x40, 0x41])
        #expect(try r.receive(fa[1]) == nil)
        let gotB = try r.receive(fb[1])
        #expect(gotB?.handle == 0x41 && gotB?.pdu == b)
        let gotA = try r.receive(fa[2])
        #expect(gotA?.handle == 0x40 && gotA?.pdu == a)
        #expect(r.handlesInProgress.isEmpty)
    }

    @Test func packetsLongerThanAnnouncedAndTinyFirstFragments() throws {
        var r = ACLReassembler()
        // 100-byte PDU in one ACL packet although the controller announced 27.
        let pdu = L2CAPFrame(channel: 4, payload: Array(repeating: 1, count: 96)).encoded
        #expect(try r.receive(ACLPacket(handle: 1, boundary: .firstFlushable, data: pdu))?.pdu == pdu)
        // A first fragment shorter than the basic header.
        #expect(try r.receive(ACLPacket(handle: 1, boundary: .firstFlushable, data: [0x01])) == nil)
        #expect(try r.receive(ACLPacket(handle: 1, boundary: .continuing, data: [0x00, 0x04])) == nil)
        #expect(try r.receive(ACLPacket(handle: 1, boundary: .continuing, data: [0x00, 0x1E]))?.pdu == h("01 00 04 00 1E"))
        // Bytes past the L2CAP length are dropped and counted.
        #expect(try r.receive(ACLPacket(handle: 1, boundary: .firstFlushable, data: h("01 00 04 00 1E 99 99")))?.pdu == h("01 00 04 00 1E"))
        #expect(r.droppedTrailingBytes == 2)
    }

    @Test func outOfOrderAndRestartAndLimits() throws {
        var r = ACLReassembler(limits: .init(maxPDULength: 64, maxHandles: 1))
        #expect(throws: BLEDecodeError.self) { try r.receive(ACLPacket(handle: 2, boundary: .continuing, data: [1, 2])) }
        #expect(try r.receive(ACLPacket(handle: 2, boundary: .firstFlushable, data: h("10 00 04 00 01"))) == nil)
        // A new start drops the partial PDU.
        #expect(try r.receive(ACLPacket(handle: 2, boundary: .firstFlushable, data: h("01 00 04 00 1E")))?.pdu == h("01 00 04 00 1E"))
        #expect(r.droppedPartialPDUs == 1)
        #expect(throws: BLEDecodeError(.l2cap, offset: 0, .tooLong(field: "L2CAP PDU", length: 104, limit: 64))) {
            try r.receive(ACLPacket(handle: 2, boundary: .firstFlushable, data: h("64 00 04 00")))
        }
        // After the error the handle is clean; a continuation is out of order.
        #expect(throws: BLEDecodeError.self) { try r.receive(ACLPacket(handle: 2, boundary: .continuing, data: [1])) }
        #expect(try r.receive(ACLPacket(handle: 2, boundary: .firstFlushable, data: h("05 00 04 00"))) == nil)
        #expect(throws: BLEDecodeError.self) { try r.receive(ACLPacket(handle: 3, boundary: .firstFlushable, data: h("05 00"))) }
        r.drop(handle: 2)
        #expect(r.handlesInProgress.isEmpty)
    }
}

@Suite struct ACLFlowControlTests {
    @Test func creditsComeBackWithCompletedPackets() throws {
        var f = ACLFlowControl(le: .init(aclDataPacketLength: 27, totalACLDataPackets: 2))
        f.open(handle: 0x40)
        let pdu = Array(repeating: UInt8(7), count: 60)  // three fragments
        let first = try f.enqueue(pdu, handle: 0x40)
        #expect(first.count == 2 && f.availableCredits == 0 && f.queued(handle: 0x40) == 1 && f.inFlight(handle: 0x40) == 2)
        #expect(f.completed([CompletedPackets(handle: 0x40, count: 1)]).map(\.data.count) == [6])
        // Counts for unknown handles or above what is in flight return nothing extra.
        #expect(f.completed([CompletedPackets(handle: 0x99, count: 5), CompletedPackets(handle: 0x40, count: 9)]) == [])
        #expect(f.availableCredits == 2)
    }

    @Test func roundRobinAndDisconnect() throws {
        var f = ACLFlowControl(maxDataLength: 10, totalPackets: 2)
        f.open(handle: 1)
        f.open(handle: 2)
        #expect(try f.enqueue(Array(repeating: 1, count: 30), handle: 1).count == 2)
        #expect(try f.enqueue(Array(repeating: 2, count: 10), handle: 2).isEmpty)
        // Handle 2 gets the next credit even though handle 1 queued first.
        #expect(f.completed([CompletedPackets(handle: 1, count: 1)]).map(\.handle) == [2])
        // Disconnecting handle 1 returns its in-flight credit and drops its queue.
        #expect(f.close(handle: 1) == [])
        #expect(f.availableCredits == 1 && f.queued(handle: 1) == 0)
        #expect(throws: ACLFlowControl.EnqueueError.unknownHandle(1)) { try f.enqueue([1], handle: 1) }
    }

    @Test func sharedBuffersAndQueueLimit() throws {
        let f = ACLFlowControl(le: .init(aclDataPacketLength: 0, totalACLDataPackets: 0),
                               shared: .init(aclDataPacketLength: 1021, synchronousDataPacketLength: 0, totalACLDataPackets: 8, totalSynchronousDataPackets: 0))
        #expect(f.maxDataLength == 1021 && f.totalPackets == 8)
        var g = ACLFlowControl(maxDataLength: 1, totalPackets: 1, maxQueuedPacketsPerHandle: 3)
        g.open(handle: 1)
        #expect(throws: ACLFlowControl.EnqueueError.queueFull(handle: 1, limit: 3)) { try g.enqueue([1, 2, 3, 4], handle: 1) }
    }
}

@Suite struct L2CAPTests {
    @Test func basicFrame() throws {
        let f = try L2CAPFrame.decode(h("03 00 04 00 02 17 00"))
        #expect(f == L2CAPFrame(channel: L2CAPFrame.attChannel, payload: h("02 17 00")))
        #expect(f.encoded == h("03 00 04 00 02 17 00"))
        #expect(throws: BLEDecodeError.self) { try L2CAPFrame.decode(h("03 00 04 00 02")) }
        #expect(LEFixedChannels.route(f, handle: 1) == [.att(h("02 17 00"))])
    }

    @Test func connectionParameterUpdateIsAcceptedAndIssued() {
        let request = L2CAPFrame(channel: 5, payload: h("12 07 08 00 06 00 0C 00 00 00 C8 00"))
        #expect(LEFixedChannels.route(request, handle: 0x40) == [
            .send(L2CAPFrame(channel: 5, payload: h("13 07 02 00 00 00"))),
            .command(.leConnectionUpdate(handle: 0x40, LEConnectionParameters(intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 200))),
        ])
        // Timeout too short for the interval and latency: rejected, nothing issued.
        let bad = L2CAPFrame(channel: 5, payload: h("12 08 08 00 06 00 80 0C 00 00 0A 00"))
        #expect(LEFixedChannels.route(bad, handle: 0x40) == [.send(L2CAPFrame(channel: 5, payload: h("13 08 02 00 01 00")))])
    }

    @Test func unknownSignalingAndCreditBasedAreRefused() {
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 5, payload: h("0A 09 02 00 02 00")), handle: 1)
            == [.send(L2CAPFrame(channel: 5, payload: h("01 09 02 00 00 00")))])
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 5, payload: h("14 0A 0A 00 80 00 40 00 F7 00 F7 00 0A 00")), handle: 1)
            == [.send(L2CAPFrame(channel: 5, payload: h("15 0A 0A 00 00 00 00 00 00 00 00 00 02 00")))])
        // Malformed (length says 8, 2 present): rejected by identifier.
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 5, payload: h("12 0B 08 00 06 00")), handle: 1)
            == [.send(L2CAPFrame(channel: 5, payload: h("01 0B 02 00 00 00")))])
        guard case .ignored = LEFixedChannels.route(L2CAPFrame(channel: 5, payload: h("13 07 02 00 00 00")), handle: 1).first else { Issue.record(); return }
        guard case .ignored = LEFixedChannels.route(L2CAPFrame(channel: 0x40, payload: []), handle: 1).first else { Issue.record(); return }
    }

    @Test func signalingRoundTrip() throws {
        let commands: [LESignalingCommand] = [
            .commandReject(identifier: 1, reason: 2, data: [3, 0]),
            .connectionParameterUpdateRequest(identifier: 2, intervalMin: 6, intervalMax: 7, latency: 8, timeout: 900),
            .connectionParameterUpdateResponse(identifier: 3, result: 1),
            .leCreditBasedConnectionRequest(identifier: 4, psm: 0x80, sourceCID: 0x40, mtu: 100, mps: 50, initialCredits: 3),
            .leCreditBasedConnectionResponse(identifier: 5, destinationCID: 0x41, mtu: 100, mps: 50, initialCredits: 3, result: 0),
            .other(code: 0x0A, identifier: 6, data: [1, 2]),
        ]
        for c in commands { #expect(try LESignalingCommand.decode(c.encoded) == c) }
    }

    @Test func smpRefusesPairing() {
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 6, payload: h("01 03 00 01 10 07 07")), handle: 1)
            == [.send(L2CAPFrame(channel: 6, payload: h("05 05")))])
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 6, payload: h("0B 01")), handle: 1) == [.send(L2CAPFrame(channel: 6, payload: h("05 05")))])
        #expect(LEFixedChannels.route(L2CAPFrame(channel: 6, payload: h("03 00")), handle: 1) == [.send(L2CAPFrame(channel: 6, payload: h("05 07")))])
        guard case .ignored = LEFixedChannels.route(L2CAPFrame(channel: 6, payload: h("05 05")), handle: 1).first else { Issue.record(); return }
    }
}
