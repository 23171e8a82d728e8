import Foundation
public import HealthModel

/// The messages the normalizer reads, copied out of a decode. One ``Group`` per `file_id`
/// (chained files without their own `file_id` continue the group before them).
public struct FITContent: Sendable {
    public struct FileID: Sendable {
        public var type: Int?
        public var manufacturer: Int?
        public var product: Int?
        public var productName: String?
        public var serialNumber: Int?
    }

    public struct Session: Sendable {
        public var start: UInt32?
        public var timestamp: UInt32?
        public var sport: Int?
        public var subSport: Int?
        public var elapsedS: Double?
        public var timerS: Double?
        public var distanceM: Double?
        public var energyKcal: Double?
        public var avgHeartRate: Int?
        public var maxHeartRate: Int?
        public var ascentM: Double?
        public var descentM: Double?
        public var firstLapIndex: Int?
        public var numLaps: Int?
    }

    public struct LapInfo: Sendable {
        public var start: UInt32?
        public var timestamp: UInt32?
        public var elapsedS: Double?
        public var timerS: Double?
        public var distanceM: Double?
        public var energyKcal: Double?
        public var avgHeartRate: Int?
        public var maxHeartRate: Int?
    }

    /// RR intervals (s) of one `hrv` message and the last timestamp seen before it.
    public struct HRVBlock: Sendable {
        public var after: UInt32?
        public var intervals: [Double]
    }

    public struct Length: Sendable {
        public var start: UInt32
        public var elapsedS: Double
        public var lengthType: Int?
        public var strokes: Int?
        public var stroke: Int?
    }

    /// One beat of stored heart rate (`hr` messages), at a fractional FIT time.
    public struct HeartBeat: Sendable {
        public var time: Double
        public var bpm: Int
    }

    public struct MonitoringReading: Sendable {
        public var time: UInt32
        public var activityType: Int?
        /// Cumulative steps (walking/running) or strokes of the activity type today.
        public var cycles: Double?
        public var activeCalories: Double?
        public var calories: Double?
        public var heartRate: Int?
    }

    public struct SleepLevel: Sendable {
        public var time: UInt32
        public var level: Int
    }

    public struct WeightReading: Sendable {
        public var time: UInt32
        public var userProfileIndex: Int?
        public var weightKg: Double?
        public var percentFat: Double?
        public var percentHydration: Double?
        public var boneMassKg: Double?
        public var muscleMassKg: Double?
        public var basalMetKcal: Double?
        public var visceralFatRating: Double?
        public var bmi: Double?
    }

    /// Everything under one `file_id`.
    public struct Group: Sendable {
        public var fileID: FileID?
        public var sessions: [Session] = []
        public var laps: [LapInfo] = []
        public var samples: [RecordPoint] = []
        public var hrv: [HRVBlock] = []
        public var lengths: [Length] = []
        public var heartBeats: [HeartBeat] = []
        /// From `sport` messages (files without sessions).
        public var sport: Int?
        public var subSport: Int?
        public var monitoring: [MonitoringReading] = []
        /// Local time minus UTC, from `monitoring_info` or `activity` (seconds).
        public var utcOffsetS: Int?
        public var sleepLevels: [SleepLevel] = []
        /// When the night ended: the last `event` 74 (sleep) of type stop or stop_all.
        public var sleepStop: UInt32?
        /// `sleep_assessment` (346): overall score and awakenings.
        public var sleepAssessment: SleepAssessment?
        public var weights: [WeightReading] = []
        /// The latest timestamp of any message in the group.
        public var lastTimestamp: UInt32?
    }

    /// One `record` message: its FIT time and values.
    public struct RecordPoint: Sendable {
        public var time: UInt32
        public var values: SampleValues
    }

    /// The values of one `record` message.
    public struct SampleValues: Sendable {
        public var heartRate: Int?
        public var cadence: Double?
        public var power: Double?
        public var speed: Double?
        public var distance: Double?
        public var latitude: Double?
        public var longitude: Double?
        public var altitude: Double?
        public var temperature: Double?
    }

    public var groups: [Group] = []
}

/// A ``FITVisitor`` that copies what the normalizer needs into a ``FITContent``.
public struct FITCollector: FITVisitor {
    public private(set) var content = FITContent()
    private var lastTimestamp: UInt32?
    /// `hr` messages: event time (s) and wall time of the last anchor.
    private var heartAnchor: (wall: Double, event: Double)?

    public init() {}

    /// Edits the last group in place (creating the first one if needed).
    private mutating func update(_ body: (inout FITContent.Group) -> Void) {
        if content.groups.isEmpty { content.groups.append(FITContent.Group()) }
        body(&content.groups[content.groups.count - 1])
    }

    public mutating func fileHeader(_ header: FITFileHeader) throws {
        heartAnchor = nil
    }

