import TestSupport
import Testing
import BluetoothCentral
@testable import BLEHost

/// Seeded fuzz loops. Each input is judged, not just survived: a decoded value must re-encode to
/// its bytes (or be a fixed point of encode and decode) and agree with an independent reading of
/// the format's framing; a rejection must be the layer's `BLEDecodeError` pointing inside the input
/// (a cut field exactly at its end); state machines must match a small model of their rules. Every
/// loop checks that it reached both outcomes.
@Suite struct FuzzTests {
    static let iterations = 3000

    static let eventSeeds: [String] = [
        "0E 0A 01 09 10 00 66 55 44 33 22 11", "0F 04 00 01 0D 20", "05 04 00 40 00 13", "13 05 01 40 00 02 00",
        "3E 13 01 00 40 00 00 01 66 55 44 33 22 C1 18 00 00 00 90 01 00", "3E 0F 02 01 00 01 66 55 44 33 22 C1 03 02 01 06 C5",
        "3E 1D 0D 01 13 00 01 66 55 44 33 22 C1 01 00 FF 7F C5 00 00 00 00 00 00 00 00 00 03 02 01 06",
        "3E 0A 03 00 40 00 18 00 00 00 90 01", "3E 0B 06 40 00 06 00 0C 00 00 00 C8 00", "3E 0B 07 40 00 FB 00 48 08 FB 00 48 08",
        "0E 04 01 03 0C 00", "0F 04 00 01 03 0C", "0E 03 01 00 00",
    ]
    static let commandSeeds: [String] = [
        "03 0C 00", "01 0C 08 FF FF FB FF 07 F8 BF 3D", "05 20 06 55 44 33 22 11 C0", "0B 20 07 01 10 00 10 00 01 00",
        "0C 20 02 01 00", "41 20 08 01 00 01 00 60 00 30 00", "42 20 06 01 01 00 00 00 00", "06 04 03 40 00 13",
        "13 20 0E 40 00 06 00 0C 00 00 00 C8 00 00 00 00 00", "AA FC 03 01 02 03",
    ]

