/// The status byte of stride pages 2-15: use state (bits 0-1: 0 inactive, 1 active), health
/// (bits 2-3: 0 ok, 1 error, 2 warning), battery (bits 4-5: 0 new, 1 good, 2 ok, 3 low), location
/// (bits 6-7: 0 laces, 1 midsole, 2 other, 3 ankle).
public struct ANTStrideStatus: Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public var isActive: Bool { rawValue & 0x03 == 1 }
    public var health: UInt8 { (rawValue >> 2) & 0x03 }
    public var battery: UInt8 { (rawValue >> 4) & 0x03 }
    public var location: UInt8 { rawValue >> 6 }
}

/// Page 1 of a stride-based speed and distance monitor (foot pod): the running totals.
///
/// Byte 1 time fraction (1/200 s), byte 2 whole seconds (rolls over at 256 s), byte 3 whole metres
/// (rolls over at 256 m), byte 4 bits 4-7 distance fraction (1/16 m) and bits 0-3 whole m/s, byte 5
/// speed fraction (1/256 m/s), byte 6 stride count (rolls over at 256), byte 7 update latency
/// (1/32 s).
public struct ANTStrideSpeedDistancePage: Hashable, Sendable {
    /// Seconds, modulo 256.
    public var time: Double
    /// Metres, modulo 256.
    public var distance: Double
    public var speed: Double
    /// Strides (a stride is two steps), modulo 256.
    public var strideCount: UInt8
    /// Seconds between the computation and the transmission.
    public var updateLatency: Double

    public init(time: Double, distance: Double, speed: Double, strideCount: UInt8, updateLatency: Double) {
        self.time = time
        self.distance = distance
        self.speed = speed
        self.strideCount = strideCount
        self.updateLatency = updateLatency
    }
}

/// Pages 2-15: instantaneous cadence and speed. Byte 3 whole strides per minute, byte 4 bits 4-7
/// cadence fraction (1/16) and bits 0-3 whole m/s, byte 5 speed fraction (1/256 m/s), byte 7
/// status. Page 3 adds byte 6, the calories burnt (kcal, rolling over at 256).
public struct ANTStrideCadencePage: Hashable, Sendable {
    /// Strides per minute (a stride is two steps).
    public var cadence: Double
    public var speed: Double
    public var status: ANTStrideStatus

    public init(cadence: Double, speed: Double, status: ANTStrideStatus) {
        self.cadence = cadence
        self.speed = speed
        self.status = status
    }
}

/// A stride-based speed and distance monitor's page (device type 124).
public enum ANTStridePage: Hashable, Sendable {
    case speedDistance(ANTStrideSpeedDistancePage)
    /// Page 2 (the base supplementary page) or 4-15.
    case cadence(page: UInt8, ANTStrideCadencePage)
    /// Page 3: cadence, speed and calories.
    case calories(ANTStrideCadencePage, kilocalories: UInt8)
    /// Page 16: strides (24 bits, bytes 1-3) and distance (bytes 4-7, 1/256 m) since the battery
    /// was changed.
    case distanceAndStridesSinceReset(strides: UInt32, distance: Double)
    /// Page 22: which fields the monitor sends (byte 1: 0x01 time, 0x02 distance, 0x04 speed,
    /// 0x08 latency, 0x10 cadence, 0x20 calories).
    case capabilities(UInt8)
    case common(ANTPlusCommonPage)

    /// Decodes an 8-byte page; a page number the profile does not define is an error.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        let type = ANTPlusDeviceType.strideSpeedDistance
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: type, .wrongLength(p.count)) }
        let cadence = ANTStrideCadencePage(cadence: Double(p[3]) + Double(p[4] >> 4) / 16,
                                           speed: Double(p[4] & 0x0F) + Double(p[5]) / 256, status: ANTStrideStatus(rawValue: p[7]))
        switch p[0] {
        case 1:
            return .speedDistance(ANTStrideSpeedDistancePage(time: Double(p[2]) + Double(p[1]) / 200,
                                                             distance: Double(p[3]) + Double(p[4] >> 4) / 16,
                                                             speed: Double(p[4] & 0x0F) + Double(p[5]) / 256,
                                                             strideCount: p[6], updateLatency: Double(p[7]) / 32))
        case 3: return .calories(cadence, kilocalories: p[6])
        case 2, 4...15: return .cadence(page: p[0], cadence)
        case 16: return .distanceAndStridesSinceReset(strides: le24(p, 1), distance: Double(le32(p, 4)) / 256)
        case 22: return .capabilities(p[1])
        default:
            guard let common = ANTPlusCommonPage.decode(p) else { throw ANTPlusDecodeError(deviceType: type, .unknownPage(p[0])) }
            return .common(common)
        }
    }
}

/// Speed, cadence, distance and strides from successive stride pages.
///
/// Rules:
/// - Speed is the page's instantaneous speed (pages 1-15).
/// - Cadence is reported in steps per minute: the monitor's strides per minute times two (a
///   stride is one step of each foot).
/// - Distance and strides accumulate the differences of page 1's rolling fields (256 m, 256
///   strides) from the first page 1. After more than `maximumGap` seconds without a page 1 the
///   next one is a new baseline (a rollover could have been missed: 256 m take about 21 s at
///   12 m/s).
public struct ANTStrideCalculator: Hashable, Sendable {
    /// What one page contributes; nil fields are not carried by that page.
    public struct Output: Hashable, Sendable {
        public var speed: Double?
        public var stepsPerMinute: Double?
        public var distance: Double?
        public var strides: Int?

        public init(speed: Double? = nil, stepsPerMinute: Double? = nil, distance: Double? = nil, strides: Int? = nil) {
            self.speed = speed
            self.stepsPerMinute = stepsPerMinute
            self.distance = distance
            self.strides = strides
        }
    }

    /// Seconds without page 1 after which its rolling fields start a new baseline.
    public var maximumGap: Double = 20

    private var lastDistance = 0.0
    private var lastStrides: UInt8 = 0
    private var lastAt: Double?
    /// Metres since the first page 1.
    public private(set) var distance = 0.0
    /// Strides since the first page 1.
    public private(set) var strides = 0

    public init() {}

    /// What `page` reports, or nil for pages without speed or cadence (16, 22, common pages).
    public mutating func update(_ page: ANTStridePage, at now: Double) -> Output? {
        switch page {
        case .speedDistance(let p):
            if let lastAt, isWithin(now - lastAt, maximumGap) {
                var step = (p.distance - lastDistance).truncatingRemainder(dividingBy: 256)
                if step < 0 { step += 256 }
                distance += step
                strides += delta(p.strideCount, lastStrides, modulus: 256)
            }
            lastDistance = p.distance
            lastStrides = p.strideCount
            lastAt = now
            return Output(speed: p.speed, stepsPerMinute: nil, distance: distance, strides: strides)
        case .cadence(_, let p), .calories(let p, _):
            return Output(speed: p.speed, stepsPerMinute: p.cadence * 2, distance: nil, strides: nil)
        default:
            return nil
        }
    }
}
