/// The kind of fitness equipment (general FE page, byte 1 bits 0-4).
public enum ANTFitnessEquipmentType: Hashable, Sendable, CustomStringConvertible {
    case general, treadmill, elliptical, stationaryBike, rower, climber, nordicSkier
    /// A bike trainer or stationary bike that reports power (and can be controlled).
    case trainer
    case other(UInt8)

    public init(_ rawValue: UInt8) {
        switch rawValue & 0x1F {
        case 16: self = .general
        case 19: self = .treadmill
        case 20: self = .elliptical
        case 21: self = .stationaryBike
        case 22: self = .rower
        case 23: self = .climber
        case 24: self = .nordicSkier
        case 25: self = .trainer
        default: self = .other(rawValue & 0x1F)
        }
    }

    public var description: String {
        switch self {
        case .general: "general"
        case .treadmill: "treadmill"
        case .elliptical: "elliptical"
        case .stationaryBike: "stationary bike"
        case .rower: "rower"
        case .climber: "climber"
        case .nordicSkier: "nordic skier"
        case .trainer: "trainer"
        case .other(let value): "equipment type \(value)"
        }
    }
}

/// The machine's state (byte 7 bits 4-6 of the FE data pages).
public enum ANTFitnessEquipmentMachineState: Hashable, Sendable {
    /// Asleep or off.
    case asleep
    case ready
    case inUse
    /// Finished or paused.
    case finished
    case reserved(UInt8)

    public init(_ rawValue: UInt8) {
        switch rawValue & 0x07 {
        case 1: self = .asleep
        case 2: self = .ready
        case 3: self = .inUse
        case 4: self = .finished
        default: self = .reserved(rawValue & 0x07)
        }
    }
}

/// Byte 7 of the FE data pages: bits 0-3 page-specific flags, bits 4-6 the machine state (read as
/// `(b & 0x70) >> 4`), bit 7 the lap toggle.
public struct ANTFitnessEquipmentStatus: Hashable, Sendable {
    public var flags: UInt8
    public var state: ANTFitnessEquipmentMachineState
    public var lapToggle: Bool

    public init(_ byte: UInt8) {
        flags = byte & 0x0F
        state = ANTFitnessEquipmentMachineState((byte & 0x70) >> 4)
        lapToggle = byte & 0x80 != 0
    }
}

/// Page 0x10, general FE data. Byte 1 equipment type, byte 2 elapsed time (0.25 s, rolls over at
/// 64 s), byte 3 distance (m, rolls over at 256), bytes 4-5 speed (mm/s, 0xFFFF invalid), byte 6
/// heart rate (0xFF invalid), byte 7 flags (bits 0-1 heart rate source, bit 2 distance enabled,
/// bit 3 virtual speed) and state.
public struct ANTFEGeneralPage: Hashable, Sendable {
    public var equipmentType: ANTFitnessEquipmentType
    /// Seconds, modulo 64.
    public var elapsedTime: Double
    /// Metres, modulo 256.
    public var distance: UInt8
    /// Metres per second.
    public var speed: Double?
    public var heartRate: UInt8?
    /// 0 none, 1 ANT+ monitor, 2 EM (5 kHz) monitor, 3 hand contacts.
    public var heartRateSource: UInt8 { status.flags & 0x03 }
    public var distanceEnabled: Bool { status.flags & 0x04 != 0 }
    /// The speed is computed by the equipment rather than measured.
    public var virtualSpeed: Bool { status.flags & 0x08 != 0 }
    public var status: ANTFitnessEquipmentStatus

    public init(equipmentType: ANTFitnessEquipmentType, elapsedTime: Double, distance: UInt8, speed: Double? = nil,
                heartRate: UInt8? = nil, status: ANTFitnessEquipmentStatus) {
        self.equipmentType = equipmentType
        self.elapsedTime = elapsedTime
        self.distance = distance
        self.speed = speed
        self.heartRate = heartRate
        self.status = status
    }
}

/// Page 0x11, general settings. Byte 3 cycle length (0.01 m, 0xFF invalid), bytes 4-5 incline
/// (signed, 0.01 %, 0x7FFF invalid), byte 6 resistance level (0.5 %, 0xFF invalid).
public struct ANTFEGeneralSettingsPage: Hashable, Sendable {
    public var cycleLength: Double?
    public var incline: Double?
    public var resistance: Double?
    public var status: ANTFitnessEquipmentStatus

