/// Advertising and scan response data (Vol 3 Part C 11, Core Specification Supplement Part A).
public struct AdvertisingData: Equatable, Sendable {
    public struct ServiceData: Equatable, Sendable {
        public var uuid: BluetoothUUID
        public var data: [UInt8]
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    public struct ManufacturerData: Equatable, Sendable {
        public var companyIdentifier: UInt16
        public var data: [UInt8]
        public init(companyIdentifier: UInt16, data: [UInt8]) {
            self.companyIdentifier = companyIdentifier
            self.data = data
        }
    }

    /// The longest data an extended advertising train carries.
    public static let maxLength = 1650

    public var flags: UInt8?
    /// Service UUIDs from complete and incomplete 16-, 32- and 128-bit lists, in order.
    public var serviceUUIDs: [BluetoothUUID] = []
    /// True when any list was marked incomplete.
    public var serviceUUIDsIncomplete = false
    /// The complete local name, or the shortened one when that is all there is.
    public var localName: String?
    public var localNameIsShortened = false
    public var txPower: Int8?
    public var appearance: UInt16?
    public var serviceData: [ServiceData] = []
    public var manufacturerData: [ManufacturerData] = []
    /// AD types this parser does not interpret, with their data.
    public var other: [(type: UInt8, data: [UInt8])] = []

    public init() {}

    public static func == (a: AdvertisingData, b: AdvertisingData) -> Bool {
        a.flags == b.flags && a.serviceUUIDs == b.serviceUUIDs && a.serviceUUIDsIncomplete == b.serviceUUIDsIncomplete
            && a.localName == b.localName && a.localNameIsShortened == b.localNameIsShortened && a.txPower == b.txPower
            && a.appearance == b.appearance && a.serviceData == b.serviceData && a.manufacturerData == b.manufacturerData
            && a.other.map(\.type) == b.other.map(\.type) && a.other.map(\.data) == b.other.map(\.data)
    }

    public var isLimitedDiscoverable: Bool { (flags ?? 0) & 0x01 != 0 }
    public var isGeneralDiscoverable: Bool { (flags ?? 0) & 0x02 != 0 }

}
