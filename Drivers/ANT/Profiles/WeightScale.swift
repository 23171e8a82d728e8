/// A weight scale value: a number, or one of the two markers the scale sends instead.
public enum ANTScaleValue: Hashable, Sendable {
    case value(Double)
    /// 0xFFFE (0xFE for one-byte fields): the scale is still measuring.
    case computing
    /// 0xFFFF (0xFF): no value.
    case invalid

    /// The number, nil for the markers.
    public var number: Double? {
        if case .value(let v) = self { return v }
        return nil
    }

    init(_ raw: UInt16, divisor: Double) {
        switch raw {
        case 0xFFFE: self = .computing
        case 0xFFFF: self = .invalid
        default: self = .value(Double(raw) / divisor)
        }
    }

    init(byte raw: UInt8, divisor: Double) {
        switch raw {
        case 0xFE: self = .computing
        case 0xFF: self = .invalid
        default: self = .value(Double(raw) / divisor)
        }
    }
}

/// Page 58 of a weight scale: the user profile it uses. Byte 5 bit 7 gender (1 male), bits 0-6
/// age; byte 6 height in cm; byte 7 bit 7 athlete, bits 0-2 activity level.
public struct ANTWeightScaleUserProfile: Hashable, Sendable {
    public var userProfile: UInt16
    public var capabilities: UInt8
    public var male: Bool
    public var age: UInt8
    public var heightCentimeters: UInt8
    public var athlete: Bool
    public var activityLevel: UInt8

    public init(userProfile: UInt16, capabilities: UInt8, male: Bool, age: UInt8, heightCentimeters: UInt8, athlete: Bool,
                activityLevel: UInt8) {
        self.userProfile = userProfile
        self.capabilities = capabilities
        self.male = male
        self.age = age
        self.heightCentimeters = heightCentimeters
        self.athlete = athlete
        self.activityLevel = activityLevel
    }
}

/// A weight scale's page (device type 119). Pages 1-4 start with the user profile number (bytes
/// 1-2, 0xFFFF: no profile selected).
public enum ANTWeightScalePage: Hashable, Sendable {
    /// Page 1: capabilities (byte 3: bit 0 user profile exchange, bit 1 ANT-FS, bit 7 a profile
    /// is selected) and body weight (bytes 6-7, 0.01 kg).
    case bodyWeight(userProfile: UInt16, capabilities: UInt8, weight: ANTScaleValue)
    /// Page 2: hydration (bytes 4-5) and body fat (bytes 6-7), in percent (0.01 %).
    case bodyComposition(userProfile: UInt16, hydration: ANTScaleValue, bodyFat: ANTScaleValue)
    /// Page 3: active (bytes 4-5) and basal (bytes 6-7) metabolic rate, in kcal (0.25 kcal).
    case metabolicInformation(userProfile: UInt16, activeMetabolicRate: ANTScaleValue, basalMetabolicRate: ANTScaleValue)
    /// Page 4: muscle mass (bytes 5-6, 0.01 kg) and bone mass (byte 7, 0.1 kg).
    case bodyMass(userProfile: UInt16, muscleMass: ANTScaleValue, boneMass: ANTScaleValue)
    /// Page 58.
    case userProfile(ANTWeightScaleUserProfile)
    case common(ANTPlusCommonPage)

    /// Decodes an 8-byte page; a page number the profile does not define is an error.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        let type = ANTPlusDeviceType.weightScale
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: type, .wrongLength(p.count)) }
        let profile = le16(p, 1)
        switch p[0] {
        case 1: return .bodyWeight(userProfile: profile, capabilities: p[3], weight: ANTScaleValue(le16(p, 6), divisor: 100))
        case 2:
            return .bodyComposition(userProfile: profile, hydration: ANTScaleValue(le16(p, 4), divisor: 100),
                                    bodyFat: ANTScaleValue(le16(p, 6), divisor: 100))
        case 3:
            return .metabolicInformation(userProfile: profile, activeMetabolicRate: ANTScaleValue(le16(p, 4), divisor: 4),
                                         basalMetabolicRate: ANTScaleValue(le16(p, 6), divisor: 4))
        case 4:
            return .bodyMass(userProfile: profile, muscleMass: ANTScaleValue(le16(p, 5), divisor: 100),
                             boneMass: ANTScaleValue(byte: p[7], divisor: 10))
        case 58:
            return .userProfile(ANTWeightScaleUserProfile(userProfile: profile, capabilities: p[3], male: p[5] & 0x80 != 0,
                                                          age: p[5] & 0x7F,
                                                          heightCentimeters: p[6], athlete: p[7] & 0x80 != 0, activityLevel: p[7] & 0x07))
        default:
            guard let common = ANTPlusCommonPage.decode(p) else { throw ANTPlusDecodeError(deviceType: type, .unknownPage(p[0])) }
            return .common(common)
        }
    }
}

