public import Foundation

/// One value from a live sensor, in the model's terms: what each live driver family (Bluetooth LE,
/// ANT+) makes of its profiles' readings before the ``LiveSessionizer`` turns them into records.
public enum LiveValue: Hashable, Sendable {
    /// A point of a continuous stream (heart rate, speed, cadence, power ...): part of a workout.
    case stream(StreamPoint)
    /// Measurements complete in themselves (weight and BMI of one weighing, a glucose record).
    case measurements([PointMeasurement])
    /// The sensor's battery level: recorded when it changes, or after the configured interval.
    case battery(percent: Int)
}

/// What one reading of a continuous stream holds; nil for what it does not carry.
public struct StreamPoint: Hashable, Sendable {
    /// The sport the stream implies (a bike sensor: cycling), and a finer kind (`indoor_cycling`).
    public var sport: Sport?
    public var subSport: String?
    /// Beats per minute; 0 (no skin contact) counts as no value.
    public var heartRate: Int?
    /// RR intervals in seconds, in the order the heart beat.
    public var rrIntervals: [Double]
    public var speedMps: Double?
    /// Revolutions or steps per minute.
    public var cadence: Double?
    public var powerW: Double?
    /// The device's own distance count in metres (a fitness machine's total distance): stored as
    /// it is, for the sample and the workout.
    public var distanceM: Double?
    /// Distance covered since the device's previous reading (wheel and stride sensors, whose
    /// counters the driver's calculators turn into distances): summed per workout from its start.
    /// The first reading of a workout carries none (its delta spans the time before the workout).
    public var distanceDeltaM: Double?
    /// The device's cumulative energy count in kcal: a workout's energy is its last value less its
    /// first (or the last alone when the count began at 0 with the workout).
    public var energyKcal: Double?

    public init(sport: Sport? = nil, subSport: String? = nil, heartRate: Int? = nil, rrIntervals: [Double] = [],
                speedMps: Double? = nil, cadence: Double? = nil, powerW: Double? = nil, distanceM: Double? = nil,
                distanceDeltaM: Double? = nil, energyKcal: Double? = nil) {
        self.sport = sport
        self.subSport = subSport
        self.heartRate = heartRate
        self.rrIntervals = rrIntervals
        self.speedMps = speedMps
        self.cadence = cadence
        self.powerW = powerW
        self.distanceM = distanceM
        self.distanceDeltaM = distanceDeltaM
        self.energyKcal = energyKcal
    }
}

/// A measurement a live sensor gave: its kind, value and time (nil: when it was received), and
/// `key`, which tells apart measurements of one kind at the same time (a glucose record's
/// sequence number). Its id derives from driver, device, kind, time and key.
public struct PointMeasurement: Hashable, Sendable {
    public var kind: MeasurementKind
    public var value: Double?
    public var time: Date?
    public var extra: [String: Double]
    public var key: String

    public init(_ kind: MeasurementKind, _ value: Double?, at time: Date? = nil, extra: [String: Double] = [:], key: String = "") {
        self.kind = kind
        self.value = value
        self.time = time
        self.extra = extra
        self.key = key
    }
}

/// Turns live values into records (pure; no I/O, no clock of its own): the one sessionizer of
/// every live driver family, so a heart-rate strap gives the same workout through Bluetooth LE
/// and through ANT+.
///
/// Measurements and battery levels become measurements at once. A continuous stream from one
/// device becomes a workout, handed out in pieces by ``flush(now:)`` while it is recorded (the
/// samples that arrived since the previous piece, and the summary so far), and completed by a
/// final piece when the device has been silent for longer than `gap` or when recording stops
/// (``finish()``). Memory stays bounded however long a workout lasts: flushed samples are not
/// kept. Ids derive from the driver, the device and the time, so the same readings give the same
/// records on a re-run.
public struct LiveSessionizer: Sendable {
    public struct Configuration: Sendable {
        /// The driver whose records these are (`ble`, `ant`): part of every id and the source.
        public var driver: String
        /// Silence after which a device's workout ends.
        public var gap: TimeInterval
        /// Sport of a workout whose stream does not say (a heart-rate strap alone).
        public var defaultSport: Sport
        /// An unchanged battery level is recorded again only after this long.
        public var batteryInterval: TimeInterval

