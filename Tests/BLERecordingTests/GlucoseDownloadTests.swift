import Foundation
import GATTProfiles
import HealthModel
import HealthStore
import Testing
import BluetoothCentral
import BLEDriver
import BLEHost
import BLERuntime
import DriverKit
import HealthPipeline
import TestSupport

/// `GlucoseDownloader` against the peer's glucose meter over the own host stack (the meter here
/// needs no bonding): every record, then only the new ones, a resend stored once, a meter going
/// silent mid-transfer. Values are compared with the meter's sent log. A download that should
/// complete gets ``Patience/limit`` of silence: it ends at the meter's answer, and the suite's
/// load once held the peer silent for over 5 s (the whole test took 106 s instead of 3).
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

    /// Where a download's records end: the last one, as the meter sent it.
    func cursor(_ result: GlucoseDownloader.Result) -> GlucoseCursor? {
        result.records.last.map { GlucoseCursor(sequence: $0.sequenceNumber, record: $0.value) }
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

            let first = try await GlucoseDownloader.download(client, database: database, after: nil, silence: Patience.limit,
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
            let written = try await store.write(first.batch, glucoseDevice: address.text, cursor: try #require(cursor(first)))
            #expect(written.inserted == 4)
            let stored4 = try #require(try await StoreSink(store: store).checkpoint(GlucoseCursor.self, device: address.text))
            #expect(stored4.sequence == 4 && stored4.record == first.records.last?.value && stored4.record != nil)

            // Nothing after 4 yet: record 4 comes again, checked, and nothing else.
            let second = try await GlucoseDownloader.download(client, database: database, after: stored4, silence: Patience.limit,
                                                              timeZone: TimeZone(identifier: "UTC")!)
            #expect(second.outcome == .complete && second.records.map(\.sequenceNumber) == [4] && !second.meterWasReset)
            #expect(try await store.write(second.batch, glucoseDevice: address.text, cursor: stored4).inserted == 0)
            // A cursor kept before its record was (the sequence number only): the records after it.
            let legacy = try await GlucoseDownloader.download(client, database: database, after: GlucoseCursor(sequence: 4, record: nil),
                                                              silence: Patience.limit)
            #expect(legacy.outcome == .noRecords && legacy.records.isEmpty && !legacy.meterWasReset)

            // Two new records: 4 again and exactly those.
            _ = try await peer.control("add-records glucose 2")
            let third = try await GlucoseDownloader.download(client, database: database, after: stored4, silence: Patience.limit,
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(third.outcome == .complete && third.records.map(\.sequenceNumber) == [4, 5, 6])
            #expect(try await store.write(third.batch, glucoseDevice: address.text, cursor: try #require(cursor(third))).inserted == 2)

            // Everything again: the same identities, nothing new stored.
            let again = try await GlucoseDownloader.download(client, database: database, after: nil, silence: Patience.limit,
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(again.records.count == 6)
            let rewritten = try await store.write(again.batch, glucoseDevice: address.text, cursor: try #require(cursor(again)))
            #expect(rewritten.inserted == 0 && rewritten.unchanged == 6)

            // A meter that goes silent after one record: that one is kept, the reason says so.
            // However long the loaded machine takes to hear the first record (a CI run once
            // took over 2 s), 2 s of silence after it end the download.
            _ = try await peer.control("racp-stop-after glucose 1")
            let silent = try await GlucoseDownloader.download(client, database: database, after: nil, silence: .seconds(2),
                                                              firstAnswer: Patience.limit)
            #expect(silent.outcome == .failed(reason: "the meter stopped sending (1 of 6 records arrived)"))
            #expect(silent.records.map(\.sequenceNumber) == [1])
            _ = try await peer.control("racp-stop-after glucose -1")

            // The meter reset (2 new records, sequence numbers 1 and 2 again): it holds neither 6
            // nor anything after it, so every record it holds is downloaded and stored.
            _ = try await peer.control("reset-records glucose 2")
            let stored6 = try #require(try await StoreSink(store: store).checkpoint(GlucoseCursor.self, device: address.text))
            let reset = try await GlucoseDownloader.download(client, database: database, after: stored6, silence: Patience.limit,
                                                             timeZone: TimeZone(identifier: "UTC")!)
            #expect(reset.outcome == .complete && reset.meterWasReset && !reset.storedRecordDiffers)
            #expect(reset.records.map(\.sequenceNumber) == [1, 2])
            #expect(try await store.write(reset.batch, glucoseDevice: address.text, cursor: try #require(cursor(reset))).inserted == 2)
            let stored2 = try #require(try await StoreSink(store: store).checkpoint(GlucoseCursor.self, device: address.text))
            #expect(stored2.sequence == 2)
            // Then nothing new: it still holds 2, the same.
            let after = try await GlucoseDownloader.download(client, database: database, after: stored2, silence: Patience.limit)
            #expect(after.outcome == .complete && !after.meterWasReset && after.records.map(\.sequenceNumber) == [2])

            // Reset again, and filled past 2 before this download: 5 new records. Record 2 is
            // another one, so every record is downloaded: 1 and 2 too, which asking for the
            // records after 2 would have skipped.
            _ = try await peer.control("reset-records glucose 5")
            let refilled = try await GlucoseDownloader.download(client, database: database, after: stored2, silence: Patience.limit,
                                                                timeZone: TimeZone(identifier: "UTC")!)
            #expect(refilled.outcome == .complete && refilled.meterWasReset && refilled.storedRecordDiffers)
            #expect(refilled.records.map(\.sequenceNumber) == [1, 2, 3, 4, 5])
            let refilledWrite = try await store.write(refilled.batch, glucoseDevice: address.text, cursor: try #require(cursor(refilled)))
            #expect(refilledWrite.inserted == 5)
            // The values are those the meter sent last (its every record, 1 to 5).
            let lastSent = peer.sentLog().filter { $0["characteristic"] as? String == "2A18" }.suffix(5)
            #expect(lastSent.compactMap { $0["seq"] as? Int } == [1, 2, 3, 4, 5])
            let loggedAgain = lastSent.compactMap { ($0["fields"] as? [String: Any])?["mmol_l"] as? Double }
            let valuesAgain = refilled.batch.records.compactMap { r -> Double? in if case .measurement(let m) = r { m.value } else { nil } }
            #expect(valuesAgain.count == 5 && zip(valuesAgain, loggedAgain).allSatisfy { abs($0 - $1) < 1e-9 }, "\(valuesAgain) vs \(loggedAgain)")
            #expect(try await StoreSink(store: store).checkpoint(GlucoseCursor.self, device: address.text)?.sequence == 5)
        } catch {
            await runtime.close()
            throw error
        }
        await runtime.close()
    }
}

extension HealthStore {
    /// Stores a download's records with the meter's checkpoint, as `healthgate ble download` does.
    @discardableResult
    fileprivate func write(_ batch: LiveBatch, glucoseDevice device: String, cursor: GlucoseCursor) async throws -> WriteResult {
        var batch = batch
        batch.setCheckpoint(cursor, device: device)
        return try await write(batch)
    }
}
