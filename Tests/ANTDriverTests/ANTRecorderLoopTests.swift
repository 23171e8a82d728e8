import ANTFS
import ANTPlusProfiles
import ANTProtocol
import Foundation
import HealthModel
import Testing
import TestSupport
import USBKit
@testable import ANTDriver

/// The recorder's loop (pure apart from the times its events carry) and the ANT-FS selection.
@Suite struct ANTRecorderLoopTests {
    static let stickA = USBDeviceInfo(bus: 1, address: 5, ports: [2], vendorID: 0x0FCF, productID: 0x1008)
    static let stickB = USBDeviceInfo(bus: 1, address: 6, ports: [3], vendorID: 0x0FCF, productID: 0x1008)
    static let strap = ANTChannelID(deviceNumber: 12345, deviceType: 120, transmissionType: 1)

    func heartRate(count: UInt8, time: UInt16, bpm: UInt8, from id: ANTChannelID? = strap) -> ANTStick.Event {
        .data(.broadcast(ANTDataMessage(channel: 0, data: [0x00, 0xFF, 0xFF, 0xFF, UInt8(time & 0xFF), UInt8(time >> 8), count, bpm],
                                        channelID: id)), receivedAt: Date(timeIntervalSince1970: 1_764_000_000 + Double(count) / 4))
    }

    func loop() -> ANTRecorder.Loop {
        ANTRecorder.Loop(configuration: ANTRecorder.Configuration(stick: ANTStickController.Configuration()))
    }

    @Test("a sensor heard by two sticks is recorded once, through the first; the other takes over when it falls silent")
    func twoSticks() {
        var l = loop()
        var found: [USBDeviceInfo] = []
        var samples = 0
        for i in 0..<8 {
            let event = heartRate(count: UInt8(i), time: UInt16(i * 512), bpm: 100)
            for (stick, out) in [(Self.stickA, l.handle(event, from: Self.stickA)), (Self.stickB, l.handle(event, from: Self.stickB))] {
                for e in out {
                    if case .sensorFound = e { found.append(stick) }
                    if case .readings = e { samples += 1 }
                }
            }
        }
        #expect(found == [Self.stickA] && samples == 8)
        // Stick A goes quiet (unplugged; or plugged back under another address): B takes over
        // once A has said nothing of the strap for 2 s.
        var taken: [USBDeviceInfo] = []
        for i in 8..<24 {
            for e in l.handle(heartRate(count: UInt8(i), time: UInt16(i * 512), bpm: 101), from: Self.stickB) {
                if case .sensorFound(_, let stick) = e { taken.append(stick) }
            }
        }
        #expect(taken == [Self.stickB])
        let workouts = l.take(l.sessions.finish()).workouts
        #expect(workouts.count == 1 && workouts[0].workout.source.device == "ant:120:12345")
    }

    @Test("a message without a channel id is named by the channel's plan; a stick that goes loses its sensors")
    func plansAndLoss() {
        var l = loop()
        _ = l.handle(.running(channels: [0: .init(.heartRate)], extendedMessages: false), from: Self.stickA)
        let out = l.handle(heartRate(count: 1, time: 512, bpm: 90, from: nil), from: Self.stickA)
        #expect(out.contains { if case .sensorFound(let id, _) = $0 { id.description == "ant:120:0" } else { false } })
        #expect(l.stickGone(Self.stickA).map(\.description) == ["ant:120:0"])
        // A page the profile does not define is counted, never fatal.
        let power = ANTChannelID(deviceNumber: 7, deviceType: 11, transmissionType: 1)
        let bad = l.handle(.data(.broadcast(ANTDataMessage(channel: 1, data: [0x77, 0, 0, 0, 0, 0, 0, 0], channelID: power)),
                                 receivedAt: Date()), from: Self.stickA)
        #expect(bad.contains { if case .problem(let kind, _) = $0 { kind == "ant_malformed" } else { false } })
    }

