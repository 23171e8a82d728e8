import ANTFS
import TestSupport
import Testing

/// Seeded random inputs: the host never traps, answers each input with a few actions, says
/// nothing after it ended, always ends when only time passes, and never hands over bytes that
/// are not the watch's file.
@Suite struct ANTFSRobustnessTests {
    typealias L = ANTFSLayout
    static let hostSerial: UInt32 = 0x0BAD_F00D

    /// One random input, often shaped like what a watch sends (beacons in every state for this
    /// host or another, authentication and download responses with random fields).
    static func input(_ rng: inout SeededGenerator, time: inout Double, lastSent: [UInt8]?) -> ANTFSHost.Input {
        if let lastSent, Int.random(in: 0..<4, using: &rng) == 0, let answer = answer(to: lastSent) { return answer }
        let serial = Bool.random(using: &rng) ? hostSerial : UInt32.random(in: 0...UInt32.max, using: &rng)
        let state = UInt8.random(in: 0...4, using: &rng)
        let beacon = L.beacon(state: state, descriptor: L.le32(serial))
        switch Int.random(in: 0..<14, using: &rng) {
        case 0: return .beacon(rng.bytes(Int.random(in: 0...12, using: &rng)))
        case 1, 2: return .beacon(beacon)
        case 3: return .burst(rng.bytes(Int.random(in: 0...40, using: &rng)))
        case 4:
            let data = rng.bytes(Int.random(in: 0...20, using: &rng))
            return .burst(L.authReply(result: UInt8.random(in: 0...3, using: &rng), serial: 42, data: data, host: serial, state: state))
        case 5, 6:
            let data = rng.bytes(Int.random(in: 0...64, using: &rng))
            let offset = UInt32.random(in: 0...3, using: &rng) * 16
            let size = Bool.random(using: &rng) ? offset + UInt32(data.count) : UInt32.random(in: 0...200, using: &rng)
            let crc = Bool.random(using: &rng) ? UInt16.random(in: 0...UInt16.max, using: &rng) : L.crc(0, data)
            return .burst(
                L.downloadReply(
                    result: UInt8.random(in: 0...1, using: &rng) * UInt8.random(in: 0...6, using: &rng), remaining: UInt32(data.count),
                    offset: offset, size: size, data: data, crc: crc, host: serial))
        case 7: return .transferCompleted
        case 8: return .transferFailed
        case 9, 10:
            switch Int.random(in: 0..<20, using: &rng) {
            case 0: return .tick(now: .nan)
            case 1: return .tick(now: time - 5)
            default:
                time += Double.random(in: 0...2, using: &rng)
                return .tick(now: time)
            }
        case 11: return .passkey(Bool.random(using: &rng) ? nil : rng.bytes(Int.random(in: 0...9, using: &rng)))
        case 12: return .pairingAllowed(Bool.random(using: &rng))
        default: return .select((0..<Int.random(in: 0...4, using: &rng)).map { _ in UInt16.random(in: 0...5, using: &rng) })
        }
    }

    /// A watch's fitting answer to a command: the LINK's beacon, the serial, an accepted
    /// passkey, a block of the directory (three files) or of a file.
    static func answer(to command: [UInt8]) -> ANTFSHost.Input? {
        guard command.count >= 8 else { return nil }
        switch command[1] {
        case 0x02: return .beacon(L.beacon(state: 1, descriptor: L.le32(hostSerial)))
        case 0x04:
            let data = command[2] == 1 ? Array("Forerunner 910XT".utf8) : command[2] == 2 ? [1, 2, 3, 4, 5, 6, 7, 8] : []
            return .burst(L.authReply(result: command[2] == 1 ? 0 : 1, serial: 42, data: data, host: hostSerial))
        case 0x09 where command.count == 16:
            let index = L.le16value(command, 2)
            let offset = Int(L.le32value(command, 4))
            var content: [UInt8] = (0..<(Int(index) * 70)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(index)) }
            if index == 0 {
                content = [1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
                for i: UInt16 in 1...3 {
                    let entry: [UInt8] = L.le16(i) + [0x80, 4] + L.le16(i) + [0, 0x80]
                    content += entry + L.le32(UInt32(i) * 70) + L.le32(0x2000_0000)
                }
            }
            guard offset <= content.count else { return nil }
            let end = min(content.count, offset + 64)
            return .burst(
                L.downloadReply(
                    remaining: UInt32(end - offset), offset: UInt32(offset), size: UInt32(content.count),
                    data: Array(content[offset..<end]),
                    crc: L.crc(0, content[0..<end]), host: hostSerial))
        default: return nil
        }
    }

