/// ANT+ network facts shared by every device profile.
///
/// The ANT+ network key is deliberately absent: its use falls under the ANT+ adopter terms, so it
/// is user configuration, read with `parseNetworkKey`.
public enum ANTPlus {
    /// Bytes in a network key.
    public static let networkKeyLength = 8
    /// The RF channel of ANT+ devices: 2457 MHz (offset 57 from 2400 MHz).
    public static let radioFrequency: UInt8 = 57

    /// Reads a network key written as 16 hexadecimal digits, optionally separated by spaces,
    /// colons, commas, dashes or underscores, each byte optionally prefixed by `0x`
    /// ("0123…", "01:23:…", "0x01, 0x23, …"). Nil for anything else.
    public static func parseNetworkKey(_ text: String) -> [UInt8]? {
        let separators: Set<Character> = [" ", "\t", "\n", "\r", ":", ",", "-", "_"]
        var digits: [UInt8] = []
        for token in text.split(whereSeparator: { separators.contains($0) }) {
            var hexDigits = token[...]
            if hexDigits.hasPrefix("0x") || hexDigits.hasPrefix("0X") { hexDigits = hexDigits.dropFirst(2) }
            guard !hexDigits.isEmpty, hexDigits.count % 2 == 0 else { return nil }
            for c in hexDigits {
                guard let value = c.hexDigitValue else { return nil }
                digits.append(UInt8(value))
            }
        }
        guard digits.count == networkKeyLength * 2 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}

/// How to open a slave channel to one kind of ANT+ sensor: its device type and message period
/// (GoldenCheetah src/ANT/ANT.h, openant devices/*, Loghorn/ant-plus for the SDM).
public struct ANTPlusChannelParameters: Hashable, Sendable, CustomStringConvertible {
    /// The device type of the channel ID.
    public var deviceType: UInt8
    /// Message period in 1/32768 s.
    public var period: UInt16
    /// Readable name ("heart rate").
    public var name: String
    /// The configuration key naming this sensor kind ("heart_rate").
    public var key: String

    public init(deviceType: UInt8, period: UInt16, name: String, key: String) {
        self.deviceType = deviceType
        self.period = period
        self.name = name
        self.key = key
    }

    public static let heartRate = Self(deviceType: 120, period: 8070, name: "heart rate", key: "heart_rate")
    public static let bikeSpeed = Self(deviceType: 123, period: 8118, name: "bike speed", key: "speed")
    public static let bikeCadence = Self(deviceType: 122, period: 8102, name: "bike cadence", key: "cadence")
    public static let bikeSpeedCadence = Self(deviceType: 121, period: 8086, name: "bike speed and cadence", key: "speed_cadence")
    public static let bikePower = Self(deviceType: 11, period: 8182, name: "bike power", key: "power")
    public static let fitnessEquipment = Self(deviceType: 17, period: 8192, name: "fitness equipment", key: "fitness_equipment")
    public static let strideSpeedDistance = Self(deviceType: 124, period: 8134, name: "stride speed and distance", key: "stride")
    public static let weightScale = Self(deviceType: 119, period: 8192, name: "weight scale", key: "weight_scale")

    /// Every sensor kind above.
    public static let all: [Self] = [
        .heartRate, .bikeSpeed, .bikeCadence, .bikeSpeedCadence, .bikePower, .fitnessEquipment, .strideSpeedDistance, .weightScale,
    ]

    /// The parameters of a device type (the pairing bit is ignored), or nil for a type not listed.
    public static func forDeviceType(_ deviceType: UInt8) -> Self? {
        all.first { $0.deviceType == deviceType & 0x7F }
    }

    /// The parameters named by a configuration key ("heart_rate"), or nil.
    public static func forKey(_ key: String) -> Self? {
        all.first { $0.key == key }
    }

    /// Messages per second: 32768 / period.
    public var messageRate: Double { 32768 / Double(period) }

    /// The commands that open a receive channel to this sensor kind, each answered by a `40`
    /// response: assign (slave), channel ID, period, search timeout, RF frequency 57, open. The
    /// network must already hold the ANT+ key. Device number 0 and transmission type 0 are
    /// wildcards (pair with the first sensor found).
    public func openCommands(channel: UInt8, network: UInt8, deviceNumber: UInt16 = 0, transmissionType: UInt8 = 0,
                             searchTimeout: UInt8 = 12) -> [ANTMessage] {
        [
            ANTCommand.assignChannel(channel, type: .receive, network: network),
            ANTCommand.setChannelID(channel, ANTChannelID(deviceNumber: deviceNumber, deviceType: deviceType,
                                                          transmissionType: transmissionType)),
            ANTCommand.setChannelPeriod(channel, period: period),
            ANTCommand.setSearchTimeout(channel, searchTimeout),
            ANTCommand.setRFFrequency(channel, ANTPlus.radioFrequency),
            ANTCommand.openChannel(channel),
        ]
    }

    /// `heart rate (type 120, period 8070)`.
    public var description: String { "\(name) (type \(deviceType), period \(period))" }
}
