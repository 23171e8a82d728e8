import Testing
import BluetoothCentral
@testable import BLEHost

@Suite struct H4FramerTests {
    // Reset command, Command Complete for Reset, a 5-byte ACL packet, an SCO and an ISO packet.
    let stream = h("01 03 0C 00  04 0E 04 01 03 0C 00  02 40 20 05 00 01 00 04 00 0A  03 01 00 02 AA BB  05 01 00 02 00 CC DD")

    @Test func wholeStream() throws {
        var framer = H4Framer()
        let packets = try framer.feed(stream)
        #expect(packets == [
            H4Packet(.command, h("03 0C 00")),
            H4Packet(.event, h("0E 04 01 03 0C 00")),
            H4Packet(.acl, h("40 20 05 00 01 00 04 00 0A")),
            H4Packet(.sco, h("01 00 02 AA BB")),
            H4Packet(.iso, h("01 00 02 00 CC DD")),
        ])
        #expect(framer.bufferedByteCount == 0)
        #expect(packets.flatMap(\.encoded) == stream)
    }

    @Test func everyChunkBoundary() throws {
        var expected = H4Framer()
        let all = try expected.feed(stream)
        for split1 in 0...stream.count {
            for split2 in split1...stream.count {
                var framer = H4Framer()
                var got: [H4Packet] = []
                got += try framer.feed(stream[0..<split1])
                got += try framer.feed(stream[split1..<split2])
                got += try framer.feed(stream[split2...])
                #expect(got == all)
            }
        }
        var framer = H4Framer()
        var byByte: [H4Packet] = []
        for b in stream { byByte += try framer.feed([b]) }
        #expect(byByte == all)
    }

    @Test func needMore() throws {
        var framer = H4Framer()
        #expect(try framer.feed(h("04 0E")).isEmpty)
        #expect(try framer.feed(h("04 01 03")).isEmpty)
        #expect(try framer.feed(h("0C")) == [])
        #expect(try framer.feed(h("00")) == [H4Packet(.event, h("0E 04 01 03 0C 00"))])
    }

    @Test func unknownTypeIsStickyUntilReset() throws {
        var framer = H4Framer()
        #expect(try framer.feed(h("01 03 0C 00")).count == 1)
        #expect(throws: BLEDecodeError(.h4, offset: 4, .unknownPacketType(0x07))) { try framer.feed(h("07 00")) }
        #expect(throws: BLEDecodeError.self) { try framer.next() }
        framer.reset()
        #expect(try framer.feed(h("01 03 0C 00")).count == 1)
    }

    @Test func limits() throws {
        var framer = H4Framer(limits: .init(maxACLDataLength: 27))
        #expect(throws: BLEDecodeError(.h4, offset: 0, .tooLong(field: "acl data", length: 28, limit: 27))) {
            try framer.feed(h("02 40 20 1C 00"))
        }
        var small = H4Framer(limits: .init(maxBufferedBytes: 4))
        #expect(throws: BLEDecodeError.self) { try small.feed(h("02 40 20 10 00")) }
    }
}

@Suite struct HCICommandTests {
    let peer = DeviceAddress("C1:22:33:44:55:66", kind: .random)!

