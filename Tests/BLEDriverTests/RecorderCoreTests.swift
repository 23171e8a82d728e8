@testable import BLEDriver
import BluetoothCentral
import Foundation
import GATTProfiles
import HealthModel
import Testing

/// The recorder's pure decisions, input by input: no controller, no sink, no clock.
struct RecorderCoreTests {
    let strap = DeviceAddress(0xC0_4E_47_00_00_01)
    let meter = DeviceAddress(0xC0_4E_47_00_00_02)
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func device(_ address: DeviceAddress, name: String? = nil) -> DiscoveredDevice {
        DiscoveredDevice(address: address, addressType: 1, name: name, serviceUUIDs: [BluetoothUUID(0x180D)], rssi: -50,
                         isConnectable: true, fromExtendedReport: false)
    }

    func heartRate(_ bpm: UInt8, from address: DeviceAddress, at time: Date) -> GATTNotification {
        GATTNotification(peer: address, characteristic: BluetoothUUID(GATTProfiles.GATTCharacteristic.heartRateMeasurement),
                         valueHandle: 3, value: [0x00, bpm], receivedAt: time)
    }

    func started(_ actions: [RecorderCore.Action]) -> [DeviceAddress] {
        actions.compactMap { if case .startSession(let d) = $0 { d.address } else { nil } }
    }

    func scanning(_ actions: [RecorderCore.Action]) -> Bool? {
        actions.lazy.compactMap { if case .scan(let on) = $0 { on } else { nil } }.first
    }

    /// A device found twice gets one session; an address selector stops the scan once matched,
    /// an open-ended one keeps it going.
    @Test func aFoundDeviceGetsOneSessionAndTheScanStopsWhenNothingIsLeftToFind() throws {
        var byAddress = RecorderCore(devices: [.address(strap)], sessionizer: .init())
        let first = byAddress.found(device(strap, name: "HRM"), .address(strap))
        #expect(started(first) == [strap])
        #expect(scanning(first) == false)
        let again = byAddress.found(device(strap), .address(strap))
        #expect(again.isEmpty)
        #expect(byAddress.statistics.devices[strap.text]?.name == "HRM")

        var auto = RecorderCore(devices: [.auto], sessionizer: .init())
        let strapFound = auto.found(device(strap), .auto)
        #expect(scanning(strapFound) == true)
        let meterFound = auto.found(device(meter), .auto)
        #expect(started(meterFound) == [meter])
    }

    /// Values become a workout's pieces at the flush; a malformed one is counted and reported,
    /// never fatal.
    @Test func valuesAreBatchedAtTheFlushAndMalformedOnesCounted() throws {
        var core = RecorderCore(devices: [.auto], sessionizer: .init())
        _ = core.found(device(strap), .auto)
        let first = core.value(heartRate(120, from: strap, at: t0))
        let second = core.value(heartRate(121, from: strap, at: t0 + 1))
        #expect(first.isEmpty && second.isEmpty)
        let bad = core.value(GATTNotification(peer: strap, characteristic: BluetoothUUID(GATTProfiles.GATTCharacteristic.heartRateMeasurement),
                                              valueHandle: 3, value: [0x01], receivedAt: t0 + 2))
        guard case .emit(.malformed(let address, _, _)) = bad.first else { Issue.record("expected a malformed report, got \(bad)"); return }
        #expect(address == strap)
        #expect(core.statistics.values == 3 && core.statistics.malformed == 1)
        #expect(core.statistics.devices[strap.text]?.malformed == 1)

        let batchResult = core.flush(now: t0 + 3)
        let batch = try #require(batchResult)
        #expect(batch.workouts.count == 1)
        #expect(batch.workouts.first?.workout.samples.count == 2)
        let stored = core.stored(nil)
        guard case .emit(.stored(let summary)) = stored.first else { Issue.record("expected a stored report, got \(stored)"); return }
        #expect(summary.samples == 2)
        #expect(core.pending.isEmpty)
        let nothing = core.flush(now: t0 + 4)
        #expect(nothing == nil)
    }

