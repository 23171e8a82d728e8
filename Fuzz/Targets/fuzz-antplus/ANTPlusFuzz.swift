import ANTPlusProfiles
import FuzzSupport

/// The ANT+ sensor decoder. The first byte picks a device type (one of the supported profiles,
/// or for values from 248 the byte itself, which no profile decodes); the rest is records of 9
/// bytes: a time step (the page arrives step/8 s after the previous one, 0 to 32 s, so repeats,
/// stops and long gaps are all reachable) and the 8-byte page. Pages go to one decoder in order.
/// Unknown pages are typed errors; nothing may trap, and no reading may hold NaN, an infinity, or
/// a negative speed, distance, power, cadence, weight or time.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let choice = input.byte()
    let types = ANTPlusDeviceType.supported
    let deviceType = choice >= 248 ? choice : types[Int(choice) % types.count]
    var decoder = ANTPlusSensorDecoder(deviceType: deviceType)
    var time = 0.0
    while !input.bytes.isEmpty {
        time += Double(input.byte()) / 8
        let page = input.take(8)
        guard let readings = try? decoder.receive(page, at: time) else { continue }
        for reading in readings {
            for (value, mayBeNegative) in numbers(reading) where !value.isFinite || (!mayBeNegative && value < 0) {
                fatalError("device type \(deviceType), page \(page) at \(time) s: \(reading)")
            }
        }
    }
    return 0
}

/// The numbers a reading carries, and whether each may be negative (only an incline may).
private func numbers(_ reading: ANTPlusReading) -> [(Double, Bool)] {
    func positive(_ values: [Double?]) -> [(Double, Bool)] { values.compactMap { $0 }.map { ($0, false) } }
    switch reading {
    case .heartRate(let bpm, let rr): return positive([Double(bpm)] + rr)
    case .speed(let speed, let distance): return positive([speed, distance])
    case .cadence(let rpm): return positive([rpm])
    case .power(let watts, let cadence, let balance): return positive([watts, cadence, balance])
    case .stride(let speed, let steps, let distance, let strides): return positive([speed, steps, distance, strides.map(Double.init)])
    case .fitnessEquipment(let s):
        return positive([s.elapsedSeconds, s.distanceMeters, s.speedMetersPerSecond, s.heartRate.map(Double.init), s.powerWatts, s.cadence,
                         s.kilocalories, s.metabolicEquivalents, s.calorieRateKilocaloriesPerHour, s.resistancePercent])
            + [s.inclinePercent].compactMap { $0 }.map { ($0, true) }
    case .weight(let w):
        return positive([w.weightKilograms, w.hydrationPercent, w.bodyFatPercent, w.activeMetabolicRateKilocalories,
                         w.basalMetabolicRateKilocalories, w.muscleMassKilograms, w.boneMassKilograms])
    case .battery(let percent, let voltage, _): return positive([percent.map(Double.init), voltage])
    case .operatingTime(let seconds): return positive([seconds])
    case .manufacturer, .product: return []
    }
}