    @Test(arguments: [
        (HCICommand.reset, "03 0C 00"),
        (.readBDAddr, "09 10 00"),
        (.readLocalVersion, "01 10 00"),
        (.readBufferSize, "05 10 00"),
        (.leReadBufferSize, "02 20 00"),
        (.leCreateConnectionCancel, "0E 20 00"),
        (.setEventMask(0x3DBF_F807_FFFB_FFFF), "01 0C 08 FF FF FB FF 07 F8 BF 3D"),
        (.leSetEventMask(0x0000_0000_0000_1F5F), "01 20 08 5F 1F 00 00 00 00 00 00"),
        (.leSetRandomAddress(DeviceAddress("C0:11:22:33:44:55", kind: .random)!), "05 20 06 55 44 33 22 11 C0"),
        (.leSetScanParameters(LEScanParameters(type: .active, interval: 0x0010, window: 0x0010, ownAddressType: 1, filterPolicy: 0)),
         "0B 20 07 01 10 00 10 00 01 00"),
        (.leSetScanEnable(enabled: true, filterDuplicates: false), "0C 20 02 01 00"),
        (.leSetExtendedScanParameters(LEScanParameters(type: .passive, interval: 0x0060, window: 0x0030)),
         "41 20 08 01 00 01 00 60 00 30 00"),
        (.leSetExtendedScanEnable(enabled: true, filterDuplicates: true, duration: 0, period: 0), "42 20 06 01 01 00 00 00 00"),
        (.disconnect(handle: 0x0040, reason: .remoteUserTerminated), "06 04 03 40 00 13"),
        (.leConnectionUpdate(handle: 0x0040, LEConnectionParameters(intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 200)),
         "13 20 0E 40 00 06 00 0C 00 00 00 C8 00 00 00 00 00"),
        (.leRemoteConnectionParameterRequestReply(handle: 0x0040, LEConnectionParameters(intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 200)),
         "20 20 0E 40 00 06 00 0C 00 00 00 C8 00 00 00 00 00"),
    ])
    func encodesAndDecodes(command: HCICommand, bytes: String) throws {
        #expect(command.packet == h(bytes))
        #expect(try HCICommand.decode(h(bytes)) == command)
        #expect(command.h4Packet.encoded == [0x01] + h(bytes))
    }

    @Test func createConnection() throws {
        let command = HCICommand.leCreateConnection(LECreateConnectionParameters(peer: peer))
        let bytes = h("0D 20 19 60 00 60 00 00 01 66 55 44 33 22 C1 01 18 00 28 00 00 00 90 01 00 00 00 00")
        #expect(command.packet == bytes)
        #expect(try HCICommand.decode(bytes) == command)
    }

    @Test func opcodeFields() {
        #expect(HCIOpcode.leCreateConnection.rawValue == 0x200D)
        #expect(HCIOpcode.leCreateConnection.ogf == 0x08)
        #expect(HCIOpcode.leCreateConnection.ocf == 0x000D)
        #expect(HCIOpcode.reset.description == "0x0C03")
    }

    @Test func malformedCommands() throws {
        #expect(throws: BLEDecodeError.self) { try HCICommand.decode(h("03 0C 01")) }
        #expect(throws: BLEDecodeError.self) { try HCICommand.decode(h("0C 20 01 01")) }
        #expect(throws: BLEDecodeError.self) { try HCICommand.decode(h("03 0C 00 00")) }
        #expect(try HCICommand.decode(h("FF FC 01 AA")) == .raw(HCIOpcode(rawValue: 0xFCFF), [0xAA]))
    }
}

@Suite struct HCIEventTests {
    @Test func commandCompleteReturnParameters() throws {
        guard case .commandComplete(let bd) = try HCIEvent.decode(h("0E 0A 01 09 10 00 66 55 44 33 22 11")) else { Issue.record(); return }
        #expect(bd.numCommandPackets == 1 && bd.opcode == .readBDAddr && bd.status == .success)
        #expect(try HCICommandReturn.decode(opcode: bd.opcode, Array(bd.returnParameters.dropFirst()))
            == .bdAddr(DeviceAddress("11:22:33:44:55:66")!))