/// One weight measurement, or body composition values added to it. Nil fields are not part of
/// this reading.
public struct ANTWeightReading: Hashable, Sendable {
    /// Numbers the measurements of one decoder from 1: body composition readings carry the number
    /// of the weight they belong to.
    public var measurement: Int
    /// The user profile the scale chose, nil when none (0xFFFF).
    public var userProfile: UInt16?
    public var weightKilograms: Double?
    public var hydrationPercent: Double?
    public var bodyFatPercent: Double?
    public var activeMetabolicRateKilocalories: Double?
    public var basalMetabolicRateKilocalories: Double?
    public var muscleMassKilograms: Double?
    public var boneMassKilograms: Double?

    public init(measurement: Int, userProfile: UInt16? = nil, weightKilograms: Double? = nil, hydrationPercent: Double? = nil,
                bodyFatPercent: Double? = nil, activeMetabolicRateKilocalories: Double? = nil,
                basalMetabolicRateKilocalories: Double? = nil, muscleMassKilograms: Double? = nil, boneMassKilograms: Double? = nil) {
        self.measurement = measurement
        self.userProfile = userProfile
        self.weightKilograms = weightKilograms
        self.hydrationPercent = hydrationPercent
        self.bodyFatPercent = bodyFatPercent
        self.activeMetabolicRateKilocalories = activeMetabolicRateKilocalories
        self.basalMetabolicRateKilocalories = basalMetabolicRateKilocalories
        self.muscleMassKilograms = muscleMassKilograms
        self.boneMassKilograms = boneMassKilograms
    }

    /// True when no measured field is set.
    var isEmpty: Bool {
        weightKilograms == nil && hydrationPercent == nil && bodyFatPercent == nil && activeMetabolicRateKilocalories == nil
            && basalMetabolicRateKilocalories == nil && muscleMassKilograms == nil && boneMassKilograms == nil
    }
}

/// Turns a scale's repeated pages into one reading per measurement.
///
/// Rules:
/// - A measurement starts with a final weight on page 1 (not 0xFFFE computing, not 0xFFFF
///   invalid). Its reading is emitted at once, with any body composition values already received.
/// - The scale repeats its pages: the same final weight is the same measurement until page 1
///   shows computing or invalid, the weight or the user profile changes, or no page 1 arrived for
///   `sameMeasurementGap` seconds (the scale slept); then the next final weight is a new one.
/// - Body composition pages (2, 3, 4) add their final values to the current measurement: each
///   value is emitted once, in a reading that holds only the new values and the measurement's
///   number. Values that arrive before the weight is final wait for it and go out with it.
public struct ANTWeightScaleTracker: Hashable, Sendable {
    private struct Weight: Hashable, Sendable {
        var profile: UInt16
        var kilograms: Double
    }

    /// Seconds without page 1 after which the same weight counts as a new measurement.
    public var sameMeasurementGap: Double = 30

    private var measurement = 0
    /// The weight that started the current measurement (nil between measurements).
    private var current: Weight?
    private var lastWeightPageAt: Double?
    /// Body composition values emitted for the current measurement, or waiting for its weight.
    private var composition = ANTWeightReading(measurement: 0)

    public init() {}

    /// The reading `page` adds, or nil when it adds nothing new.
    public mutating func update(_ page: ANTWeightScalePage, at now: Double) -> ANTWeightReading? {
        switch page {
        case .bodyWeight(let profile, _, let weight):
            let gap = lastWeightPageAt.map { !isWithin(now - $0, sameMeasurementGap) } ?? true
            lastWeightPageAt = now
            guard let kilograms = weight.number else {
                endMeasurement()
                return nil
            }
            let weight = Weight(profile: profile, kilograms: kilograms)
            if current == weight, !gap { return nil }
            if current != nil { endMeasurement() }
            measurement += 1
            current = weight
            var reading = composition
            reading.measurement = measurement
            reading.userProfile = profile == 0xFFFF ? nil : profile
            reading.weightKilograms = kilograms
            return reading
        case .bodyComposition(let profile, let hydration, let fat):
            return add(profile, [(\.hydrationPercent, hydration), (\.bodyFatPercent, fat)])
        case .metabolicInformation(let profile, let active, let basal):
            return add(profile, [(\.activeMetabolicRateKilocalories, active), (\.basalMetabolicRateKilocalories, basal)])
        case .bodyMass(let profile, let muscle, let bone):
            return add(profile, [(\.muscleMassKilograms, muscle), (\.boneMassKilograms, bone)])
        default:
            return nil
        }
    }

    private mutating func endMeasurement() {
        current = nil
        composition = ANTWeightReading(measurement: 0)
    }

    /// Records body composition values; returns the new ones when the weight is already out.
    private mutating func add(_ profile: UInt16, _ values: [(WritableKeyPath<ANTWeightReading, Double?>, ANTScaleValue)])
        -> ANTWeightReading?
    {
        if let current, current.profile != profile { return nil }
        var fresh = ANTWeightReading(measurement: measurement, userProfile: profile == 0xFFFF ? nil : profile)
        for (field, value) in values {
            guard let number = value.number, composition[keyPath: field] != number else { continue }
            composition[keyPath: field] = number
            fresh[keyPath: field] = number
        }
        guard current != nil, !fresh.isEmpty else { return nil }
        return fresh
    }
}
