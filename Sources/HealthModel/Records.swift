public import Foundation

/// Where a record came from: the driver that produced it, the device that measured it and,
/// for imports, the file it was read from.
public struct Source: Hashable, Sendable {
    /// Stable driver identifier, e.g. `fit`, `tcx`, `gpx`, `ble`. Stored: never renamed.
    public var driver: String
    /// Device identity, e.g. `garmin/fenix5/3921234567`; nil when the input does not say.
    public var device: String?
    /// The file a record was imported from (path as given), nil for live sources.
    public var file: String?

    public init(driver: String, device: String? = nil, file: String? = nil) {
        self.driver = driver
        self.device = device
        self.file = file
    }
}

/// Where a workout's energy figure came from.
public enum EnergySource: String, Codable, Sendable {
    /// Reported by the device or file.
    case device
    /// Estimated by HealthGate from sport, duration and body weight (MET values).
    case estimated
}

/// One point of a workout's sample series. Every channel is optional: a sensor fills what it has.
public struct Sample: Hashable, Sendable {
    public var time: Date
    public var heartRate: Int?
    /// Cadence in rpm (cycling) or steps per minute (running).
    public var cadence: Double?
    public var powerW: Double?
    public var speedMps: Double?
    /// Cumulative distance from the workout's start.
    public var distanceM: Double?
    public var latitude: Double?
    public var longitude: Double?
    public var altitudeM: Double?
    public var temperatureC: Double?

    public init(time: Date, heartRate: Int? = nil, cadence: Double? = nil, powerW: Double? = nil,
                speedMps: Double? = nil, distanceM: Double? = nil, latitude: Double? = nil,
                longitude: Double? = nil, altitudeM: Double? = nil, temperatureC: Double? = nil) {
        self.time = time
        self.heartRate = heartRate
        self.cadence = cadence
        self.powerW = powerW
        self.speedMps = speedMps
        self.distanceM = distanceM
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeM = altitudeM
        self.temperatureC = temperatureC
    }
}

/// A lap (or split) of a workout.
public struct Lap: Hashable, Sendable {
    public var start: Date
    public var end: Date
    public var elapsedS: Double
    public var timerS: Double?
    public var distanceM: Double?
    public var energyKcal: Double?
    public var avgHeartRate: Int?
    public var maxHeartRate: Int?

    public init(start: Date, end: Date, elapsedS: Double, timerS: Double? = nil, distanceM: Double? = nil,
                energyKcal: Double? = nil, avgHeartRate: Int? = nil, maxHeartRate: Int? = nil) {
        self.start = start
        self.end = end
        self.elapsedS = elapsedS
        self.timerS = timerS
        self.distanceM = distanceM
        self.energyKcal = energyKcal
        self.avgHeartRate = avgHeartRate
        self.maxHeartRate = maxHeartRate
    }
}

/// One pool length of a swim workout.
public struct SwimLength: Hashable, Sendable {
    public var start: Date
    public var elapsedS: Double
    /// `active` or `idle` (rest).
    public var kind: String
    public var strokes: Int?
    /// freestyle, backstroke, breaststroke, butterfly, drill, mixed, im.
    public var stroke: String?

    public init(start: Date, elapsedS: Double, kind: String, strokes: Int? = nil, stroke: String? = nil) {
        self.start = start
        self.elapsedS = elapsedS
        self.kind = kind
        self.strokes = strokes
        self.stroke = stroke
    }
}

/// A workout: one sport over one time span, with its laps and sample series.
///
/// A multisport activity becomes several workouts sharing one `multisportID`.
public struct Workout: Hashable, Sendable {
    public var id: RecordID
    public var version: Int
    /// Normalized sport name, see ``Sport``.
    public var sport: String
    /// Finer sport detail when the input gives one (e.g. `indoor_cycling`, `lap_swimming`).
    public var subSport: String?
    public var start: Date
    public var end: Date
    /// Wall-clock duration, start to end.
    public var elapsedS: Double
    /// Active (timer) duration: pauses excluded.
    public var timerS: Double?
    public var distanceM: Double?
    public var energyKcal: Double?
    public var energySource: EnergySource?
    public var avgHeartRate: Int?
    public var maxHeartRate: Int?
    public var ascentM: Double?
    public var descentM: Double?
    /// Shared by the legs of one multisport activity.
    public var multisportID: RecordID?
    public var laps: [Lap]
    public var samples: [Sample]
    /// Beat-to-beat (RR) intervals in seconds, in order.
    public var rrIntervals: [Double]
    public var lengths: [SwimLength]
    public var source: Source

