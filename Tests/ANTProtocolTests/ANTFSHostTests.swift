import ANTFS
import TestSupport
import Testing

/// A simulated ANT-FS watch: a pure function from the host's actions to what the host receives
/// back. It reads the commands and writes its beacons, directory and blocks by the layouts (its
/// own byte code and CRC), and answers only on the frequency it is on.
struct ANTFSFakeWatch {
    typealias L = ANTFSLayout

    struct File {
        var index: UInt16
        var subType: UInt8
        var number: UInt16
        var flags: UInt8 = 0x80 | 0x20
        var date: UInt32
        var bytes: [UInt8]
    }

    var serial: UInt32 = 3_871_234_567
    var name = "Forerunner 610"
    /// The passkey it accepts; nil: not paired.
    var passkey: [UInt8]?
    var passkeyToIssue: [UInt8] = [0x3A, 0x91, 0x5C, 0x07, 0xE2, 0x48, 0xB6, 0x1F]
    var acceptsPairing = true
    /// Seconds the user takes to accept pairing.
    var pairingDelay = 20.0
    var files: [File] = []
    /// Files the directory lists that cannot be downloaded.
    var missing: [File] = []
    var blockSize = 512
    /// Seconds before each answer to a download request.
    var replyDelay = 0.0

    // Faults.
    /// Transfers of these command IDs that fail (the watch does not get them), by ID.
    var failTransfers: [UInt8: Int] = [:]
    /// LINK commands that the watch gets but whose acknowledgement is lost.
    var lostLinkAcks = 0
    /// Blocks whose CRC is sent wrong, by file index and offset.
    var corruptCRC: [UInt16: [UInt32: Int]] = [:]
    /// No answers to download requests of files (the directory is still served).
    var silentForFiles = false
    /// The first answer for this file comes this many seconds late.
    var lateFirstAnswer: (index: UInt16, delay: Double)?
    /// The directory's size field says this instead of its length.
    var directorySizeClaim: UInt32?

    // State.
    var state: UInt8 = 0
    var hostSerial: UInt32 = 0
    var frequency: UInt8 = 50
    /// Every command it got (bytes), in order.
    var received: [[UInt8]] = []

    var beacon: [UInt8] {
        L.beacon(state: state, descriptor: state == 0 ? L.le16(1018) + L.le16(1) : L.le32(hostSerial))
    }

    var directoryBytes: [UInt8] {
        var out: [UInt8] = [0x01, 16, 0, 0, 0, 0, 0, 0] + L.le32(5000) + L.le32(0)
        for f in (files + missing).sorted(by: { $0.index < $1.index }) {
            out += L.le16(f.index) + [0x80, f.subType] + L.le16(f.number) + [0, f.flags] + L.le32(UInt32(f.bytes.count)) + L.le32(f.date)
        }
        return out
    }

    func entry(_ f: File) -> ANTFSFileEntry {
        ANTFSFileEntry(
            index: f.index, subType: f.subType, fileNumber: f.number, flags: ANTFSFileFlags(rawValue: f.flags), size: UInt32(f.bytes.count),
            date: f.date)
    }

    /// The host sent `bytes` on `hostFrequency`: what comes back, each after a delay in seconds.
    mutating func receive(_ bytes: [UInt8], on hostFrequency: UInt8) -> [(delay: Double, input: ANTFSHost.Input)] {
        guard hostFrequency == frequency, bytes.count >= 8, bytes[0] == 0x44 else { return [(0, .transferFailed)] }
        if let n = failTransfers[bytes[1]], n > 0 {
            failTransfers[bytes[1]] = n - 1
            return [(0, .transferFailed)]
        }
        received.append(bytes)
        switch bytes[1] {
        case 0x02 where state == 0:
            hostSerial = L.le32value(bytes, 4)
            frequency = bytes[2]
            state = 1
            if lostLinkAcks > 0 {
                lostLinkAcks -= 1
                return [(0, .transferFailed)]
            }
            return [(0, .transferCompleted)]
        case 0x04 where state == 1 && L.le32value(bytes, 4) == hostSerial:
            let data = Array(bytes[8..<min(bytes.count, 8 + Int(bytes[3]))])
            switch bytes[2] {
            case 1:
                return [
                    (0, .transferCompleted), (0, .burst(L.authReply(result: 0, serial: serial, data: Array(name.utf8), host: hostSerial))),
                ]
            case 3 where data == passkey:
                state = 2
                return [(0, .transferCompleted), (0, .burst(L.authReply(result: 1, serial: serial, data: [], host: hostSerial)))]
            case 2 where acceptsPairing:
                passkey = passkeyToIssue
                state = 2
                return [
                    (0, .transferCompleted),
                    (pairingDelay, .burst(L.authReply(result: 1, serial: serial, data: passkeyToIssue, host: hostSerial))),
                ]
            default:
                let reply = L.authReply(result: 2, serial: serial, data: [], host: hostSerial)
                backToLink()
                return [(0, .transferCompleted), (0, .burst(reply))]
            }
        case 0x09 where state == 2:
            return [(0, .transferCompleted)] + download(bytes)
        case 0x03:
            backToLink()
            return [(0, .transferCompleted)]
        default:
            return [(0, .transferCompleted)]
        }
    }

