public import HealthModel

/// A data page decoded by the profile of its device type.
public enum ANTPlusPage: Hashable, Sendable {
    case heartRate(ANTHeartRatePage)
    /// A speed-only or cadence-only sensor's page.
    case speedOrCadence(ANTSpeedOrCadencePage)
    /// A combined speed and cadence sensor's page.
    case speedCadence(ANTSpeedCadencePage)
    case power(ANTPowerPage)
    case stride(ANTStridePage)
    case fitnessEquipment(ANTFitnessEquipmentPage)
    case weightScale(ANTWeightScalePage)

    /// Decodes the 8 bytes of a broadcast as a page of `deviceType` (the pairing bit is ignored).
    public static func decode(_ data: [UInt8], deviceType: UInt8) throws(ANTPlusDecodeError) -> Self {
        switch deviceType & 0x7F {
        case ANTPlusDeviceType.heartRate: return .heartRate(try ANTHeartRatePage.decode(data))
        case ANTPlusDeviceType.bikeSpeed, ANTPlusDeviceType.bikeCadence:
            return .speedOrCadence(try ANTSpeedOrCadencePage.decode(data, deviceType: deviceType & 0x7F))
        case ANTPlusDeviceType.bikeSpeedCadence: return .speedCadence(try ANTSpeedCadencePage.decode(data))
        case ANTPlusDeviceType.bikePower: return .power(try ANTPowerPage.decode(data))
        case ANTPlusDeviceType.strideSpeedDistance: return .stride(try ANTStridePage.decode(data))
        case ANTPlusDeviceType.fitnessEquipment: return .fitnessEquipment(try ANTFitnessEquipmentPage.decode(data))
        case ANTPlusDeviceType.weightScale: return .weightScale(try ANTWeightScalePage.decode(data))
        default: throw ANTPlusDecodeError(deviceType: deviceType & 0x7F, .unsupportedDeviceType)
        }
    }
}

/// A value an ANT+ sensor reported, in SI units (seconds, metres, kilograms) except where named.
public enum ANTPlusReading: Hashable, Sendable {
    /// The heart rate the strap computed, and the RR intervals (seconds) this page added.
    case heartRate(beatsPerMinute: Int, rrSeconds: [Double])
    /// Speed, and the distance covered since the channel's first page.
    case speed(metersPerSecond: Double, distanceMeters: Double)
    case cadence(revolutionsPerMinute: Double)
    /// Power in watts, cadence in rpm, and the right pedal's share of the power in percent when
    /// the meter reports it.
    case power(watts: Double, cadence: Double?, leftRightBalance: Double?)
    /// A foot pod: speed, cadence in steps per minute (two per stride), distance and strides
    /// since the channel's first page; each nil when the page does not carry it.
    case stride(metersPerSecond: Double?, stepsPerMinute: Double?, distanceMeters: Double?, strides: Int?)
    case fitnessEquipment(ANTFitnessEquipmentState)
    case weight(ANTWeightReading)
    /// Battery level in percent (heart rate straps only), voltage, status.
    case battery(percent: Int?, voltage: Double?, status: ANTBatteryStatus?)
    /// Common page 0x50; heart rate and bike sensors' pages 2 and 3 (8-bit manufacturer and model).
    case manufacturer(manufacturerID: UInt16, model: UInt16, hardwareRevision: UInt8)
    /// Common page 0x51 (serial nil when the device has none), or page 3 of heart rate and bike
    /// sensors (no serial).
    case product(serialNumber: UInt32?, softwareVersion: String)
    /// Cumulative operating time of the sensor.
    case operatingTime(seconds: Double)
}

