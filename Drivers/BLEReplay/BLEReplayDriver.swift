public import BLEDriver
import BLEHost
public import DriverKit
import Foundation
import HealthModel
import Timing

/// The `ble_replay` driver: stores the readings of a recorded Bluetooth LE capture (btsnoop, as
/// `healthgate record --snoop` or a phone writes it, or pcap or pcapng of link type 201, as
/// Wireshark writes it) as a live recording would have stored them:
/// measurements, and one workout per device stream. The capture goes through the same host
/// stack, decoders and sessionizer as a live session. Replaying a capture again stores nothing
/// new (record identities); a damaged capture stores what precedes the damage and reports it.
/// After the capture the driver stays idle until stopped.
public struct BLEReplayDriver: DeviceDriver {
    public static let id = "ble_replay"

    /// The `[drivers.NAME]` table: `capture` (required), `sport`, `gap_s`.
    public struct Settings: Decodable, Sendable {
        public var capture: String
        public var sessionizer = GATTSessionizer.Configuration()

        enum CodingKeys: String, CodingKey { case capture, sport, gap = "gap_s" }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            capture = try c.decode(String.self, forKey: .capture, required: "the btsnoop capture to replay")
            guard capture.hasPrefix("/") else { throw c.configError(.capture, "'\(capture)' must be an absolute path") }
            if let gap = try c.decodeIfPresent(duration: .gap, unit: .seconds, in: .seconds(1)...(.seconds(86_400))) {
                sessionizer.gap = gap.inSeconds
            }
            if let sport = try c.decodeIfPresent(sport: .sport) { sessionizer.defaultSport = sport }
        }
    }

    let settings: Settings
    let context: DriverContext

    public init(settings: Settings, context: DriverContext) {
        self.settings = settings
        self.context = context
    }

    public func run(into sink: some RecordSink) async throws {
        let (batch, problems) = await Self.replay(settings)
        for problem in problems {
            context.report(.problem(kind: "ble_replay", message: problem))
            context.logger.warning("\(problem)")
        }
        if !batch.isEmpty { try await sink.emit(batch) }
        context.logger.info("replayed \(settings.capture)", metadata: [
            "measurements": "\(batch.records.count)", "workouts": "\(batch.workouts.filter(\.isFinal).count)"])
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    /// Reads and decodes the capture on a thread of its own (file I/O and decoding stay off the
    /// cooperative pool): the records, and what went wrong.
    static func replay(_ settings: Settings) async -> (LiveBatch, [String]) {
        await OffPool.runOnNewThread { decode(settings) }
    }

    /// The capture's records and problems. Pure but for reading the file.
    static func decode(_ settings: Settings) -> (LiveBatch, [String]) {
        var problems: [String] = []
        let result: CaptureReplay.Result
        do {
            result = try CaptureReplay.replay(file: settings.capture)
        } catch {
            problems.append("\(settings.capture): \(error)")
            guard let partial = error.partial else { return (LiveBatch(), problems) }
            result = partial
        }
        let (batch, malformed) = GATTSessionizer.records(from: result.values.compactMap(\.notification),
                                                         configuration: settings.sessionizer)
        if malformed > 0 { problems.append("\(settings.capture): \(malformed) malformed value(s) skipped") }
        return (batch, problems)
    }
}

extension BLEReplayDriver {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        BLEReplayDriver.self, summary: "Stores the readings of a recorded Bluetooth LE capture (btsnoop) as a live recording would have",
        sample: PackageResources.sample_toml)
}