    public init(cycleLength: Double? = nil, incline: Double? = nil, resistance: Double? = nil, status: ANTFitnessEquipmentStatus) {
        self.cycleLength = cycleLength
        self.incline = incline
        self.resistance = resistance
        self.status = status
    }
}

/// Page 0x12, general metabolic data. Bytes 2-3 METs (0.01, 0xFFFF invalid), bytes 4-5 calorie
/// rate (0.1 kcal/h, 0xFFFF invalid), byte 6 accumulated calories (kcal, rolls over at 256),
/// flag bit 0 accumulated calories enabled.
public struct ANTFEMetabolicPage: Hashable, Sendable {
    public var metabolicEquivalents: Double?
    public var calorieRate: Double?
    public var accumulatedCalories: UInt8
    public var caloriesEnabled: Bool { status.flags & 0x01 != 0 }
    public var status: ANTFitnessEquipmentStatus

    public init(metabolicEquivalents: Double? = nil, calorieRate: Double? = nil, accumulatedCalories: UInt8,
                status: ANTFitnessEquipmentStatus) {
        self.metabolicEquivalents = metabolicEquivalents
        self.calorieRate = calorieRate
        self.accumulatedCalories = accumulatedCalories
        self.status = status
    }
}

/// Pages 0x13-0x18, one per kind of equipment. Byte 4 is the cadence (0xFF invalid) on all of them.
/// Treadmill (0x13): byte 5 negative and byte 6 positive vertical distance (0.1 m, rolling over).
/// Elliptical (0x14): byte 2 positive vertical distance, byte 3 strides. Rower (0x16): byte 3
/// strokes. Climber (0x17): byte 3 stride cycles. Nordic skier (0x18): byte 3 strides. All but the
/// treadmill carry the instantaneous power in bytes 5-6 (W, 0xFFFF invalid).
public struct ANTFEEquipmentPage: Hashable, Sendable {
    public var cadence: UInt8?
    public var power: UInt16?
    /// Strides, strokes or stride cycles, rolling over at 256 (nil on pages without them).
    public var count: UInt8?
    /// Rolling 0.1 m units (treadmill and elliptical).
    public var positiveVerticalDistance: UInt8?
    public var negativeVerticalDistance: UInt8?
    public var status: ANTFitnessEquipmentStatus

    public init(cadence: UInt8? = nil, power: UInt16? = nil, count: UInt8? = nil, positiveVerticalDistance: UInt8? = nil,
                negativeVerticalDistance: UInt8? = nil, status: ANTFitnessEquipmentStatus) {
        self.cadence = cadence
        self.power = power
        self.count = count
        self.positiveVerticalDistance = positiveVerticalDistance
        self.negativeVerticalDistance = negativeVerticalDistance
        self.status = status
    }
}

/// Page 0x19, specific trainer or stationary bike data. Byte 1 event count, byte 2 cadence (rpm,
/// 0xFF invalid), bytes 3-4 accumulated power (W, rolls over at 65536), bytes 5-6 bits 0-11
/// instantaneous power (W, 0xFFF invalid), byte 6 bits 4-7 trainer status (bit 4 power calibration
/// required, 5 resistance calibration required, 6 user configuration required), byte 7 flags
/// (bits 0-1 target power limits: 0 at target, 1 speed too low, 2 too high, 3 undetermined).
public struct ANTFETrainerPage: Hashable, Sendable {
    public var eventCount: UInt8
    public var cadence: UInt8?
    public var accumulatedPower: UInt16
    public var instantaneousPower: UInt16?
    public var trainerStatus: UInt8
    public var status: ANTFitnessEquipmentStatus

    public init(eventCount: UInt8, cadence: UInt8? = nil, accumulatedPower: UInt16, instantaneousPower: UInt16? = nil,
                trainerStatus: UInt8, status: ANTFitnessEquipmentStatus) {
        self.eventCount = eventCount
        self.cadence = cadence
        self.accumulatedPower = accumulatedPower
        self.instantaneousPower = instantaneousPower
        self.trainerStatus = trainerStatus
        self.status = status
    }
}

/// Page 0x1A, specific trainer torque data. Byte 1 event count, byte 2 wheel ticks, bytes 3-4 wheel
/// period (1/2048 s), bytes 5-6 accumulated torque (1/32 N·m), all rolling over.
public struct ANTFETorquePage: Hashable, Sendable {
    public var eventCount: UInt8
    public var wheelTicks: UInt8
    public var wheelPeriod: UInt16
    public var accumulatedTorque: UInt16
    public var status: ANTFitnessEquipmentStatus