/// Decodes one sensor channel's pages into readings: the entry point the driver calls for each
/// broadcast (or acknowledged) data message of an ANT+ channel. Pure: `time` is when the page
/// arrived, in seconds on any monotonic clock.
///
/// Each message yields the readings it carries:
/// - heart rate: a heart rate reading per page (when the strap's value is valid), with the RR
///   intervals it adds (`ANTHeartRateCalculator`);
/// - speed, cadence, speed and cadence: a speed and/or cadence reading per page once a rate is
///   known (`ANTRevolutionCalculator`; distance counts from the first page);
/// - power: a power reading per page once known (`ANTPowerCalculator`); wheel torque meters also
///   give speed;
/// - stride: a stride reading per data page (`ANTStrideCalculator`);
/// - fitness equipment: the whole state after each data page (`ANTFitnessEquipmentCalculator`);
/// - weight: a reading per measurement and per new body composition value (`ANTWeightScaleTracker`);
/// - device pages (manufacturer, product) only when they differ from the last one reported;
///   battery and operating time pages each time they arrive. Heart rate straps and speed-only or
///   cadence-only sensors send their device pages in bytes 1-3 of paged formats, which legacy
///   sensors leave undefined: those pages count only once the toggle bit (byte 0 bit 7) has been
///   seen to flip, which a paged sensor does every 4 messages.
///
/// A page the profile does not define throws `ANTPlusDecodeError` (count it, keep going); the
/// decoder's state is unchanged by it.
public struct ANTPlusSensorDecoder: Sendable {
    private enum Profile: Sendable {
        case heartRate(ANTHeartRateCalculator)
        case speed(RevolutionRateTracker)
        case cadence(RevolutionRateTracker)
        case speedCadence(speed: RevolutionRateTracker, cadence: RevolutionRateTracker)
        case power(ANTPowerCalculator)
        case stride(ANTStrideCalculator)
        case fitnessEquipment(ANTFitnessEquipmentCalculator)
        case weightScale(ANTWeightScaleTracker)
        case unsupported
    }

    /// The device type, without the pairing bit.
    public let deviceType: UInt8
    /// Metres per wheel revolution (speed sensors and wheel torque power meters).
    public let wheelCircumference: Double
    private var profile: Profile
    private var lastManufacturer: ANTPlusReading?
    private var lastProduct: ANTPlusReading?
    /// The toggle bit of the first page, and whether it has flipped since (a paged sensor).
    private var firstToggle: Bool?
    private var pagedSensor = false
    /// Bike sensors' page 2 manufacturer, waiting for page 3's model.
    private var pendingManufacturer: UInt8?
    private var pendingProduct: (hardware: UInt8, model: UInt8)?

    /// A wheel circumference that is not a positive number below 10 m is replaced by 2.096 m
    /// (a 700x23C road tyre).
    public init(deviceType: UInt8, wheelCircumference: Double = 2.096) {
        let type = deviceType & 0x7F
        self.deviceType = type
        let circumference = wheelCircumference > 0 && wheelCircumference < 10 ? wheelCircumference : 2.096
        self.wheelCircumference = circumference
        // The fastest plausible wheel: 40 m/s (144 km/h); crank: 300 rpm.
        let wheel = RevolutionRateTracker(counterBits: 16, maximumRevolutionsPerSecond: 40 / circumference)
        let crank = RevolutionRateTracker(counterBits: 16, maximumRevolutionsPerSecond: 5)
        switch type {
        case ANTPlusDeviceType.heartRate: profile = .heartRate(ANTHeartRateCalculator())
        case ANTPlusDeviceType.bikeSpeed: profile = .speed(wheel)
        case ANTPlusDeviceType.bikeCadence: profile = .cadence(crank)
        case ANTPlusDeviceType.bikeSpeedCadence: profile = .speedCadence(speed: wheel, cadence: crank)
        case ANTPlusDeviceType.bikePower: profile = .power(ANTPowerCalculator(wheelCircumference: circumference))
        case ANTPlusDeviceType.strideSpeedDistance: profile = .stride(ANTStrideCalculator())
        case ANTPlusDeviceType.fitnessEquipment: profile = .fitnessEquipment(ANTFitnessEquipmentCalculator())
        case ANTPlusDeviceType.weightScale: profile = .weightScale(ANTWeightScaleTracker())
        default: profile = .unsupported
        }
    }

