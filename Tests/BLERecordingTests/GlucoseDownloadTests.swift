import Foundation
import GATTProfiles
import HealthModel
import HealthStore
import Testing
import BLEDriver
import BLEHost
import BLERuntime
import TestSupport

/// `GlucoseDownloader` against the peer's glucose meter over the own host stack (the meter here
/// needs no bonding): every record, then only the new ones, a resend stored once, a meter going
/// silent mid-transfer. Values are compared with the meter's sent log.
@Suite(.serialized) struct GlucoseDownloadTests {
    static let glucoseMeasurement = BluetoothUUID(GATTCharacteristic.glucoseMeasurement)

    /// The records the meter logged as sent (sequence number -> fields), measurements only.
    func sentRecords(_ peer: BLEPeer) -> [Int: [String: Any]] {
        var out: [Int: [String: Any]] = [:]
        for entry in peer.sentLog() where entry["peripheral"] as? String == "glucose" && entry["characteristic"] as? String == "2A18" {
            if let seq = entry["seq"] as? Int { out[seq] = entry["fields"] as? [String: Any] ?? [:] }
        }
        return out
    }

    @Test func everyRecordThenOnlyNewOnesAndASilentMeter() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "4"])
        defer { peer.stop() }
        let address = try #require(peer.peripherals["glucose"]?.address)
        var configuration = HostRuntime.Configuration()
        configuration.commandTimeout = .seconds(2)
        let runtime = try HostRuntime.open(peer.h4, configuration: configuration)
        let store = try await HealthStore.inMemory()
        do {
            try await runtime.start()
            let client = try await runtime.connect(to: address, timeout: .seconds(30))
            let database = try await client.discover()

            let first = try await GlucoseDownloader.download(client, database: database, after: nil, silence: .seconds(5),
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(first.outcome == .complete)
            #expect(first.expected == 4)
            #expect(first.records.map(\.sequenceNumber) == [1, 2, 3, 4])
            #expect(first.records.map { $0.context != nil } == [false, false, true, false])
            let sent = sentRecords(peer)
            #expect(sent.keys.sorted() == [1, 2, 3, 4])
            let values = first.batch.records.compactMap { r -> Double? in if case .measurement(let m) = r { m.value } else { nil } }
            let logged = (1...4).compactMap { sent[$0]?["mmol_l"] as? Double }
            #expect(values.count == 4 && zip(values, logged).allSatisfy { abs($0 - $1) < 1e-9 }, "\(values) vs \(logged)")
            let written = try await store.write(first.batch, glucoseDevice: address.text, lastSequence: 4)
            #expect(written.inserted == 4)
            #expect(try await store.glucoseLastSequence(device: address.text) == 4)

            // Nothing after 4 yet.
            let second = try await GlucoseDownloader.download(client, database: database, after: 4, silence: .seconds(5))
            #expect(second.outcome == .noRecords && second.records.isEmpty)

            // Two new records: exactly those.
            _ = try peer.control("add-records glucose 2")
            let third = try await GlucoseDownloader.download(client, database: database, after: 4, silence: .seconds(5),
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(third.outcome == .complete && third.records.map(\.sequenceNumber) == [5, 6])
            #expect(try await store.write(third.batch, glucoseDevice: address.text, lastSequence: 6).inserted == 2)

            // Everything again: the same identities, nothing new stored.
            let again = try await GlucoseDownloader.download(client, database: database, after: nil, silence: .seconds(5),
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(again.records.count == 6)
            let rewritten = try await store.write(again.batch, glucoseDevice: address.text, lastSequence: 6)
            #expect(rewritten.inserted == 0 && rewritten.unchanged == 6)

            // A meter that goes silent after one record: that one is kept, the reason says so.
            _ = try peer.control("racp-stop-after glucose 1")
            let silent = try await GlucoseDownloader.download(client, database: database, after: nil, silence: .seconds(2))
            #expect(silent.outcome == .failed(reason: "the meter stopped sending (1 of 6 records arrived)"))
            #expect(silent.records.map(\.sequenceNumber) == [1])
        } catch {
            await runtime.close()
            throw error
        }
        await runtime.close()
    }
}