    public init(eventCount: UInt8, wheelTicks: UInt8, wheelPeriod: UInt16, accumulatedTorque: UInt16, status: ANTFitnessEquipmentStatus) {
        self.eventCount = eventCount
        self.wheelTicks = wheelTicks
        self.wheelPeriod = wheelPeriod
        self.accumulatedTorque = accumulatedTorque
        self.status = status
    }
}

/// A fitness equipment page (device type 17).
public enum ANTFitnessEquipmentPage: Hashable, Sendable {
    /// 0x01 calibration request or response, 0x02 calibration in progress. Identified only.
    case calibration(page: UInt8, bytes: [UInt8])
    case general(ANTFEGeneralPage)
    case generalSettings(ANTFEGeneralSettingsPage)
    case metabolic(ANTFEMetabolicPage)
    case treadmill(ANTFEEquipmentPage)
    case elliptical(ANTFEEquipmentPage)
    case stationaryBike(ANTFEEquipmentPage)
    case rower(ANTFEEquipmentPage)
    case climber(ANTFEEquipmentPage)
    case nordicSkier(ANTFEEquipmentPage)
    case trainer(ANTFETrainerPage)
    case trainerTorque(ANTFETorquePage)
    /// 0x30: total resistance in percent (byte 7, 0.5 %).
    case basicResistance(percent: Double)
    /// 0x31: target power in watts (bytes 6-7, 0.25 W).
    case targetPower(watts: Double)
    /// 0x32: wind resistance coefficient (byte 5, 0.01 kg/m), wind speed (byte 6, km/h offset by
    /// 127), drafting factor (byte 7, 0.01); nil when 0xFF.
    case windResistance(coefficient: Double?, windSpeed: Double?, draftingFactor: Double?)
    /// 0x33: grade in percent (bytes 5-6, 0.01 % offset by −200 %) and rolling resistance
    /// coefficient (byte 7, 5·10⁻⁵); nil when invalid.
    case trackResistance(grade: Double?, rollingResistance: Double?)
    /// 0x36: maximum resistance in newtons (bytes 5-6, nil when 0xFFFF) and the supported modes
    /// (byte 7: 0x01 basic resistance, 0x02 target power, 0x04 simulation).
    case capabilities(maximumResistance: UInt16?, supportedModes: UInt8)
    /// 0x37: user configuration (user and bike weight, wheel, gear ratio). Identified only.
    case userConfiguration(bytes: [UInt8])
    /// 0x47: the answer to the last control command: its page number, sequence number, status
    /// (0 pass, 1 fail, 2 not supported, 3 rejected, 4 pending, 0xFF none yet) and data bytes.
    case commandStatus(lastCommand: UInt8, sequence: UInt8, status: UInt8, data: [UInt8])
    case common(ANTPlusCommonPage)