        public init(driver: String, gap: TimeInterval = 120, defaultSport: Sport = .other, batteryInterval: TimeInterval = 3600) {
            self.driver = driver
            self.gap = gap
            self.defaultSport = defaultSport
            self.batteryInterval = batteryInterval
        }
    }

    /// A workout being recorded for one device.
    struct Session: Sendable {
        var id: RecordID
        var sport: Sport
        var subSport: String?
        var start: Date
        var last: Date
        /// Samples and RR intervals not handed out yet.
        var pendingSamples: [Sample] = []
        var pendingRR: [Double] = []
        /// Samples and RR intervals handed out in earlier pieces.
        var flushedSamples = 0
        var flushedRR = 0
        var heartRateSum = 0
        var heartRateCount = 0
        var maxHeartRate: Int?
        var firstEnergyKcal: Double?
        var lastEnergyKcal: Double?
        var distanceM: Double?
        /// The sum of the distance deltas since the workout's start.
        var coveredM: Double?
    }

    public let configuration: Configuration
    private var sessions: [String: Session] = [:]
    private var lastBattery: [String: (percent: Int, time: Date)] = [:]

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Devices with a workout in progress.
    public var recordingDevices: [String] { sessions.keys.sorted() }

    /// Whether a value of `device` received at `time` belongs to the workout in progress (false:
    /// it starts a new one). Drivers whose calculators span readings start them afresh with a
    /// new workout.
    public func continues(device: String, at time: Date) -> Bool {
        guard let session = sessions[device] else { return false }
        return time.timeIntervalSince(session.last) <= configuration.gap
    }

    /// Feeds one value of `device` received at `time`; returns the measurements it gives, and the
    /// final piece of the device's previous workout when a silence longer than the gap came
    /// before it.
    public mutating func receive(device: String, at time: Date, _ value: LiveValue) -> LiveBatch {
        var out = LiveBatch()
        if sessions[device] != nil, !continues(device: device, at: time) {
            out.workouts += close(device)
        }
        switch value {
        case .stream(let point):
            stream(device: device, at: time, point)
        case .measurements(let measurements):
            out.records += measurements.compactMap { make($0, device: device, receivedAt: time) }.map { .measurement($0) }
        case .battery(let percent):
            if let last = lastBattery[device], last.percent == percent, time.timeIntervalSince(last.time) < configuration.batteryInterval {
                break  // unchanged since it was last recorded
            }
            lastBattery[device] = (percent, time)
            if let m = make(PointMeasurement(.batteryLevel, Double(percent)), device: device, receivedAt: time) {
                out.records.append(.measurement(m))
            }
        }
        return out
    }

    /// What is due at `now`: final pieces of the workouts of devices silent for longer than the
    /// gap, and a piece with the new samples of every other workout in progress.
    public mutating func flush(now: Date) -> LiveBatch {
        var out = LiveBatch()
        for device in sessions.keys.sorted() {
            if let session = sessions[device], now.timeIntervalSince(session.last) > configuration.gap {
                out.workouts += close(device)
            } else if let piece = piece(device, isFinal: false) {
                out.workouts.append(piece)
            }
        }
        return out
    }

    /// Completes every workout in progress (recording stops).
    public mutating func finish() -> LiveBatch {
        LiveBatch(workouts: sessions.keys.sorted().flatMap { close($0) })
    }

    // MARK: - Streams

