/// Page 0x10, standard power only: what every power meter sends.
///
/// Byte 1 event count (rolls over at 256), byte 2 pedal power (bit 7 set: the share of the right
/// pedal; bits 0-6 percent; 0xFF: not used), byte 3 instantaneous cadence (0xFF: invalid), bytes 4-5
/// accumulated power (W, rolls over at 65536), bytes 6-7 instantaneous power (W).
public struct ANTStandardPowerPage: Hashable, Sendable {
    public var eventCount: UInt8
    /// The raw pedal power byte.
    public var pedalPower: UInt8
    public var instantaneousCadence: UInt8?
    public var accumulatedPower: UInt16
    public var instantaneousPower: UInt16

    public init(eventCount: UInt8, pedalPower: UInt8, instantaneousCadence: UInt8? = nil, accumulatedPower: UInt16,
                instantaneousPower: UInt16) {
        self.eventCount = eventCount
        self.pedalPower = pedalPower
        self.instantaneousCadence = instantaneousCadence
        self.accumulatedPower = accumulatedPower
        self.instantaneousPower = instantaneousPower
    }

    /// The pedal power percentage (bits 0-6), nil when the byte is 0xFF (not used) or above 100.
    public var pedalPowerPercent: UInt8? {
        pedalPower == 0xFF || pedalPower & 0x7F > 100 ? nil : pedalPower & 0x7F
    }

    /// The right pedal's share of the power in percent, when the meter says it is the right one
    /// (bit 7); nil when it cannot tell the pedals apart or the field is not used.
    public var rightPedalPercent: UInt8? {
        pedalPower & 0x80 != 0 ? pedalPowerPercent : nil
    }
}

/// Pages 0x11 (wheel torque) and 0x12 (crank torque).
///
/// Byte 1 event count, byte 2 wheel or crank ticks (revolutions, rolling over at 256), byte 3
/// instantaneous cadence (0xFF: invalid), bytes 4-5 accumulated period (1/2048 s), bytes 6-7
/// accumulated torque (1/32 N·m); all little-endian and rolling over.
public struct ANTTorquePage: Hashable, Sendable {
    public var eventCount: UInt8
    public var ticks: UInt8
    public var instantaneousCadence: UInt8?
    public var period: UInt16
    public var accumulatedTorque: UInt16

    public init(eventCount: UInt8, ticks: UInt8, instantaneousCadence: UInt8? = nil, period: UInt16, accumulatedTorque: UInt16) {
        self.eventCount = eventCount
        self.ticks = ticks
        self.instantaneousCadence = instantaneousCadence
        self.period = period
        self.accumulatedTorque = accumulatedTorque
    }
}

/// Page 0x13, torque effectiveness and pedal smoothness, in percent (0.5 % units on the wire;
/// nil when 0xFF). Byte 2/3 left/right torque effectiveness, byte 4/5 left/right pedal smoothness;
/// byte 5 = 0xFE means byte 4 holds the combined smoothness of both pedals.
public struct ANTTorqueEffectivenessPage: Hashable, Sendable {
    public var eventCount: UInt8
    public var leftTorqueEffectiveness: Double?
    public var rightTorqueEffectiveness: Double?
    /// The left pedal's smoothness, or both pedals' when `combinedPedalSmoothness`.
    public var leftPedalSmoothness: Double?
    public var rightPedalSmoothness: Double?
    public var combinedPedalSmoothness: Bool

    public init(eventCount: UInt8, leftTorqueEffectiveness: Double? = nil, rightTorqueEffectiveness: Double? = nil,
                leftPedalSmoothness: Double? = nil, rightPedalSmoothness: Double? = nil, combinedPedalSmoothness: Bool) {
        self.eventCount = eventCount
        self.leftTorqueEffectiveness = leftTorqueEffectiveness
        self.rightTorqueEffectiveness = rightTorqueEffectiveness
        self.leftPedalSmoothness = leftPedalSmoothness
        self.rightPedalSmoothness = rightPedalSmoothness
        self.combinedPedalSmoothness = combinedPedalSmoothness
    }
}

/// Page 0x20, crank torque frequency (SRM). Its fields are big-endian: byte 1 event count, bytes
/// 2-3 slope (1/10 N·m/Hz), bytes 4-5 time stamp (1/2000 s), bytes 6-7 torque ticks stamp. Power
/// needs the zero offset from a calibration, so this module decodes the page without a reading.
public struct ANTCrankTorqueFrequencyPage: Hashable, Sendable {
    public var eventCount: UInt8
    public var slope: UInt16
    public var timeStamp: UInt16
    public var torqueTicksStamp: UInt16

    public init(eventCount: UInt8, slope: UInt16, timeStamp: UInt16, torqueTicksStamp: UInt16) {
        self.eventCount = eventCount
        self.slope = slope
        self.timeStamp = timeStamp
        self.torqueTicksStamp = torqueTicksStamp
    }
}