    mutating func backToLink() {
        state = 0
        frequency = 50
        hostSerial = 0
    }

    mutating func download(_ request: [UInt8]) -> [(delay: Double, input: ANTFSHost.Input)] {
        let index = L.le16value(request, 2)
        let offset = Int(L.le32value(request, 4))
        let initial = request[9] == 1
        let seed = L.le16value(request, 10)
        let maxBlock = Int(L.le32value(request, 12))
        let content: [UInt8]
        if index == 0 {
            content = directoryBytes
        } else if let f = files.first(where: { $0.index == index }) {
            guard !silentForFiles else { return [] }
            content = f.bytes
        } else {
            return [
                (
                    replyDelay,
                    .burst(L.downloadReply(result: 1, remaining: 0, offset: UInt32(offset), size: 0, data: [], crc: 0, host: hostSerial))
                )
            ]
        }
        guard offset <= content.count, initial || seed == L.crc(0, content[0..<offset]) else {
            return [
                (
                    replyDelay,
                    .burst(L.downloadReply(result: 5, remaining: 0, offset: UInt32(offset), size: 0, data: [], crc: 0, host: hostSerial))
                )
            ]
        }
        let end = min(content.count, offset + (maxBlock > 0 ? min(maxBlock, blockSize) : blockSize))
        var crc = L.crc(0, content[0..<end])
        if let n = corruptCRC[index]?[UInt32(offset)], n > 0 {
            corruptCRC[index]?[UInt32(offset)] = n - 1
            crc ^= 0x4000
        }
        let size = index == 0 ? directorySizeClaim ?? UInt32(content.count) : UInt32(content.count)
        let reply = L.downloadReply(
            remaining: UInt32(end - offset), offset: UInt32(offset), size: size, data: Array(content[offset..<end]), crc: crc,
            host: hostSerial)
        var delay = replyDelay
        if let late = lateFirstAnswer, late.index == index {
            delay = late.delay
            lateFirstAnswer = nil
        }
        return [(delay, .burst(reply))]
    }
}

extension ANTFSLayout {
    static func le16value(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func le32value(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(le16value(b, i)) | UInt32(le16value(b, i + 2)) << 16 }
}

/// One session: the host, the fake watch, the caller's passkey store and its list of fetched
/// files, and a clock that moves one beacon period (1/8 s) whenever nothing else is pending.
struct ANTFSSimulation {
    var host: ANTFSHost
    var watch: ANTFSFakeWatch
    var passkeys: [UInt32: [UInt8]] = [:]
    /// Fetch keys (with the watch's serial) of the files already stored.
    var fetched: Set<String> = []
    var hostFrequency: UInt8 = 50
    var time = 1000.0
    var actions: [ANTFSHost.Action] = []
    var downloaded: [(ANTFSFileEntry, [UInt8])] = []
    private var scheduled: [(at: Double, input: ANTFSHost.Input)] = []

    init(_ configuration: ANTFSHost.Configuration, watch: ANTFSFakeWatch) {
        host = ANTFSHost(configuration: configuration)
        self.watch = watch
    }

    static func key(_ serial: UInt32, _ e: ANTFSFileEntry) -> String { "\(serial)/\(e.fetchKey)" }

