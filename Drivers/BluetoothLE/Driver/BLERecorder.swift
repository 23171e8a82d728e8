public import BluetoothCentral
public import BLERuntime
public import DriverKit
import Foundation
import GATTProfiles
public import HealthModel
import Synchronization

/// The Bluetooth LE driver: finds the configured devices, keeps each one connected (reconnecting
/// with backoff), decodes what they send and hands measurements and workout pieces to the sink
/// in short batches (at most `flushInterval` after a reading arrived).
///
/// Every device has its own ``DeviceSession``; their values meet in one loop that owns the
/// ``GATTSessionizer`` and the batch being built, so no state is shared between tasks.
public struct BLERecorder: DeviceDriver {
    public static let id = "ble"

    public struct Configuration: Sendable {
        /// The controller: `hci0`, `tcp:HOST:PORT`, `unix:PATH` or `serial:/dev/ttyACM0[:baud]` for
        /// the own host stack; `bluez` or `bluez:hci1` for BlueZ; `auto` for BlueZ when bluetoothd
        /// runs, else the first `hciN`.
        public var controller: BLEController
        /// The devices to record (default: any heart-rate sensor).
        public var devices: [DeviceSelector] = [.auto]
        public var sessionizer = GATTSessionizer.Configuration()
        /// The longest a reading waits before it is handed to the sink.
        public var flushInterval: Duration = .milliseconds(250)
        /// While devices are still to be found: scan this long, then pause this long (shorter
        /// pauses first after the start: 1 s, doubling up to `scanPause`, so that a device not
        /// yet advertising when the recorder starts, say still held by a link that is going
        /// away, is found within seconds, not after a whole pause).
        public var scanWindow: Duration = .seconds(5)
        public var scanPause: Duration = .seconds(15)
        public var backoff = Backoff.reconnect
        /// At the start, wait (saying so once) instead of failing while the controller is not
        /// there: through BlueZ, the system bus not answering, bluetoothd not running, the
        /// adapter missing or powered off; with the own stack, no such adapter (`hciN`), nothing
        /// listening (`tcp:`, `unix:`) or no such device file (`serial:`). The daemon's driver
        /// does: started before them, or restarted after losing its controller, it records as
        /// soon as they are there rather than after a growing restart delay.
        public var waitForController = false
        /// Write a btsnoop capture of the controller link here.
        public var snoopPath: String?
        /// Called for every event worth telling a user or a log: on the recorder's loop, but
        /// `backend` changes on the backend's thread (so it must be thread-safe).
        public var onEvent: (@Sendable (BLERecorderEvent) -> Void)?
        /// The backend's own diagnostics (a connection attempt given up and cancelled, a link
        /// down with its reason, a D-Bus call that failed): lines for a debug log, called on the
        /// backend's thread (so it must be thread-safe).
        public var log: (@Sendable (String) -> Void)?

        public init(controller: BLEController, devices: [DeviceSelector] = [.auto]) {
            self.controller = controller
            self.devices = devices
        }

        /// The own host stack on this controller.
        public init(controller: TransportAddress, devices: [DeviceSelector] = [.auto]) {
            self.init(controller: .host(controller), devices: devices)
        }
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The last batch could not be stored when recording ended.
    public struct UnstoredBatchError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The `[drivers.NAME]` table (`Drivers/BluetoothLE/README.md`, section Configuration).
    public struct Settings: Decodable, Sendable {
        public var controller: BLEController
        public var devices: [DeviceSelector] = [.auto]
        public var gap: Duration?
        public var wheelCircumference: Double?
        public var flushInterval: Duration?
        public var sport: Sport?

        enum CodingKeys: String, CodingKey {
            case hci, devices, gap = "gap_s", wheelCircumference = "wheel_circumference_m", flushInterval = "flush_ms", sport
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let hci = try c.decode(String.self, forKey: .hci, required: "the controller: auto, bluez[:hciN], hci0, tcp:HOST:PORT, unix:PATH or serial:DEVICE")
            do { controller = try BLEController(parsing: hci) } catch { throw c.configError(.hci, "\(error)") }
            if let texts = try c.decodeIfPresent(strings: .devices) {
                devices = []
                for text in texts {
                    do { devices.append(try DeviceSelector(parsing: text.trimmingCharacters(in: .whitespaces))) } catch {
                        throw c.configError(.devices, "\(error)")
                    }
                }
                guard !devices.isEmpty else { throw c.configError(.devices, "must name at least one device (or \"auto\")") }
            }
            gap = try c.decodeIfPresent(duration: .gap, unit: .seconds, in: .seconds(1)...(.seconds(86_400)))
            wheelCircumference = try c.decodeIfPresent(Double.self, forKey: .wheelCircumference, in: 0.5...4)
            flushInterval = try c.decodeIfPresent(duration: .flushInterval, unit: .milliseconds, in: .milliseconds(10)...(.seconds(10)))
            sport = try c.decodeIfPresent(sport: .sport)
        }
    }

