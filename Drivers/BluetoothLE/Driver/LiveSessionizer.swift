public import Foundation
public import GATTProfiles
public import HealthModel

/// One decoded value from a live device, with the time it arrived.
public struct LiveReading: Sendable {
    /// The device's identity as stored in `source_device` (e.g. its address).
    public var device: String
    public var receivedAt: Date
    public var reading: GATTReading

    public init(device: String, receivedAt: Date, reading: GATTReading) {
        self.device = device
        self.receivedAt = receivedAt
        self.reading = reading
    }
}

/// Turns live readings into records (pure; no I/O, no clock of its own).
///
/// Point readings (battery, weight, body composition, blood pressure, temperature, SpO2,
/// glucose) become measurements at once. A continuous stream from one device (heart rate, speed
/// and cadence, power, fitness machines) becomes a workout, handed out in pieces by
/// ``flush(now:)`` while it is recorded (the samples that arrived since the previous piece, and
/// the summary so far), and completed by a final piece when the device has been silent for
/// longer than `gap` or when recording stops (``finish()``). Memory stays bounded however long a
/// workout lasts: flushed samples are not kept.
public struct LiveSessionizer: Sendable {
    public struct Configuration: Sendable {
        /// Silence after which a device's workout ends.
        public var gap: TimeInterval = 120
        /// Sport of a workout whose stream does not say (a heart-rate strap alone).
        public var defaultSport: Sport = .other
        /// Metres per wheel revolution for Cycling Speed and Cadence sensors.
        public var wheelCircumference: Double = 2.096
        /// The zone of device clocks (Date Time fields carry no zone).
        public var timeZone: TimeZone = .current
        /// An unchanged battery level is recorded again only after this long.
        public var batteryInterval: TimeInterval = 3600

        public init(gap: TimeInterval = 120, defaultSport: Sport = .other, wheelCircumference: Double = 2.096,
                    timeZone: TimeZone = .current, batteryInterval: TimeInterval = 3600) {
            self.gap = gap
            self.defaultSport = defaultSport
            self.wheelCircumference = wheelCircumference
            self.timeZone = timeZone
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
        var csc: CSCCalculator
    }

    public let configuration: Configuration
    private var sessions: [String: Session] = [:]
    private var lastBattery: [String: (percent: UInt8, time: Date)] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Devices with a workout in progress.
    public var recordingDevices: [String] { sessions.keys.sorted() }