    /// The readings the 8 data bytes of one message give, received at `time` seconds.
    public mutating func receive(_ data: [UInt8], at time: Double) throws(ANTPlusDecodeError) -> [ANTPlusReading] {
        let page = try ANTPlusPage.decode(data, deviceType: deviceType)
        var readings: [ANTPlusReading] = []
        switch (profile, page) {
        case (.heartRate(var calculator), .heartRate(let p)):
            let rr = calculator.update(p, at: time)
            profile = .heartRate(calculator)
            if p.heartRate != 0 { readings.append(.heartRate(beatsPerMinute: Int(p.heartRate), rrSeconds: rr)) }
            if paged(p.toggle) { readings += deviceReadings(heartRate: p.content) }
        case (.speed(var calculator), .speedOrCadence(let p)):
            let stopped = p.content == .motion(stopped: true)
            let rate = calculator.update(count: UInt64(p.revolutionCount), eventTime: p.eventTime, receivedAt: time, stopped: stopped)
                .revolutionsPerSecond
            profile = .speed(calculator)
            if let rate { readings.append(speed(rate, calculator)) }
            if paged(p.toggle) { readings += deviceReadings(bike: p.content) }
        case (.cadence(var calculator), .speedOrCadence(let p)):
            let stopped = p.content == .motion(stopped: true)
            let rate = calculator.update(count: UInt64(p.revolutionCount), eventTime: p.eventTime, receivedAt: time, stopped: stopped)
                .revolutionsPerSecond
            profile = .cadence(calculator)
            if let rate { readings.append(.cadence(revolutionsPerMinute: rate * 60)) }
            if paged(p.toggle) { readings += deviceReadings(bike: p.content) }
        case (.speedCadence(var wheel, var crank), .speedCadence(let p)):
            let cadence = crank.update(count: UInt64(p.cadenceRevolutions), eventTime: p.cadenceEventTime, receivedAt: time).revolutionsPerSecond
            let speed = wheel.update(count: UInt64(p.wheelRevolutions), eventTime: p.speedEventTime, receivedAt: time).revolutionsPerSecond
            profile = .speedCadence(speed: wheel, cadence: crank)
            if let speed { readings.append(self.speed(speed, wheel)) }
            if let cadence { readings.append(.cadence(revolutionsPerMinute: cadence * 60)) }
        case (.power(var calculator), .power(let p)):
            let out = calculator.update(p, at: time)
            profile = .power(calculator)
            if let out {
                readings.append(.power(watts: out.watts, cadence: out.cadence, leftRightBalance: out.rightPedalPercent))
                if let speed = out.speed {
                    readings.append(.speed(metersPerSecond: speed, distanceMeters: out.distance ?? calculator.distance))
                }
            }
            if case .common(let common) = p { readings += deviceReadings(common: common) }
        case (.stride(var calculator), .stride(let p)):
            let out = calculator.update(p, at: time)
            profile = .stride(calculator)
            if let out {
                readings.append(.stride(metersPerSecond: out.speed, stepsPerMinute: out.stepsPerMinute, distanceMeters: out.distance,
                                        strides: out.strides))
            }
            if case .common(let common) = p { readings += deviceReadings(common: common) }
        case (.fitnessEquipment(var calculator), .fitnessEquipment(let p)):
            let state = calculator.update(p, at: time)
            profile = .fitnessEquipment(calculator)
            if let state { readings.append(.fitnessEquipment(state)) }
            if case .common(let common) = p { readings += deviceReadings(common: common) }
        case (.weightScale(var tracker), .weightScale(let p)):
            let reading = tracker.update(p, at: time)
            profile = .weightScale(tracker)
            if let reading { readings.append(.weight(reading)) }
            if case .common(let common) = p { readings += deviceReadings(common: common) }
        default:
            break
        }
        return readings
    }