    /// Runs until the session ends (or `limit` seconds pass); returns the last action.
    @discardableResult
    mutating func run(limit: Double = 3600) -> ANTFSHost.Action? {
        var inbox: [ANTFSHost.Input] = []
        let end = time + limit
        while !host.isOver && time < end {
            if inbox.isEmpty {
                time += 0.125
                inbox.append(.tick(now: time))
                let due = scheduled.filter { $0.at <= time }
                scheduled.removeAll { $0.at <= time }
                inbox += due.map(\.input)
                if hostFrequency == watch.frequency { inbox.append(.beacon(watch.beacon)) }
            }
            let input = inbox.removeFirst()
            let out = host.handle(input)
            #expect(out.count <= 4)
            for action in out {
                actions.append(action)
                for (delay, reply) in respond(to: action) {
                    if delay == 0 { inbox.append(reply) } else { scheduled.append((time + delay, reply)) }
                }
            }
        }
        return actions.last
    }

    mutating func respond(to action: ANTFSHost.Action) -> [(delay: Double, input: ANTFSHost.Input)] {
        switch action {
        case .sendAcknowledged(let bytes):
            #expect(bytes.count == 8)
            return watch.receive(bytes, on: hostFrequency)
        case .sendBurst(let bytes):
            #expect(bytes.count > 8 && bytes.count % 8 == 0)
            return watch.receive(bytes, on: hostFrequency)
        case .retune(let frequency, let periodCode):
            #expect(periodCode == host.configuration.periodCode)
            hostFrequency = frequency
            return []
        case .loadPasskey(let serial):
            return [(0, .passkey(passkeys[serial]))]
        case .storePasskey(let serial, let passkey):
            passkeys[serial] = passkey
            return []
        case .directory(let entries):
            let serial = host.clientSerial ?? 0
            return [(0, .select(entries.filter { $0.flags.contains(.read) && !fetched.contains(Self.key(serial, $0)) }.map(\.index)))]
        case .fileDownloaded(let entry, let bytes):
            fetched.insert(Self.key(host.clientSerial ?? 0, entry))
            downloaded.append((entry, bytes))
            return []
        default:
            return []
        }
    }

    /// The commands the watch got with this ID.
    func commands(_ id: UInt8) -> [[UInt8]] { watch.received.filter { $0[1] == id } }
}

@Suite struct ANTFSHostTests {
    static let configuration = ANTFSHost.Configuration(hostSerial: 0x0BAD_F00D, frequency: 19, allowsPairing: true)

    static func watch() -> ANTFSFakeWatch {
        var rng = SeededGenerator(seed: 0xFA7E)
        var w = ANTFSFakeWatch()
        w.files = [
            .init(index: 1, subType: 2, number: 1, flags: 0xC0, date: 701_889_000, bytes: rng.bytes(300)),
            .init(index: 2, subType: 4, number: 33, flags: 0xB0, date: 701_889_152, bytes: rng.bytes(1300)),
        ]
        return w
    }

    static func newActivity() -> ANTFSFakeWatch.File {
        var rng = SeededGenerator(seed: 0x2E3)
        return .init(index: 3, subType: 4, number: 34, date: 701_975_552, bytes: rng.bytes(2100))
    }

