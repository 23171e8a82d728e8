/// A heart rate monitor's data page (device type 120).
///
/// Every page ends with the same fields: bytes 4-5 the time of the last heart beat (1/1024 s,
/// rolling over every 64 s), byte 6 the beat count (rolling over at 256), byte 7 the computed heart
/// rate. Byte 0 holds the page number (bits 0-6) and a toggle bit (bit 7) that flips every 4
/// messages. Bytes 1-3 depend on the page. Legacy straps send only this format with bytes 0-3
/// undefined, so every page number decodes: an unknown one keeps its bytes 1-3 as `.other`.
public struct ANTHeartRatePage: Hashable, Sendable {
    public enum Content: Hashable, Sendable {
        /// Page 0: bytes 1-3 reserved.
        case `default`
        /// Page 1: time the strap has been on, 2 s units (bytes 1-3).
        case cumulativeOperatingTime(seconds: Double)
        /// Page 2: manufacturer ID (byte 1) and the upper 16 bits of the serial number (bytes 2-3;
        /// the lower 16 are the device number).
        case manufacturerInfo(manufacturerID: UInt8, serialNumberHigh: UInt16)
        /// Page 3: hardware version, software version, model number.
        case productInfo(hardwareVersion: UInt8, softwareVersion: UInt8, modelNumber: UInt8)
        /// Page 4: a manufacturer-specific byte and the time of the beat before the last one
        /// (bytes 2-3, 1/1024 s).
        case previousHeartBeat(manufacturerSpecific: UInt8, eventTime: UInt16)
        /// Page 5: swim interval summary: interval average and maximum, session average heart rate.
        case swimIntervalSummary(intervalAverage: UInt8, intervalMaximum: UInt8, sessionAverage: UInt8)
        /// Page 6: features supported (byte 2) and enabled (byte 3): bit 0 extended running, bit 1
        /// extended cycling, bit 2 extended swimming.
        case capabilities(supported: UInt8, enabled: UInt8)
        /// Page 7: battery level in percent (nil when 0xFF or over 100), voltage, status.
        case batteryStatus(level: UInt8?, voltage: Double?, status: ANTBatteryStatus)
        /// Any other page number (or a legacy strap's undefined bytes): bytes 1-3.
        case other([UInt8])
    }

    public var pageNumber: UInt8
    public var toggle: Bool
    /// Time of the last beat, 1/1024 s.
    public var beatEventTime: UInt16
    /// Beats counted, modulo 256.
    public var beatCount: UInt8
    /// Heart rate in beats per minute, as the strap computed it (0: invalid).
    public var heartRate: UInt8
    public var content: Content

    public init(pageNumber: UInt8, toggle: Bool, beatEventTime: UInt16, beatCount: UInt8, heartRate: UInt8, content: Content) {
        self.pageNumber = pageNumber
        self.toggle = toggle
        self.beatEventTime = beatEventTime
        self.beatCount = beatCount
        self.heartRate = heartRate
        self.content = content
    }

    /// Decodes an 8-byte page.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: ANTPlusDeviceType.heartRate, .wrongLength(p.count)) }
        let page = p[0] & 0x7F
        let content: Content
        switch page {
        case 0: content = .default
        case 1: content = .cumulativeOperatingTime(seconds: Double(le24(p, 1)) * 2)
        case 2: content = .manufacturerInfo(manufacturerID: p[1], serialNumberHigh: le16(p, 2))
        case 3: content = .productInfo(hardwareVersion: p[1], softwareVersion: p[2], modelNumber: p[3])
        case 4: content = .previousHeartBeat(manufacturerSpecific: p[1], eventTime: le16(p, 2))
        case 5: content = .swimIntervalSummary(intervalAverage: p[1], intervalMaximum: p[2], sessionAverage: p[3])
        case 6: content = .capabilities(supported: p[2], enabled: p[3])
        case 7:
            content = .batteryStatus(level: p[1] <= 100 ? p[1] : nil, voltage: batteryVoltage(fraction: p[2], coarse: p[3]),
                                     status: ANTBatteryStatus((p[3] >> 4) & 0x07))
        default: content = .other(Array(p[1...3]))
        }
        return Self(pageNumber: page, toggle: p[0] & 0x80 != 0, beatEventTime: le16(p, 4), beatCount: p[6], heartRate: p[7],
                    content: content)
    }
}

/// RR intervals (the time between successive heart beats) from successive heart rate pages.
///
/// Rules:
/// - A page carries a new beat when its beat count differs from the previous page's (or it is the
///   first page). Repeated pages (same count) give nothing.
/// - On a new beat, page 4 gives the interval directly: beat time minus previous beat time
///   (modulo 65536, in 1/1024 s). This works even when the previous page was missed, and it ignores
///   a strap that overwrites "previous beat" with the current beat in its repeats (those repeats
///   have the same count, so they are not new beats).
/// - Otherwise the interval is the difference of the beat times of consecutive pages, only when
///   the count rose by exactly one (modulo 256): a larger step means beats were missed and the
///   time covers several of them.
/// - More than 60 s between pages (the beat time wraps at 64 s) starts over without an interval.
/// - Intervals outside `plausibleRange` (0.2 to 3 s, i.e. 300 to 20 beats per minute) are dropped:
///   they come from a strap that lost contact or a corrupted page.
public struct ANTHeartRateCalculator: Hashable, Sendable {
    /// RR intervals kept, in seconds.
    public var plausibleRange: ClosedRange<Double> = 0.2...3.0
    /// Receive gap after which the last page is forgotten (seconds).
    public var maximumGap: Double = 60

    private var lastCount: UInt8?
    private var lastTime: UInt16 = 0
    private var lastReceivedAt: Double = 0

    public init() {}

    /// The RR intervals (seconds) the page adds, usually none or one.
    public mutating func update(_ page: ANTHeartRatePage, at now: Double) -> [Double] {
        defer {
            lastCount = page.beatCount
            lastTime = page.beatEventTime
            lastReceivedAt = now
        }
        let fresh = lastCount != nil && isWithin(now - lastReceivedAt, maximumGap)
        if fresh, page.beatCount == lastCount { return [] }
        var ticks: UInt16?
        if case .previousHeartBeat(_, let previous) = page.content {
            ticks = page.beatEventTime &- previous
        } else if fresh, let lastCount, page.beatCount &- lastCount == 1 {
            ticks = page.beatEventTime &- lastTime
        }
        guard let ticks else { return [] }
        let rr = Double(ticks) / 1024
        return plausibleRange.contains(rr) ? [rr] : []
    }
}

/// True when `elapsed` is a finite, non-negative number of seconds no larger than `limit`.
func isWithin(_ elapsed: Double, _ limit: Double) -> Bool {
    elapsed >= 0 && elapsed <= limit
}