    public init(id: RecordID, version: Int = 1, sport: String, subSport: String? = nil, start: Date, end: Date,
                elapsedS: Double? = nil, timerS: Double? = nil, distanceM: Double? = nil,
                energyKcal: Double? = nil, energySource: EnergySource? = nil, avgHeartRate: Int? = nil,
                maxHeartRate: Int? = nil, ascentM: Double? = nil, descentM: Double? = nil,
                multisportID: RecordID? = nil, laps: [Lap] = [], samples: [Sample] = [],
                rrIntervals: [Double] = [], lengths: [SwimLength] = [], source: Source) {
        self.id = id
        self.version = version
        self.sport = sport
        self.subSport = subSport
        self.start = start
        self.end = end
        self.elapsedS = elapsedS ?? end.timeIntervalSince(start)
        self.timerS = timerS
        self.distanceM = distanceM
        self.energyKcal = energyKcal
        self.energySource = energyKcal == nil ? energySource : (energySource ?? .device)
        self.avgHeartRate = avgHeartRate
        self.maxHeartRate = maxHeartRate
        self.ascentM = ascentM
        self.descentM = descentM
        self.multisportID = multisportID
        self.laps = laps
        self.samples = samples
        self.rrIntervals = rrIntervals
        self.lengths = lengths
        self.source = source
    }
}

/// Sleep stage names used across drivers.
public enum SleepStage: String, Codable, Sendable, CaseIterable {
    case awake, light, deep, rem, unknown
}

/// One stretch of a sleep session spent in one stage.
public struct SleepStageSpan: Hashable, Sendable {
    public var start: Date
    public var end: Date
    public var stage: SleepStage

    public init(start: Date, end: Date, stage: SleepStage) {
        self.start = start
        self.end = end
        self.stage = stage
    }
}

/// A night (or nap) of sleep with its stages.
public struct SleepSession: Hashable, Sendable {
    public var id: RecordID
    public var version: Int
    public var start: Date
    public var end: Date
    public var stages: [SleepStageSpan]
    /// The device's own judgement of the night, when it gives one (Garmin's `sleep_assessment`).
    public var assessment: SleepAssessment?
    public var source: Source

    /// Time asleep: every stage but `awake`; the whole span when no stages are known.
    public var totalSleepS: Double {
        if stages.isEmpty { return end.timeIntervalSince(start) }
        return stages.filter { $0.stage != .awake }.reduce(0) { $0 + $1.end.timeIntervalSince($1.start) }
    }

    public init(id: RecordID, version: Int = 1, start: Date, end: Date, stages: [SleepStageSpan] = [],
                assessment: SleepAssessment? = nil, source: Source) {
        self.id = id
        self.version = version
        self.start = start
        self.end = end
        self.stages = stages
        self.assessment = assessment
        self.source = source
    }
}

/// What a device concluded about a night: its overall score (0 to 100) and how often the sleeper
/// woke up. Either may be missing.
public struct SleepAssessment: Hashable, Sendable {
    public var score: Int?
    public var awakenings: Int?

    public init(score: Int? = nil, awakenings: Int? = nil) {
        self.score = score
        self.awakenings = awakenings
    }
}

/// A habit or journal event: a drink, a vaping session, a habit check-in, a meal.
public struct HabitEvent: Hashable, Sendable {
    public var id: RecordID
    public var version: Int
    /// Which habit: `hydration`, `vaping`, `meal`, or a user habit's name.
    public var habit: String
    public var time: Date
    public var value: Double?
    public var category: String?
    public var unit: String?
    public var label: String?
    public var note: String?
    public var source: Source

    /// Labels of an event that records a day the habit was not done: a habit tracker's skipped
    /// day, a day marked unknown, a day marked not done with a note. Such an event is kept and
    /// synced like any other, but it is not a check-in: totals, streaks and `today` leave it out.
    public enum Mark {
        public static let skipped = "skipped", unknown = "unknown", notDone = "not_done"
        public static let all: Set<String> = [skipped, unknown, notDone]
    }

    /// False for an event that marks a day the habit was not done (``Mark``).
    public var isCheckIn: Bool { label.map { !Mark.all.contains($0) } ?? true }

    public init(id: RecordID, version: Int = 1, habit: String, time: Date, value: Double? = nil,
                category: String? = nil, unit: String? = nil, label: String? = nil, note: String? = nil,
                source: Source) {
        self.id = id
        self.version = version
        self.habit = habit
        self.time = time
        self.value = value
        self.category = category
        self.unit = unit
        self.label = label
        self.note = note
        self.source = source
    }
}