    /// A batch the sink refuses is kept and offered again, with what came since, at the next
    /// flush; nothing is counted as stored until the sink takes it.
    @Test func aRefusedBatchIsOfferedAgainWithWhatCameSince() throws {
        struct Refused: Error {}
        var core = RecorderCore(devices: [.auto], sessionizer: .init())
        _ = core.value(heartRate(100, from: strap, at: t0))
        let offered = core.flush(now: t0 + 1)
        #expect(offered != nil)
        let refused = core.stored(Refused())
        guard case .emit(.sinkFailed) = refused.first else { Issue.record("expected a sink failure, got \(refused)"); return }
        _ = core.value(heartRate(101, from: strap, at: t0 + 2))
        let againResult = core.flush(now: t0 + 3)
        let again = try #require(againResult)
        #expect(again.workouts.reduce(0) { $0 + $1.workout.samples.count } == 2)
        _ = core.stored(nil)
        #expect(core.statistics.sinkFailures == 1 && core.statistics.samples == 2 && core.statistics.batches == 1)
    }

    /// A central gone for good stops the recording once, and is the error it ends with; after the
    /// stop no device gets a session and the disconnections asked for are no news.
    @Test func aLostCentralStopsOnceAndEndsWithItsError() throws {
        var core = RecorderCore(devices: [.auto], sessionizer: .init())
        _ = core.found(device(strap), .auto)
        let ready = core.session(strap, .ready(connection: 1))
        #expect(ready.count == 1)
        #expect(core.statistics.devices[strap.text]?.connections == 1)
        let stop = core.session(strap, .gaveUp(.backendLost("the system bus went away")))
        #expect(stop.contains { if case .stopSessions = $0 { true } else { false } })
        #expect(core.failure == .backendLost("the system bus went away"))
        let failedAgain = core.failed(.closed)
        let stopAgain = core.stop()
        #expect(failedAgain.isEmpty && stopAgain.isEmpty)
        #expect(core.failure == .backendLost("the system bus went away"))
        let foundAfter = core.found(device(meter), .auto)
        let disconnectedAfter = core.session(strap, .disconnected(reason: nil))
        #expect(foundAfter.isEmpty && disconnectedAfter.isEmpty)
    }

    /// Stopping completes the workouts: the last batch holds the final piece.
    @Test func theEndCompletesTheWorkouts() throws {
        var core = RecorderCore(devices: [.auto], sessionizer: .init())
        _ = core.value(heartRate(90, from: strap, at: t0))
        _ = core.stop()
        let lastResult = core.finish()
        let last = try #require(lastResult)
        #expect(last.workouts.count == 1 && last.workouts[0].isFinal)
        _ = core.stored(nil)
        #expect(core.statistics.workoutsCompleted == 1)
    }

    /// A glucose record goes to the loop for the meter's cursor, which comes back into the batch
    /// (stored with the record, in one transaction).
    @Test func aGlucoseRecordAsksForItsCursorAndTheCursorJoinsTheBatch() throws {
        var core = RecorderCore(devices: [.auto], sessionizer: .init())
        // Flags 0x02: concentration and location present (kg/L); sequence 5; base time 2026-11-30 10:00:00.
        let value: [UInt8] = [0x02, 0x05, 0x00, 0xEA, 0x07, 11, 30, 10, 0, 0, 0x5A, 0xB0, 0x11]
        let n = GATTNotification(peer: meter, characteristic: BluetoothUUID(GATTProfiles.GATTCharacteristic.glucoseMeasurement),
                                 valueHandle: 9, value: value, receivedAt: t0)
        let actions = core.value(n)
        guard case .glucoseReceived(let address, let sequence, let bytes) = actions.first else {
            Issue.record("expected the record for the cursor, got \(actions)"); return
        }
        #expect(address == meter && sequence == 5 && bytes == value)
        core.glucoseCursor(GlucoseCursor(sequence: 5, record: value), device: meter.text)
        let batchResult = core.flush(now: t0 + 1)
        let batch = try #require(batchResult)
        #expect(batch.records.count == 1)
        #expect(!batch.checkpoints.isEmpty)
    }
}
