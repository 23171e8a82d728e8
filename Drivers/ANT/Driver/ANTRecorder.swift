public import ANTPlusProfiles
import ANTProtocol
public import DriverKit
public import Foundation
public import HealthModel
import Synchronization
import Timing
public import USBKit

/// Records ANT+ sensors through every ANT stick plugged in (or the ones named), into a sink: the
/// `ant` driver's work, and `healthgate record --ant`'s and `ant watch`'s.
///
/// Sticks come and go with USB hotplug events (the ones present first): each stick that arrives
/// is run by an ``ANTStick`` task; one that is unplugged ends its task and is run again when it
/// comes back. Everything — sticks' events, data messages and a flush tick — meets in one loop,
/// the only owner of the profile decoders (one per sensor), the value mapping and the sessionizer:
/// so a sensor heard by two sticks is recorded once (through the first that heard it).
public struct ANTRecorder: Sendable {
    public struct Configuration: Sendable {
        /// Which sticks to use: nil for every ANT stick; else sysfs port names (`1-2`) or
        /// `BUS:ADDRESS` (`001:005`).
        public var sticks: [String]?
        /// What each stick does: the network key and the channels (or the scan mode).
        public var stick: ANTStickController.Configuration
        public var sessions = LiveSessionizer.Configuration(driver: "ant")
        /// Metres per wheel revolution (speed sensors, wheel-torque power meters).
        public var wheelCircumference = 2.096
        /// The longest a reading waits before it is stored.
        public var flushInterval: Duration = .milliseconds(250)
        /// Poll the device list instead of libusb's hotplug events (tests, systems without them).
        public var pollForSticks = false
        /// What happens, for logs, status and the CLI (called in order, from the loop).
        public var onEvent: (@Sendable (Event) -> Void)?

        public init(stick: ANTStickController.Configuration) {
            self.stick = stick
        }
    }

    public enum Event: Sendable {
        case waitingForStick(Bool)
        case stickOpened(USBDeviceInfo, detachedDriver: String?)
        case stickIdentified(USBDeviceInfo, ANTStickController.StickInfo)
        case stickRunning(USBDeviceInfo, channels: [UInt8: ANTStickController.ChannelPlan], extendedMessages: Bool)
        case stickResetting(USBDeviceInfo, reason: String)
        case stickEnded(USBDeviceInfo, reason: String?)
        /// A sensor's first data message on this run, or its first after it was lost.
        case sensorFound(ANTSensorID, stick: USBDeviceInfo)
        /// The stick lost the sensor (its channel went back to search or closed).
        case sensorLost(ANTSensorID)
        /// What a data message held, decoded (for `ant watch`).
        case readings(ANTSensorID, [ANTPlusReading], receivedAt: Date, rssi: Int8?)
        /// Something that does not stop recording (a malformed page, bytes dropped).
        case problem(kind: String, message: String)
        case stored(records: Int, workoutPieces: Int)
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    private enum Input: Sendable {
        case hotplug(USBHotplug.Event)
        case stick(USBDeviceInfo, ANTStick.Event)
        case stickEnded(USBDeviceInfo, ANTStick.Failure?)
        /// A stick that failed while plugged in, due to be tried again.
        case retry(USBDeviceInfo)
        case flush
    }

    /// How long a stick that failed while plugged in (it stopped answering through its bus resets)
    /// rests before it is tried again: 30 s after its first failure in a row, doubling, at most
    /// 10 minutes. A stick plugged in again is tried at once.
    static func retryDelay(failures: Int) -> Duration {
        .seconds(min(30 << min(max(failures - 1, 0), 5), 600))
    }

    /// Whether `info` is one of the configured sticks.
    func wanted(_ info: USBDeviceInfo) -> Bool {
        guard let sticks = configuration.sticks else { return true }
        let busAddress = String(format: "%03d:%03d", info.bus, info.address)
        return sticks.contains { $0 == info.sysfsName || $0 == busAddress }
    }