    /// Feeds one reading; returns the measurements it gives, and the final piece of the device's
    /// previous workout when a silence longer than the gap came before this reading.
    public mutating func receive(_ reading: LiveReading) -> LiveBatch {
        var out = LiveBatch()
        if let session = sessions[reading.device], reading.receivedAt.timeIntervalSince(session.last) > configuration.gap {
            out.workouts += close(reading.device)
        }
        if let measurements = pointMeasurements(reading) {
            out.records += measurements.map { .measurement($0) }
            return out
        }
        stream(reading)
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

    private mutating func stream(_ r: LiveReading) {
        let t = r.receivedAt
        var sample = Sample(time: t)
        var sport: (Sport, String?)?
        var energyKcal: Double?
        var distance: Double?
        var rr: [Double] = []
        var csc: CSCMeasurement?

        switch r.reading {
        case .heartRate(let m):
            // 0 bpm: the strap measured nothing (no skin contact), not a heart that stopped.
            sample.heartRate = m.beatsPerMinute > 0 ? Int(m.beatsPerMinute) : nil
            rr = m.rrIntervals
            energyKcal = m.energyExpendedKilojoules.map { Double($0) / 4.184 }
        case .csc(let m):
            sport = (.cycling, nil)
            csc = m
        case .rsc(let m):
            sport = (.running, nil)
            sample.speedMps = m.speedMetersPerSecond
            sample.cadence = Double(m.cadence)
            distance = m.totalDistanceMeters
        case .cyclingPower(let m):
            sport = (.cycling, nil)
            sample.powerW = Double(m.instantaneousPower)
        case .indoorBike(let m):
            sport = (.cycling, "indoor_cycling")
            sample.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            sample.cadence = m.instantaneousCadenceRPM
            sample.powerW = m.instantaneousPower.map(Double.init)
            distance = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &sample, energy: &energyKcal)
        case .treadmill(let m):
            sport = (.running, "treadmill")
            sample.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            distance = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &sample, energy: &energyKcal)
        case .rower(let m):
            sport = (.rowing, "indoor_rowing")
            sample.cadence = m.strokeRatePerMinute
            sample.powerW = m.instantaneousPower.map(Double.init)
            distance = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &sample, energy: &energyKcal)
        case .crossTrainer(let m):
            sport = (.fitnessEquipment, "elliptical")
            sample.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            sample.cadence = m.stepsPerMinute.map(Double.init)
            sample.powerW = m.instantaneousPower.map(Double.init)
            distance = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &sample, energy: &energyKcal)
        default:
            return  // features, device information, control point answers: nothing to record
        }

        var session = sessions[r.device] ?? Session(
            id: RecordID.derive("workout", "ble", r.device, String(Int((t.timeIntervalSince1970 * 1000).rounded()))),
            sport: sport?.0 ?? configuration.defaultSport, subSport: sport?.1, start: t, last: t,
            csc: CSCCalculator(configuration: CSCCalculator.Configuration(wheelCircumference: configuration.wheelCircumference)))
        if let sport, session.sport == configuration.defaultSport {
            (session.sport, session.subSport) = sport
        }
        if let csc {
            let output = session.csc.update(csc, receivedAt: t.timeIntervalSince1970)
            sample.speedMps = output.speed
            sample.cadence = output.cadence
            distance = csc.wheel == nil ? nil : output.distance
        }
        if let distance {
            sample.distanceM = distance
            session.distanceM = distance
        }
        if let energyKcal {
            if session.firstEnergyKcal == nil { session.firstEnergyKcal = energyKcal }
            session.lastEnergyKcal = energyKcal
        }
        if let hr = sample.heartRate {
            session.heartRateSum += hr
            session.heartRateCount += 1
            session.maxHeartRate = max(session.maxHeartRate ?? hr, hr)
        }
        session.last = max(session.last, t)
        session.pendingSamples.append(sample)
        session.pendingRR += rr
        sessions[r.device] = session
    }

    private static func apply(_ common: FitnessMachineCommon, to sample: inout Sample, energy: inout Double?) {
        if let hr = common.heartRate, hr > 0 { sample.heartRate = Int(hr) }
        if let total = common.energy?.totalKilocalories { energy = Double(total) }
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
            source: Source(driver: "ble", device: device))
        let piece = WorkoutProgress(workout: workout, sampleOffset: s.flushedSamples, rrOffset: s.flushedRR, isFinal: isFinal)
        s.flushedSamples += s.pendingSamples.count
        s.flushedRR += s.pendingRR.count
        s.pendingSamples = []
        s.pendingRR = []
        sessions[device] = s
        return piece
    }

    // MARK: - Point readings

    /// The measurements a point reading gives, or nil when the reading belongs to a stream.
    private mutating func pointMeasurements(_ r: LiveReading) -> [HealthModel.Measurement]? {
        func make(_ kind: MeasurementKind, _ value: Double?, at time: Date, extra: [String: Double] = [:],
                  key: String = "") -> HealthModel.Measurement? {
            guard let value, value.isFinite else { return nil }
            return HealthModel.Measurement(
                id: RecordID.derive("measurement", "ble", r.device, kind.rawValue,
                                    String(Int((time.timeIntervalSince1970 * 1000).rounded())), key),
                kind: kind, time: time, value: value, extra: extra.filter { $0.value.isFinite },
                source: Source(driver: "ble", device: r.device))
        }
        func time(_ stamp: GATTDateTime?) -> Date { instant(stamp) ?? r.receivedAt }

        switch r.reading {
        case .batteryLevel(let b):
            if let last = lastBattery[r.device], last.percent == b.percent,
               r.receivedAt.timeIntervalSince(last.time) < configuration.batteryInterval {
                return []  // unchanged since it was last recorded
            }
            lastBattery[r.device] = (b.percent, r.receivedAt)
            return [make(.batteryLevel, Double(b.percent), at: r.receivedAt)].compactMap { $0 }
        case .weight(let m):
            let t = time(m.timestamp)
            let user = m.userID.map { ["user_id": Double($0)] } ?? [:]
            return [make(.weight, m.weightKilograms, at: t, extra: user), make(.bmi, m.bmi, at: t, extra: user)]
                .compactMap { $0 }
        case .bodyComposition(let m):
            let t = time(m.timestamp)
            let user = m.userID.map { ["user_id": Double($0)] } ?? [:]
            let water = m.bodyWaterMassKilograms.flatMap { mass in m.weightKilograms.map { mass / $0 * 100 } }
            return [make(.bodyFat, m.bodyFatPercentage, at: t, extra: user),
                    make(.muscleMass, m.muscleMassKilograms, at: t, extra: user),
                    make(.bodyWater, water, at: t, extra: user),
                    make(.basalMetabolicRate, m.basalMetabolismKilojoules.map { Double($0) / 4.184 }, at: t, extra: user)]
                .compactMap { $0 }
        case .bloodPressure(let m):
            var extra: [String: Double] = [:]
            extra["diastolic"] = m.diastolicMmHg
            extra["mean_arterial"] = m.meanArterialPressureMmHg
            extra["pulse_rate"] = m.pulseRate?.doubleValue
            if let user = m.userID { extra["user_id"] = Double(user) }
            return [make(.bloodPressure, m.systolicMmHg, at: time(m.timestamp), extra: extra)].compactMap { $0 }
        case .temperature(let m):
            return [make(.temperature, m.celsius, at: time(m.timestamp))].compactMap { $0 }
        case .plxSpotCheck(let m):
            var extra: [String: Double] = [:]
            extra["pulse_rate"] = m.reading.pulseRate.doubleValue
            return [make(.spo2, m.reading.spO2.doubleValue, at: time(m.timestamp), extra: extra)].compactMap { $0 }
        case .plxContinuous(let m):
            var extra: [String: Double] = [:]
            extra["pulse_rate"] = m.normal.pulseRate.doubleValue
            return [make(.spo2, m.normal.spO2.doubleValue, at: r.receivedAt, extra: extra)].compactMap { $0 }
        case .glucose(let m):
            var t = instant(m.baseTime) ?? r.receivedAt
            if let offset = m.timeOffsetMinutes { t += Double(offset) * 60 }
            return [make(.glucose, m.millimolesPerLiter, at: t, extra: ["sequence": Double(m.sequenceNumber)],
                         key: String(m.sequenceNumber))].compactMap { $0 }
        case .intermediateCuffPressure, .intermediateTemperature:
            return []  // values during a measurement, not results
        default:
            return nil
        }
    }

    /// A device's Date Time as an instant in the configured zone; nil when the clock was not set.
    func instant(_ stamp: GATTDateTime?) -> Date? {
        guard let stamp, stamp.isValid else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = configuration.timeZone
        return calendar.date(from: DateComponents(year: Int(stamp.year), month: Int(stamp.month), day: Int(stamp.day),
                                                  hour: Int(stamp.hours), minute: Int(stamp.minutes),
                                                  second: Int(stamp.seconds)))
    }
}