    private mutating func stream(device: String, at t: Date, _ point: StreamPoint) {
        var sample = Sample(time: t)
        // 0 bpm: the strap measured nothing (no skin contact), not a heart that stopped.
        sample.heartRate = point.heartRate.flatMap { $0 > 0 ? $0 : nil }
        sample.speedMps = point.speedMps
        sample.cadence = point.cadence
        sample.powerW = point.powerW

        let isNew = sessions[device] == nil
        var session = sessions[device] ?? Session(
            id: RecordID.derive("workout", configuration.driver, device, String(Int((t.timeIntervalSince1970 * 1000).rounded()))),
            sport: point.sport ?? configuration.defaultSport, subSport: point.sport == nil ? nil : point.subSport, start: t, last: t)
        if let sport = point.sport, session.sport == configuration.defaultSport {
            session.sport = sport
            session.subSport = point.subSport
        }
        if let distance = point.distanceM {
            sample.distanceM = distance
            session.distanceM = distance
        } else if let delta = point.distanceDeltaM, delta.isFinite, delta >= 0 {
            let covered = (session.coveredM ?? 0) + (isNew ? 0 : delta)
            session.coveredM = covered
            sample.distanceM = covered
            session.distanceM = covered
        }
        if let energy = point.energyKcal {
            if session.firstEnergyKcal == nil { session.firstEnergyKcal = energy }
            session.lastEnergyKcal = energy
        }
        if let hr = sample.heartRate {
            session.heartRateSum += hr
            session.heartRateCount += 1
            session.maxHeartRate = max(session.maxHeartRate ?? hr, hr)
        }
        session.last = max(session.last, t)
        session.pendingSamples.append(sample)
        session.pendingRR += point.rrIntervals
        sessions[device] = session
    }

    /// The final piece of a device's workout; the device's session ends.
    private mutating func close(_ device: String) -> [WorkoutProgress] {
        defer { sessions[device] = nil }
        return piece(device, isFinal: true).map { [$0] } ?? []
    }

    /// A piece with the samples not handed out yet and the summary so far (nil when a non-final
    /// piece would carry nothing new).
    private mutating func piece(_ device: String, isFinal: Bool) -> WorkoutProgress? {
        guard var s = sessions[device], isFinal || !s.pendingSamples.isEmpty || !s.pendingRR.isEmpty else { return nil }
        var energy: Double?
        if let first = s.firstEnergyKcal, let last = s.lastEnergyKcal, last >= first, last > 0 {
            // Cumulative counters: what was spent during this workout (a counter that started
            // at 0 with the workout gives its last value).
            energy = ((first == 0 ? last : last - first) * 10).rounded() / 10
        }
        let workout = Workout(
            id: s.id, sport: s.sport.rawValue, subSport: s.subSport, start: s.start, end: s.last,
            timerS: s.last.timeIntervalSince(s.start), distanceM: s.distanceM, energyKcal: energy,
            avgHeartRate: s.heartRateCount == 0 ? nil : Int((Double(s.heartRateSum) / Double(s.heartRateCount)).rounded()),
            maxHeartRate: s.maxHeartRate, samples: s.pendingSamples, rrIntervals: s.pendingRR,
            source: Source(driver: configuration.driver, device: device))
        let piece = WorkoutProgress(workout: workout, sampleOffset: s.flushedSamples, rrOffset: s.flushedRR, isFinal: isFinal)
        s.flushedSamples += s.pendingSamples.count
        s.flushedRR += s.pendingRR.count
        s.pendingSamples = []
        s.pendingRR = []
        sessions[device] = s
        return piece
    }

    // MARK: - Measurements

    private func make(_ m: PointMeasurement, device: String, receivedAt: Date) -> Measurement? {
        guard let value = m.value, value.isFinite else { return nil }
        let time = m.time ?? receivedAt
        return Measurement(
            id: RecordID.derive("measurement", configuration.driver, device, m.kind.rawValue,
                                String(Int((time.timeIntervalSince1970 * 1000).rounded())), m.key),
            kind: m.kind, time: time, value: value, extra: m.extra.filter { $0.value.isFinite },
            source: Source(driver: configuration.driver, device: device))
    }
}
