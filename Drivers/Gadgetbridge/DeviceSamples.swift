import Foundation
public import HealthModel

/// A `DEVICE` row as records are keyed: by its address and type, never its local `_id`.
public struct GadgetbridgeDevice: Sendable, Equatable {
    /// `IDENTIFIER`: the MAC address (upper-cased).
    public var address: String
    /// `TYPE_NAME` (`MIBAND`, `MIBAND2`, `AMAZFITBIP` ...).
    public var typeName: String

    public init(address: String, typeName: String) {
        self.address = address.uppercased()
        self.typeName = typeName
    }

    /// `type/address`, lower-case type: `amazfitbip/F0:00:00:00:00:02`. The records' device and
    /// the first part of their ids.
    public var key: String { typeName.lowercased() + "/" + address }
    public var family: GadgetbridgeFamily { GadgetbridgeFamily.of(typeName: typeName) }
}

/// One row of an activity sample table: a minute of one device. Values the file holds as
/// something other than an integer are nil.
public struct ActivityRow: Sendable, Equatable {
    /// Unix seconds.
    public var timestamp: Int64
    public var steps: Int?
    public var rawKind: Int?
    public var heartRate: Int?
    /// `DEEP_SLEEP` and `REM_SLEEP` of `HUAMI_EXTENDED_ACTIVITY_SAMPLE`; nil elsewhere.
    public var deepSleep: Int?
    public var remSleep: Int?

    public init(timestamp: Int64, steps: Int?, rawKind: Int?, heartRate: Int?, deepSleep: Int? = nil, remSleep: Int? = nil) {
        self.timestamp = timestamp
        self.steps = steps
        self.rawKind = rawKind
        self.heartRate = heartRate
        self.deepSleep = deepSleep
        self.remSleep = remSleep
    }
}

/// Where a sample table's sleep comes from.
public enum SleepSource: Sendable, Equatable {
    /// `RAW_KIND` read by the device's family (``RawKindDecoder``): `MI_BAND_ACTIVITY_SAMPLE`.
    case rawKinds
    /// `RAW_KIND` 120 and the `DEEP_SLEEP` / `REM_SLEEP` columns (``FamilySleepCodes/huamiExtended(rawKind:deepSleep:remSleep:)``).
    case huamiExtended
    /// None in the rows: the family keeps its sleep in tables of its own (fed through
    /// ``DeviceSamples/addSleep(time:kind:)``), or the table is not a minute table.
    case none
}

/// Turns one device's minute samples of one table, in time order, into records: heart-rate
/// readings, steps per hour and sleep sessions. Pure; the rules are in README.md ("Records").
public struct DeviceSamples: Sendable {
    /// Heart rates Gadgetbridge counts as readings (HeartRateUtils); anything else (0, -1, 255)
    /// means "no reading".
    public static let validHeartRate = 10...250

    public let device: GadgetbridgeDevice
    public let table: String
    public let source: Source
    public let sleepSource: SleepSource
    private var kinds: RawKindDecoder
    private var sleep = SleepSessionizer()
    /// The hour being summed: its start, the steps and the samples counted.
    private var hour: (start: Int64, steps: Int, samples: Int)?

    public init(device: GadgetbridgeDevice, table: String, file: String, sleep: SleepSource = .rawKinds) {
        self.device = device
        self.table = table
        sleepSource = sleep
        source = Source(driver: GadgetbridgeImporter.id, device: device.key, file: file)
        kinds = RawKindDecoder(family: device.family)
    }

    /// The records the next row finishes (its heart rate, an hour of steps, a night).
    public mutating func add(_ row: ActivityRow) -> [HealthRecord] {
        var out: [HealthRecord] = []
        let t = row.timestamp
        if let hr = row.heartRate, Self.validHeartRate.contains(hr) {
            out.append(.measurement(Measurement(id: id("measurement", MeasurementKind.heartRate.rawValue, t), kind: .heartRate,
                                                time: date(t), value: Double(hr), source: source)))
        }
        if let steps = row.steps {
            if steps < 0 {
                // Kept as read so that validation refuses it and the report counts it.
                out.append(.measurement(Measurement(id: id("measurement", "steps_minute", t), kind: .steps, time: date(t),
                                                    end: date(t + 60), value: Double(steps), source: source)))
            } else {
                let start = t - t % 3600
                if let open = hour, open.start != start, let record = hourRecord(open) { out.append(record) }
                if hour?.start != start { hour = (start, 0, 0) }
                hour!.steps += steps
                hour!.samples += 1
            }
        }
        let kind: MinuteKind? = switch sleepSource {
        case .rawKinds: kinds.decode(row.rawKind ?? -1)
        case .huamiExtended: FamilySleepCodes.huamiExtended(rawKind: row.rawKind ?? -1, deepSleep: row.deepSleep, remSleep: row.remSleep)
        case .none: nil
        }
        if let kind, let night = sleep.add(time: t, kind: kind) { out.append(sleepRecord(night)) }
        return out
    }

    /// The night the next sleep minute (Unix seconds, time order) closes, for families whose
    /// sleep is in tables of its own (Colmi's stages, Xiaomi's nights).
    public mutating func addSleep(time: Int64, kind: MinuteKind) -> [HealthRecord] {
        sleep.add(time: time, kind: kind).map { [sleepRecord($0)] } ?? []
    }

    /// The records still open after the last row: the last hour of steps, the last night.
    public mutating func finish() -> [HealthRecord] {
        var out: [HealthRecord] = []
        if let open = hour, let record = hourRecord(open) { out.append(record) }
        hour = nil
        if let night = sleep.finish() { out.append(sleepRecord(night)) }
        return out
    }

    /// An hour's steps, when there are any. Its version is the number of samples summed: a newer
    /// export that holds more of the hour replaces it.
    private func hourRecord(_ hour: (start: Int64, steps: Int, samples: Int)) -> HealthRecord? {
        guard hour.steps > 0 else { return nil }
        return .measurement(Measurement(id: id("measurement", MeasurementKind.steps.rawValue, hour.start), version: hour.samples,
                                        kind: .steps, time: date(hour.start), end: date(hour.start + 3600),
                                        value: Double(hour.steps), source: source))
    }

    /// A night. Its version is its length in minutes: a newer export that extends it replaces it.
    private func sleepRecord(_ night: DerivedSleep) -> HealthRecord {
        let stages = night.stages.map { SleepStageSpan(start: date($0.start), end: date($0.end), stage: $0.stage) }
        return .sleep(SleepSession(id: id("sleep", nil, night.start), version: Int(max(1, (night.end - night.start + 59) / 60)),
                                   start: date(night.start), end: date(night.end), stages: stages, source: source))
    }

    private func id(_ type: String, _ kind: String?, _ time: Int64) -> RecordID {
        RecordID.derive([type, GadgetbridgeImporter.id, device.key, table] + (kind.map { [$0] } ?? []) + [String(time)])
    }

    private func date(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(seconds)) }
}
