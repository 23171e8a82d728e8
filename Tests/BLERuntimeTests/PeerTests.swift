import TestSupport
import Foundation
import Testing
import BluetoothCentral
import BLEHost
import Timing
import GATTProfiles
@testable import BLERuntime

extension BluetoothUUID {
    static let heartRateService = BluetoothUUID(0x180D)
    static let batteryService = BluetoothUUID(0x180F)
    static let deviceInformation = BluetoothUUID(0x180A)
    static let cscService = BluetoothUUID(0x1816)
    static let heartRateMeasurement = BluetoothUUID(0x2A37)
    static let batteryLevel = BluetoothUUID(0x2A19)
    static let manufacturerName = BluetoothUUID(0x2A29)
    static let cscMeasurement = BluetoothUUID(0x2A5B)
}

/// End to end against the emulated peer (Bumble), one fresh peer process per test, serialized so
/// the shared 2-core machine is not overloaded. Every wait is bounded; `withHost` bounds the whole
/// test body as well.
@Suite(.serialized) struct PeerTests {
    @Test func initSequenceAndScanWithExtendedReports() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        try await withHost(peer) { host in
            let info = try #require(await host.controller)
            #expect(info.address.text == "F0:F1:F2:F3:F4:F5")
            #expect(info.aclDataLength == 27 && info.aclPackets == 64)
            #expect(info.randomAddress.randomKind == .static)

            let found = Collector(try await host.scan(duration: .seconds(5)))
            let devices = try await found.wait("both peripherals by name") { list in
                let names = Set(list.compactMap(\.name))
                return names.contains("HG HR") && names.contains("HG CSC")
            }
            let hr = try #require(devices.last { $0.name == "HG HR" })
            let csc = try #require(devices.last { $0.name == "HG CSC" })
            #expect(hr.address == peer.peripherals["hr"]?.address)
            #expect(hr.address.kind == .random)
            #expect(hr.serviceUUIDs.contains(.heartRateService))
            #expect(csc.serviceUUIDs.contains(.cscService))
            #expect(hr.fromExtendedReport && csc.fromExtendedReport)
            #expect(hr.isConnectable)
            // De-duplicated: one entry per address unless something new was learned.
            #expect(devices.filter { $0.address == hr.address }.count <= 2)
        }
    }

    /// The same stack over the Unix-socket transport.
    @Test func unixSocketTransport() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], unixSocket: true)
        defer { peer.stop() }
        guard case .unix = peer.h4 else { Issue.record("peer not on a Unix socket: \(peer.h4)"); return }
        let address = try #require(peer.peripherals["hr"]?.address)
        try await withHost(peer) { host in
            let client = try await host.connect(to: address, timeout: .seconds(30))
            try await client.discover()
            #expect(try await client.read(.batteryLevel) == [87])
            let values = Collector(try await client.subscribe(.heartRateMeasurement))
            let list = try await values.wait("notifications") { $0.count >= 3 }
            #expect(hexString(list[0].value) == peer.sentSamples("hr")[0]?["hex"] as? String)
        }
    }

    @Test func heartRateEndToEnd() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let address = try #require(peer.peripherals["hr"]?.address)
        let snoopPath = peer.sentLogPath + ".btsnoop"
        try await withHost(peer, snoopPath: snoopPath) { host in
            let client = try await host.connect(to: address, timeout: .seconds(30))
            let db = try await client.discover()
            let services = Set(db.services.map(\.uuid))
            #expect(services.isSuperset(of: [.heartRateService, .batteryService, .deviceInformation]))
            #expect(try await client.read(.batteryLevel) == [87])
            #expect(String(decoding: try await client.read(.manufacturerName), as: UTF8.self) == "HealthGate Test Peer")
            #expect(await client.mtu ?? 0 > 23)

            let received = Collector(try await client.subscribe(.heartRateMeasurement))
            let values = try await received.wait("10 notifications") { $0.count >= 10 }
            let sent = peer.sentSamples("hr")
            for (seq, n) in values.prefix(10).enumerated() {
                let entry = try #require(sent[seq], "seq \(seq) in the sent log")
                #expect(hexString(n.value) == entry["hex"] as? String, "seq \(seq)")
                #expect(n.characteristic == .heartRateMeasurement)
                guard case .heartRate(let m)? = try GATTProfileDecoder.decode(characteristic: 0x2A37, n.value) else {
                    Issue.record("seq \(seq) did not decode as heart rate")
                    continue
                }
                let fields = try #require(entry["fields"] as? [String: Any])
                #expect(Int(m.beatsPerMinute) == fields["bpm"] as? Int)
                #expect(m.rrIntervalsRaw.map(Int.init) == (fields["rr"] as? [Int] ?? []))
                #expect(m.rrIntervals.allSatisfy { $0 > 0.25 && $0 < 1.5 })
            }
            let reason = try await client.disconnect()
            #expect(reason == .localHostTerminated)
        }
        // The btsnoop tap: Reset first (sent command), then events and ACL both ways.
        var reader = try BTSnoop.Reader(Array(try Data(contentsOf: URL(fileURLWithPath: snoopPath))))
        let records = try reader.readAll()
        let first = try #require(records.first)
        #expect(!first.received && first.isCommandOrEvent && first.data == [0x01, 0x03, 0x0C, 0x00])
        #expect(records.contains { $0.received && !$0.isCommandOrEvent && $0.data.first == 0x02 })
        #expect(records.contains { !$0.received && !$0.isCommandOrEvent && $0.data.first == 0x02 })
        #expect(records.filter { $0.received && $0.data.first == 0x02 }.count >= 10)
    }

    @Test func twoPeripheralsAtOnce() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let hrAddress = try #require(peer.peripherals["hr"]?.address)
        let cscAddress = try #require(peer.peripherals["csc"]?.address)
        try await withHost(peer) { host in
            let hr = try await host.connect(to: hrAddress, timeout: .seconds(30))
            let csc = try await host.connect(to: cscAddress, timeout: .seconds(30))
            #expect(hr.handle != csc.handle)
            try await hr.discover()
            try await csc.discover()
            let hrValues = Collector(try await hr.subscribe(.heartRateMeasurement))
            let cscValues = Collector(try await csc.subscribe(.cscMeasurement))
            try await hrValues.wait("hr notifications") { $0.count >= 8 }
            let cscList = try await cscValues.wait("csc notifications") { $0.count >= 8 }
            let sent = peer.sentSamples("csc")
            for (seq, n) in cscList.prefix(8).enumerated() {
                #expect(hexString(n.value) == sent[seq]?["hex"] as? String, "csc seq \(seq)")
                guard case .csc? = try GATTProfileDecoder.decode(characteristic: 0x2A5B, n.value) else {
                    Issue.record("csc seq \(seq) did not decode")
                    continue
                }
            }
            #expect(await host.statistics.notifications >= 16)
        }
    }

    @Test func stopAndStartReconnectsTheSession() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let address = try #require(peer.peripherals["hr"]?.address)
        try await withHost(peer) { host in
            var configuration = DeviceSession.Configuration(address: address, subscriptions: [.heartRateMeasurement])
            configuration.connectTimeout = .seconds(3)
            configuration.backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(1), jitter: 0.2)
            let session = DeviceSession(runtime: host, configuration: configuration)
            let events = Collector(session.events)
            let values = Collector(session.notifications)
            await session.start()
            try await events.wait("first connection") { $0.contains(.ready(connection: 1)) }
            try await values.wait("notifications before stop") { $0.count >= 3 }

            let reply = try await peer.control("stop hr")
            #expect(reply["connections"] as? Int == 0)
            let list = try await events.wait("disconnected") { $0.contains { if case .disconnected = $0 { true } else { false } } }
            #expect(list.contains(.disconnected(reason: .remoteUserTerminated)))
            // Stopped: attempts fail (connect timeouts) and back off.
            try await events.wait("a failed attempt while stopped") { $0.contains { if case .attemptFailed = $0 { true } else { false } } }
            let before = values.values.count

            try await peer.control("start hr")
            try await events.wait("reconnected") { $0.contains(.ready(connection: 2)) }
            let after = try await values.wait("notifications after reconnect") { $0.count >= before + 3 }
            // The samples continue: seq goes on from where it stopped, byte for byte.
            let sent = peer.sentSamples("hr")
            for (seq, n) in after.enumerated() {
                #expect(hexString(n.value) == sent[seq]?["hex"] as? String, "seq \(seq)")
            }
            await session.stop()
        }
    }

    @Test func silencedCommandsTimeOutAndTheRuntimeCarriesOn() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let address = try #require(peer.peripherals["hr"]?.address)
        try await withHost(peer) { host in
            let client = try await host.connect(to: address, timeout: .seconds(30))
            try await client.discover()
            let values = Collector(try await client.subscribe(.heartRateMeasurement))
            try await values.wait("notifications") { $0.count >= 2 }

            try await peer.control("silence-commands on")
            let started = ContinuousClock.now
            await #expect(throws: BLEError.commandTimedOut(.readLocalVersion)) {
                _ = try await host.complete(.readLocalVersion)
            }
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(1900))  // the configured 2 s command timeout; no upper bound (busy CI)
            #expect(await host.statistics.commandTimeouts >= 1)
            // ACL still flows while commands are silenced.
            let count = values.values.count
            try await values.wait("notifications during silence") { $0.count >= count + 2 }

            try await peer.control("silence-commands off")
            guard case .localVersion = try await host.complete(.readLocalVersion) else {
                Issue.record("Read Local Version after silence")
                return
            }
            #expect(try await client.read(.batteryLevel) == [87])
            let c2 = values.values.count
            try await values.wait("notifications after silence") { $0.count >= c2 + 2 }
        }
    }

    @Test func malformedNotificationsAreCountedAndOthersKeepNotifying() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let hrAddress = try #require(peer.peripherals["hr"]?.address)
        let cscAddress = try #require(peer.peripherals["csc"]?.address)
        try await withHost(peer) { host in
            let hr = try await host.connect(to: hrAddress, timeout: .seconds(30))
            let csc = try await host.connect(to: cscAddress, timeout: .seconds(30))
            try await hr.discover()
            try await csc.discover()
            let hrValues = Collector(try await hr.subscribe(.heartRateMeasurement))
            let cscValues = Collector(try await csc.subscribe(.cscMeasurement))
            try await hrValues.wait("hr notifications") { $0.count >= 2 }

            let reply = try await peer.control("malformed hr")
            let malformed = (reply["sent"] as? [[String: Any]] ?? []).compactMap { $0["hex"] as? String }
            #expect(malformed.count == 4)
            let cscBefore = cscValues.values.count

            var errors: [ProfileDecodeError] = []
            var oddTrailing: [String] = []
            let all = try await hrValues.wait("malformed values") { list in
                list.filter { malformed.contains(hexString($0.value)) }.count >= malformed.count
            }
            for n in all {
                do throws(ProfileDecodeError) {
                    if case .heartRate(let m)? = try GATTProfileDecoder.decode(characteristic: 0x2A37, n.value), m.ignoredTrailingBytes > 0 {
                        oddTrailing.append(hexString(n.value))
                    }
                } catch {
                    errors.append(error)
                }
            }
            // Three are truncated (empty, uint16 bpm cut short, energy cut short): ProfileDecodeError.
            // The fourth (RR flagged with an odd byte count) decodes by the decoders' rule "bytes
            // after the last complete field are ignored and counted": one ignored trailing byte.
            #expect(errors.count == 3, "\(errors)")
            #expect(errors.allSatisfy { $0.characteristic == 0x2A37 })
            #expect(oddTrailing == ["1048000401"])
            #expect(errors.count + oddTrailing.count == malformed.count)
            try await cscValues.wait("csc keeps notifying") { $0.count >= cscBefore + 3 }
            try await hrValues.wait("hr keeps notifying") { $0.count >= all.count + 2 }
        }
    }

    @Test func disconnectDuringDiscoveryFailsCleanly() async throws {
        let peer = try await BLEPeer.start()
        defer { peer.stop() }
        let address = try #require(peer.peripherals["hr"]?.address)
        try await withHost(peer) { host in
            let first = try await host.connect(to: address, timeout: .seconds(30))
            try await peer.control("disconnect-during-discovery hr")
            do throws(BLEError) {
                try await first.discover(timeout: .seconds(30))
                Issue.record("discovery should fail")
            } catch {
                #expect(error == .disconnected(.remoteUserTerminated))
            }
            #expect(try await first.disconnected(timeout: .seconds(30)) == .remoteUserTerminated)
            await #expect(throws: BLEError.disconnected(.remoteUserTerminated)) {
                _ = try await first.read(.batteryLevel)
            }

            let second = try await host.connect(to: address, timeout: .seconds(30))
            try await second.discover()
            let values = Collector(try await second.subscribe(.heartRateMeasurement))
            try await values.wait("notifications on the new link") { $0.count >= 2 }
        }
    }
}