    public mutating func message(_ m: FITMessage) throws {
        if let t = m.timestamp {
            lastTimestamp = t
            update { group in if group.lastTimestamp.map({ t > $0 }) ?? true { group.lastTimestamp = t } }
        }
        switch m.globalNumber {
        case 0: // file_id
            let id = FITContent.FileID(type: m.int(0), manufacturer: m.int(1), product: m.int(2), productName: m.string(8),
                                       serialNumber: m.int(3))
            if content.groups.isEmpty || content.groups[content.groups.count - 1].fileID != nil {
                content.groups.append(FITContent.Group())
            }
            update { $0.fileID = id }
        case 18: // session
            let session = FITContent.Session(
                start: m.int(2).map(UInt32.init(truncatingIfNeeded:)), timestamp: m.timestamp, sport: m.int(5),
                subSport: m.int(6), elapsedS: m.value(7), timerS: m.value(8), distanceM: m.value(9),
                energyKcal: m.value(11), avgHeartRate: m.int(16), maxHeartRate: m.int(17), ascentM: m.value(22),
                descentM: m.value(23), firstLapIndex: m.int(25), numLaps: m.int(26))
            update { $0.sessions.append(session) }
        case 19: // lap
            let lap = FITContent.LapInfo(
                start: m.int(2).map(UInt32.init(truncatingIfNeeded:)), timestamp: m.timestamp, elapsedS: m.value(7),
                timerS: m.value(8), distanceM: m.value(9), energyKcal: m.value(11), avgHeartRate: m.int(15),
                maxHeartRate: m.int(16))
            update { $0.laps.append(lap) }
        case 20: // record
            guard let t = m.timestamp else { return }
            var s = FITContent.SampleValues()
            s.heartRate = m.int(3).flatMap { (0...255).contains($0) ? $0 : nil }
            if let cadence = m.value(4) { s.cadence = cadence + (m.value(53) ?? 0) }
            s.power = m.value(7)
            s.speed = m.value(73) ?? m.value(6)
            s.distance = m.value(5)
            if let lat = m.value(0), let lon = m.value(1) {
                s.latitude = lat * 180 / 2_147_483_648
                s.longitude = lon * 180 / 2_147_483_648
            }
            s.altitude = m.value(78) ?? m.value(2)
            s.temperature = m.value(13)
            update { $0.samples.append(.init(time: t, values: s)) }
        case 78: // hrv
            let intervals = m.values(0).filter { !$0.isNaN }
            let block = FITContent.HRVBlock(after: lastTimestamp, intervals: intervals)
            if !intervals.isEmpty { update { $0.hrv.append(block) } }
        case 101: // length
            guard let start = m.int(2), let elapsed = m.value(3) else { return }
            let length = FITContent.Length(start: UInt32(truncatingIfNeeded: start), elapsedS: elapsed, lengthType: m.int(12),
                                           strokes: m.int(5), stroke: m.int(7))
            update { $0.lengths.append(length) }
        case 132: // hr
            collectHeartBeats(m)
        case 12: // sport
            let (sport, subSport) = (m.int(0), m.int(1))
            update { $0.sport = sport; $0.subSport = subSport }
        case 34: // activity
            if let t = m.timestamp, let offset = Self.utcOffset(local: m.int(5), utc: t) {
                update { $0.utcOffsetS = $0.utcOffsetS ?? offset }
            }
        case 103: // monitoring_info
            if let t = m.timestamp, let offset = Self.utcOffset(local: m.int(0), utc: t) { update { $0.utcOffsetS = offset } }
        case 55: // monitoring
            guard let t = m.timestamp else { return }
            let reading = FITContent.MonitoringReading(time: t, activityType: m.int(5), cycles: m.value(3),
                                                       activeCalories: m.value(19), calories: m.value(1), heartRate: m.int(27))
            update { $0.monitoring.append(reading) }
        case 275: // sleep_level
            guard let t = m.timestamp, let level = m.int(0) else { return }
            update { $0.sleepLevels.append(.init(time: t, level: level)) }
        case 21: // event: the sleep event's stop ends the night (event 74; type 1 stop, 4 stop_all)
            guard let t = m.timestamp, m.int(0) == 74, let type = m.int(1), type == 1 || type == 4 else { return }
            update { $0.sleepStop = t }
        case 346: // sleep_assessment: overall_sleep_score (6), awakenings_count (11)
            let assessment = SleepAssessment(score: m.int(6), awakenings: m.int(11))
            guard assessment.score != nil || assessment.awakenings != nil else { return }
            update { $0.sleepAssessment = assessment }
        case 30: // weight_scale
            guard let t = m.timestamp else { return }
            let weight = m.value(0).flatMap { $0 < 655.34 ? $0 : nil } // 0xFFFE means "calculating"
            let reading = FITContent.WeightReading(time: t, userProfileIndex: m.int(12), weightKg: weight, percentFat: m.value(1),
                                         percentHydration: m.value(2), boneMassKg: m.value(4), muscleMassKg: m.value(5),
                                         basalMetKcal: m.value(7), visceralFatRating: m.value(11), bmi: m.value(13))
            update { $0.weights.append(reading) }
        default:
            break
        }
    }

    /// Local time minus UTC when plausible (within a day), else nil.
    static func utcOffset(local: Int?, utc: UInt32) -> Int? {
        guard let local, abs(local) < 1 << 40 else { return nil }
        let offset = local - Int(utc)
        return abs(offset) <= 86400 ? offset : nil
    }

    /// `hr` messages carry beats as event times (1/1024 s, 12-bit compressed and accumulated by
    /// the decoder); a message with a `timestamp` anchors its last event time to that wall time.
    private mutating func collectHeartBeats(_ m: FITMessage) {
        let events = m.values(9)
        let bpms = m.values(6)
        guard !events.isEmpty else { return }
        if let t = m.timestamp, let last = events.last, !last.isNaN {
            heartAnchor = (Double(t) + (m.value(0) ?? 0), last)
        }
        guard let anchor = heartAnchor else { return }
        update { group in
            var previous = group.heartBeats.last?.time ?? -Double.infinity
            for (event, bpm) in zip(events, bpms) where event.isFinite && bpm >= 0 && bpm < 255 {
                let time = anchor.wall + event - anchor.event
                guard time > previous else { continue }
                group.heartBeats.append(.init(time: time, bpm: Int(bpm)))
                previous = time
            }
        }
    }
}

extension FITContent.FileID: Equatable {}