    @Test("first session pairs (passkey stored), second uses the stored passkey and fetches only the new file")
    func pairThenDownloadNewFile() throws {
        var sim = ANTFSSimulation(Self.configuration, watch: Self.watch())
        #expect(sim.run() == .finished)
        let serial = sim.watch.serial
        // LINK on the search frequency, then everything on the session's.
        let link = try #require(sim.commands(0x02).first)
        #expect(link == [0x44, 0x02, 19, 4] + ANTFSLayout.le32(0x0BAD_F00D))
        #expect(sim.actions.contains(.retune(frequency: 19, periodCode: 4)))
        #expect(sim.actions.contains(.identified(serial: serial, name: "Forerunner 610")))
        #expect(sim.actions.contains(.loadPasskey(serial: serial)))
        #expect(sim.actions.contains(.askUserToAcceptOnWatch))
        #expect(sim.actions.contains(.storePasskey(serial: serial, passkey: sim.watch.passkeyToIssue)))
        #expect(sim.passkeys[serial] == sim.watch.passkeyToIssue)
        // The pairing request carried the host's name.
        let pairing = try #require(sim.commands(0x04).first { $0[2] == 2 })
        #expect(Array(pairing[8..<(8 + Int(pairing[3]))]) == Array("HealthGate".utf8))
        let entries = sim.watch.files.map(sim.watch.entry)
        #expect(sim.actions.contains(.directory(entries)))
        #expect(sim.downloaded.map(\.0) == entries)
        #expect(sim.downloaded.map(\.1) == sim.watch.files.map(\.bytes))
        #expect(sim.actions.contains(.downloadProgress(index: 2, received: 512, total: 1300)))
        #expect(sim.commands(0x03) == [[0x44, 0x03, 0, 0, 0, 0, 0, 0]])
        #expect(sim.watch.state == 0)
        #expect(sim.host.phase == .finished && sim.host.strayInputs == 0)
        // The blocks were asked for with chained seeds: initial first, continuations after.
        let requests = sim.commands(0x09).filter { ANTFSLayout.le16value($0, 2) == 2 }
        #expect(requests.map { ANTFSLayout.le32value($0, 4) } == [0, 512, 1024])
        #expect(requests.map { $0[9] } == [1, 0, 0])
        #expect(ANTFSLayout.le16value(requests[2], 10) == ANTFSLayout.crc(0, sim.watch.files[1].bytes[0..<1024]))

        // The second session: the watch recorded a new activity; the passkey is stored.
        var watch = sim.watch
        watch.received = []
        watch.files.append(Self.newActivity())
        var second = ANTFSSimulation(Self.configuration, watch: watch)
        second.passkeys = sim.passkeys
        second.fetched = sim.fetched
        #expect(second.run() == .finished)
        #expect(!second.actions.contains(.askUserToAcceptOnWatch))
        #expect(!second.actions.contains { if case .storePasskey = $0 { true } else { false } })
        let passkeyAuth = try #require(second.commands(0x04).first { $0[2] == 3 })
        #expect(Array(passkeyAuth[8..<16]) == watch.passkeyToIssue)
        #expect(second.downloaded.map(\.0.index) == [3])
        #expect(second.downloaded.first?.1 == Self.newActivity().bytes)
        #expect(Set(second.commands(0x09).map { ANTFSLayout.le16value($0, 2) }) == [0, 3])
    }

    @Test("the watch refuses the stored passkey: a failure that says so and suggests --pair")
    func passkeyRejected() {
        var watch = Self.watch()
        watch.passkey = [1, 2, 3, 4, 5, 6, 7, 8]
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        sim.passkeys[watch.serial] = [8, 7, 6, 5, 4, 3, 2, 1]
        let end = sim.run()
        #expect(end == .failed(.passkeyRejected(clientSerial: watch.serial)))
        if case .failed(let error) = end {
            #expect(error.description.contains("refused the stored passkey") && error.description.contains("--pair"))
        }
        #expect(sim.downloaded.isEmpty)
    }

    @Test("no passkey and pairing not allowed: not paired, with the command to run; allowed later by an input: pairs")
    func notPaired() {
        var configuration = Self.configuration
        configuration.allowsPairing = false
        var sim = ANTFSSimulation(configuration, watch: Self.watch())
        let end = sim.run()
        #expect(end == .failed(.notPaired(clientSerial: sim.watch.serial)))
        #expect(
            ANTFSError.notPaired(clientSerial: 5).description
                == "the watch 5 is not paired with this host: run `healthgate ant download --pair`")
        #expect(sim.commands(0x04).allSatisfy { $0[2] == 1 })

        var allowed = ANTFSSimulation(configuration, watch: Self.watch())
        #expect(allowed.host.handle(.pairingAllowed(true)).isEmpty)
        #expect(allowed.run() == .finished)
        #expect(allowed.downloaded.count == 2)
    }

