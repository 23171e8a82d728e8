import Foundation
import Testing
import BluetoothCentral
import BLEHost
@testable import BLERuntime
import TestSupport

/// Records the replay fixture `Fixtures/ble/hr-csc-watch.*`: a HealthGate host session against
/// the Bumble peer with both peripherals connected at once, done the way `healthgate ble watch`
/// does it (connect, discover, subscribe to the measurements offered), plus one read per device
/// so the capture holds Read Responses too.
///
/// Off unless `HG_RECORD_BLE_FIXTURE` names the output folder; `Fixtures/ble/record-fixture.sh`
/// runs it. It writes:
/// - `hr-csc-watch.btsnoop`: the host's capture (`HostRuntime.Configuration.snoopPath`);
/// - `hr-csc-watch.peer.btsnoop`: the same link captured by the peer (Bumble's btsnoop writer);
/// - `hr-csc-watch.sent.jsonl`: the peer's sent log, the independent truth.
@Suite struct FixtureRecorder {
    static let outputFolder = ProcessInfo.processInfo.environment["HG_RECORD_BLE_FIXTURE"]
    /// A fixed own address, so that every recording has the same bytes apart from timestamps.
    static let centralAddress = DeviceAddress(0xC2_48_47_00_00_01, kind: .random)
    /// Notifications to wait for from each peripheral (4 Hz: about three seconds).
    static let notificationsPerDevice = 12

    @Test(.enabled(if: outputFolder != nil, "set HG_RECORD_BLE_FIXTURE=FOLDER to record Fixtures/ble"))
    func recordHeartRateAndCSCSession() async throws {
        let output = URL(fileURLWithPath: try #require(Self.outputFolder))
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hg-ble-fixture-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let hostSnoop = scratch.appendingPathComponent("host.btsnoop").path
        let peerSnoop = scratch.appendingPathComponent("peer.btsnoop").path

        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "4", extraArguments: ["--snoop", peerSnoop])
        defer { peer.stop() }
        var configuration = HostRuntime.Configuration()
        configuration.snoopPath = hostSnoop
        configuration.randomAddress = Self.centralAddress
        let runtime = try HostRuntime.open(peer.h4, configuration: configuration)
        let reads: [(peripheral: String, characteristic: UInt16)] = [("hr", 0x2A19), ("csc", 0x2A5C)]
        let measurements: [UInt16] = [0x2A37, 0x2A5B, 0x2A19]
        let (stream, continuation) = AsyncStream.makeStream(of: GATTNotification.self)
        let received = Collector(stream)
        do {
            try await withTimeout(Patience.limit, "recording") {
                try await runtime.start()
                var clients: [GATTClient] = []
                for (id, read) in reads {
                    let address = try #require(peer.peripherals[id]?.address)
                    let client = try await runtime.connect(to: address, timeout: .seconds(5))
                    let database = try await client.discover()
                    _ = try await client.read(BluetoothUUID(read))
                    for uuid in measurements where !database.characteristics(BluetoothUUID(uuid)).isEmpty {
                        try? await client.subscribe(BluetoothUUID(uuid), into: continuation)
                    }
                    clients.append(client)
                }
                try await received.wait("notifications from both") { list in
                    measurements.prefix(2).allSatisfy { uuid in
                        list.filter { $0.characteristic == BluetoothUUID(uuid) }.count >= Self.notificationsPerDevice
                    }
                }
                for client in clients { try await client.disconnect() }
            }
        } catch {
            await runtime.close()
            throw error
        }
        await runtime.close()
        continuation.finish()

        // The recording is only worth keeping if the host got exactly what the peer logged as sent.
        let sent = peer.sentLog()
        let got = received.values
        var consistent = true
        for id in ["hr", "csc"] {
            let address = try #require(peer.peripherals[id]?.address)
            let sentHex = sent.filter { $0["peripheral"] as? String == id }.compactMap { $0["hex"] as? String }
            let gotHex = got.filter { $0.peer == address }.map { hexString($0.value) }
            #expect(sentHex == gotHex, "\(id): sent \(sentHex.count), received \(gotHex.count); record again")
            consistent = consistent && sentHex == gotHex && !sentHex.isEmpty
        }
        guard consistent else { return }
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        for (from, name) in [(hostSnoop, "hr-csc-watch.btsnoop"), (peerSnoop, "hr-csc-watch.peer.btsnoop"),
                             (peer.sentLogPath, "hr-csc-watch.sent.jsonl")] {
            let target = output.appendingPathComponent(name)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: from), to: target)
        }
    }
}