    /// From the driver's table: connections go to the context's event stream (for the status
    /// API), malformed values to its metrics, everything to its log.
    public init(settings: Settings, context: DriverContext) {
        var c = Configuration(controller: settings.controller, devices: settings.devices)
        if let gap = settings.gap { c.sessionizer.gap = gap.inSeconds }
        if let wheel = settings.wheelCircumference { c.sessionizer.wheelCircumference = wheel }
        if let flush = settings.flushInterval { c.flushInterval = flush }
        if let sport = settings.sport { c.sessionizer.defaultSport = sport }
        c.waitForController = true
        c.log = { line in context.logger.debug("\(DisplayText.safe(line, limit: 1000))") }
        c.onEvent = { event in
            switch event {
            case .connected(let address, _): context.report(.connected(device: address.text, name: nil))
            case .disconnected(let address, _): context.report(.disconnected(device: address.text))
            case .malformed(let address, _, let error): context.report(.problem(kind: "ble_malformed", message: "\(address.text): \(error)"))
            case .stored(let batch):
                context.logger.debug("stored \(batch.measurements) measurements, \(batch.samples) workout samples, \(batch.workoutsCompleted) workouts completed")
                return
            case .backend(let message, let trouble):
                // bluetoothd, the bus or the controller gone (a warning: every device's link ends
                // with it; the driver waits for it), or back.
                if trouble { context.logger.warning("\(message)") } else { context.logger.info("\(message)") }
                context.report(.waiting(reason: trouble ? DisplayText.safe(message, limit: 300) : nil))
                return
            default: break
            }
            if let message = event.message { context.logger.info("\(DisplayText.safe(message, limit: 1000))") }
        }
        self.init(configuration: c)
    }

    /// Opens the controller (`Controllers.open`), records until the task is cancelled, hands the
    /// last batch (workouts completed) to the sink and closes the controller.
    public func run(into sink: some RecordSink) async throws {
        var options = Controllers.Options()
        options.snoopPath = configuration.snoopPath
        options.waitForController = configuration.waitForController
        options.discoveryServices = DeviceSelector.discoveryServices(configuration.devices)
        options.log = configuration.log
        let onEvent = configuration.onEvent
        options.onChange = { message, trouble in onEvent?(.backend(message: message, trouble: trouble)) }
        let opened = try await Controllers.open(configuration.controller, options)
        switch opened.ready {
        case .controller(let info): onEvent?(.controllerReady(info))
        case .adapter(let path): onEvent?(.adapterReady(path))
        }
        do {
            try await record(with: opened.central, into: sink)
        } catch {
            await opened.central.close()
            throw error
        }
        await opened.central.close()
    }

    /// Records with a started central (which the caller owns) until the task is cancelled.
    public func record(with runtime: any BLECentral, into sink: some RecordSink) async throws {
        let loop = RecorderLoop(configuration: configuration, runtime: runtime, sink: sink)
        // The loop runs apart from the caller's task so that cancelling the caller stops it in
        // order (sessions stopped, their last values processed, final batch stored) instead of
        // cutting it short.
        let task = Task { try await loop.run() }
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            loop.requestStop()
        }
    }