    @Test("the user declines pairing on the watch: pairing rejected")
    func pairingDeclined() {
        var watch = Self.watch()
        watch.acceptsPairing = false
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .failed(.pairingRejected(clientSerial: watch.serial)))
    }

    @Test("the user does not answer on the watch: the pairing request is not repeated, the session fails after the pairing timeout")
    func pairingUnanswered() {
        var watch = Self.watch()
        watch.pairingDelay = 1000
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        let start = sim.time
        #expect(sim.run() == .failed(.timeout(waitingFor: "the user to accept pairing on the watch", attempts: 1)))
        #expect(sim.commands(0x04).filter { $0[2] == 2 }.count == 1)
        #expect(sim.time - start > 60 && sim.time - start < 70)
    }

    @Test("an acknowledged message fails twice, then goes out: the session carries on", arguments: [UInt8(0x02), 0x04, 0x09])
    func transferFailsTwice(commandID: UInt8) {
        var watch = Self.watch()
        watch.passkey = watch.passkeyToIssue
        watch.failTransfers[commandID] = 2
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        sim.passkeys[watch.serial] = watch.passkeyToIssue
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.1) == watch.files.map(\.bytes))
        let sends = sim.actions.filter {
            switch $0 {
            case .sendAcknowledged(let b), .sendBurst(let b): b[1] == commandID
            default: false
            }
        }
        #expect(sends.count == sim.commands(commandID).count + 2)
    }

    @Test("a transfer that fails every time ends the session, naming the command")
    func transferFailsAlways() {
        var watch = Self.watch()
        watch.passkey = watch.passkeyToIssue
        watch.failTransfers[0x04] = 100
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .failed(.transferFailed(command: "the request for the watch's serial number", attempts: 4)))
    }

    @Test("the watch got LINK but its acknowledgement was lost: the host retunes all the same and the session completes")
    func linkAckLost() {
        var watch = Self.watch()
        watch.lostLinkAcks = 1
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .finished)
        #expect(sim.actions.filter { if case .sendAcknowledged(let b) = $0 { b[1] == 0x02 } else { false } }.count == 4)
        #expect(sim.downloaded.count == 2)
    }

    @Test("the watch stops answering download requests: each is sent again after the reply timeout, then a clear failure")
    func timeout() {
        var watch = Self.watch()
        watch.silentForFiles = true
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        let end = sim.run()
        let error = ANTFSError.timeout(waitingFor: "the watch's answer to the download request for file 1 at offset 0", attempts: 4)
        #expect(end == .failed(error))
        #expect(error.description == "timed out waiting for the watch's answer to the download request for file 1 at offset 0 (4 attempts)")
        #expect(sim.commands(0x09).filter { ANTFSLayout.le16value($0, 2) == 1 }.count == 4)
    }

    @Test("no watch in range: the search times out")
    func noWatch() {
        var sim = ANTFSSimulation(Self.configuration, watch: Self.watch())
        sim.watch.frequency = 77  // never on the host's frequency
        let start = sim.time
        #expect(sim.run() == .failed(.timeout(waitingFor: "a beacon from a watch in link state", attempts: 0)))
        #expect(sim.time - start < 31)
    }

    @Test("a bad CRC once is asked for again; a bad CRC every time fails that file only, and the session goes on")
    func crcFailures() {
        var watch = Self.watch()
        watch.files.append(Self.newActivity())
        watch.corruptCRC = [2: [512: 1], 3: [1024: 100]]
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.0.index) == [1, 2])
        #expect(sim.downloaded.map(\.1) == Array(watch.files.prefix(2).map(\.bytes)))
        let failed = sim.watch.entry(Self.newActivity())
        #expect(sim.actions.contains(.fileFailed(entry: failed, error: .crcCheckFailed(index: 3, offset: 1024, attempts: 4))))
        #expect(sim.commands(0x09).filter { ANTFSLayout.le16value($0, 2) == 3 && ANTFSLayout.le32value($0, 4) == 1024 }.count == 4)
    }

    @Test("a file in the directory that the watch cannot send: reported, the others downloaded")
    func missingFile() {
        var watch = Self.watch()
        watch.missing = [.init(index: 9, subType: 4, number: 40, date: 701_999_999, bytes: [UInt8](repeating: 0, count: 50))]
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.0.index) == [1, 2])
        #expect(
            sim.actions.contains(
                .fileFailed(entry: watch.entry(watch.missing[0]), error: .downloadRefused(index: 9, offset: 0, result: .doesNotExist))))
    }

    @Test("a directory claiming 4 GB ends the session before anything is kept")
    func hugeDirectory() {
        var watch = Self.watch()
        watch.directorySizeClaim = .max
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .failed(.tooLarge(field: "the directory", size: Int(UInt32.max), limit: ANTFSDirectory.maxSize)))
    }

    @Test("a file over the configured limit fails alone")
    func fileOverLimit() {
        var configuration = Self.configuration
        configuration.maxFileSize = 1000
        var sim = ANTFSSimulation(configuration, watch: Self.watch())
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.0.index) == [1])
        #expect(
            sim.actions.contains(
                .fileFailed(entry: sim.watch.entry(sim.watch.files[1]), error: .tooLarge(field: "file 2", size: 1300, limit: 1000))))
    }

    @Test("a late first answer after the request was sent again: the copy that comes after is not taken for the next file's first block")
    func lateDuplicate() {
        var watch = Self.watch()
        watch.replyDelay = 1
        watch.lateFirstAnswer = (index: 1, delay: 10.5)
        var sim = ANTFSSimulation(Self.configuration, watch: watch)
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.1) == watch.files.map(\.bytes))
        #expect(sim.commands(0x09).filter { ANTFSLayout.le16value($0, 2) == 1 }.count == 2)
        #expect(sim.host.strayInputs == 1)
    }

    @Test("a maximum block size is asked for and honoured by the watch")
    func blockSize() {
        var configuration = Self.configuration
        configuration.maxBlockSize = 128
        var sim = ANTFSSimulation(configuration, watch: Self.watch())
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.map(\.1) == sim.watch.files.map(\.bytes))
        #expect(sim.commands(0x09).allSatisfy { ANTFSLayout.le32value($0, 12) == 128 })
        #expect(sim.commands(0x09).filter { ANTFSLayout.le16value($0, 2) == 2 }.count == 11)
    }

    @Test("nothing selected: straight to DISCONNECT")
    func nothingSelected() throws {
        var sim = ANTFSSimulation(Self.configuration, watch: Self.watch())
        sim.fetched = Set(sim.watch.files.map { ANTFSSimulation.key(sim.watch.serial, sim.watch.entry($0)) })
        #expect(sim.run() == .finished)
        #expect(sim.downloaded.isEmpty)
        #expect(Set(sim.commands(0x09).map { ANTFSLayout.le16value($0, 2) }) == [0])
    }
}

