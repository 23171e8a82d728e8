/// The ANT+ device types this module decodes (the channel ID's device type, without the pairing bit).
public enum ANTPlusDeviceType {
    public static let bikePower: UInt8 = 11
    public static let fitnessEquipment: UInt8 = 17
    public static let weightScale: UInt8 = 119
    public static let heartRate: UInt8 = 120
    public static let bikeSpeedCadence: UInt8 = 121
    public static let bikeCadence: UInt8 = 122
    public static let bikeSpeed: UInt8 = 123
    public static let strideSpeedDistance: UInt8 = 124

    /// Every device type above.
    public static let supported: [UInt8] = [bikePower, fitnessEquipment, weightScale, heartRate, bikeSpeedCadence, bikeCadence, bikeSpeed,
                                            strideSpeedDistance]
}

/// Bytes every ANT+ data page has.
let antPlusPageLength = 8

/// An ANT+ data page that cannot be decoded. The caller counts these; they never stop a channel.
public struct ANTPlusDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// A data page has 8 bytes; this one had another count.
        case wrongLength(Int)
        /// The page number is not one this device type sends (or not one this module knows).
        case unknownPage(UInt8)
        /// The device type is not one of `ANTPlusDeviceType.supported`.
        case unsupportedDeviceType
    }

    /// The device type the page was decoded as.
    public var deviceType: UInt8
    public var reason: Reason

    public init(deviceType: UInt8, _ reason: Reason) {
        self.deviceType = deviceType
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .wrongLength(let count): "device type \(deviceType): a data page has 8 bytes, not \(count)"
        case .unknownPage(let page): "device type \(deviceType): unknown data page \(page) (0x\(hex(page)))"
        case .unsupportedDeviceType: "device type \(deviceType) is not supported"
        }
    }
}

/// The battery status field of battery pages (3 bits).
public enum ANTBatteryStatus: Hashable, Sendable, CustomStringConvertible {
    case new, good, ok, low, critical, invalid
    /// Values 0 and 6.
    case reserved(UInt8)

    public init(_ rawValue: UInt8) {
        switch rawValue & 0x07 {
        case 1: self = .new
        case 2: self = .good
        case 3: self = .ok
        case 4: self = .low
        case 5: self = .critical
        case 7: self = .invalid
        default: self = .reserved(rawValue & 0x07)
        }
    }

    public var description: String {
        switch self {
        case .new: "new"
        case .good: "good"
        case .ok: "ok"
        case .low: "low"
        case .critical: "critical"
        case .invalid: "invalid"
        case .reserved(let value): "reserved (\(value))"
        }
    }
}

/// Common page 0x50, manufacturer's information: hardware revision (byte 3), manufacturer ID
/// (bytes 4-5) and model number (bytes 6-7), little-endian.
public struct ANTManufacturerInfoPage: Hashable, Sendable {
    public var hardwareRevision: UInt8
    public var manufacturerID: UInt16
    public var modelNumber: UInt16

    public init(hardwareRevision: UInt8, manufacturerID: UInt16, modelNumber: UInt16) {
        self.hardwareRevision = hardwareRevision
        self.manufacturerID = manufacturerID
        self.modelNumber = modelNumber
    }
}

/// Common page 0x51, product information: software revision (supplemental byte 2, 0xFF when not
/// used; main byte 3) and serial number (bytes 4-7, 0xFFFFFFFF when the device has none).
public struct ANTProductInfoPage: Hashable, Sendable {
    public var softwareSupplemental: UInt8?
    public var softwareMain: UInt8
    public var serialNumber: UInt32?

    public init(softwareSupplemental: UInt8? = nil, softwareMain: UInt8, serialNumber: UInt32? = nil) {
        self.softwareSupplemental = softwareSupplemental
        self.softwareMain = softwareMain
        self.serialNumber = serialNumber
    }

    /// `main` or `main.supplemental`, both as decimal numbers ("3.12" for main 3, supplemental 12).
    public var softwareVersion: String {
        if let softwareSupplemental { return "\(softwareMain).\(softwareSupplemental)" }
        return "\(softwareMain)"
    }
}

/// Common page 0x52, battery status.
///
/// Byte 2: number of batteries (bits 0-3) and battery identifier (bits 4-7), 0xFF when not used;
/// bytes 3-5: cumulative operating time (16 s or 2 s units, bit 7 of byte 7); byte 6: fractional
/// voltage (1/256 V); byte 7: coarse voltage (bits 0-3, 0xF invalid), status (bits 4-6).
public struct ANTBatteryStatusPage: Hashable, Sendable {
    public var batteryCount: UInt8?
    public var batteryIdentifier: UInt8?
    /// Cumulative operating time in seconds (rolls over at 2^24 units).
    public var operatingTime: Double
    /// Volts, nil when the coarse voltage is invalid.
    public var voltage: Double?
    public var status: ANTBatteryStatus