    /// The characteristics a recorder subscribes to when a device has them.
    public static let measurements: [UInt16] = [
        GATTProfiles.GATTCharacteristic.heartRateMeasurement, GATTProfiles.GATTCharacteristic.cscMeasurement,
        GATTProfiles.GATTCharacteristic.rscMeasurement, GATTProfiles.GATTCharacteristic.cyclingPowerMeasurement,
        GATTProfiles.GATTCharacteristic.treadmillData, GATTProfiles.GATTCharacteristic.crossTrainerData,
        GATTProfiles.GATTCharacteristic.rowerData, GATTProfiles.GATTCharacteristic.indoorBikeData,
        GATTProfiles.GATTCharacteristic.weightMeasurement, GATTProfiles.GATTCharacteristic.bodyCompositionMeasurement,
        GATTProfiles.GATTCharacteristic.bloodPressureMeasurement, GATTProfiles.GATTCharacteristic.temperatureMeasurement,
        GATTProfiles.GATTCharacteristic.plxSpotCheckMeasurement, GATTProfiles.GATTCharacteristic.plxContinuousMeasurement,
        GATTProfiles.GATTCharacteristic.glucoseMeasurement, GATTProfiles.GATTCharacteristic.batteryLevel,
    ]
}

/// What a recorder reports while it runs.
public enum BLERecorderEvent: Sendable {
    case controllerReady(ControllerInfo)
    /// The BlueZ adapter (its D-Bus path) is in use.
    case adapterReady(String)
    /// The backend changed under the recording: bluetoothd or the adapter went away (`trouble`:
    /// every link through it ends, the sessions retry) or came back.
    case backend(message: String, trouble: Bool)
    /// A device matching a selector was found and its session started.
    case found(address: DeviceAddress, name: String?, selector: DeviceSelector)
    /// Connected, discovered and subscribed (`connection` counts from 1 per device).
    case connected(address: DeviceAddress, connection: Int)
    case disconnected(address: DeviceAddress, reason: String)
    case retrying(address: DeviceAddress, after: Duration, reason: String?)
    /// A value that did not decode: counted and skipped.
    case malformed(address: DeviceAddress, characteristic: BluetoothUUID, error: String)
    /// A glucose meter was reset: the record with the last sequence number stored came again as
    /// another one (`recordChanged`), or the meter holds neither it nor any after it. Its every
    /// record is asked for, and its sequence numbers start over.
    case glucoseMeterReset(address: DeviceAddress, lastSequence: UInt16, recordChanged: Bool)
    /// A batch reached the sink.
    case stored(BLERecorderBatch)
    /// The sink refused a batch; it is kept and offered again at the next flush.
    case sinkFailed(String)
    case scanFailed(String)
    /// Recording ended; the totals.
    case finished(BLERecorderStatistics)
}

extension BLERecorderEvent {
    /// The event as a line for a person: what `healthgate record` prints and the daemon's `ble`
    /// driver logs (one wording for both). nil for ``stored(_:)`` (too frequent to print).
    public var message: String? {
        switch self {
        case .controllerReady(let info): "controller \(info.address.text) ready"
        case .adapterReady(let path): "BlueZ adapter \(path) ready"
        case .backend(let message, _): message
        case .found(let address, let name, let selector): "found \(name.map { "\($0) " } ?? "")\(address.text) (\(selector))"
        case .connected(let address, let connection):
            connection == 1 ? "\(address.text): connected, recording" : "\(address.text): reconnected (connection \(connection))"
        case .disconnected(let address, let reason): "\(address.text): disconnected (\(reason))"
        case .retrying(let address, let after, let reason):
            reason.map { "\(address.text): \($0)" } ?? "\(address.text): reconnecting in \(String(format: "%.1f", after.inSeconds)) s"
        case .malformed(let address, let characteristic, let error): "\(address.text): malformed \(characteristic) value skipped: \(error)"
        case .glucoseMeterReset(let address, let last, let changed):
            changed
                ? "\(address.text): the meter's record \(last) is not the one stored (reset): asking for every record"
                : "\(address.text): the meter holds no record from sequence number \(last) on (reset?): asking for every record"
        case .stored: nil
        case .sinkFailed(let why): "could not store a batch (will retry): \(why)"
        case .scanFailed(let why): "scan failed: \(why)"
        case .finished(let s):
            "recording ended: \(s.values) values from \(s.devices.count) device(s), \(s.measurements) measurements and "
                + "\(s.samples) workout samples stored in \(s.batches) batches, \(s.workoutsCompleted) workouts completed, "
                + "\(s.malformed) malformed values skipped"
        }
    }
}

/// What one batch held.
public struct BLERecorderBatch: Sendable, Equatable {
    public var measurements: Int
    public var samples: Int
    public var workoutsCompleted: Int
}