/// What a measurement measures. Raw values keep the spelling stored in the database.
public enum MeasurementKind: String, Codable, Sendable, CaseIterable {
    case heartRate = "heart_rate"
    case rrInterval = "rr_interval"
    case weight
    case bodyFat = "body_fat"
    case bodyWater = "body_water"
    case muscleMass = "muscle_mass"
    case boneMass = "bone_mass"
    case visceralFat = "visceral_fat"
    case bmi
    case basalMetabolicRate = "basal_metabolic_rate"
    case bloodPressure = "blood_pressure"
    case spo2
    case temperature
    case glucose
    case steps
    case energy
    case batteryLevel = "battery_level"
    /// Resting heart rate of a day (Apple Health), bpm.
    case restingHeartRate = "resting_heart_rate"
    /// Heart rate variability, SDNN, in ms (Apple Health).
    case hrv
    /// Distance walked or run over an interval, in metres (Apple Health).
    case distance
    /// Basal (resting) energy burned over an interval, kcal; `energy` is active energy.
    case basalEnergy = "basal_energy"
    /// Breaths per minute.
    case respiratoryRate = "respiratory_rate"

    /// The unit every value of this kind is stored in.
    public var unit: String {
        switch self {
        case .heartRate, .restingHeartRate: "bpm"
        case .hrv: "ms"
        case .distance: "m"
        case .basalEnergy: "kcal"
        case .respiratoryRate: "breaths/min"
        case .rrInterval: "s"
        case .weight, .muscleMass, .boneMass: "kg"
        case .bodyFat, .bodyWater, .spo2, .batteryLevel: "%"
        case .visceralFat: "rating"
        case .bmi: "kg/m2"
        case .basalMetabolicRate, .energy: "kcal"
        case .bloodPressure: "mmHg"
        case .temperature: "degC"
        case .glucose: "mmol/L"
        case .steps: "steps"
        }
    }
}

/// A single reading at a point in time (or over an interval ending at `end`).
public struct Measurement: Hashable, Sendable {
    public var id: RecordID
    public var version: Int
    public var kind: MeasurementKind
    public var time: Date
    /// For totals over an interval (steps, energy): the interval's end; nil for point readings.
    public var end: Date?
    /// The value in `kind.unit` (blood pressure: systolic).
    public var value: Double
    /// Secondary values, e.g. `diastolic` and `mean_arterial` for blood pressure.
    public var extra: [String: Double]
    public var source: Source

    public var unit: String { kind.unit }

    public init(id: RecordID, version: Int = 1, kind: MeasurementKind, time: Date, end: Date? = nil,
                value: Double, extra: [String: Double] = [:], source: Source) {
        self.id = id
        self.version = version
        self.kind = kind
        self.time = time
        self.end = end
        self.value = value
        self.extra = extra
        self.source = source
    }
}

/// Any normalized record: what drivers emit and the store keeps. The model holds values only:
/// how records are spelled in JSON is the sync protocol's (`Sources/SyncProtocol/RecordCoding.swift`),
/// and the store has its own columns.
public enum HealthRecord: Hashable, Sendable {
    case workout(Workout)
    case sleep(SleepSession)
    case habit(HabitEvent)
    case measurement(Measurement)
    case definition(Definition)

    public var id: RecordID {
        switch self {
        case .workout(let w): w.id
        case .sleep(let s): s.id
        case .habit(let h): h.id
        case .measurement(let m): m.id
        case .definition(let d): d.id
        }
    }

    public var version: Int {
        switch self {
        case .workout(let w): w.version
        case .sleep(let s): s.version
        case .habit(let h): h.version
        case .measurement(let m): m.version
        case .definition(let d): d.version
        }
    }

    /// When the record starts (or happened).
    public var start: Date {
        switch self {
        case .workout(let w): w.start
        case .sleep(let s): s.start
        case .habit(let h): h.time
        case .measurement(let m): m.time
        case .definition(let d): d.time
        }
    }

    /// When the record ends; equal to `start` for point events.
    public var end: Date {
        switch self {
        case .workout(let w): w.end
        case .sleep(let s): s.end
        case .habit(let h): h.time
        case .measurement(let m): m.end ?? m.time
        case .definition(let d): d.time
        }
    }

    /// The record type as stored: `workout`, `sleep`, `habit`, `measurement`, `definition`.
    public var type: RecordType {
        switch self {
        case .workout: .workout
        case .sleep: .sleep
        case .habit: .habit
        case .measurement: .measurement
        case .definition: .definition
        }
    }

    public var source: Source {
        switch self {
        case .workout(let w): w.source
        case .sleep(let s): s.source
        case .habit(let h): h.source
        case .measurement(let m): m.source
        case .definition(let d): d.source
        }
    }
}

/// The record types, spelled as stored and sent to the server.
public enum RecordType: String, Codable, Sendable, CaseIterable {
    case workout, sleep, habit, measurement, definition
}