    /// Decodes an 8-byte page; a page number the profile does not define is an error.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        let type = ANTPlusDeviceType.fitnessEquipment
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: type, .wrongLength(p.count)) }
        let status = ANTFitnessEquipmentStatus(p[7])
        func valid8(_ b: UInt8) -> UInt8? { b == 0xFF ? nil : b }
        func valid16(_ v: UInt16) -> UInt16? { v == 0xFFFF ? nil : v }
        func equipment(count: UInt8? = nil, power: Bool = true, positive: UInt8? = nil, negative: UInt8? = nil) -> ANTFEEquipmentPage {
            ANTFEEquipmentPage(cadence: valid8(p[4]), power: power ? valid16(le16(p, 5)) : nil, count: count,
                               positiveVerticalDistance: positive, negativeVerticalDistance: negative, status: status)
        }
        switch p[0] {
        case 0x01, 0x02: return .calibration(page: p[0], bytes: p)
        case 0x10:
            return .general(ANTFEGeneralPage(equipmentType: ANTFitnessEquipmentType(p[1]), elapsedTime: Double(p[2]) / 4, distance: p[3],
                                             speed: valid16(le16(p, 4)).map { Double($0) / 1000 }, heartRate: valid8(p[6]), status: status))
        case 0x11:
            let incline = le16(p, 4)
            return .generalSettings(ANTFEGeneralSettingsPage(cycleLength: valid8(p[3]).map { Double($0) / 100 },
                                                             incline: incline == 0x7FFF ? nil : Double(Int16(bitPattern: incline)) / 100,
                                                             resistance: valid8(p[6]).map { Double($0) / 2 }, status: status))
        case 0x12:
            return .metabolic(ANTFEMetabolicPage(metabolicEquivalents: valid16(le16(p, 2)).map { Double($0) / 100 },
                                                 calorieRate: valid16(le16(p, 4)).map { Double($0) / 10 }, accumulatedCalories: p[6],
                                                 status: status))
        case 0x13: return .treadmill(equipment(power: false, positive: p[6], negative: p[5]))
        case 0x14: return .elliptical(equipment(count: p[3], positive: p[2]))
        case 0x15: return .stationaryBike(equipment())
        case 0x16: return .rower(equipment(count: p[3]))
        case 0x17: return .climber(equipment(count: p[3]))
        case 0x18: return .nordicSkier(equipment(count: p[3]))
        case 0x19:
            let power = le16(p, 5) & 0x0FFF
            return .trainer(ANTFETrainerPage(eventCount: p[1], cadence: valid8(p[2]), accumulatedPower: le16(p, 3),
                                             instantaneousPower: power == 0x0FFF ? nil : power, trainerStatus: p[6] >> 4, status: status))
        case 0x1A:
            return .trainerTorque(ANTFETorquePage(eventCount: p[1], wheelTicks: p[2], wheelPeriod: le16(p, 3), accumulatedTorque: le16(p,
                5),
                                                  status: status))
        case 0x30: return .basicResistance(percent: Double(p[7]) / 2)
        case 0x31: return .targetPower(watts: Double(le16(p, 6)) / 4)
        case 0x32:
            return .windResistance(coefficient: valid8(p[5]).map { Double($0) / 100 }, windSpeed: valid8(p[6]).map { Double($0) - 127 },
                                   draftingFactor: valid8(p[7]).map { Double($0) / 100 })
        case 0x33:
            return .trackResistance(grade: valid16(le16(p, 5)).map { Double($0) / 100 - 200 },
                                    rollingResistance: valid8(p[7]).map { Double($0) * 5e-5 })
        case 0x36: return .capabilities(maximumResistance: valid16(le16(p, 5)), supportedModes: p[7])
        case 0x37: return .userConfiguration(bytes: p)
        case 0x47: return .commandStatus(lastCommand: p[1], sequence: p[2], status: p[3], data: Array(p[4...7]))
        default:
            guard let common = ANTPlusCommonPage.decode(p) else { throw ANTPlusDecodeError(deviceType: type, .unknownPage(p[0])) }
            return .common(common)
        }
    }
}

/// What a fitness equipment channel reports: every field known so far. Nil fields were never sent
/// (or were sent as invalid).
public struct ANTFitnessEquipmentState: Hashable, Sendable {
    public var equipmentType: ANTFitnessEquipmentType?
    public var machineState: ANTFitnessEquipmentMachineState?
    /// Seconds counted while in use, since the first page.
    public var elapsedSeconds: Double?
    /// Metres counted while in use, since the first page (when the equipment reports distance).
    public var distanceMeters: Double?
    public var speedMetersPerSecond: Double?
    public var heartRate: Int?
    public var powerWatts: Double?
    /// Revolutions, strides or strokes per minute, depending on the equipment.
    public var cadence: Double?
    /// Kilocalories counted while in use, since the first metabolic page.
    public var kilocalories: Double?
    public var metabolicEquivalents: Double?
    public var calorieRateKilocaloriesPerHour: Double?
    public var inclinePercent: Double?
    public var resistancePercent: Double?

    public init() {}
}

/// Folds fitness equipment pages into an `ANTFitnessEquipmentState`.
///
/// Rules:
/// - Elapsed time (0.25 s units rolling over at 64 s), distance (m, rolling over at 256 m) and
///   calories (kcal, rolling over at 256) add up the differences between consecutive pages, only
///   while the machine stays in the same state and that state is "in use" (or unreported): a
///   machine that starts a new session resets its counters, which must not count as progress.
/// - A gap over 60 s (elapsed time, calories) or 15 s (distance: 256 m take 18 s at 50 km/h)
///   since the previous page of that kind starts a new baseline.
/// - Trainer power (0x19) is the average since the previous event (accumulated power difference /
///   event count difference), or the instantaneous power for the first page, after a gap, or when
///   the average is above 5000 W. A repeated event count keeps the last power.
public struct ANTFitnessEquipmentCalculator: Hashable, Sendable {
    private struct General: Hashable, Sendable {
        var elapsed: UInt8
        var distance: UInt8
        var state: ANTFitnessEquipmentMachineState
        var at: Double
    }