    /// Notes the toggle bit; true once it has flipped (the sensor sends paged data).
    private mutating func paged(_ toggle: Bool) -> Bool {
        if let firstToggle, firstToggle != toggle { pagedSensor = true }
        if firstToggle == nil { firstToggle = toggle }
        return pagedSensor
    }

    private func speed(_ revolutionsPerSecond: Double, _ wheel: RevolutionRateTracker) -> ANTPlusReading {
        .speed(metersPerSecond: revolutionsPerSecond * wheelCircumference,
               distanceMeters: Double(wheel.totalRevolutions) * wheelCircumference)
    }

    private mutating func deviceReadings(common: ANTPlusCommonPage) -> [ANTPlusReading] {
        switch common {
        case .manufacturerInfo(let p):
            return changed(.manufacturer(manufacturerID: p.manufacturerID, model: p.modelNumber, hardwareRevision: p.hardwareRevision))
        case .productInfo(let p):
            return changed(.product(serialNumber: p.serialNumber, softwareVersion: p.softwareVersion))
        case .batteryStatus(let p):
            return [.battery(percent: nil, voltage: p.voltage, status: p.status), .operatingTime(seconds: p.operatingTime)]
        case .requestDataPage:
            return []
        }
    }

    private mutating func deviceReadings(heartRate content: ANTHeartRatePage.Content) -> [ANTPlusReading] {
        switch content {
        case .cumulativeOperatingTime(let seconds): return [.operatingTime(seconds: seconds)]
        case .manufacturerInfo(let id, _): return legacyManufacturer(id)
        case .productInfo(let hardware, let software, let model): return legacyProduct(hardware, software, model)
        case .batteryStatus(let level, let voltage, let status):
            return [.battery(percent: level.map(Int.init), voltage: voltage, status: status)]
        default: return []
        }
    }

    private mutating func deviceReadings(bike content: ANTSpeedOrCadencePage.Content) -> [ANTPlusReading] {
        switch content {
        case .cumulativeOperatingTime(let seconds): return [.operatingTime(seconds: seconds)]
        case .manufacturerInfo(let id, _): return legacyManufacturer(id)
        case .productInfo(let hardware, let software, let model): return legacyProduct(hardware, software, model)
        case .batteryStatus(let voltage, let status): return [.battery(percent: nil, voltage: voltage, status: status)]
        default: return []
        }
    }

    /// Page 2 of heart rate and bike sensors: the manufacturer, reported with page 3's model.
    private mutating func legacyManufacturer(_ id: UInt8) -> [ANTPlusReading] {
        pendingManufacturer = id
        guard let product = pendingProduct else { return [] }
        return changed(.manufacturer(manufacturerID: UInt16(id), model: UInt16(product.model), hardwareRevision: product.hardware))
    }

    /// Page 3 of heart rate and bike sensors: the software version, and the model with page 2's
    /// manufacturer.
    private mutating func legacyProduct(_ hardware: UInt8, _ software: UInt8, _ model: UInt8) -> [ANTPlusReading] {
        pendingProduct = (hardware, model)
        var readings = changed(.product(serialNumber: nil, softwareVersion: "\(software)"))
        if let id = pendingManufacturer {
            readings += changed(.manufacturer(manufacturerID: UInt16(id), model: UInt16(model), hardwareRevision: hardware))
        }
        return readings
    }

    /// `reading` when it differs from the last manufacturer or product reading, else nothing.
    private mutating func changed(_ reading: ANTPlusReading) -> [ANTPlusReading] {
        if case .manufacturer = reading {
            guard reading != lastManufacturer else { return [] }
            lastManufacturer = reading
        } else {
            guard reading != lastProduct else { return [] }
            lastProduct = reading
        }
        return [reading]
    }
}