    @Test(
        "random input sequences: no trap, at most 4 actions an input, commands well formed, nothing after the end; then only time: it ends")
    func randomInputs() async {
        var ended = 0
        var phases: Set<String> = []
        for seed in UInt64(0)..<400 {
            if seed % 50 == 0 { await Task.yield() }
            var rng = SeededGenerator(seed: 0xA17F_5000 + seed)
            var host = ANTFSHost(configuration: .init(hostSerial: Self.hostSerial, allowsPairing: seed % 2 == 0))
            var time = 0.0
            var over = false
            var lastSent: [UInt8]?
            for _ in 0..<400 {
                let actions = host.handle(Self.input(&rng, time: &time, lastSent: lastSent))
                #expect(actions.count <= 4)
                #expect(!over || actions.isEmpty)
                for (i, action) in actions.enumerated() {
                    switch action {
                    case .sendAcknowledged(let b):
                        #expect(b.count == 8 && b[0] == 0x44)
                        lastSent = b
                    case .sendBurst(let b):
                        #expect(b.count > 8 && b.count % 8 == 0 && b[0] == 0x44)
                        lastSent = b
                    case .finished, .failed: #expect(i == actions.count - 1)
                    default: break
                    }
                }
                over = over || host.isOver
                phases.insert(String("\(host.phase)".prefix { $0 != "(" }))
            }
            // Only ticks from here: every wait has a timeout.
            var t = max(time, 0) + 1
            var ticks = 0
            while !host.isOver && ticks < 5_000 {
                _ = host.handle(.tick(now: t))
                t += 1
                ticks += 1
            }
            #expect(host.isOver, "seed \(seed): \(host.phase)")
            if over { ended += 1 }
        }
        // The fitting answers take sessions all the way: every phase is reached.
        #expect(phases.count == 14, "\(phases.sorted())")
        #expect(ended > 0)
    }

    @Test("random faults against the simulated watch: the session always ends, and every file handed over is the watch's, byte for byte")
    func randomFaultySessions() async {
        var finished = 0
        var failed = 0
        for seed in UInt64(0)..<150 {
            if seed % 10 == 0 { await Task.yield() }
            var rng = SeededGenerator(seed: 0xFA_0000 + seed)
            var watch = ANTFSFakeWatch()
            watch.blockSize = Int.random(in: 16...600, using: &rng)
            watch.pairingDelay = Double.random(in: 0...70, using: &rng)
            watch.replyDelay = Double.random(in: 0...3, using: &rng)
            watch.acceptsPairing = Int.random(in: 0..<5, using: &rng) > 0
            for index in UInt16(1)...UInt16.random(in: 1...4, using: &rng) {
                let file = ANTFSFakeWatch.File(
                    index: index, subType: 4, number: index, date: 701_889_152 + UInt32(index),
                    bytes: rng.bytes(Int.random(in: 0...2500, using: &rng)))
                watch.files.append(file)
                if Bool.random(using: &rng) {
                    watch.corruptCRC[index, default: [:]][UInt32(watch.blockSize * Int.random(in: 0...2, using: &rng))] = Int.random(
                        in: 1...6, using: &rng)
                }
            }
            for id: UInt8 in [0x02, 0x04, 0x09, 0x03] where Int.random(in: 0..<3, using: &rng) == 0 {
                watch.failTransfers[id] = Int.random(in: 1...5, using: &rng)
            }
            watch.lostLinkAcks = Int.random(in: 0..<4, using: &rng) == 0 ? 1 : 0
            watch.silentForFiles = Int.random(in: 0..<8, using: &rng) == 0
            if Bool.random(using: &rng) { watch.lateFirstAnswer = (index: 1, delay: Double.random(in: 5...25, using: &rng)) }
            let configuration = ANTFSHost.Configuration(
                hostSerial: Self.hostSerial, frequency: 19, allowsPairing: true, maxBlockSize: Bool.random(using: &rng) ? 0 : 256)
            var sim = ANTFSSimulation(configuration, watch: watch)
            let end = sim.run(limit: 7200)
            #expect(sim.host.isOver, "seed \(seed): \(sim.host.phase)")
            switch end {
            case .finished?: finished += 1
            case .failed?: failed += 1
            default: Issue.record("seed \(seed) ended with \(String(describing: end))")
            }
            for (entry, bytes) in sim.downloaded {
                #expect(bytes == watch.files.first { $0.index == entry.index }?.bytes, "seed \(seed): file \(entry.index)")
            }
        }
        #expect(finished > 50 && failed > 5, "finished \(finished), failed \(failed)")
    }
}