/// Totals of a recording.
public struct BLERecorderStatistics: Sendable, Equatable {
    public struct Device: Sendable, Equatable {
        public var name: String?
        public var connections = 0
        public var values = 0
        public var malformed = 0
    }
    public var devices: [String: Device] = [:]
    public var values = 0
    public var malformed = 0
    public var batches = 0
    public var measurements = 0
    public var samples = 0
    public var workoutsCompleted = 0
    public var sinkFailures = 0
}

/// The recorder's one loop: its `RecorderCore` alone holds the sessionizer, the batch and the
/// statistics; the loop owns the sessions and does the I/O the core asks for.
final class RecorderLoop<Sink: RecordSink>: Sendable {
    enum Input: Sendable {
        case found(DiscoveredDevice, DeviceSelector)
        case value(GATTNotification)
        case session(DeviceAddress, DeviceSession.Event)
        /// A glucose meter was reset (``GlucoseCatchUp``), its last stored sequence number this.
        case glucoseReset(DeviceAddress, UInt16, recordChanged: Bool)
        case flush
        case stop
        /// The central is gone for good: stop as for `.stop`, then end with this error.
        case failed(BLEError)
        /// A session's forwarder handed on its stream's last element.
        case forwarded
    }

    let configuration: BLERecorder.Configuration
    let runtime: any BLECentral
    let sink: Sink
    private let inputs: AsyncStream<Input>
    private let input: AsyncStream<Input>.Continuation
    /// Addresses the scanner should no longer report (read by the scanner task).
    private let claimed = Mutex<Set<UInt64>>([])
    /// Per glucose meter (address value), where its records stored or on their way to the sink
    /// end (with them, the `ble` driver's checkpoint for the meter, ``GlucoseCursor``): read from
    /// the sink (the store's `driver_checkpoints`) on the first connection of a run, moved by the glucose measurements
    /// received, which also check the stored record (``GlucoseCursorTracker``). Each connection
    /// asks the meter for the records from it on.
    private let glucoseTrackers = Mutex<[UInt64: GlucoseCursorTracker]>([:])
    /// Per glucose meter, where the check of its stored record goes: the request procedure of
    /// its current connection (``GlucoseCatchUp/storedRecordChecked(same:)``).
    private let glucoseChecks = Mutex<[UInt64: @Sendable (Bool) -> Void]>([:])
    private let wantsScan = Mutex(true)

    init(configuration: BLERecorder.Configuration, runtime: any BLECentral, sink: Sink) {
        self.configuration = configuration
        self.runtime = runtime
        self.sink = sink
        (inputs, input) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
    }

    func requestStop() { input.yield(.stop) }

