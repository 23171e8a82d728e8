import BluetoothCentral
import Foundation
import GATTProfiles
import HealthModel

/// The recorder's decisions, pure: which found devices get a session, what each value, session
/// event and flush tick changes (the sessionizer, the batch being built, the statistics), and what
/// the loop around it must do. No I/O, no clock (times come in with the inputs), no tasks:
/// `RecorderLoop` feeds it and carries out the actions.
struct RecorderCore {
    enum Action: Sendable {
        /// Start a device session for this device.
        case startSession(DiscoveredDevice)
        /// Whether the scanner should keep looking (some selector can still match a new device).
        case scan(Bool)
        case emit(BLERecorderEvent)
        /// A glucose measurement from this meter, for its cursor tracker (the loop shares the
        /// trackers with the meters' request procedures); the loop hands the cursor back with
        /// `glucoseCursor(_:device:)`.
        case glucoseReceived(DeviceAddress, sequence: UInt16, value: [UInt8])
        /// Stop every session; the loop ends once their last values are in.
        case stopSessions
    }

    let devices: [DeviceSelector]
    private var sessionizer: GATTSessionizer
    /// Devices with a session (address values).
    private var sessions: Set<UInt64> = []
    private var matched: Set<DeviceSelector> = []
    /// What the sink has not taken yet: added to by values and flushes, emptied by `stored`.
    private(set) var pending = LiveBatch()
    private(set) var statistics = BLERecorderStatistics()
    private(set) var stopping = false
    /// The error the recording ends with (the central gone for good), if any.
    private(set) var failure: BLEError?

    init(devices: [DeviceSelector], sessionizer: GATTSessionizer.Configuration) {
        self.devices = devices
        self.sessionizer = GATTSessionizer(configuration: sessionizer)
    }

    /// A device the scanner matched: a session once per device, not after the stop.
    mutating func found(_ device: DiscoveredDevice, _ selector: DeviceSelector) -> [Action] {
        guard !sessions.contains(device.address.value), !stopping else { return [] }
        sessions.insert(device.address.value)
        statistics.devices[device.address.text, default: .init()].name = device.name
        matched.insert(selector)
        let stillLooking = devices.contains { $0.isOpenEnded || !matched.contains($0) }
        return [.scan(stillLooking), .emit(.found(address: device.address, name: device.name, selector: selector)), .startSession(device)]
    }

    /// A value a session received: decoded (a malformed one counted and reported) and fed to the
    /// sessionizer.
    mutating func value(_ n: GATTNotification) -> [Action] {
        let device = n.peer.text
        statistics.values += 1
        statistics.devices[device, default: .init()].values += 1
        do {
            guard let uuid = n.characteristic.uint16,
                  let reading = try GATTProfileDecoder.decode(characteristic: uuid, n.value) else { return [] }
            pending += sessionizer.receive(LiveReading(device: device, receivedAt: n.receivedAt, reading: reading))
            if case .glucose(let m) = reading { return [.glucoseReceived(n.peer, sequence: m.sequenceNumber, value: n.value)] }
            return []
        } catch {
            statistics.malformed += 1
            statistics.devices[device, default: .init()].malformed += 1
            return [.emit(.malformed(address: n.peer, characteristic: n.characteristic, error: "\(error)"))]
        }
    }

    /// A glucose meter's cursor after a record: stored with the batch, in the same transaction.
    mutating func glucoseCursor(_ cursor: GlucoseCursor, device: String) {
        pending.setCheckpoint(cursor, device: device)
    }

    /// A session's event; after the stop the disconnections asked for are no news.
    mutating func session(_ address: DeviceAddress, _ event: DeviceSession.Event) -> [Action] {
        guard !stopping else { return [] }
        switch event {
        case .ready(let connection):
            statistics.devices[address.text, default: .init()].connections = connection
            return [.emit(.connected(address: address, connection: connection))]
        case .disconnected(let reason):
            // No reason: the host stack's transport closed, or BlueZ (which does not tell).
            return [.emit(.disconnected(address: address, reason: reason.map { "\($0)" } ?? "no reason given"))]
        case .attemptFailed(let why):
            return [.emit(.retrying(address: address, after: .zero, reason: why))]
        case .retrying(let after):
            return [.emit(.retrying(address: address, after: after, reason: nil))]
        case .gaveUp(let error):
            return failed(error)
        case .stopped:
            return []
        }
    }

    /// The flush tick: the workouts' pieces so far join the batch; the batch to hand to the sink
    /// (nil when there is nothing). Its result goes to `stored`.
    mutating func flush(now: Date) -> LiveBatch? {
        pending += sessionizer.flush(now: now)
        return pending.isEmpty ? nil : pending
    }

    /// The end: every workout completed; the last batch to hand to the sink.
    mutating func finish() -> LiveBatch? {
        pending += sessionizer.finish()
        return pending.isEmpty ? nil : pending
    }

    /// What became of the batch handed to the sink: taken (counted, reported, gone from
    /// `pending`), or refused (kept for the next flush).
    mutating func stored(_ error: (any Error)?) -> [Action] {
        if let error {
            statistics.sinkFailures += 1
            return [.emit(.sinkFailed("\(error)"))]
        }
        let summary = BLERecorderBatch(
            measurements: pending.records.count, samples: pending.workouts.reduce(0) { $0 + $1.workout.samples.count },
            workoutsCompleted: pending.workouts.filter(\.isFinal).count)
        statistics.batches += 1
        statistics.measurements += summary.measurements
        statistics.samples += summary.samples
        statistics.workoutsCompleted += summary.workoutsCompleted
        pending = LiveBatch()
        return [.emit(.stored(summary))]
    }

    /// The central is gone for good: stop, and end with this error.
    mutating func failed(_ error: BLEError) -> [Action] {
        guard !stopping else { return [] }
        failure = error
        return stop()
    }

    /// Stop recording: no new sessions, the sessions stopped (their last values still come).
    mutating func stop() -> [Action] {
        guard !stopping else { return [] }
        stopping = true
        return [.scan(false), .stopSessions]
    }
}