    @Test("a channel for a 20-bit device number takes that sensor, not another with the same low 16 bits")
    func twentyBitNumbers() {
        var l = loop()
        let wanted: UInt32 = 0x1_0000 + 12345  // 77881: top nibble 1
        _ = l.handle(.running(channels: [0: .init(.heartRate, deviceNumber: wanted)], extendedMessages: true), from: Self.stickA)
        // The stick searches for device number 12345 with any transmission type: a strap whose
        // number is 12345 (top nibble 0) may answer, and is not this channel's.
        let other = l.handle(heartRate(count: 1, time: 512, bpm: 90, from: Self.strap), from: Self.stickA)
        #expect(other.isEmpty)
        let mine = ANTChannelID(deviceNumber: 12345, deviceType: 120, transmissionType: 0x11)
        let out = l.handle(heartRate(count: 2, time: 1024, bpm: 91, from: mine), from: Self.stickA)
        #expect(out.contains { if case .sensorFound(let id, _) = $0 { id.description == "ant:120:77881" } else { false } })
    }

    @Test("ANT-FS: only readable FIT files not fetched before, from --since on")
    func selection() {
        func entry(_ index: UInt16, date: UInt32, flags: ANTFSFileFlags = [.read], type: UInt8 = ANTFSFileEntry.fitDataType) -> ANTFSFileEntry {
            ANTFSFileEntry(index: index, dataType: type, subType: 4, fileNumber: index, flags: flags, size: 1000, date: date)
        }
        // 2024-01-01T00:00:00Z in FIT seconds.
        let jan2024 = UInt32(1_704_067_200 - 631_065_600)
        let entries = [entry(1, date: jan2024 - 86_400), entry(2, date: jan2024 + 3600), entry(3, date: jan2024 + 7200, flags: []),
                       entry(4, date: jan2024, type: 0x01), entry(5, date: 1234)]
        var configuration = ANTFSDownloader.Configuration(networkKey: [UInt8](repeating: 0, count: 8), hostSerial: 1, folder: "/nonexistent")
        let all = ANTFSDownloader(configuration: configuration)
        #expect(all.select(entries, fetched: ANTFSFetched()).map(\.index) == [1, 2, 5])
        #expect(all.select(entries, fetched: ANTFSFetched(files: [entries[0].fetchKey])).map(\.index) == [2, 5])
        configuration.since = Date(timeIntervalSince1970: 1_704_067_200)
        // A file dated by the watch's own counter (5) has no calendar date: fetched whatever --since.
        #expect(ANTFSDownloader(configuration: configuration).select(entries, fetched: ANTFSFetched()).map(\.index) == [2, 5])
    }

    @Test("the passkey is kept per watch, 0600; the host serial once per folder")
    func passkeysAndSerial() throws {
        let folder = try temporaryFolder("antfs")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let downloader = ANTFSDownloader(configuration: .init(networkKey: [UInt8](repeating: 0, count: 8), hostSerial: 1, folder: folder))
        #expect(downloader.loadPasskey(3_871_234_567) == nil)
        try downloader.storePasskey(3_871_234_567, [1, 2, 3, 4, 5, 6, 7, 0xFF])
        #expect(downloader.loadPasskey(3_871_234_567) == [1, 2, 3, 4, 5, 6, 7, 0xFF])
        let mode = try FileManager.default.attributesOfItem(atPath: folder + "/3871234567/passkey")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let serial = try ANTFSDownloader.hostSerial(folder: folder)
        #expect(try ANTFSDownloader.hostSerial(folder: folder) == serial && serial >= 0x1000_0000)
    }
}

@Suite struct ANTStickRetryTests {
    @Test("a stick that failed while plugged in rests 30 s, then twice as long each time in a row, at most 10 minutes")
    func retryDelays() {
        #expect((1...7).map { ANTRecorder.retryDelay(failures: $0) } == [30, 60, 120, 240, 480, 600, 600].map { Duration.seconds($0) })
        #expect(ANTRecorder.retryDelay(failures: 1000) == .seconds(600))
    }
}