    /// Feeds the inputs to the pure `RecorderCore` one at a time and carries out its actions:
    /// sessions started and stopped, values forwarded, batches handed to the sink. The scanner,
    /// the flush ticker and the sessions' forwarders are children of one task group: the loop
    /// ends once every forwarder has handed on its session's last value after the stop, and the
    /// scanner and ticker are cancelled with the group.
    func run() async throws {
        var core = RecorderCore(devices: configuration.devices, sessionizer: configuration.sessionizer)
        var sessions: [DeviceSession] = []
        var forwarding = 0
        let emit = configuration.onEvent ?? { _ in }

        func store(_ batch: LiveBatch?) async -> [RecorderCore.Action] {
            guard let batch else { return [] }
            do {
                try await sink.emit(batch)
                return core.stored(nil)
            } catch {
                return core.stored(error)
            }
        }

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.scan() }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.configuration.flushInterval)
                    self.input.yield(.flush)
                }
            }

            func perform(_ actions: [RecorderCore.Action]) async {
                for action in actions {
                    switch action {
                    case .emit(let event):
                        emit(event)
                    case .scan(let on):
                        wantsScan.withLock { $0 = on }
                    case .startSession(let device):
                        let session = DeviceSession(runtime: runtime, configuration: sessionConfiguration(device.address))
                        sessions.append(session)
                        forwarding += 2
                        group.addTask {
                            for await n in session.notifications { self.input.yield(.value(n)) }
                            self.input.yield(.forwarded)
                        }
                        group.addTask {
                            for await e in session.events { self.input.yield(.session(device.address, e)) }
                            self.input.yield(.forwarded)
                        }
                        await session.start()
                    case .glucoseReceived(let address, let sequence, let value):
                        // The stored cursor first (a value may come before the connection's request
                        // procedure reads it), then the cursor stored with the record.
                        await loadGlucoseTracker(address)
                        let (check, cursor) = glucoseTrackers.withLock { trackers in
                            var tracker = trackers[address.value] ?? GlucoseCursorTracker(stored: nil)
                            let check = tracker.received(sequence: sequence, value: value)
                            trackers[address.value] = tracker
                            return (check, tracker.cursor)
                        }
                        if let cursor { core.glucoseCursor(cursor, device: address.text) }
                        if check != .none { glucoseChecks.withLock { $0[address.value] }?(check == .same) }
                    case .stopSessions:
                        // Their streams finish: each forwarder hands on what is left, then says so.
                        for session in sessions { await session.stop() }
                    }
                }
            }

            loop: for await item in inputs {
                switch item {
                case .found(let device, let selector): await perform(core.found(device, selector))
                case .value(let n): await perform(core.value(n))
                case .session(let address, let event): await perform(core.session(address, event))
                case .glucoseReset(let address, let last, let changed):
                    // Its sequence numbers start over: the records it sends now set the cursor.
                    glucoseTrackers.withLock { $0[address.value]?.meterReset() }
                    emit(.glucoseMeterReset(address: address, lastSequence: last, recordChanged: changed))
                case .flush: await perform(await store(core.flush(now: Date())))
                case .failed(let error): await perform(core.failed(error))
                case .stop: await perform(core.stop())
                case .forwarded: forwarding -= 1
                }
                // Stopped, and every value received before the stop handed on.
                if core.stopping, forwarding == 0 { break loop }
            }
            group.cancelAll()
        }
        for case .emit(let event) in await store(core.finish()) { emit(event) }
        emit(.finished(core.statistics))
        if !core.pending.isEmpty {
            throw BLERecorder.UnstoredBatchError(
                description: "the last batch could not be stored (\(core.pending.records.count) records, \(core.pending.workouts.count) workout pieces)")
        }
        if let failure = core.failure { throw failure }
    }

    /// A found device's session: every measurement characteristic it has, Battery Level read on
    /// each connection, and a glucose meter asked for its stored records.
    private func sessionConfiguration(_ address: DeviceAddress) -> DeviceSession.Configuration {
        var c = DeviceSession.Configuration(address: address, subscriptions: BLERecorder.measurements.map(BluetoothUUID.init))
        c.requireAllSubscriptions = false
        c.reads = [BluetoothUUID(GATTProfiles.GATTCharacteristic.batteryLevel)]
        c.backoff = configuration.backoff
        c.afterSubscribe = { [weak self] client, database, _ in
            guard let self else { return }
            try await BLERecorder.requestGlucoseRecords(
                client, database, cursor: { await self.glucoseRequestCursor(client.peer) },
                checks: { handler in self.glucoseChecks.withLock { $0[client.peer.value] = handler } },
                meterReset: { self.input.yield(.glucoseReset(client.peer, $0, recordChanged: $1)) })
        }
        return c
    }

    /// Loads a glucose meter's tracker, when this run has none yet, from the sink's cursor (kept
    /// across runs in the store). A sink that cannot tell counts as none: every record is asked
    /// for, and records sent again are stored once.
    func loadGlucoseTracker(_ address: DeviceAddress) async {
        guard glucoseTrackers.withLock({ $0[address.value] == nil }) else { return }
        let stored = (try? await sink.checkpoint(GlucoseCursor.self, device: address.text)) ?? nil
        glucoseTrackers.withLock { trackers in
            if trackers[address.value] == nil { trackers[address.value] = GlucoseCursorTracker(stored: stored) }
        }
    }

    /// Where a glucose meter's stored records end, for a connection's request procedure
    /// (``GlucoseCursorTracker/requesting()``). nil: none (ask for every record).
    func glucoseRequestCursor(_ address: DeviceAddress) async -> GlucoseCursor? {
        await loadGlucoseTracker(address)
        return glucoseTrackers.withLock { $0[address.value]?.requesting() }
    }

    /// Scans in windows while devices are still to be found, reporting each match once.
    private func scan() async {
        var pause = min(configuration.scanPause, .seconds(1))
        while !Task.isCancelled {
            if wantsScan.withLock({ $0 }) {
                do {
                    let stream = try await runtime.scan(for: configuration.scanWindow)
                    for await device in stream {
                        guard !claimed.withLock({ $0.contains(device.address.value) }), device.isConnectable,
                              let selector = configuration.devices.first(where: { $0.matches(device) }) else { continue }
                        claimed.withLock { _ = $0.insert(device.address.value) }
                        input.yield(.found(device, selector))
                    }
                } catch {
                    if error.isFinal {
                        input.yield(.failed(error))
                        return
                    }
                    configuration.onEvent?(.scanFailed("\(error)"))
                }
            }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, configuration.scanPause)
        }
    }
}

