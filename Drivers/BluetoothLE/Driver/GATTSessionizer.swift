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

/// Bluetooth LE's side of the live sessionizer: turns each GATT reading into the model's live
/// value (``HealthModel/LiveValue``) and hands it to the one ``HealthModel/LiveSessionizer`` that
/// every live driver family uses (pure; no I/O, no clock of its own).
///
/// What is Bluetooth's own stays here: wheel and crank revolutions become speed, cadence and
/// distance through a ``CSCCalculator`` per device (started afresh with each workout, so a
/// workout's first reading is the baseline), and Date Time fields, which carry no zone, are read
/// in the configured zone.
public struct GATTSessionizer: Sendable {
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

        /// The shared sessionizer's part of it, for the `ble` driver.
        var sessions: LiveSessionizer.Configuration {
            LiveSessionizer.Configuration(driver: "ble", gap: gap, defaultSport: defaultSport, batteryInterval: batteryInterval)
        }
    }

    public let configuration: Configuration
    private var sessions: LiveSessionizer
    /// Per device recording wheel or crank revolutions, the calculator of its current workout and
    /// the distance it had counted at the previous reading.
    private var csc: [String: (calculator: CSCCalculator, distance: Double)] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        sessions = LiveSessionizer(configuration: configuration.sessions)
    }

    /// Devices with a workout in progress.
    public var recordingDevices: [String] { sessions.recordingDevices }

    /// Feeds one reading; returns the measurements it gives, and the final piece of the device's
    /// previous workout when a silence longer than the gap came before this reading.
    public mutating func receive(_ reading: LiveReading) -> LiveBatch {
        guard let value = value(reading) else {
            return LiveBatch()  // features, device information, control point answers: nothing to record
        }
        return sessions.receive(device: reading.device, at: reading.receivedAt, value)
    }

    /// What is due at `now` (``HealthModel/LiveSessionizer/flush(now:)``).
    public mutating func flush(now: Date) -> LiveBatch { sessions.flush(now: now) }

    /// Completes every workout in progress (recording stops).
    public mutating func finish() -> LiveBatch { sessions.finish() }

    // MARK: - Readings as values

    /// The model's value for a reading, or nil when it holds nothing to record.
    private mutating func value(_ r: LiveReading) -> LiveValue? {
        if let measurements = pointMeasurements(r) { return measurements }
        var point = StreamPoint()
        switch r.reading {
        case .heartRate(let m):
            point.heartRate = Int(m.beatsPerMinute)
            point.rrIntervals = m.rrIntervals
            point.energyKcal = m.energyExpendedKilojoules.map { Double($0) / 4.184 }
        case .csc(let m):
            point.sport = .cycling
            if !sessions.continues(device: r.device, at: r.receivedAt) { csc[r.device] = nil }
            var (calculator, before) = csc[r.device]
                ?? (CSCCalculator(configuration: CSCCalculator.Configuration(wheelCircumference: configuration.wheelCircumference)), 0)
            let output = calculator.update(m, receivedAt: r.receivedAt.timeIntervalSince1970)
            csc[r.device] = (calculator, output.distance)
            point.speedMps = output.speed
            point.cadence = output.cadence
            if m.wheel != nil { point.distanceDeltaM = output.distance - before }
        case .rsc(let m):
            point.sport = .running
            point.speedMps = m.speedMetersPerSecond
            point.cadence = Double(m.cadence)
            point.distanceM = m.totalDistanceMeters
        case .cyclingPower(let m):
            point.sport = .cycling
            point.powerW = Double(m.instantaneousPower)
        case .indoorBike(let m):
            (point.sport, point.subSport) = (.cycling, "indoor_cycling")
            point.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            point.cadence = m.instantaneousCadenceRPM
            point.powerW = m.instantaneousPower.map(Double.init)
            point.distanceM = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &point)
        case .treadmill(let m):
            (point.sport, point.subSport) = (.running, "treadmill")
            point.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            point.distanceM = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &point)
        case .rower(let m):
            (point.sport, point.subSport) = (.rowing, "indoor_rowing")
            point.cadence = m.strokeRatePerMinute
            point.powerW = m.instantaneousPower.map(Double.init)
            point.distanceM = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &point)
        case .crossTrainer(let m):
            (point.sport, point.subSport) = (.fitnessEquipment, "elliptical")
            point.speedMps = m.instantaneousSpeedKilometersPerHour.map { $0 / 3.6 }
            point.cadence = m.stepsPerMinute.map(Double.init)
            point.powerW = m.instantaneousPower.map(Double.init)
            point.distanceM = m.totalDistanceMeters.map(Double.init)
            Self.apply(m.common, to: &point)
        default:
            return nil
        }
        return .stream(point)
    }

    private static func apply(_ common: FitnessMachineCommon, to point: inout StreamPoint) {
        if let hr = common.heartRate, hr > 0 { point.heartRate = Int(hr) }
        if let total = common.energy?.totalKilocalories { point.energyKcal = Double(total) }
    }

    /// The measurements a point reading gives, or nil when the reading belongs to a stream.
    private func pointMeasurements(_ r: LiveReading) -> LiveValue? {
        func time(_ stamp: GATTDateTime?) -> Date? { instant(stamp) }

        switch r.reading {
        case .batteryLevel(let b):
            return .battery(percent: Int(b.percent))
        case .weight(let m):
            let t = time(m.timestamp)
            let user = m.userID.map { ["user_id": Double($0)] } ?? [:]
            return .measurements([PointMeasurement(.weight, m.weightKilograms, at: t, extra: user),
                                  PointMeasurement(.bmi, m.bmi, at: t, extra: user)])
        case .bodyComposition(let m):
            let t = time(m.timestamp)
            let user = m.userID.map { ["user_id": Double($0)] } ?? [:]
            let water = m.bodyWaterMassKilograms.flatMap { mass in m.weightKilograms.map { mass / $0 * 100 } }
            return .measurements([PointMeasurement(.bodyFat, m.bodyFatPercentage, at: t, extra: user),
                                  PointMeasurement(.muscleMass, m.muscleMassKilograms, at: t, extra: user),
                                  PointMeasurement(.bodyWater, water, at: t, extra: user),
                                  PointMeasurement(.basalMetabolicRate, m.basalMetabolismKilojoules.map { Double($0) / 4.184 },
                                                   at: t, extra: user)])
        case .bloodPressure(let m):
            var extra: [String: Double] = [:]
            extra["diastolic"] = m.diastolicMmHg
            extra["mean_arterial"] = m.meanArterialPressureMmHg
            extra["pulse_rate"] = m.pulseRate?.doubleValue
            if let user = m.userID { extra["user_id"] = Double(user) }
            return .measurements([PointMeasurement(.bloodPressure, m.systolicMmHg, at: time(m.timestamp), extra: extra)])
        case .temperature(let m):
            return .measurements([PointMeasurement(.temperature, m.celsius, at: time(m.timestamp))])
        case .plxSpotCheck(let m):
            var extra: [String: Double] = [:]
            extra["pulse_rate"] = m.reading.pulseRate.doubleValue
            return .measurements([PointMeasurement(.spo2, m.reading.spO2.doubleValue, at: time(m.timestamp), extra: extra)])
        case .plxContinuous(let m):
            var extra: [String: Double] = [:]
            extra["pulse_rate"] = m.normal.pulseRate.doubleValue
            return .measurements([PointMeasurement(.spo2, m.normal.spO2.doubleValue, extra: extra)])
        case .glucose(let m):
            var t = instant(m.baseTime) ?? r.receivedAt
            if let offset = m.timeOffsetMinutes { t += Double(offset) * 60 }
            return .measurements([PointMeasurement(.glucose, m.millimolesPerLiter, at: t, extra: ["sequence": Double(m.sequenceNumber)],
                                                   key: String(m.sequenceNumber))])
        case .intermediateCuffPressure, .intermediateTemperature:
            return .measurements([])  // values during a measurement, not results
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
