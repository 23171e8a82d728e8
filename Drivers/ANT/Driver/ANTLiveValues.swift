public import ANTPlusProfiles
public import ANTProtocol
public import HealthModel

/// An ANT+ sensor's identity as stored in `source_device`: `ant:TYPE:NUMBER`, with the device
/// type (120 heart rate, 11 power ...) and the 20-bit device number (the transmission type's
/// upper nibble extends the 16-bit one). The same sensor gets the same identity on every stick
/// and every run.
public struct ANTSensorID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var deviceType: UInt8
    public var deviceNumber: UInt32

    public init(deviceType: UInt8, deviceNumber: UInt32) {
        self.deviceType = deviceType & 0x7F
        self.deviceNumber = deviceNumber
    }

    public init(_ id: ANTChannelID) {
        self.init(deviceType: id.deviceType, deviceNumber: id.extendedDeviceNumber)
    }

    /// `ant:120:12345`.
    public var description: String { "ant:\(deviceType):\(deviceNumber)" }

    /// The profile's name (`heart rate`), or `device type N`.
    public var kind: String { ANTPlusChannelParameters.forDeviceType(deviceType)?.name ?? "device type \(deviceType)" }

    public static func < (a: ANTSensorID, b: ANTSensorID) -> Bool { (a.deviceType, a.deviceNumber) < (b.deviceType, b.deviceNumber) }
}

/// Turns ANT+ readings into the model's live values (``HealthModel/LiveValue``) for the one live
/// sessionizer (pure). The profile decoders count distance from a channel's first page; this
/// hands the sessionizer the distance covered since the sensor's previous reading, which it sums
/// per workout.
public struct ANTLiveValues: Sendable {
    private var lastDistance: [ANTSensorID: Double] = [:]

    public init() {}

    /// The values `reading` from `sensor` gives (none for identity pages: manufacturer, product,
    /// operating time, which the driver reports as the device's name).
    public mutating func values(_ reading: ANTPlusReading, from sensor: ANTSensorID) -> [LiveValue] {
        switch reading {
        case .heartRate(let bpm, let rr):
            return [.stream(StreamPoint(heartRate: bpm, rrIntervals: rr))]
        case .speed(let speed, let distance):
            return [.stream(StreamPoint(sport: .cycling, speedMps: speed, distanceDeltaM: delta(sensor, distance)))]
        case .cadence(let rpm):
            return [.stream(StreamPoint(sport: .cycling, cadence: rpm))]
        case .power(let watts, let cadence, _):
            return [.stream(StreamPoint(sport: .cycling, cadence: cadence, powerW: watts))]
        case .stride(let speed, let steps, let distance, _):
            return [.stream(StreamPoint(sport: .running, speedMps: speed, cadence: steps,
                                        distanceDeltaM: distance.flatMap { delta(sensor, $0) }))]
        case .fitnessEquipment(let state):
            let (sport, subSport) = Self.sport(state.equipmentType)
            return [.stream(StreamPoint(sport: sport, subSport: subSport, heartRate: state.heartRate, speedMps: state.speedMetersPerSecond,
                                        cadence: state.cadence, powerW: state.powerWatts,
                                        distanceDeltaM: state.distanceMeters.flatMap { delta(sensor, $0) },
                                        energyKcal: state.kilocalories))]
        case .weight(let w):
            let user = w.userProfile.map { ["user_id": Double($0)] } ?? [:]
            let measurements = [
                PointMeasurement(.weight, w.weightKilograms, extra: user),
                PointMeasurement(.bodyFat, w.bodyFatPercent, extra: user),
                PointMeasurement(.bodyWater, w.hydrationPercent, extra: user),
                PointMeasurement(.muscleMass, w.muscleMassKilograms, extra: user),
                PointMeasurement(.boneMass, w.boneMassKilograms, extra: user),
                PointMeasurement(.basalMetabolicRate, w.basalMetabolicRateKilocalories, extra: user),
            ].filter { $0.value != nil }
            return measurements.isEmpty ? [] : [.measurements(measurements)]
        case .battery(let percent, _, _):
            return percent.map { [.battery(percent: $0)] } ?? []
        case .manufacturer, .product, .operatingTime:
            return []
        }
    }

    /// A sensor's distance counter as the distance since its previous reading (nil for the first,
    /// and when the counter went back: a decoder started afresh).
    private mutating func delta(_ sensor: ANTSensorID, _ distance: Double) -> Double? {
        defer { lastDistance[sensor] = distance }
        guard let last = lastDistance[sensor], distance >= last else { return nil }
        return distance - last
    }

    /// The sport and finer kind of a fitness machine.
    static func sport(_ type: ANTFitnessEquipmentType?) -> (Sport?, String?) {
        switch type {
        case .treadmill: (.running, "treadmill")
        case .elliptical: (.fitnessEquipment, "elliptical")
        case .rower: (.rowing, "indoor_rowing")
        case .stationaryBike, .trainer: (.cycling, "indoor_cycling")
        case .climber: (.fitnessEquipment, "stair_climbing")
        case .nordicSkier: (.skiing, "cross_country_skiing")
        case .general, .other, nil: (nil, nil)
        }
    }
}