extension BLERecorder {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        BLERecorder.self, summary: "Records Bluetooth LE heart-rate, cycling, running, fitness-machine, scale and health sensors, live",
        sample: PackageResources.sample_toml)
}

extension BLERecorder {
    /// On each connection to a glucose meter (a device with a Record Access Control Point and
    /// Glucose Measurement): asks for the stored records from the stored cursor on (all of them
    /// when there is none), and tells a meter with nothing new from one that was reset as
    /// ``GlucoseCatchUp`` decides, with the check of the stored record the recorder makes when it
    /// comes again (handed to the procedure through `checks`); on a reset it calls `meterReset`
    /// with the sequence number it forgets (and whether its record came back changed), before
    /// asking for every record. The records arrive as
    /// Glucose Measurement notifications on the session's stream and are stored like live
    /// readings, with the same identities, so a record sent again is not stored twice. The
    /// control point's responses come here; the rest of the procedure runs apart, so the
    /// connection is ready at once.
    static func requestGlucoseRecords(_ client: any BLEConnection, _ database: GATTDatabase, cursor: () async -> GlucoseCursor?,
                                      checks: (@escaping @Sendable (Bool) -> Void) -> Void,
                                      meterReset: @escaping @Sendable (_ lastSequence: UInt16, _ recordChanged: Bool) -> Void) async throws {
        let racp = BluetoothUUID(GATTProfiles.GATTCharacteristic.recordAccessControlPoint)
        guard !database.characteristics(racp).isEmpty,
              !database.characteristics(BluetoothUUID(GATTProfiles.GATTCharacteristic.glucoseMeasurement)).isEmpty else { return }
        let (responses, responsesIn) = AsyncStream.makeStream(of: GATTNotification.self, bufferingPolicy: .unbounded)
        try await client.subscribe(racp, into: responsesIn, timeout: .seconds(10))
        let (inputs, input) = AsyncStream.makeStream(of: GlucoseCatchUpInput.self, bufferingPolicy: .unbounded)
        var catchUp = GlucoseCatchUp(after: await cursor())
        // Before the request: the stored record it asks for again comes after it.
        checks { same in input.yield(.check(same: same)) }
        guard case .write(let first) = catchUp.start() else { return }
        try await client.write(racp, first, timeout: .seconds(10))
        guard catchUp.awaitsResponse else {
            responsesIn.finish()
            input.finish()
            return
        }
        Task { [catchUp] in
            var catchUp = catchUp
            let forward = Task {
                for await n in responses {
                    if let response = try? RecordAccessControlPoint.decodeResponse(n.value) { input.yield(.response(response)) }
                }
                input.finish()
            }
            // The procedure ends when the link does, or after a generous bound (the answer to
            // "records from N" follows the records it reports, and the check follows record N).
            let watch = Task {
                _ = try? await client.disconnected(timeout: .seconds(60))
                responsesIn.finish()
                input.finish()
            }
            defer {
                watch.cancel()
                forward.cancel()
                responsesIn.finish()
                input.finish()
            }
            for await event in inputs {
                let step: GlucoseCatchUp.Step
                switch event {
                case .response(let response): step = catchUp.response(response)
                case .check(let same): step = catchUp.storedRecordChecked(same: same)
                }
                let request: [UInt8]
                switch step {
                case .wait: continue
                case .done: return
                case .write(let bytes): request = bytes
                case .meterReset(let bytes):
                    if let forgotten = catchUp.after { meterReset(forgotten, catchUp.storedRecordChanged) }
                    request = bytes
                }
                do { try await client.write(racp, request, timeout: .seconds(10)) } catch { return }
                if !catchUp.awaitsResponse { return }
            }
        }
    }

    /// What the request procedure of one connection reacts to: the control point's responses
    /// and the check of the stored record.
    enum GlucoseCatchUpInput: Sendable {
        case response(RecordAccessControlPoint.Response)
        case check(same: Bool)
    }
}