/// The host driven by hand, input by input.
@Suite struct ANTFSHostStepTests {
    typealias L = ANTFSLayout
    static let host: UInt32 = 1337
    static let configuration = ANTFSHost.Configuration(hostSerial: host, frequency: 33, allowsPairing: false)

    /// A host in transport state that asked for the directory (not yet delivered).
    static func inTransport() -> ANTFSHost {
        var h = ANTFSHost(configuration: configuration)
        _ = h.handle(.tick(now: 0))
        _ = h.handle(.beacon(L.beacon(state: 0, descriptor: L.le16(1018) + L.le16(1))))
        _ = h.handle(.transferCompleted)
        _ = h.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(host))))
        _ = h.handle(.transferCompleted)
        _ = h.handle(.burst(L.authReply(result: 0, serial: 99, data: Array("FR60".utf8))))
        _ = h.handle(.passkey([1, 2, 3, 4, 5, 6, 7, 8]))
        _ = h.handle(.transferCompleted)
        _ = h.handle(.burst(L.authReply(result: 1, serial: 99, data: [])))
        _ = h.handle(.beacon(L.beacon(state: 2, descriptor: L.le32(host))))
        return h
    }

    @Test("the flow step by step: LINK, retune, serial, passkey, transport, directory request")
    func steps() {
        var h = ANTFSHost(configuration: Self.configuration)
        #expect(h.phase == .searching)
        #expect(h.handle(.tick(now: 0)).isEmpty)
        #expect(h.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(5)))).isEmpty)  // not in link state
        #expect(
            h.handle(.beacon(L.beacon(state: 0, descriptor: L.le16(1018) + L.le16(1)))) == [
                .sendAcknowledged([0x44, 0x02, 33, 4, 0x39, 0x05, 0, 0])
            ])
        #expect(h.phase == .linking && h.linkBeacon?.deviceType == 1018)
        #expect(h.handle(.transferCompleted) == [.retune(frequency: 33, periodCode: 4)])
        #expect(h.phase == .awaitingAuthentication)
        #expect(h.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(4242)))).isEmpty)  // another host's session
        #expect(
            h.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(Self.host)))) == [
                .sendAcknowledged([0x44, 0x04, 1, 0, 0x39, 0x05, 0, 0])
            ])
        #expect(h.handle(.transferCompleted).isEmpty)
        #expect(
            h.handle(.burst(L.authReply(result: 0, serial: 99, data: Array("FR60".utf8) + [0, 0]))) == [
                .identified(serial: 99, name: "FR60"), .loadPasskey(serial: 99),
            ])
        #expect(h.phase == .awaitingPasskey(clientSerial: 99) && h.clientSerial == 99 && h.clientName == "FR60")
        let key: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        #expect(h.handle(.passkey(key)) == [.sendBurst([0x44, 0x04, 3, 8, 0x39, 0x05, 0, 0] + key)])
        #expect(h.handle(.transferCompleted).isEmpty)
        #expect(h.handle(.burst(L.authReply(result: 1, serial: 99, data: []))).isEmpty)
        #expect(h.phase == .awaitingTransport)
        #expect(
            h.handle(.beacon(L.beacon(state: 2, descriptor: L.le32(Self.host)))) == [
                .sendBurst(L.bytes("44 09 00 00 00 00 00 00 00 01 00 00 00 00 00 00"))
            ])
        #expect(h.phase == .downloadingDirectory)
        #expect(h == Self.inTransport())
    }

    @Test("busy beacons while an answer is awaited extend the wait, up to the busy allowance")
    func busy() {
        var h = Self.inTransport()
        _ = h.handle(.transferCompleted)
        let busy = ANTFSHost.Input.beacon(L.beacon(state: 3, descriptor: L.le32(Self.host)))
        // 25 s of busy beacons: past the 10 s reply timeout, no resend.
        for t in stride(from: 1.0, through: 25, by: 1) {
            #expect(h.handle(.tick(now: t)).isEmpty)
            #expect(h.handle(busy).isEmpty)
        }
        let directory = [0x01, 16, 0, 0, 0, 0, 0, 0] + L.le32(0) + L.le32(0)
        let reply = L.downloadReply(remaining: 16, offset: 0, size: 16, data: directory, crc: L.crc(0, directory))
        #expect(h.handle(.burst(reply)) == [.downloadProgress(index: 0, received: 16, total: 16), .directory([])])
        #expect(h.phase == .awaitingSelection)
        #expect(h.handle(.select([])) == [.sendAcknowledged([0x44, 0x03, 0, 0, 0, 0, 0, 0])])
        #expect(h.handle(.transferCompleted) == [.finished])
        #expect(h.isOver && h.handle(.tick(now: 100)).isEmpty && h.handle(busy).isEmpty)

        // Busy for ever: each wait ends at the reply timeout plus the allowance (70 s), the request
        // goes again, and after the fourth the session fails.
        var stuck = Self.inTransport()
        _ = stuck.handle(.transferCompleted)
        var resends: [Double] = []
        var end: (at: Double, action: ANTFSHost.Action)?
        for t in stride(from: 1.0, through: 1000, by: 1) where end == nil {
            for action in stuck.handle(.tick(now: t)) + stuck.handle(busy) {
                if case .sendBurst = action {
                    resends.append(t)
                    _ = stuck.handle(.transferCompleted)
                }
                if case .failed = action { end = (t, action) }
            }
        }
        #expect(end?.action == .failed(.timeout(waitingFor: "the watch's answer to the directory request at offset 0", attempts: 4)))
        #expect(resends == [70, 140, 210] && end?.at == 280)
    }

    @Test("the watch is not ready: the request goes again; not ready every time fails the directory")
    func notReady() {
        var h = Self.inTransport()
        _ = h.handle(.transferCompleted)
        let notReady = L.downloadReply(result: 3, remaining: 0, offset: 0, size: 0, data: [], crc: 0)
        let request = L.bytes("44 09 00 00 00 00 00 00 00 01 00 00 00 00 00 00")
        #expect(h.handle(.burst(notReady)) == [.sendBurst(request)])
        #expect(h.handle(.burst(notReady)) == [.sendBurst(request)])
        #expect(h.handle(.burst(notReady)) == [.sendBurst(request)])
        #expect(h.handle(.burst(notReady)) == [.failed(.downloadRefused(index: 0, offset: 0, result: .notReady))])
    }

    @Test("timeouts that are not numbers or below 0 take their defaults, so the search still ends")
    func badConfiguration() {
        var configuration = Self.configuration
        configuration.replyTimeout = .nan
        configuration.beaconTimeout = -1
        configuration.maxAttempts = 0
        var h = ANTFSHost(configuration: configuration)
        #expect(h.configuration.replyTimeout == 10 && h.configuration.beaconTimeout == 30 && h.configuration.maxAttempts == 1)
        var end: [ANTFSHost.Action] = []
        for t in 0...40 { end += h.handle(.tick(now: Double(t))) }
        #expect(end == [.failed(.timeout(waitingFor: "a beacon from a watch in link state", attempts: 0))])
    }

    @Test("inputs out of place are counted as strays and change nothing")
    func strays() {
        var h = ANTFSHost(configuration: Self.configuration)
        let before = h
        #expect(h.handle(.transferCompleted).isEmpty)
        #expect(h.handle(.transferFailed).isEmpty)
        #expect(h.handle(.passkey([1])).isEmpty)
        #expect(h.handle(.select([1, 2])).isEmpty)
        #expect(h.handle(.burst(L.authReply(result: 1, serial: 1, data: []))).isEmpty)
        #expect(h.handle(.beacon([1, 2, 3])).isEmpty)
        #expect(h.handle(.tick(now: .nan)).isEmpty)
        #expect(h.strayInputs == 7 && h.phase == before.phase)
    }

    @Test("a serial request refused, a pairing accepted without a passkey: clear failures")
    func authenticationFailures() {
        var h = ANTFSHost(configuration: Self.configuration)
        _ = h.handle(.beacon(L.beacon(state: 0, descriptor: [0, 0, 0, 0])))
        _ = h.handle(.transferCompleted)
        _ = h.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(Self.host))))
        #expect(h.handle(.burst(L.authReply(result: 2, serial: 77, data: []))) == [.failed(.authenticationRejected(clientSerial: 77))])

        var p = ANTFSHost(configuration: Self.configuration)
        _ = p.handle(.beacon(L.beacon(state: 0, descriptor: [0, 0, 0, 0])))
        _ = p.handle(.transferCompleted)
        _ = p.handle(.beacon(L.beacon(state: 1, descriptor: L.le32(Self.host))))
        _ = p.handle(.burst(L.authReply(result: 0, serial: 77, data: [])))
        _ = p.handle(.pairingAllowed(true))
        let pairing = p.handle(.passkey(nil))
        #expect(pairing.last == .askUserToAcceptOnWatch && p.phase == .pairing(clientSerial: 77))
        // Not reported as sent within the reply timeout: sent again (the user was not asked yet).
        _ = p.handle(.tick(now: 100))
        #expect(p.handle(.tick(now: 111)) == [pairing[0]])
        #expect(p.handle(.transferCompleted).isEmpty)
        #expect(
            p.handle(.burst(L.authReply(result: 1, serial: 77, data: []))) == [
                .failed(.unexpectedResponse("pairing was accepted without a passkey"))
            ])
    }

    @Test("the selection keeps the caller's order, once each; unknown indices and 0 are ignored")
    func selection() {
        var h = Self.inTransport()
        _ = h.handle(.transferCompleted)
        let entries = [
            ANTFSFileEntry(index: 4, subType: 4, fileNumber: 1, flags: .read, size: 8, date: 0x2000_0000),
            ANTFSFileEntry(index: 6, subType: 4, fileNumber: 2, flags: .read, size: 8, date: 0x2000_0001),
        ]
        let directory = ANTFSDirectory(entries: entries).bytes
        _ = h.handle(
            .burst(
                L.downloadReply(
                    remaining: UInt32(directory.count), offset: 0, size: UInt32(directory.count), data: directory, crc: L.crc(0, directory))
            ))
        #expect(h.directory?.entries == entries)
        #expect(
            h.handle(.select([0, 9, 6, 4, 6])) == [
                .sendBurst(ANTFSCommand.download(index: 6, offset: 0, initial: true, crcSeed: 0, maxBlockSize: 0).bytes)
            ])
        #expect(h.phase == .downloading(index: 6))
    }
}