    /// Records until the task is cancelled; then completes the workouts in progress and stores
    /// the last batch. Throws when libusb cannot be used at all or a batch cannot be stored.
    public func run(into sink: some RecordSink) async throws {
        let context = try USBContext()
        let hotplug = USBHotplug(context: context, forcePolling: configuration.pollForSticks, matching: ANTStickModel.matches)
        let (inputs, input) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let report = configuration.onEvent ?? { _ in }
        var loop = Loop(configuration: configuration)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                for await event in hotplug.events { input.yield(.hotplug(event)) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: configuration.flushInterval)
                    input.yield(.flush)
                }
            }
            // The sticks running, each a child of the group stopped by its own bell.
            var running: [USBDeviceInfo: Doorbell] = [:]
            // Failures in a row of the sticks plugged in, by USB port.
            var failures: [String: Int] = [:]
            // Said once no stick has come for a second (the sticks present arrive at once).
            let started = ContinuousClock.now
            var waitingSaid = false
            defer {
                hotplug.stop()
                input.finish()
            }
            for await item in inputs {
                if Task.isCancelled { break }
                switch item {
                case .hotplug(.arrived(let info)), .retry(let info):
                    if case .hotplug = item {
                        failures[info.sysfsName] = nil
                    } else if failures[info.sysfsName] == nil {
                        continue  // unplugged (or plugged in again) since it failed
                    }
                    guard wanted(info), running[info] == nil else { continue }
                    let stick = ANTStick(context: context, configuration: configuration.stick)
                    let stop = Doorbell()
                    running[info] = stop
                    group.addTask {
                        await stop.cancels {
                            do throws(ANTStick.Failure) {
                                try await stick.run(info) { event in input.yield(.stick(info, event)) }
                                input.yield(.stickEnded(info, nil))
                            } catch {
                                input.yield(.stickEnded(info, error))
                            }
                        }
                    }
                    if waitingSaid { report(.waitingForStick(false)) }
                    waitingSaid = false
                case .hotplug(.left(let info)):
                    // Its run ends by itself once its transfers fail (what it read before is
                    // still handed over); cancelled if that has not happened in 5 s.
                    failures[info.sysfsName] = nil
                    if let stop = running[info] {
                        group.addTask {
                            try? await Task.sleep(for: .seconds(5))
                            stop.ring()
                        }
                    }
                case .stickEnded(let info, let failure):
                    guard running.removeValue(forKey: info) != nil else { continue }
                    for lost in loop.stickGone(info) { report(.sensorLost(lost)) }
                    guard let failure, !failure.isGone else {
                        report(.stickEnded(info, reason: failure.map { _ in "unplugged" }))
                        continue
                    }
                    let count = failures[info.sysfsName, default: 0] + 1
                    failures[info.sysfsName] = count
                    let delay = Self.retryDelay(failures: count)
                    report(.stickEnded(info, reason: "\(failure.description); trying it again in \(delay.components.seconds) s"))
                    group.addTask {  // ends with the recorder
                        try? await Task.sleep(for: delay)
                        input.yield(.retry(info))
                    }
                case .stick(let info, let event):
                    for out in loop.handle(event, from: info) { report(out) }
                case .flush:
                    if running.isEmpty, !waitingSaid, ContinuousClock.now - started >= .seconds(1) {
                        waitingSaid = true
                        report(.waitingForStick(true))
                    }
                    let batch = loop.sessions.flush(now: Date())
                    try await store(loop.take(batch), into: sink)
                }
            }
            // The sticks stop, and with them the hotplug events, the ticker and the timers:
            // the group ends when all have.
            for stop in running.values { stop.ring() }
            group.cancelAll()
        }
        try await store(loop.take(loop.sessions.finish()), into: sink)
    }

    private func store(_ batch: LiveBatch, into sink: some RecordSink) async throws {
        guard !batch.isEmpty else { return }
        try await sink.emit(batch)
        configuration.onEvent?(.stored(records: batch.records.count, workoutPieces: batch.workouts.count))
    }

    /// The loop's state: decoders, value mapping and sessions; pure apart from the clock the
    /// events carry.
    struct Loop {
        let configuration: Configuration
        var sessions: LiveSessionizer
        var values = ANTLiveValues()
        var decoders: [ANTSensorID: ANTPlusSensorDecoder] = [:]
        /// The stick each sensor is recorded through (the first that heard it), and when it last
        /// delivered it: another stick takes the sensor over once that one has been silent about
        /// it for ``takeOver`` seconds (the same stick plugged back has another address).
        var boundTo: [ANTSensorID: (stick: USBDeviceInfo, last: Date)] = [:]
        static let takeOver: TimeInterval = 2
        /// Each stick's channels, to name a sensor when a message carries no channel id.
        var channels: [USBDeviceInfo: [UInt8: ANTStickController.ChannelPlan]] = [:]
        /// Sensors heard on each stick's channel (to tell which was lost when it goes to search).
        var onChannel: [USBDeviceInfo: [UInt8: ANTSensorID]] = [:]
        /// What was received and not yet stored.
        var pending = LiveBatch()

        init(configuration: Configuration) {
            self.configuration = configuration
            sessions = LiveSessionizer(configuration: configuration.sessions)
        }

        mutating func take(_ batch: LiveBatch) -> LiveBatch {
            defer { pending = LiveBatch() }
            return pending + batch
        }

        /// The sensors recorded through `info`, which is gone: free to be heard by another stick.
        mutating func stickGone(_ info: USBDeviceInfo) -> [ANTSensorID] {
            let lost = boundTo.filter { $0.value.stick == info }.map(\.key).sorted()
            for sensor in lost { boundTo[sensor] = nil }
            channels[info] = nil
            onChannel[info] = nil
            return lost
        }

        mutating func handle(_ event: ANTStick.Event, from stick: USBDeviceInfo) -> [Event] {
            switch event {
            case .opened(let info, let detached): return [.stickOpened(info, detachedDriver: detached)]
            case .identified(let info): return [.stickIdentified(stick, info)]
            case .running(let plans, let extended):
                channels[stick] = plans
                return [.stickRunning(stick, channels: plans, extendedMessages: extended)]
            case .resetting(let reason):
                let lost = stickGone(stick)
                return lost.map { .sensorLost($0) } + [.stickResetting(stick, reason: reason)]
            case .problem(let message): return [.problem(kind: "ant_stick", message: "\(stick): \(message)")]
            case .dropped(let drop): return [.problem(kind: "ant_frame_dropped", message: "\(stick): \(drop)")]
            case .channelEvent(let channel, let code):
                guard code == .rxFailGoToSearch || code == .channelClosed || code == .rxSearchTimeout,
                      let sensor = onChannel[stick]?.removeValue(forKey: channel), boundTo[sensor]?.stick == stick else { return [] }
                boundTo[sensor] = nil
                return [.sensorLost(sensor)]
            case .data(let reply, let time):
                let message: ANTDataMessage
                switch reply {
                case .broadcast(let m), .acknowledged(let m): message = m
                default: return []
                }
                return data(message, at: time, from: stick)
            }
        }

        private mutating func data(_ message: ANTDataMessage, at time: Date, from stick: USBDeviceInfo) -> [Event] {
            let sensor: ANTSensorID
            let plan = channels[stick]?[message.channel]
            if let id = message.channelID {
                // Another sensor with the same low 16 bits of its device number: not this channel's.
                if let plan, !plan.matches(id) { return [] }
                sensor = ANTSensorID(id)
            } else if let plan {
                // No extended data: the channel's planned sensor (device number 0 when paired by
                // wildcard: one sensor of that kind per stick).
                sensor = ANTSensorID(deviceType: plan.parameters.deviceType, deviceNumber: plan.deviceNumber)
            } else {
                return []
            }
            var events: [Event] = []
            if let bound = boundTo[sensor], bound.stick != stick, time.timeIntervalSince(bound.last) < Self.takeOver {
                return []  // heard by another stick too: recorded there
            }
            if boundTo[sensor]?.stick != stick { events.append(.sensorFound(sensor, stick: stick)) }
            boundTo[sensor] = (stick, time)
            onChannel[stick, default: [:]][message.channel] = sensor
            var decoder = decoders[sensor]
                ?? ANTPlusSensorDecoder(deviceType: sensor.deviceType, wheelCircumference: configuration.wheelCircumference)
            do {
                let readings = try decoder.receive(message.data, at: time.timeIntervalSince1970)
                decoders[sensor] = decoder
                if !readings.isEmpty { events.append(.readings(sensor, readings, receivedAt: time, rssi: message.rssi)) }
                for reading in readings {
                    for value in values.values(reading, from: sensor) {
                        pending += sessions.receive(device: sensor.description, at: time, value)
                    }
                }
            } catch {
                events.append(.problem(kind: "ant_malformed", message: "\(sensor): \(error)"))
            }
            return events
        }
    }
}