/// A bike power meter's page (device type 11).
public enum ANTPowerPage: Hashable, Sendable {
    /// 0x01, calibration request or response: byte 1 is the calibration ID (0xAA request, 0xAC
    /// success, 0xAF failure, 0x10 crank torque frequency, ...). Identified only.
    case calibration(calibrationID: UInt8, bytes: [UInt8])
    /// 0x02, get/set parameters: byte 1 is the subpage. Identified only.
    case parameters(subpage: UInt8, bytes: [UInt8])
    /// 0x03, measurement output. Identified only.
    case measurementOutput(bytes: [UInt8])
    case standardPower(ANTStandardPowerPage)
    case wheelTorque(ANTTorquePage)
    case crankTorque(ANTTorquePage)
    case torqueEffectivenessAndPedalSmoothness(ANTTorqueEffectivenessPage)
    case crankTorqueFrequency(ANTCrankTorqueFrequencyPage)
    case common(ANTPlusCommonPage)

    /// Decodes an 8-byte page; a page number the profile does not define is an error.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        let type = ANTPlusDeviceType.bikePower
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: type, .wrongLength(p.count)) }
        switch p[0] {
        case 0x01: return .calibration(calibrationID: p[1], bytes: p)
        case 0x02: return .parameters(subpage: p[1], bytes: p)
        case 0x03: return .measurementOutput(bytes: p)
        case 0x10:
            return .standardPower(ANTStandardPowerPage(eventCount: p[1], pedalPower: p[2], instantaneousCadence: p[3] == 0xFF ? nil : p[3],
                                                       accumulatedPower: le16(p, 4), instantaneousPower: le16(p, 6)))
        case 0x11, 0x12:
            let page = ANTTorquePage(eventCount: p[1], ticks: p[2], instantaneousCadence: p[3] == 0xFF ? nil : p[3], period: le16(p, 4),
                                     accumulatedTorque: le16(p, 6))
            return p[0] == 0x11 ? .wheelTorque(page) : .crankTorque(page)
        case 0x13:
            func percent(_ b: UInt8) -> Double? { b == 0xFF ? nil : Double(b) / 2 }
            let combined = p[5] == 0xFE
            return .torqueEffectivenessAndPedalSmoothness(
                ANTTorqueEffectivenessPage(eventCount: p[1], leftTorqueEffectiveness: percent(p[2]),
                                           rightTorqueEffectiveness: percent(p[3]),
                                           leftPedalSmoothness: percent(p[4]), rightPedalSmoothness: combined ? nil : percent(p[5]),
                                           combinedPedalSmoothness: combined))
        case 0x20:
            return .crankTorqueFrequency(ANTCrankTorqueFrequencyPage(eventCount: p[1], slope: be16(p, 2), timeStamp: be16(p, 4),
                                                                     torqueTicksStamp: be16(p, 6)))
        default:
            guard let common = ANTPlusCommonPage.decode(p) else { throw ANTPlusDecodeError(deviceType: type, .unknownPage(p[0])) }
            return .common(common)
        }
    }
}

/// Power, cadence and (from wheel torque) speed and distance from successive power pages.
///
/// Rules:
/// - 0x10 standard power: a new event count gives the average power since the previous event,
///   accumulated power difference / event count difference (both rolling over), which stays right
///   when messages are missed; the first page, or one after more than 60 s (the count wraps),
///   gives the instantaneous power. Cadence is the page's instantaneous cadence; the balance is the
///   right pedal's share when the meter reports it.
/// - 0x12 crank torque: P = 128π·Δtorque/Δperiod W (equivalently π·(Δtorque/(32·Δcount))·
///   (2048·60·Δcount/Δperiod)/30), cadence = 60·2048·Δcount/Δperiod rpm. An event count that moved
///   with an unchanged period is a meter reporting while the crank stands still: 0 W, 0 rpm.
/// - 0x11 wheel torque: power by the same formula; speed = circumference·2048·Δcount/Δperiod m/s,
///   distance grows by Δticks·circumference; cadence is the page's instantaneous cadence.
/// - Meters that send torque pages also send 0x10 pages; while torque pages arrive (within the
///   last 5 s) the 0x10 pages only update the balance, so one power stream is reported.
/// - A page without a new event repeats the last values until 3 s passed without one, then
///   reports 0 W (and 0 rpm, 0 m/s): the rider stopped.
/// - Above 300 rpm, 40 m/s or 5000 W a torque page is taken as a counter reset or corrupted
///   page: new baseline, no reading.
public struct ANTPowerCalculator: Hashable, Sendable {
    /// A reading: power in watts, cadence in rpm, the right pedal's share in percent, and for
    /// wheel torque the speed (m/s) and distance (m).
    public struct Output: Hashable, Sendable {
        public var watts: Double
        public var cadence: Double?
        public var rightPedalPercent: Double?
        public var speed: Double?
        public var distance: Double?

        public init(watts: Double, cadence: Double? = nil, rightPedalPercent: Double? = nil, speed: Double? = nil,
                    distance: Double? = nil) {
            self.watts = watts
            self.cadence = cadence
            self.rightPedalPercent = rightPedalPercent
            self.speed = speed
            self.distance = distance
        }
    }

