import ANTFS
import FuzzSupport

/// ANT-FS: the first byte picks the beacon decoder, the response decoder (a burst from a
/// watch), the directory parser, or the host's session state machine driven by a sequence of
/// inputs built from the rest. What decodes must encode to bytes that decode to the same value;
/// the host must answer each input with at most four actions, say nothing after the session
/// ended, send only well-formed commands, and end when only time passes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.byte() % 4 {
    case 0:
        guard let beacon = try? ANTFSBeacon(input.rest) else { return 0 }
        guard (try? ANTFSBeacon(beacon.bytes)) == beacon else { fatalError("beacon does not round-trip: \(beacon)") }
    case 1:
        guard let (beacon, response) = try? ANTFSResponse.decode(input.rest) else { return 0 }
        guard (try? ANTFSResponse.decode(beacon.bytes + response.bytes))?.response == response else {
            fatalError("response does not round-trip: \(response)")
        }
    case 2:
        let bytes = input.rest
        guard let directory = try? ANTFSDirectory.parse(bytes) else { return 0 }
        guard directory.entries.count == (bytes.count - 16) / 16, (try? ANTFSDirectory.parse(directory.bytes)) == directory else {
            fatalError("directory does not round-trip: \(directory)")
        }
        for entry in directory.entries where entry.suggestedFileName.isEmpty || entry.fetchKey.isEmpty {
            fatalError("entry without a name: \(entry)")
        }
    default:
        driveHost(&input)
    }
    return 0
}

private let hostSerial: UInt32 = 1337

/// Feeds the host one input per choice byte until the input is used up, then only ticks.
private func driveHost(_ input: inout FuzzInput) {
    var host = ANTFSHost(configuration: .init(hostSerial: hostSerial, allowsPairing: input.byte() & 1 == 1))
    var now = 0.0
    var lastSent: [UInt8] = []
    func feed(_ event: ANTFSHost.Input) {
        let wasOver = host.isOver
        let actions = host.handle(event)
        guard actions.count <= 4, !wasOver || actions.isEmpty else {
            fatalError("\(actions.count) actions for \(event) (over: \(wasOver))")
        }
        for action in actions {
            switch action {
            case .sendAcknowledged(let bytes):
                guard bytes.count == 8, bytes[0] == 0x44 else { fatalError("bad acknowledged command \(bytes)") }
                lastSent = bytes
            case .sendBurst(let bytes):
                guard bytes.count > 8, bytes.count % 8 == 0, bytes[0] == 0x44 else { fatalError("bad burst command \(bytes)") }
                lastSent = bytes
            default:
                break
            }
        }
    }
    while !input.bytes.isEmpty {
        switch input.byte() % 10 {
        case 0: feed(.beacon(input.take(Int(input.byte() % 12))))
        case 1: feed(.beacon(beacon(state: input.byte(), serial: input.byte() & 1 == 0 ? hostSerial : UInt32(input.uint16()))))
        case 2: feed(.burst(beacon(state: input.byte(), serial: hostSerial) + [0x44] + input.take(Int(input.byte()))))
        case 3:
            let remaining = Int(input.byte() % 64)
            let block = ANTFSDownloadResponse(
                result: .init(rawValue: input.byte() % 7), remaining: UInt32(remaining), offset: UInt32(input.uint16()),
                fileSize: UInt32(input.uint16()), data: input.take(remaining), crc: input.uint16())
            feed(.burst(beacon(state: 2, serial: hostSerial) + ANTFSResponse.download(block).bytes))
        case 4: feed(.transferCompleted)
        case 5: feed(.transferFailed)
        case 6:
            now += Double(input.byte()) / 8
            feed(.tick(now: now))
        case 7: feed(input.byte() & 1 == 0 ? .passkey(nil) : .passkey(input.take(Int(input.byte() % 10))))
        case 8:
            if input.byte() & 1 == 0 {
                feed(.pairingAllowed(input.byte() & 1 == 0))
            } else {
                feed(.select(input.take(Int(input.byte() % 5)).map { UInt16($0 % 6) }))
            }
        default:
            if let answer = answer(to: lastSent) { feed(answer) }
        }
    }
    for _ in 0..<2_000 where !host.isOver {
        now += 5
        feed(.tick(now: now))
    }
    guard host.isOver else { fatalError("the session did not end with only time passing: \(host.phase)") }
}

private func beacon(state: UInt8, serial: UInt32) -> [UInt8] {
    ANTFSBeacon(state: ANTFSState(rawValue: state % 5), descriptor: le32(serial)).bytes
}

private func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }

/// What a cooperating watch answers to `command`, so that sessions get past authentication:
/// the authentication beacon after LINK, its serial and name, an accepted passkey or pairing,
/// and the blocks of a three-file directory and of small files, with their CRCs.
private func answer(to command: [UInt8]) -> ANTFSHost.Input? {
    guard command.count >= 8 else { return nil }
    switch command[1] {
    case 0x02:
        return .beacon(beacon(state: 1, serial: hostSerial))
    case 0x04:
        let data: [UInt8] = command[2] == 1 ? Array("Forerunner 310XT".utf8) : command[2] == 2 ? [1, 2, 3, 4, 5, 6, 7, 8] : []
        let response = ANTFSResponse.authenticate(result: command[2] == 1 ? .notAvailable : .accept, clientSerial: 42, data: data)
        return .burst(beacon(state: 1, serial: hostSerial) + response.bytes)
    case 0x09 where command.count == 16:
        let index = UInt16(command[2]) | UInt16(command[3]) << 8
        let offset = Int(le32value(command, 4))
        let content: [UInt8]
        if index == 0 {
            let entries = (UInt16(1)...3).map {
                ANTFSFileEntry(index: $0, subType: 4, fileNumber: $0, flags: .read, size: UInt32($0) * 70, date: 0x2000_0000)
            }
            content = ANTFSDirectory(entries: entries).bytes
        } else {
            content = (0..<(Int(index) * 70)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        }
        guard offset <= content.count else { return nil }
        let end = min(content.count, offset + 64)
        let block = ANTFSDownloadResponse(
            result: .ok, remaining: UInt32(end - offset), offset: UInt32(offset), fileSize: UInt32(content.count),
            data: Array(content[offset..<end]), crc: CRC16ARC.checksum(content[0..<end]))
        return .burst(beacon(state: 2, serial: hostSerial) + ANTFSResponse.download(block).bytes)
    default:
        return nil
    }
}

private func le32value(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}