    private struct Calories: Hashable, Sendable {
        var value: UInt8
        var state: ANTFitnessEquipmentMachineState
        var at: Double
    }

    private struct Trainer: Hashable, Sendable {
        var count: UInt8
        var accumulated: UInt16
        var at: Double
    }

    /// Everything known so far.
    public private(set) var state = ANTFitnessEquipmentState()
    private var general: General?
    private var calories: Calories?
    private var trainer: Trainer?

    public init() {}

    /// The state after `page`, or nil for pages that carry no data (control and calibration pages,
    /// common pages).
    public mutating func update(_ page: ANTFitnessEquipmentPage, at now: Double) -> ANTFitnessEquipmentState? {
        switch page {
        case .general(let p):
            let raw = UInt8(p.elapsedTime * 4)
            state.equipmentType = p.equipmentType
            state.machineState = p.status.state
            state.speedMetersPerSecond = p.speed
            state.heartRate = p.heartRate.flatMap { $0 == 0 ? nil : Int($0) }
            if let previous = general, counting(previous.state, p.status.state) {
                if isWithin(now - previous.at, 60) {
                    state.elapsedSeconds = (state.elapsedSeconds ?? 0) + Double(delta(raw, previous.elapsed, modulus: 256)) / 4
                }
                if p.distanceEnabled, isWithin(now - previous.at, 15) {
                    state.distanceMeters = (state.distanceMeters ?? 0) + Double(delta(p.distance, previous.distance, modulus: 256))
                }
            }
            if state.elapsedSeconds == nil { state.elapsedSeconds = 0 }
            if p.distanceEnabled, state.distanceMeters == nil { state.distanceMeters = 0 }
            general = General(elapsed: raw, distance: p.distance, state: p.status.state, at: now)
        case .generalSettings(let p):
            state.machineState = p.status.state
            state.inclinePercent = p.incline
            state.resistancePercent = p.resistance
        case .metabolic(let p):
            state.machineState = p.status.state
            state.metabolicEquivalents = p.metabolicEquivalents
            state.calorieRateKilocaloriesPerHour = p.calorieRate
            if p.caloriesEnabled {
                if let previous = calories, counting(previous.state, p.status.state), isWithin(now - previous.at, 60) {
                    state.kilocalories = (state.kilocalories ?? 0) + Double(delta(p.accumulatedCalories, previous.value, modulus: 256))
                }
                if state.kilocalories == nil { state.kilocalories = 0 }
                calories = Calories(value: p.accumulatedCalories, state: p.status.state, at: now)
            }
        case .treadmill(let p), .elliptical(let p), .stationaryBike(let p), .rower(let p), .climber(let p), .nordicSkier(let p):
            state.machineState = p.status.state
            state.cadence = p.cadence.map(Double.init)
            if let power = p.power { state.powerWatts = Double(power) }
        case .trainer(let p):
            state.machineState = p.status.state
            state.cadence = p.cadence.map(Double.init)
            let previous = trainer
            trainer = Trainer(count: p.eventCount, accumulated: p.accumulatedPower, at: now)
            if let previous, isWithin(now - previous.at, 60) {
                let events = delta(p.eventCount, previous.count, modulus: 256)
                if events == 0 { break }
                let average = Double(delta(p.accumulatedPower, previous.accumulated, modulus: 65_536)) / Double(events)
                state.powerWatts = average <= 5000 ? average : p.instantaneousPower.map(Double.init)
            } else {
                state.powerWatts = p.instantaneousPower.map(Double.init)
            }
        case .trainerTorque(let p):
            state.machineState = p.status.state
        default:
            return nil
        }
        return state
    }

    /// Counters advance between two pages in `previous` and `current` state.
    private func counting(_ previous: ANTFitnessEquipmentMachineState, _ current: ANTFitnessEquipmentMachineState) -> Bool {
        guard previous == current else { return false }
        switch current {
        case .inUse, .reserved: return true
        default: return false
        }
    }
}