    @Test func hciEventsAndCommands() throws {
        var g = SeededGenerator(seed: 0x4845_4C54)
        var problems: [String] = []
        var events = (decoded: 0, rejected: 0), commands = (decoded: 0, rejected: 0), completions = 0
        for i in 0..<Self.iterations {
            let input = g.mutate(h(Self.eventSeeds[i % Self.eventSeeds.count]))
            var q = HCICommandQueue()
            if try q.enqueue(.reset, now: .zero) != [.send(.reset)] { problems.append("reset not sent at once") }
            do {
                let event = try HCIEvent.decode(input)
                events.decoded += 1
                if let p = Self.checkEvent(event, input) { problems.append("event \(input): \(p)") }
                if case .commandComplete(let cc) = event {
                    do {
                        _ = try HCICommandReturn.decode(opcode: cc.opcode, Array(cc.returnParameters.dropFirst()))
                    } catch {
                        if let p = checkRejection(error, .hciEvent, Array(cc.returnParameters.dropFirst())) { problems.append("return: \(p)") }
                    }
                }
                if let p = Self.checkQueue(&q, event) { problems.append("queue after \(input): \(p)") }
                if q.outstandingOpcodes.isEmpty { completions += 1 }
            } catch {
                events.rejected += 1
                if let p = checkRejection(error, .hciEvent, input) { problems.append("event \(input): \(p)") }
            }

            let raw = g.mutate(h(Self.commandSeeds[i % Self.commandSeeds.count]))
            do {
                let command = try HCICommand.decode(raw)
                commands.decoded += 1
                // Flags read as booleans and address types re-encode canonically: the decoded
                // command is a fixed point of encoding and decoding, of the same size; unknown
                // commands come back byte for byte.
                let again = try? HCICommand.decode(command.packet)
                if again != command || command.packet.count != raw.count { problems.append("command \(raw) -> \(command.packet)") }
                if case .raw = command, command.packet != raw { problems.append("raw command \(raw) -> \(command.packet)") }
            } catch {
                commands.rejected += 1
                if let p = checkRejection(error, .hciCommand, raw) { problems.append("command \(raw): \(p)") }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(events.decoded > 100 && events.rejected > 100, "\(events)")
        #expect(commands.decoded > 100 && commands.rejected > 100, "\(commands)")
        #expect(completions > 10, "events that complete the reset: \(completions)")
    }

    /// The event's bytes read independently: code, parameter length (exactly the rest), and the
    /// fields of the events the host understands.
    static func checkEvent(_ event: HCIEvent, _ b: [UInt8]) -> String? {
        guard b.count >= 2, b.count == 2 + Int(b[1]) else { return "decoded, but the parameter length does not match" }
        let p = Array(b[2...])
        func u16(_ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
        let ok: Bool
        switch event {
        case .disconnectionComplete(let status, let handle, let reason):
            ok = b[0] == 0x05 && p.count == 4 && status.rawValue == p[0] && handle == u16(1) & 0x0FFF && reason.rawValue == p[3]
        case .commandComplete(let cc):
            ok = b[0] == 0x0E && p.count >= 3 && cc.numCommandPackets == p[0] && cc.opcode.rawValue == u16(1)
                && cc.returnParameters == Array(p[3...])
        case .commandStatus(let cs):
            ok = b[0] == 0x0F && p.count == 4 && cs.status.rawValue == p[0] && cs.numCommandPackets == p[1] && cs.opcode.rawValue == u16(2)
        case .numberOfCompletedPackets(let list):
            ok = b[0] == 0x13 && !p.isEmpty && p.count == 1 + 4 * Int(p[0]) && list.count == Int(p[0])
                && list.enumerated().allSatisfy { i, e in e.handle == u16(1 + 4 * i) & 0x0FFF && e.count == u16(3 + 4 * i) }
        case .le(let meta):
            ok = b[0] == 0x3E && !p.isEmpty && checkMeta(meta, p)
        case .other(let code, let parameters):
            ok = ![0x05, 0x0E, 0x0F, 0x13, 0x3E].contains(code) && code == b[0] && parameters == p
        }
        return ok ? nil : "\(event)"
    }

    static func checkMeta(_ meta: LEMetaEvent, _ p: [UInt8]) -> Bool {
        func u16(_ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
        switch meta {
        case .connectionComplete(let c):
            let enhanced = p[0] == 0x0A
            return (p[0] == 0x01 || enhanced) && c.enhanced == enhanced && p.count == (enhanced ? 31 : 19)
                && c.status.rawValue == p[1] && c.handle == u16(2) & 0x0FFF && c.role == p[4] && c.peerAddressType == p[5]
                && c.peer.littleEndianBytes == Array(p[6..<12]) && c.peer.kind == (p[5] & 1 == 1 ? .random : .public)
        case .advertisingReports(let reports):
            // Legacy reports take 10 bytes besides their data (at most 31), extended ones 24.
            let legacy = p[0] == 0x02
            guard legacy || p[0] == 0x0D, p.count >= 2, reports.count == Int(p[1]), (1...25).contains(reports.count) else { return false }
            let size = reports.reduce(2) { $0 + (legacy ? 10 : 24) + $1.data.count }
            return size == p.count && reports.allSatisfy { $0.fromLegacyEvent == legacy && (!legacy || $0.data.count <= 31) }
        case .connectionUpdateComplete(let status, let handle, _, _, _):
            return p[0] == 0x03 && p.count == 10 && status.rawValue == p[1] && handle == u16(2) & 0x0FFF
        case .remoteConnectionParameterRequest(let handle, _, _, _, let timeout):
            return p[0] == 0x06 && p.count == 11 && handle == u16(1) & 0x0FFF && timeout == u16(9)
        case .dataLengthChange(let handle, _, _, _, let maxRxTime):
            return p[0] == 0x07 && p.count == 11 && handle == u16(1) & 0x0FFF && maxRxTime == u16(9)
        case .other(let subevent, let parameters):
            return ![0x01, 0x02, 0x03, 0x06, 0x07, 0x0A, 0x0D].contains(subevent) && subevent == p[0] && parameters == Array(p[1...])
        }
    }

    /// The queue holds Reset in flight: Command Complete/Status for Reset completes it, for
    /// another opcode is unmatched, for NOP only updates the credits; other events do nothing.
    static func checkQueue(_ q: inout HCICommandQueue, _ event: HCIEvent) -> String? {
        let actions = q.receive(event, now: .zero)
        let opcode: HCIOpcode, credits: Int
        switch event {
        case .commandComplete(let cc): (opcode, credits) = (cc.opcode, Int(cc.numCommandPackets))
        case .commandStatus(let cs): (opcode, credits) = (cs.opcode, Int(cs.numCommandPackets))
        default: return actions.isEmpty && q.outstandingOpcodes == [.reset] ? nil : "\(actions)"
        }
        guard q.credits == credits else { return "credits \(q.credits), the event says \(credits)" }
        switch (opcode, actions.first) {
        case (.nop, nil): return q.outstandingOpcodes == [.reset] ? nil : "\(q.outstandingOpcodes)"
        case (.reset, .complete(.reset, _)?): return actions.count == 1 && q.outstandingOpcodes.isEmpty ? nil : "\(actions)"
        case (_, .unmatched(let op)?) where op == opcode && opcode != .reset && opcode != .nop:
            return q.outstandingOpcodes == [.reset] ? nil : "\(q.outstandingOpcodes)"
        default: return "\(opcode): \(actions)"
        }
    }

    @Test func h4FramerOverRandomChunks() {
        var g = SeededGenerator(seed: 0x4834)
        var clean = 0, broken = 0, packetsSeen = 0
        var problems: [String] = []
        for run in 0..<300 {
            // A stream of well-formed packets of every type, sometimes an ACL packet over the
            // limit or a byte that is no packet type, cut anywhere at the end.
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...8, using: &g) {
                if Int.random(in: 0..<12, using: &g) == 0 { stream.append(UInt8.random(in: 6...255, using: &g)) }
                let type = H4PacketType.allCases.randomElement(using: &g)!
                let length = type == .acl && Int.random(in: 0..<10, using: &g) == 0 ? Int.random(in: 301...400, using: &g)
                    : Int.random(in: 0...(type == .acl ? 300 : 60), using: &g)
                var header = g.bytes(type == .event ? 2 : type == .acl || type == .iso ? 4 : 3)
                switch type {
                case .command, .sco: header[2] = UInt8(length)
                case .event: header[1] = UInt8(length)
                case .acl: header[2] = UInt8(length & 0xFF); header[3] = UInt8(length >> 8)
                case .iso: header[2] = UInt8(length & 0xFF); header[3] = UInt8(length >> 8) | header[3] & 0xC0
                }
                stream += [type.rawValue] + header + g.bytes(length)
            }
            if Bool.random(using: &g) { stream.removeLast(Int.random(in: 0...min(stream.count, 20), using: &g)) }
            let expected = Self.referenceFrames(stream, maxACL: 300)

            var framer = H4Framer(limits: .init(maxACLDataLength: 300, maxBufferedBytes: 4096))
            var packets: [H4Packet] = [], failure: BLEDecodeError?, fed = 0
            while fed < stream.count, failure == nil {
                let n = min(stream.count - fed, Int.random(in: 0...40, using: &g))
                do {
                    try framer.append(stream[fed..<fed + n])
                    while let packet = try framer.next() { packets.append(packet) }
                } catch {
                    failure = error
                }
                fed += n
            }
            packetsSeen += packets.count
            if packets != expected.packets { problems.append("run \(run): \(packets.count) packets, expected \(expected.packets.count)") }
            switch (failure, expected.failure) {
            case (nil, nil):
                clean += 1
                if framer.bufferedByteCount != stream.count - expected.consumed { problems.append("run \(run): buffered \(framer.bufferedByteCount)") }
            case (let error?, (let offset, let unknownType)?):
                broken += 1
                let kindMatches: Bool
                if case .unknownPacketType = error.reason { kindMatches = unknownType } else if case .tooLong = error.reason { kindMatches = !unknownType } else { kindMatches = false }
                if error.layer != .h4 || error.offset != offset || !kindMatches { problems.append("run \(run): \(error), expected at \(offset)") }
            default:
                problems.append("run \(run): \(String(describing: failure)), expected \(String(describing: expected.failure))")
            }
            #expect(framer.bufferedByteCount <= 4096)
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(clean > 30 && broken > 30 && packetsSeen > 300, "clean \(clean), broken \(broken), packets \(packetsSeen)")
    }

    /// H4 framing read independently from the specification (Core Vol 4 Part A): the complete
    /// packets of `stream`, how many bytes they take, and where framing fails (an unknown type
    /// byte, or an ACL length over `maxACL`) if it does.
    static func referenceFrames(_ stream: [UInt8], maxACL: Int) -> (packets: [H4Packet], consumed: Int, failure: (offset: Int, unknownType: Bool)?) {
        var packets: [H4Packet] = [], at = 0
        while at < stream.count {
            guard let type = H4PacketType(rawValue: stream[at]) else { return (packets, at, (at, true)) }
            let headerLength = [H4PacketType.command: 3, .acl: 4, .sco: 3, .event: 2, .iso: 4][type]!
            guard stream.count >= at + 1 + headerLength else { break }
            let b = { stream[at + 1 + $0] }
            let length = switch type {
            case .command, .sco: Int(b(2))
            case .event: Int(b(1))
            case .acl: Int(b(2)) | Int(b(3)) << 8
            case .iso: (Int(b(2)) | Int(b(3)) << 8) & 0x3FFF
            }
            if type == .acl, length > maxACL { return (packets, at, (at, false)) }
            let end = at + 1 + headerLength + length
            guard stream.count >= end else { break }
            packets.append(H4Packet(type, Array(stream[(at + 1)..<end])))
            at = end
        }
        return (packets, at, nil)
    }

    @Test func aclL2CAPAndFlowControl() {
        var g = SeededGenerator(seed: 0x41434C)
        var reassembler = ACLReassembler(limits: .init(maxPDULength: 256, maxHandles: 4))
        var model = ReassemblyModel(maxPDULength: 256, maxHandles: 4)
        var flow = ACLFlowControl(maxDataLength: 27, totalPackets: 4, maxQueuedPacketsPerHandle: 32)
        for h in 0..<4 { flow.open(handle: UInt16(h)) }
        var accepted: [UInt16: [UInt8]] = [:], sent: [UInt16: Int] = [:], inFlight: [UInt16: Int] = [:]
        var problems: [String] = []
        var counts = (aclDecoded: 0, aclRejected: 0, pdus: 0, reassemblyErrors: 0, signaling: 0, signalingRejected: 0, queueFull: 0)

        func sendAll(_ packets: [ACLPacket]) {
            for p in packets {
                // The next bytes of what was accepted on that handle, at most 27 of them.
                let from = sent[p.handle] ?? 0, queue = accepted[p.handle] ?? []
                if p.data.count > 27 || from + p.data.count > queue.count || !queue[from..<(from + p.data.count)].elementsEqual(p.data) {
                    problems.append("sent \(p), not the next bytes accepted on its handle")
                }
                sent[p.handle] = from + p.data.count
                inFlight[p.handle, default: 0] += 1
            }
        }
        func reassemble(_ packet: ACLPacket) {
            let expected = model.receive(packet)
            do {
                let result = try reassembler.receive(packet)
                if result?.handle != expected.pdu?.handle || result?.pdu != expected.pdu?.pdu || expected.error != nil {
                    problems.append("reassembled \(String(describing: result)), model \(expected)")
                }
                if let done = result {
                    counts.pdus += 1
                    do {
                        let frame = try L2CAPFrame.decode(done.pdu)
                        if frame.encoded != done.pdu { problems.append("L2CAP \(done.pdu) -> \(frame.encoded)") }
                        _ = LEFixedChannels.route(frame, handle: done.handle)
                    } catch {
                        if let p = checkRejection(error, .l2cap, done.pdu) { problems.append("L2CAP \(done.pdu): \(p)") }
                    }
                }
            } catch {
                counts.reassemblyErrors += 1
                if expected.error != error.layer { problems.append("\(error), model \(expected)") }
            }
            if reassembler.handlesInProgress != Set(model.partial.keys) { problems.append("handles \(reassembler.handlesInProgress)") }
        }

        let signalingSeeds = ["12 01 08 00 06 00 0C 00 00 00 C8 00", "13 01 02 00 00 00", "01 02 02 00 00 00",
                              "14 03 0A 00 80 00 40 00 17 00 17 00 01 00", "15 03 0A 00 40 00 17 00 17 00 01 00 00 00", "0B 04 01 00 07"]
        for i in 0..<Self.iterations {
            // Random bytes, and encoded packets with a few bytes changed, cut or extended.
            let raw = i % 2 == 0 ? g.bytes(Int.random(in: 0...40, using: &g))
                : g.mutate(ACLPacket(handle: UInt16.random(in: 0...3, using: &g), boundary: Bool.random(using: &g) ? .continuing : .firstFlushable,
                                     data: g.bytes(Int.random(in: 0...30, using: &g))).encoded)
            do {
                let packet = try ACLPacket.decode(raw)
                counts.aclDecoded += 1
                if packet.encoded != raw { problems.append("ACL \(raw) -> \(packet.encoded)") }
                // (Only on the four connection handles: unfinished PDUs on others would hold
                // every reassembly slot.)
                if packet.handle < 4 { reassemble(packet) }
            } catch {
                counts.aclRejected += 1
                if let p = checkRejection(error, .acl, raw) { problems.append("ACL \(raw): \(p)") }
            }
            // Fragments of a real L2CAP frame now and then, so that PDUs complete.
            let packet: ACLPacket
            if Int.random(in: 0..<3, using: &g) == 0 {
                let payload = g.bytes(Int.random(in: 0...20, using: &g))
                let frame = L2CAPFrame(channel: UInt16.random(in: 4...6, using: &g), payload: payload).encoded
                packet = ACLPacket(handle: UInt16.random(in: 0...3, using: &g), boundary: .firstFlushable, data: frame)
            } else {
                packet = ACLPacket(handle: UInt16.random(in: 0...3, using: &g), boundary: Bool.random(using: &g) ? .continuing : .firstFlushable,
                                   data: g.bytes(Int.random(in: 0...30, using: &g)))
            }
            reassemble(packet)
            _ = LEFixedChannels.route(L2CAPFrame(channel: UInt16.random(in: 4...6, using: &g), payload: raw), handle: 1)
            let signal = g.mutate(h(signalingSeeds[i % signalingSeeds.count]))
            do {
                let command = try LESignalingCommand.decode(signal)
                counts.signaling += 1
                if command.encoded != signal { problems.append("signaling \(signal) -> \(command.encoded)") }
            } catch {
                counts.signalingRejected += 1
                if let p = checkRejection(error, .signaling, signal) { problems.append("signaling \(signal): \(p)") }
            }

            // Flow control against a model: what leaves on a handle is a prefix of what was
            // accepted on it, in fragments of at most 27 bytes, within the 4 controller buffers.
            let handle = UInt16.random(in: 0...4, using: &g)
            let fragments = max(1, (raw.count + 26) / 27)
            do {
                let out = try flow.enqueue(raw, handle: handle)
                if handle == 4 { problems.append("accepted a PDU for a handle never opened") }
                accepted[handle, default: []] += raw
                sendAll(out)
            } catch {
                switch error {
                case .unknownHandle(let h) where h == 4 && handle == 4: break
                case .queueFull where handle < 4 && flow.queued(handle: handle) + fragments > 32: counts.queueFull += 1
                default: problems.append("enqueue \(raw.count) bytes on \(handle): \(error)")
                }
            }
            let done = CompletedPackets(handle: UInt16.random(in: 0...4, using: &g), count: UInt16.random(in: 0...3, using: &g))
            inFlight[done.handle] = max(0, (inFlight[done.handle] ?? 0) - Int(done.count))
            sendAll(flow.completed([done]))
            for h in UInt16(0)..<4 {
                if flow.inFlight(handle: h) != inFlight[h] ?? 0 { problems.append("handle \(h): \(flow.inFlight(handle: h)) in flight, model \(inFlight[h] ?? 0)") }
            }
            if flow.availableCredits != 4 - inFlight.values.reduce(0, +) { problems.append("credits \(flow.availableCredits), in flight \(inFlight)") }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(counts.aclDecoded > 100 && counts.aclRejected > 1000 && counts.pdus > 300 && counts.reassemblyErrors > 100
                && counts.signaling > 100 && counts.signalingRejected > 1000 && counts.queueFull > 0, "\(counts)")
        #expect(sent.values.reduce(0, +) > 10_000)
    }

    /// L2CAP reassembly over ACL as the specification describes it (Core Vol 3 Part A 7.2): per
    /// handle, the bytes since the last start fragment; a PDU is complete when they reach its
    /// length field plus 4. A start replaces an unfinished PDU; a continuation needs a start.
    struct ReassemblyModel {
        let maxPDULength: Int, maxHandles: Int
        var partial: [UInt16: [UInt8]] = [:]

        mutating func receive(_ p: ACLPacket) -> (pdu: (handle: UInt16, pdu: [UInt8])?, error: BLEDecodeError.Layer?) {
            var buffer: [UInt8]
            if p.boundary != .continuing {
                partial[p.handle] = nil
                if partial.count >= maxHandles { return (nil, .acl) }
                buffer = p.data
            } else {
                guard let existing = partial.removeValue(forKey: p.handle) else { return (nil, .acl) }
                buffer = existing + p.data
            }
            if buffer.count >= 4 {
                let total = 4 + (Int(buffer[0]) | Int(buffer[1]) << 8)
                if total > maxPDULength { return (nil, .l2cap) }
                if buffer.count >= total { return ((p.handle, Array(buffer.prefix(total))), nil) }
            }
            partial[p.handle] = buffer
            return (nil, nil)
        }
    }

    @Test func attBearerAndDiscovery() {
        var g = SeededGenerator(seed: 0x415454)
        let seeds = ["11 06 01 00 05 00 00 18", "09 07 02 00 02 03 00 00 2A", "05 01 07 00 02 29", "0B 48", "01 10 01 00 0A", "1D 0C 00 AA", "13", "03 B9 00",
                     "1B 0D 00 06 48", "01 08 01 00 0A", "05 02 07 00 FB 34 9B 5F 80 00 00 80 00 10 00 00 0D 18 00 00"]
        var problems: [String] = []
        var counts = (decoded: 0, rejected: 0, responses: 0, notifications: 0)
        for i in 0..<Self.iterations {
            let input = g.mutate(h(seeds[i % seeds.count]))
            do {
                let pdu = try ATTPDU.decode(input)
                counts.decoded += 1
                // UUIDs re-encode in their shortest form; everything else byte for byte.
                let again = try? ATTPDU.decode(pdu.encoded)
                if again != pdu || pdu.opcode != input[0] { problems.append("ATT \(input) -> \(pdu.encoded)") }
                switch pdu {
                case .findInformationResponse, .readByTypeRequest, .readByGroupTypeRequest: break
                default: if pdu.encoded != input { problems.append("ATT \(input) -> \(pdu.encoded)") }
                }
            } catch {
                counts.rejected += 1
                if let p = checkRejection(error, .att, input) { problems.append("ATT \(input): \(p)") }
            }
            var bearer = ATTBearer()
            var discovery = GATTDiscovery(subscribe: [BluetoothUUID(0x2A37)], read: [BluetoothUUID(0x2A38)])
            var requests: [ATTRequestID: UInt8] = [:]
            var pending = discovery.start()
            for _ in 0..<8 {
                for case .request(let pdu) in pending {
                    if let sent = try? bearer.request(pdu, now: .zero) { requests[sent.0] = pdu.opcode }
                }
                pending = []
                let peer = g.mutate(h(seeds[Int.random(in: 0..<seeds.count, using: &g)]))
                let outstanding = bearer.outstandingRequest
                let received = try? ATTPDU.decode(peer)
                let actions = bearer.receive(peer, now: .zero)
                for (k, action) in actions.enumerated() {
                    switch action {
                    case .send(let bytes):
                        if (try? ATTPDU.decode(bytes)) == nil || bytes.count > Int(bearer.mtu) { problems.append("sent \(bytes)") }
                    case .response(let id, let result):
                        counts.responses += 1
                        // The answer goes to the request in flight: its opcode + 1, or an error response naming it.
                        guard id == outstanding, let op = requests[id] else { problems.append("response to \(id), in flight \(String(describing: outstanding))"); break }
                        switch result {
                        case .success(let pdu): if pdu.opcode != op + 1 || pdu != received { problems.append("\(pdu) answers 0x\(op)") }
                        case .failure(.peer): if case .errorResponse(op, _, _)? = received {} else { problems.append("\(result) from \(peer)") }
                        case .failure: problems.append("\(result) from \(peer)")
                        }
                        pending += discovery.receive(result)
                    case .notification(let handle, let value):
                        counts.notifications += 1
                        if received != .handleValueNotification(handle: handle, value: value) { problems.append("\(action) from \(peer)") }
                    case .indication(let handle, let value):
                        let confirmed = k + 1 < actions.count && actions[k + 1] == .send([0x1E])
                        if received != .handleValueIndication(handle: handle, value: value) || !confirmed { problems.append("\(actions) from \(peer)") }
                    case .mtuChanged(let mtu):
                        if !(23...247).contains(mtu) { problems.append("MTU \(mtu)") }
                    case .unexpected, .closed:
                        break
                    }
                }
            }
            _ = discovery.disconnected()
            _ = bearer.disconnected()
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(counts.decoded > 500 && counts.rejected > 500 && counts.responses > 100 && counts.notifications > 10, "\(counts)")
    }

    @Test func advertisingBtsnoopAndAddresses() {
        var g = SeededGenerator(seed: 0x4144)
        let file = BTSnoop.Writer().header + BTSnoop.Writer().record(.h4(HCICommand.reset.h4Packet, received: false, timestamp: 0))
            + BTSnoop.Writer().record(.h4(H4Packet(.event, h("0E 04 01 03 0C 00")), received: true, timestamp: 99))
        var problems: [String] = []
        var counts = (adParsed: 0, adRejected: 0, records: 0, snoopRejected: 0, addresses: 0, addressesRejected: 0)
        for i in 0..<Self.iterations {
            let ad = g.mutate(h("02 01 06 05 03 0D 18 0F 18 05 09 48 52 4D 31 04 16 0F 18 5A 04 FF 59 00 01"))
            let structures = Self.referenceAD(ad)
            do {
                let parsed = try AdvertisingData.parse(ad)
                counts.adParsed += 1
                if let p = Self.checkAD(parsed, structures) { problems.append("AD \(ad): \(p)") }
            } catch {
                counts.adRejected += 1
                if structures != nil { problems.append("AD \(ad) is well formed but: \(error)") }
                if let p = checkRejection(error, .advertisingData, ad) { problems.append("AD \(ad): \(p)") }
            }

            let snoop = g.mutate(file)
            let reference = Self.referenceSnoop(snoop)
            var read: [BTSnoop.Record] = []
            var failure: BLEDecodeError?
            do {
                var reader = try BTSnoop.Reader(snoop)
                while let record = try reader.next() {
                    read.append(record)
                    if let packet = try? record.packet(datalink: reader.datalink), reader.datalink == .h4,
                       packet.encoded != record.data { problems.append("packet \(packet) of \(record.data)") }
                }
            } catch {
                failure = error
                if let p = checkRejection(error, .btsnoop, snoop) { problems.append("btsnoop: \(p)") }
            }
            counts.records += read.count
            if failure != nil { counts.snoopRejected += 1 }
            if read != reference.records || (failure?.offset) != reference.failureOffset {
                problems.append("btsnoop \(snoop): \(read.count) records, \(String(describing: failure)); expected \(reference.records.count), \(String(describing: reference.failureOffset))")
            }

            let text = String(decoding: g.mutate(Array(["hci0", "tcp:[::1]:80", "unix:/x", "serial:/dev/tty:9600", "tcp:example.org:4444",
                                                         "C1:22:33:44:55:66", "180D", "0000180d-0000-1000-8000-00805f9b34fb"][i % 8].utf8)),
                              as: UTF8.self)
            do {
                let address = try TransportAddress(parsing: text)
                counts.addresses += 1
                if (try? TransportAddress(parsing: address.description)) != address { problems.append("\(text) -> \(address)") }
            } catch {
                counts.addressesRejected += 1
                if error.input != text || error.message.isEmpty { problems.append("\(error)") }
            }
            if let a = DeviceAddress(text) {
                let parts = text.split(separator: ":", omittingEmptySubsequences: false)
                if DeviceAddress(a.text) != a || parts.count != 6 || a.text.count != 17 { problems.append("\(text) -> \(a)") }
            }
            if let u = BluetoothUUID(text), BluetoothUUID(u.description) != u { problems.append("\(text) -> \(u)") }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(counts.adParsed > 300 && counts.adRejected > 300 && counts.records > 1000 && counts.snoopRejected > 300
                && counts.addresses > 300 && counts.addressesRejected > 300, "\(counts)")
    }

    /// Advertising data read independently (Core Supplement Part A 1): length-type-data
    /// structures until a zero length or the end; nil when a structure runs past the end or a
    /// type with a fixed size (flags, TX power, appearance, UUID lists, service and manufacturer
    /// data) has the wrong one.
    static func referenceAD(_ bytes: [UInt8]) -> [(type: UInt8, data: [UInt8])]? {
        var out: [(type: UInt8, data: [UInt8])] = [], at = 0
        while at < bytes.count {
            let length = Int(bytes[at])
            if length == 0 { break }
            guard at + 1 + length <= bytes.count else { return nil }
            let type = bytes[at + 1], data = Array(bytes[(at + 2)..<(at + 1 + length)])
            let fits: Bool = switch type {
            case 0x01, 0x0A: data.count == 1
            case 0x19: data.count == 2
            case 0x02, 0x03: data.count % 2 == 0
            case 0x04, 0x05: data.count % 4 == 0
            case 0x06, 0x07: data.count % 16 == 0
            case 0x16, 0xFF: data.count >= 2
            case 0x20: data.count >= 4
            case 0x21: data.count >= 16
            default: true
            }
            guard fits else { return nil }
            out.append((type, data))
            at += 1 + length
        }
        return out
    }

    static func checkAD(_ ad: AdvertisingData, _ structures: [(type: UInt8, data: [UInt8])]?) -> String? {
        guard let s = structures else { return "accepted malformed data: \(ad)" }
        let known: Set<UInt8> = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x16, 0x19, 0x20, 0x21, 0xFF]
        let uuids = s.reduce(0) { n, x in
            n + ((0x02...0x07).contains(x.type) ? x.data.count / (x.type <= 0x03 ? 2 : x.type <= 0x05 ? 4 : 16) : 0)
        }
        let ok = ad.flags == s.last(where: { $0.type == 0x01 })?.data[0]
            && ad.txPower.map { UInt8(bitPattern: $0) } == s.last(where: { $0.type == 0x0A })?.data[0]
            && ad.serviceUUIDs.count == uuids
            && ad.manufacturerData.map { [UInt8($0.companyIdentifier & 0xFF), UInt8($0.companyIdentifier >> 8)] + $0.data }
                == s.filter { $0.type == 0xFF }.map(\.data)
            && ad.serviceData.count == s.filter { [0x16, 0x20, 0x21].contains($0.type) }.count
            && ad.other.map(\.type) == s.filter { !known.contains($0.type) }.map(\.type)
            && ad.other.map(\.data) == s.filter { !known.contains($0.type) }.map(\.data)
            && (ad.localName != nil) == s.contains { $0.type == 0x08 || $0.type == 0x09 }
        return ok ? nil : "\(ad)"
    }

    /// A btsnoop file read independently (the format of RFC 1761 as btsnoop uses it, all fields
    /// big-endian): the records before the first damage, and the offset of that damage.
    static func referenceSnoop(_ b: [UInt8]) -> (records: [BTSnoop.Record], failureOffset: Int?) {
        func be(_ at: Int, _ n: Int) -> UInt64 { b[at..<at + n].reduce(0) { $0 << 8 | UInt64($1) } }
        // A field cut by the end of the file is reported where the field starts.
        guard b.count >= 8, Array(b[0..<8]) == Array("btsnoop".utf8) + [0] else { return ([], 0) }
        guard b.count >= 12, be(8, 4) == 1 else { return ([], 8) }
        guard b.count >= 16, [1001, 1002].contains(be(12, 4)) else { return ([], 12) }
        var records: [BTSnoop.Record] = [], at = 16
        while at < b.count {
            // Record header: original length, included length, flags, drops (4 bytes each), timestamp (8).
            if b.count - at < 24 {
                let starts = [0, 4, 8, 12, 16], ends = [4, 8, 12, 16, 24]
                return (records, at + starts[ends.firstIndex { at + $0 > b.count }!])
            }
            let original = be(at, 4), included = be(at + 4, 4), flags = be(at + 8, 4)
            guard included <= 5 + 0xFFFF, included <= original else { return (records, at + 4) }
            guard b.count - at - 24 >= Int(included) else { return (records, at + 24) }
            records.append(BTSnoop.Record(received: flags & 1 != 0, isCommandOrEvent: flags & 2 != 0,
                                          timestamp: Int64(bitPattern: be(at + 16, 8)), data: Array(b[(at + 24)..<(at + 24 + Int(included))]),
                                          originalLength: UInt32(original), cumulativeDrops: UInt32(be(at + 12, 4))))
            at += 24 + Int(included)
        }
        return (records, nil)
    }
}

/// Whether a rejection is sensible: the layer that read the bytes, an offset inside the input (or
/// at its end, where the missing part starts), and for a cut field or extra bytes exactly the
/// end of the input. nil when it is; else what is wrong.
func checkRejection(_ e: BLEDecodeError, _ layer: BLEDecodeError.Layer, _ input: [UInt8]) -> String? {
    guard e.layer == layer else { return "\(e): expected the \(layer) layer" }
    guard e.offset >= 0, e.offset <= input.count else { return "\(e): offset outside 0...\(input.count)" }
    switch e.reason {
    case .truncated(_, let needed, let available):
        if needed <= available || e.offset + available != input.count { return "\(e): not at the end of the \(input.count) bytes" }
    case .trailingBytes(let count):
        if count <= 0 || e.offset + count != input.count { return "\(e): not the last \(count) of \(input.count) bytes" }
    case .unknownPacketType, .unexpected, .invalidValue, .tooLong:
        break
    }
    return nil
}