    private struct Standard: Hashable, Sendable {
        var count: UInt8
        var accumulated: UInt16
        var at: Double
    }

    private struct Torque: Hashable, Sendable {
        var count: UInt8
        var ticks: UInt8
        var period: UInt16
        var torque: UInt16
        var at: Double
    }

    public var wheelCircumference: Double
    /// Seconds without a new event after which the power (and cadence, speed) is 0.
    public var stopTimeout: Double = 3
    /// Above this (rpm), a torque page is a counter reset or a corrupted page.
    public var maximumCadence: Double = 300
    /// Above this (m/s), a wheel torque page is a counter reset or a corrupted page.
    public var maximumSpeed: Double = 40
    /// Above this (W), a torque page is a counter reset or a corrupted page; an average above it
    /// falls back to the instantaneous power.
    public var maximumPower: Double = 5000
    /// Seconds between events after which the 8-bit event count is ambiguous.
    public var maximumGap: Double = 60

    private var lastStandard: Standard?
    private var lastWheel: Torque?
    private var lastCrank: Torque?
    private var torquePageAt: Double?
    private var lastEventAt = 0.0
    private var last: Output?
    private var balance: Double?
    /// Metres from wheel torque since the first page.
    public private(set) var distance = 0.0

    public init(wheelCircumference: Double = 2.096) {
        self.wheelCircumference = wheelCircumference
    }

    /// The reading after `page`, or nil when there is none yet (or the page carries no power).
    public mutating func update(_ page: ANTPowerPage, at now: Double) -> Output? {
        switch page {
        case .standardPower(let p): return standard(p, now)
        case .crankTorque(let p): return torque(p, wheel: false, now)
        case .wheelTorque(let p): return torque(p, wheel: true, now)
        default: return nil
        }
    }

    private mutating func standard(_ p: ANTStandardPowerPage, _ now: Double) -> Output? {
        balance = p.rightPedalPercent.map(Double.init)
        let previous = lastStandard
        lastStandard = Standard(count: p.eventCount, accumulated: p.accumulatedPower, at: now)
        if let torquePageAt, isWithin(now - torquePageAt, 5) { return nil }
        let cadence = p.instantaneousCadence.map(Double.init)
        guard let previous, isWithin(now - previous.at, maximumGap) else {
            return emit(Double(p.instantaneousPower), cadence, now)
        }
        let events = delta(p.eventCount, previous.count, modulus: 256)
        if events == 0 { return repeated(now) }
        let average = Double(delta(p.accumulatedPower, previous.accumulated, modulus: 65_536)) / Double(events)
        return emit(average <= maximumPower ? average : Double(p.instantaneousPower), cadence, now)
    }

    private mutating func torque(_ p: ANTTorquePage, wheel: Bool, _ now: Double) -> Output? {
        torquePageAt = now
        let current = Torque(count: p.eventCount, ticks: p.ticks, period: p.period, torque: p.accumulatedTorque, at: now)
        let previous = wheel ? lastWheel : lastCrank
        if let previous, previous.count == current.count { return repeated(now) }
        if wheel { lastWheel = current } else { lastCrank = current }
        // The first page, or events after a long silence: a baseline only.
        guard let previous, isWithin(now - previous.at, maximumGap) else { return nil }
        let events = delta(current.count, previous.count, modulus: 256)
        let ticks = delta(current.ticks, previous.ticks, modulus: 256)
        let period = delta(current.period, previous.period, modulus: 65_536)
        let torque = delta(current.torque, previous.torque, modulus: 65_536)
        var out: Output
        if period == 0 {
            // Events without rotation: the meter reports while the crank or wheel stands still.
            out = Output(watts: 0, cadence: wheel ? nil : 0, rightPedalPercent: balance, speed: wheel ? 0 : nil)
        } else {
            let watts = 128 * Double.pi * Double(torque) / Double(period)
            let rate = Double(events) * 2048 / Double(period)
            out = Output(watts: watts, cadence: wheel ? p.instantaneousCadence.map(Double.init) : rate * 60, rightPedalPercent: balance,
                         speed: wheel ? rate * wheelCircumference : nil)
            if watts > maximumPower || (out.cadence ?? 0) > maximumCadence || (out.speed ?? 0) > maximumSpeed { return nil }
        }
        if wheel {
            distance += Double(ticks) * wheelCircumference
            out.distance = distance
        }
        lastEventAt = now
        last = out
        return out
    }

    private mutating func emit(_ watts: Double, _ cadence: Double?, _ now: Double) -> Output {
        let out = Output(watts: watts, cadence: cadence, rightPedalPercent: balance)
        lastEventAt = now
        last = out
        return out
    }

    /// No new event: the last reading, or zeros once `stopTimeout` passed.
    private mutating func repeated(_ now: Double) -> Output? {
        guard var out = last else { return nil }
        if now - lastEventAt >= stopTimeout {
            out.watts = 0
            if out.cadence != nil { out.cadence = 0 }
            if out.speed != nil { out.speed = 0 }
            last = out
        }
        return out
    }
}