    public init(batteryCount: UInt8? = nil, batteryIdentifier: UInt8? = nil, operatingTime: Double, voltage: Double? = nil,
                status: ANTBatteryStatus) {
        self.batteryCount = batteryCount
        self.batteryIdentifier = batteryIdentifier
        self.operatingTime = operatingTime
        self.voltage = voltage
        self.status = status
    }
}

/// Common page 0x46, request data page: a receiver asks for `requestedPage` (identified only).
public struct ANTRequestDataPage: Hashable, Sendable {
    /// The page asked for (byte 6).
    public var requestedPage: UInt8
    /// Byte 5: how many times to send it (bits 0-6), bit 7 = until acknowledged.
    public var requestedTransmission: UInt8
    /// Byte 7: 1 = data page, 2 = ANT-FS session, 3 = data page from a slave, 4 = data page set.
    public var commandType: UInt8

    public init(requestedPage: UInt8, requestedTransmission: UInt8, commandType: UInt8) {
        self.requestedPage = requestedPage
        self.requestedTransmission = requestedTransmission
        self.commandType = commandType
    }
}

/// The common pages every ANT+ profile may send (besides the profile's own pages).
public enum ANTPlusCommonPage: Hashable, Sendable {
    case requestDataPage(ANTRequestDataPage)
    case manufacturerInfo(ANTManufacturerInfoPage)
    case productInfo(ANTProductInfoPage)
    case batteryStatus(ANTBatteryStatusPage)

    /// The page numbers decoded here.
    public static let pageNumbers: Set<UInt8> = [0x46, 0x50, 0x51, 0x52]

    /// The common page in `p` (8 bytes), or nil when byte 0 is not a common page number.
    public static func decode(_ p: [UInt8]) -> Self? {
        guard p.count >= antPlusPageLength else { return nil }
        switch p[0] {
        case 0x46:
            return .requestDataPage(ANTRequestDataPage(requestedPage: p[6], requestedTransmission: p[5], commandType: p[7]))
        case 0x50:
            return .manufacturerInfo(ANTManufacturerInfoPage(hardwareRevision: p[3], manufacturerID: le16(p, 4), modelNumber: le16(p, 6)))
        case 0x51:
            let serial = le32(p, 4)
            return .productInfo(ANTProductInfoPage(softwareSupplemental: p[2] == 0xFF ? nil : p[2], softwareMain: p[3],
                                                   serialNumber: serial == 0xFFFF_FFFF ? nil : serial))
        case 0x52:
            let unit: Double = p[7] & 0x80 != 0 ? 2 : 16
            return .batteryStatus(ANTBatteryStatusPage(batteryCount: p[2] == 0xFF ? nil : p[2] & 0x0F,
                                                       batteryIdentifier: p[2] == 0xFF ? nil : p[2] >> 4,
                                                       operatingTime: Double(le24(p, 3)) * unit,
                                                       voltage: batteryVoltage(fraction: p[6], coarse: p[7]),
                                                       status: ANTBatteryStatus((p[7] >> 4) & 0x07)))
        default:
            return nil
        }
    }
}

// MARK: - Byte helpers

func le16(_ p: [UInt8], _ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
func be16(_ p: [UInt8], _ i: Int) -> UInt16 { UInt16(p[i]) << 8 | UInt16(p[i + 1]) }
func le24(_ p: [UInt8], _ i: Int) -> UInt32 { UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 }
func le32(_ p: [UInt8], _ i: Int) -> UInt32 { le24(p, i) | UInt32(p[i + 3]) << 24 }

/// Volts from a fractional byte (1/256 V) and the coarse voltage in the low nibble of
/// `coarse` (0xF: invalid).
func batteryVoltage(fraction: UInt8, coarse: UInt8) -> Double? {
    let whole = coarse & 0x0F
    return whole == 0x0F ? nil : Double(whole) + Double(fraction) / 256
}

/// Two hexadecimal digits, upper case.
func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// `value - previous` on a counter of `modulus` values (a forward difference across a rollover).
func delta(_ value: some BinaryInteger, _ previous: some BinaryInteger, modulus: Int) -> Int {
    let d = (Int(value) - Int(previous)) % modulus
    return d < 0 ? d + modulus : d
}
