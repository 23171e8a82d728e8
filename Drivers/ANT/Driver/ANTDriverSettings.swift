import ANTProtocol
public import DriverKit
import Foundation
public import HealthModel

/// A sensor the `sensors` key (and `ant watch --sensor`) names: `auto` (one channel for each ANT+ sensor kind, each paired
/// with the first sensor of that kind found), a kind (`heart_rate`, `power` ...: the first found)
/// or a kind and a device number (`power:12345`: that sensor only).
public enum ANTSensorSelector {
    public static let kinds = ANTPlusChannelParameters.all.map(\.key)

    public static func plans(_ texts: [String]) throws(ConfigError) -> [ANTStickController.ChannelPlan] {
        var plans: [ANTStickController.ChannelPlan] = []
        for text in texts.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            if text == "auto" {
                plans += ANTPlusChannelParameters.all.map { ANTStickController.ChannelPlan($0) }
                continue
            }
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            guard let parameters = parts.first.flatMap(ANTPlusChannelParameters.forKey) else {
                throw ConfigError(keyPath: "sensors", reason: "'\(text)' is not auto or a sensor kind (\(kinds.joined(separator: ", ")))")
            }
            var number: UInt32 = 0
            if parts.count == 2 {
                guard let n = UInt32(parts[1]), (1...0xF_FFFF).contains(n) else {
                    throw ConfigError(keyPath: "sensors", reason: "'\(text)': the device number must be 1 to 1048575")
                }
                number = n
            }
            let plan = ANTStickController.ChannelPlan(parameters, deviceNumber: number)
            if !plans.contains(plan) { plans.append(plan) }
        }
        guard !plans.isEmpty else { throw ConfigError(keyPath: "sensors", reason: "must name at least one sensor (or \"auto\")") }
        return plans
    }
}

extension ANTRecorder: DeviceDriver {
    public static let id = "ant"

    /// The `[drivers.NAME]` table (Drivers/ANT/README.md, Configuration).
    public struct Settings: Decodable, Sendable {
        public var sticks: [String]?
        public var networkKey: [UInt8]
        public var sensors: [ANTStickController.ChannelPlan]
        public var gap: Duration?
        public var wheelCircumference: Double?
        public var flushInterval: Duration?
        public var sport: Sport?

        enum CodingKeys: String, CodingKey {
            case sticks, networkKey = "network_key", sensors, gap = "gap_s", wheelCircumference = "wheel_circumference_m",
                 flushInterval = "flush_ms", sport
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if let sticks = try c.decodeIfPresent(strings: .sticks) {
                let named = sticks.map { $0.trimmingCharacters(in: .whitespaces) }
                self.sticks = named.contains("auto") ? nil : named
                guard !named.isEmpty else { throw c.configError(.sticks, "must name at least one stick (or \"auto\")") }
            }
            let key = try c.decode(String.self, forKey: .networkKey,
                                   required: "the ANT+ network key, 16 hex digits (published to ANT+ adopters; HealthGate does not ship it)")
            guard let bytes = ANTPlus.parseNetworkKey(key) else {
                throw c.configError(.networkKey, "must be 8 bytes as 16 hex digits (\"B9A5...\"), optionally separated")
            }
            networkKey = bytes
            do { sensors = try ANTSensorSelector.plans(try c.decodeIfPresent(strings: .sensors) ?? ["auto"]) } catch let error as ConfigError {
                throw c.configError(.sensors, error.reason)
            }
            gap = try c.decodeIfPresent(duration: .gap, unit: .seconds, in: .seconds(1)...(.seconds(86_400)))
            wheelCircumference = try c.decodeIfPresent(Double.self, forKey: .wheelCircumference, in: 0.5...4)
            flushInterval = try c.decodeIfPresent(duration: .flushInterval, unit: .milliseconds, in: .milliseconds(10)...(.seconds(10)))
            sport = try c.decodeIfPresent(sport: .sport)
        }
    }

    /// From the driver's table: sticks and sensors go to the context's events (status, metrics),
    /// everything to its log.
    public init(settings: Settings, context: DriverContext) {
        var c = Configuration(stick: ANTStickController.Configuration(networkKey: settings.networkKey, channels: settings.sensors))
        c.sticks = settings.sticks
        if let gap = settings.gap { c.sessions.gap = gap.inSeconds }
        if let sport = settings.sport { c.sessions.defaultSport = sport }
        if let wheel = settings.wheelCircumference { c.wheelCircumference = wheel }
        if let flush = settings.flushInterval { c.flushInterval = flush }
        c.onEvent = { event in
            switch event {
            case .waitingForStick(let waiting):
                context.report(.waiting(reason: waiting ? "no ANT stick plugged in" : nil))
            case .sensorFound(let sensor, _):
                context.report(.connected(device: sensor.description, name: sensor.kind))
            case .sensorLost(let sensor):
                context.report(.disconnected(device: sensor.description))
            case .problem(let kind, let message):
                context.report(.problem(kind: kind, message: DisplayText.safe(message, limit: 300)))
                return
            case .readings, .stored:
                return
            default:
                break
            }
            if let message = event.message {
                if case .stickEnded(_, let reason?) = event, !reason.isEmpty {
                    context.logger.warning("\(DisplayText.safe(message, limit: 1000))")
                } else {
                    context.logger.info("\(DisplayText.safe(message, limit: 1000))")
                }
            }
        }
        self.init(configuration: c)
    }

    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        ANTRecorder.self, summary: "Records ANT+ sensors through ANT USB sticks: heart rate, speed, cadence, power, foot pods, fitness equipment, scales",
        sample: PackageResources.sample_toml)
}

extension ANTRecorder.Event {
    /// The event as a log line (nil for readings and stored batches, which are counted).
    public var message: String? {
        switch self {
        case .waitingForStick(let waiting): waiting ? "no ANT stick in use; waiting for one" : nil
        case .stickOpened(let info, let detached):
            "opened \(ANTStickModel.name(info.productID)) \(info)" + (detached.map { " (detached the kernel driver \($0))" } ?? "")
        case .stickIdentified(let info, let stick):
            "\(info.sysfsName): " + [
                stick.version.map { "firmware \($0)" }, stick.serialNumber.map { "serial \($0)" },
                stick.capabilities.map { "\($0.maxChannels) channels" },
                stick.resets > 0 ? "answered after \(stick.resets + 1) resets" : nil,
            ].compactMap { $0 }.joined(separator: ", ")
        case .stickRunning(let info, let channels, let extended):
            "\(info.sysfsName): " + (channels.isEmpty ? "scanning"
                : "searching for " + channels.sorted { $0.key < $1.key }.map(\.value.description).joined(separator: ", "))
                + (extended ? "" : " (no extended messages: sensors named by their channel)")
        case .stickResetting(let info, let reason): "\(info.sysfsName): \(reason); resetting the stick"
        case .stickEnded(let info, let reason): "\(info.sysfsName): stick " + (reason ?? "closed")
        case .sensorFound(let sensor, let stick): "found \(sensor.kind) \(sensor) through \(stick.sysfsName)"
        case .sensorLost(let sensor): "lost \(sensor.kind) \(sensor)"
        case .problem(_, let message): message
        case .readings, .stored: nil
        }
    }
}