        #expect(try HCICommandReturn.decode(opcode: .leReadBufferSize, h("1B 00 40")) == .leBufferSize(.init(aclDataPacketLength: 27, totalACLDataPackets: 64)))
        #expect(try HCICommandReturn.decode(opcode: .readBufferSize, h("FD 03 40 08 00 01 00"))
            == .bufferSize(.init(aclDataPacketLength: 1021, synchronousDataPacketLength: 64, totalACLDataPackets: 8, totalSynchronousDataPackets: 1)))
        #expect(try HCICommandReturn.decode(opcode: .readLocalVersion, h("0C 34 12 0C 5F 00 01 00"))
            == .localVersion(.init(hciVersion: 12, hciSubversion: 0x1234, lmpVersion: 12, companyIdentifier: 0x005F, lmpSubversion: 1)))
        #expect(try HCICommandReturn.decode(opcode: .reset, []) == HCICommandReturn.none)
        #expect(try HCICommandReturn.decode(opcode: .leRemoteConnectionParameterRequestReply, h("40 00")) == .connectionHandle(0x40))
        #expect(try HCICommandReturn.decode(opcode: HCIOpcode(rawValue: 0xFC01), h("01 02")) == .unknown([1, 2]))
        #expect(throws: BLEDecodeError.self) { try HCICommandReturn.decode(opcode: .leReadBufferSize, h("1B 00")) }
        #expect(throws: BLEDecodeError.self) { try HCICommandReturn.decode(opcode: .reset, h("00")) }
    }

    @Test func statusDisconnectionCompletedPackets() throws {
        #expect(try HCIEvent.decode(h("0F 04 00 01 0D 20")) == .commandStatus(CommandStatus(status: .success, numCommandPackets: 1, opcode: .leCreateConnection)))
        #expect(try HCIEvent.decode(h("05 04 00 40 00 13")) == .disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated))
        #expect(try HCIEvent.decode(h("13 09 02 40 00 02 00 41 00 01 00"))
            == .numberOfCompletedPackets([CompletedPackets(handle: 0x40, count: 2), CompletedPackets(handle: 0x41, count: 1)]))
        #expect(try HCIEvent.decode(h("08 04 00 40 00 01")) == .other(code: 0x08, parameters: h("00 40 00 01")))
    }

    @Test func connectionComplete() throws {
        let legacy = try HCIEvent.decode(h("3E 13 01 00 40 00 00 01 66 55 44 33 22 C1 18 00 00 00 90 01 00"))
        guard case .le(.connectionComplete(let c)) = legacy else { Issue.record(); return }
        #expect(c.status == .success && c.handle == 0x40 && c.role == 0 && !c.enhanced)
        #expect(c.peer == DeviceAddress("C1:22:33:44:55:66", kind: .random)!)
        #expect(c.interval == 24 && c.peripheralLatency == 0 && c.supervisionTimeout == 400)

        let enhanced = try HCIEvent.decode(h("3E 1F 0A 00 41 00 00 00 01 02 03 04 05 06 00 00 00 00 00 00 11 12 13 14 15 56 28 00 01 00 F4 01 05"))
        guard case .le(.connectionComplete(let e)) = enhanced else { Issue.record(); return }
        #expect(e.enhanced && e.handle == 0x41 && e.peer.kind == .public && e.peer.text == "06:05:04:03:02:01")
        #expect(e.localResolvablePrivateAddress == nil && e.peerResolvablePrivateAddress?.text == "56:15:14:13:12:11")
        #expect(e.interval == 40 && e.peripheralLatency == 1 && e.supervisionTimeout == 500 && e.centralClockAccuracy == 5)
    }

    @Test func advertisingReports() throws {
        let legacy = try HCIEvent.decode(h("3E 0F 02 01 00 01 66 55 44 33 22 C1 03 02 01 06 C5"))
        guard case .le(.advertisingReports(let l)) = legacy, let r = l.first else { Issue.record(); return }
        #expect(l.count == 1 && r.fromLegacyEvent && r.isConnectable && r.isScannable && !r.isScanResponse && r.isLegacyPDU)
        #expect(r.address.text == "C1:22:33:44:55:66" && r.address.kind == .random && r.rssi == -59 && r.data == h("02 01 06"))

        let extended = try HCIEvent.decode(h("3E 1D 0D 01 13 00 01 66 55 44 33 22 C1 01 00 FF 7F C5 00 00 00 00 00 00 00 00 00 03 02 01 06"))
        guard case .le(.advertisingReports(let x)) = extended, let e = x.first else { Issue.record(); return }
        #expect(!e.fromLegacyEvent && e.eventType == 0x13 && e.isConnectable && e.isLegacyPDU && e.txPower == nil && e.rssi == -59)
        #expect(e.address == r.address && e.data == r.data && e.dataStatus == 0)

        // Two extended reports, the second a scan response with data status "incomplete".
        let two = try HCIEvent.decode(h("3E 34 0D 02 13 00 01 66 55 44 33 22 C1 01 00 FF 7F C5 00 00 00 00 00 00 00 00 00 00"
            + " 3B 00 00 01 02 03 04 05 06 01 02 01 F8 B0 00 00 00 00 00 00 00 00 00 02 01 41"))
        guard case .le(.advertisingReports(let both)) = two else { Issue.record(); return }
        #expect(both.count == 2 && both[1].isScanResponse && both[1].dataStatus == 1 && both[1].txPower == -8 && both[1].rssi == -80)

        #expect(throws: BLEDecodeError.self) { try HCIEvent.decode(h("3E 03 02 00 00")) }  // no reports
        #expect(throws: BLEDecodeError.self) { try HCIEvent.decode(h("3E 0F 02 01 07 01 66 55 44 33 22 C1 03 02 01 06 C5")) }  // event type 7
        #expect(throws: BLEDecodeError.self) { try HCIEvent.decode(h("3E 0F 02 01 00 01 66 55 44 33 22 C1 05 02 01 06 C5")) }  // data past end
    }

    @Test func updatesAndDataLength() throws {
        #expect(try HCIEvent.decode(h("3E 0A 03 00 40 00 18 00 00 00 90 01"))
            == .le(.connectionUpdateComplete(status: .success, handle: 0x40, interval: 24, latency: 0, supervisionTimeout: 400)))
        #expect(try HCIEvent.decode(h("3E 0B 06 40 00 06 00 0C 00 00 00 C8 00"))
            == .le(.remoteConnectionParameterRequest(handle: 0x40, intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 200)))
        #expect(try HCIEvent.decode(h("3E 0B 07 40 00 FB 00 48 08 FB 00 48 08"))
            == .le(.dataLengthChange(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)))
        #expect(try HCIEvent.decode(h("3E 02 14 00")) == .le(.other(subevent: 0x14, parameters: [0])))
    }

    @Test func malformedEvents() {
        for bytes in ["", "0E", "0E 05 01 03 0C", "0E 02 01 03", "05 03 00 40 00", "05 05 00 40 00 13 00", "13 05 02 40 00 01 00",
                      "3E 00", "3E 12 01 00 40 00 00 01 66 55 44 33 22 C1 18 00 00 00 90 01", "0F 03 00 01 0D"] {
            #expect(throws: BLEDecodeError.self, "\(bytes)") { try HCIEvent.decode(h(bytes)) }
        }
    }
}

