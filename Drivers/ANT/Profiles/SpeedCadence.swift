/// A page of a speed-only (device type 123) or cadence-only (122) bike sensor.
///
/// Every page ends with bytes 4-5 the time of the last revolution (1/1024 s, rolling over every
/// 64 s) and bytes 6-7 the cumulative revolution count (rolling over at 65536). Byte 0 holds the
/// page number (bits 0-6) and a toggle bit (bit 7); bytes 1-3 depend on the page. Legacy sensors
/// send bytes 0-3 undefined, so every page number decodes (unknown ones as `.other`).
public struct ANTSpeedOrCadencePage: Hashable, Sendable {
    public enum Content: Hashable, Sendable {
        /// Page 0: bytes 1-3 reserved.
        case `default`
        /// Page 1: time the sensor has been on, 2 s units (bytes 1-3).
        case cumulativeOperatingTime(seconds: Double)
        /// Page 2: manufacturer ID (byte 1), upper 16 bits of the serial number (bytes 2-3).
        case manufacturerInfo(manufacturerID: UInt8, serialNumberHigh: UInt16)
        /// Page 3: hardware version, software version, model number.
        case productInfo(hardwareVersion: UInt8, softwareVersion: UInt8, modelNumber: UInt8)
        /// Page 4: battery voltage (byte 2 fraction, byte 3 coarse) and status (byte 3 bits 4-6).
        case batteryStatus(voltage: Double?, status: ANTBatteryStatus)
        /// Page 5: motion and speed; byte 1 bit 0 set when the sensor reports it has stopped.
        case motion(stopped: Bool)
        /// Any other page number (or a legacy sensor's undefined bytes): bytes 1-3.
        case other([UInt8])
    }

    public var pageNumber: UInt8
    public var toggle: Bool
    /// Time of the last revolution, 1/1024 s.
    public var eventTime: UInt16
    /// Cumulative revolutions, modulo 65536.
    public var revolutionCount: UInt16
    public var content: Content

    public init(pageNumber: UInt8, toggle: Bool, eventTime: UInt16, revolutionCount: UInt16, content: Content) {
        self.pageNumber = pageNumber
        self.toggle = toggle
        self.eventTime = eventTime
        self.revolutionCount = revolutionCount
        self.content = content
    }

    /// Decodes an 8-byte page. `deviceType` only names the sensor in errors.
    public static func decode(_ p: [UInt8], deviceType: UInt8 = ANTPlusDeviceType.bikeSpeed) throws(ANTPlusDecodeError) -> Self {
        guard p.count == antPlusPageLength else { throw ANTPlusDecodeError(deviceType: deviceType, .wrongLength(p.count)) }
        let page = p[0] & 0x7F
        let content: Content
        switch page {
        case 0: content = .default
        case 1: content = .cumulativeOperatingTime(seconds: Double(le24(p, 1)) * 2)
        case 2: content = .manufacturerInfo(manufacturerID: p[1], serialNumberHigh: le16(p, 2))
        case 3: content = .productInfo(hardwareVersion: p[1], softwareVersion: p[2], modelNumber: p[3])
        case 4: content = .batteryStatus(voltage: batteryVoltage(fraction: p[2], coarse: p[3]),
                                         status: ANTBatteryStatus((p[3] >> 4) & 0x07))
        case 5: content = .motion(stopped: p[1] & 0x01 != 0)
        default: content = .other(Array(p[1...3]))
        }
        return Self(pageNumber: page, toggle: p[0] & 0x80 != 0, eventTime: le16(p, 4), revolutionCount: le16(p, 6), content: content)
    }
}

/// The page of a combined speed and cadence sensor (device type 121). It has no page number:
/// bytes 0-1 cadence event time, 2-3 cadence revolutions, 4-5 speed event time, 6-7 wheel
/// revolutions, all little-endian, times in 1/1024 s.
public struct ANTSpeedCadencePage: Hashable, Sendable {
    public var cadenceEventTime: UInt16
    public var cadenceRevolutions: UInt16
    public var speedEventTime: UInt16
    public var wheelRevolutions: UInt16

    public init(cadenceEventTime: UInt16, cadenceRevolutions: UInt16, speedEventTime: UInt16, wheelRevolutions: UInt16) {
        self.cadenceEventTime = cadenceEventTime
        self.cadenceRevolutions = cadenceRevolutions
        self.speedEventTime = speedEventTime
        self.wheelRevolutions = wheelRevolutions
    }

    /// Decodes an 8-byte page.
    public static func decode(_ p: [UInt8]) throws(ANTPlusDecodeError) -> Self {
        guard p.count == antPlusPageLength else {
            throw ANTPlusDecodeError(deviceType: ANTPlusDeviceType.bikeSpeedCadence, .wrongLength(p.count))
        }
        return Self(cadenceEventTime: le16(p, 0), cadenceRevolutions: le16(p, 2), speedEventTime: le16(p, 4), wheelRevolutions: le16(p, 6))
    }
}