@Suite struct CommandQueueTests {
    let t0 = HostInstant.seconds(100)

    func complete(_ op: HCIOpcode, credits: UInt8 = 1, _ params: String = "00") -> HCIEvent {
        .commandComplete(CommandComplete(numCommandPackets: credits, opcode: op, returnParameters: h(params)))
    }

    @Test func oneCreditThenWhatTheControllerGrants() throws {
        var q = HCICommandQueue()
        #expect(try q.enqueue(.reset, now: t0) == [.send(.reset)])
        #expect(try q.enqueue(.readBDAddr, now: t0) == [])
        #expect(try q.enqueue(.leReadBufferSize, now: t0) == [])
        #expect(q.queuedCount == 2 && q.credits == 0)
        // Reset completes and grants 2 credits: both waiting commands go.
        #expect(q.receive(complete(.reset, credits: 2), now: t0) == [.complete(.reset, .completed(.none)), .send(.readBDAddr), .send(.leReadBufferSize)])
        #expect(q.outstandingOpcodes == [.readBDAddr, .leReadBufferSize])
        // Replies in any order are matched by opcode.
        #expect(q.receive(complete(.leReadBufferSize, "00 1B 00 40"), now: t0)
            == [.complete(.leReadBufferSize, .completed(.leBufferSize(.init(aclDataPacketLength: 27, totalACLDataPackets: 64))))])
        #expect(q.receive(complete(.readBDAddr, "00 66 55 44 33 22 11"), now: t0)
            == [.complete(.readBDAddr, .completed(.bdAddr(DeviceAddress("11:22:33:44:55:66")!)))])
        #expect(q.outstandingOpcodes.isEmpty && q.nextDeadline == nil)
    }

    @Test func statusFailureAndMalformed() throws {
        var q = HCICommandQueue()
        _ = try q.enqueue(.leCreateConnection(LECreateConnectionParameters(peer: DeviceAddress(1))), now: t0)
        #expect(q.receive(.commandStatus(CommandStatus(status: .success, numCommandPackets: 1, opcode: .leCreateConnection)), now: t0)
            == [.complete(.leCreateConnection, .started)])
        _ = try q.enqueue(.leSetScanEnable(enabled: true, filterDuplicates: false), now: t0)
        #expect(q.receive(complete(.leSetScanEnable, "0C"), now: t0) == [.complete(.leSetScanEnable, .failed(.commandDisallowed))])
        _ = try q.enqueue(.leReadBufferSize, now: t0)
        guard case .complete(_, .malformed) = q.receive(complete(.leReadBufferSize, "00 1B"), now: t0).first else { Issue.record(); return }
        // A reply nobody waits for still updates credits.
        #expect(q.receive(complete(.reset, credits: 3), now: t0) == [.unmatched(.reset)])
        #expect(q.credits == 3)
        // NOP only grants credits.
        #expect(q.receive(.commandComplete(CommandComplete(numCommandPackets: 5, opcode: .nop, returnParameters: [])), now: t0) == [])
        #expect(q.credits == 5)
        #expect(q.receive(.disconnectionComplete(status: .success, handle: 1, reason: .remoteUserTerminated), now: t0) == [])
    }

    @Test func commandWithoutReplyTimesOutAndTheQueueMovesOn() throws {
        var q = HCICommandQueue(configuration: .init(timeout: .seconds(2)))
        let vendor = HCICommand.raw(HCIOpcode(ogf: 0x3F, ocf: 0x0001), [])
        #expect(try q.enqueue(vendor, now: t0) == [.send(vendor)])
        #expect(try q.enqueue(.reset, now: t0) == [])
        #expect(q.nextDeadline == t0 + .seconds(2))
        #expect(q.tick(now: t0 + .milliseconds(1999)) == [])
        #expect(q.tick(now: t0 + .seconds(2)) == [.timedOut(vendor.opcode), .send(.reset)])
        #expect(q.nextDeadline == t0 + .seconds(4))
        // A late reply to the timed-out command is unmatched.
        #expect(q.receive(complete(vendor.opcode, "01"), now: t0 + .seconds(3)) == [.unmatched(vendor.opcode)])
        #expect(q.receive(complete(.reset), now: t0 + .seconds(3)) == [.complete(.reset, .completed(.none))])
    }

    @Test func sameOpcodeWaitsAndOrderIsKept() throws {
        var q = HCICommandQueue()
        _ = q.receive(complete(.nop, credits: 4, ""), now: t0)
        #expect(try q.enqueue(.leSetScanEnable(enabled: false, filterDuplicates: false), now: t0).count == 1)
        #expect(try q.enqueue(.leSetScanEnable(enabled: true, filterDuplicates: false), now: t0) == [])
        #expect(try q.enqueue(.reset, now: t0) == [])  // behind the blocked command
        #expect(q.receive(complete(.leSetScanEnable, credits: 4), now: t0)
            == [.complete(.leSetScanEnable, .completed(.none)), .send(.leSetScanEnable(enabled: true, filterDuplicates: false)), .send(.reset)])
    }

    @Test func queueLimitAndReset() throws {
        var q = HCICommandQueue(configuration: .init(maxQueued: 2))
        _ = try q.enqueue(.reset, now: t0)
        _ = try q.enqueue(.readBDAddr, now: t0)
        _ = try q.enqueue(.readLocalVersion, now: t0)
        #expect(throws: HCICommandQueue.EnqueueError.queueFull(limit: 2)) { try q.enqueue(.readBufferSize, now: t0) }
        #expect(q.reset() == [.readBDAddr, .readLocalVersion])
        #expect(q.credits == 1 && q.outstandingOpcodes.isEmpty)
    }
}
