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

    /// Parses a sequence of AD structures (length, type, data). A zero length ends the data (the
    /// rest is padding). A structure running past the end, or a field of the wrong size, throws.
    /// Several structures add up (a second name replaces the first only if it is the complete one).
    public static func parse(_ bytes: [UInt8]) throws(BLEDecodeError) -> AdvertisingData {
        guard bytes.count <= maxLength else {
            throw BLEDecodeError(.advertisingData, offset: 0, .tooLong(field: "advertising data", length: bytes.count, limit: maxLength))
        }
        var ad = AdvertisingData()
        var r = ByteReader(bytes, layer: .advertisingData)
        while !r.isAtEnd {
            let length = Int(try r.uint8("AD length"))
            if length == 0 { break }
            let typeOffset = r.offset
            let type = try r.uint8("AD type")
            let data = try r.bytes(length - 1, "AD data")
            func bad(_ field: String) -> BLEDecodeError {
                BLEDecodeError(.advertisingData, offset: typeOffset, .invalidValue(field: field, value: data.count))
            }
            switch type {
            case 0x01:
                guard data.count == 1 else { throw bad("flags length") }
                ad.flags = data[0]
            case 0x02, 0x03, 0x04, 0x05, 0x06, 0x07:
                let size = type <= 0x03 ? 2 : type <= 0x05 ? 4 : 16
                guard data.count % size == 0 else { throw bad("service UUID list length") }
                for i in stride(from: 0, to: data.count, by: size) {
                    ad.serviceUUIDs.append(BluetoothUUID(littleEndian: Array(data[i..<i + size]))!)
                }
                if type & 1 == 0 { ad.serviceUUIDsIncomplete = true }
            case 0x08, 0x09:
                let name = String(decoding: data, as: UTF8.self)
                if type == 0x09 || ad.localName == nil {
                    ad.localName = name
                    ad.localNameIsShortened = type == 0x08
                }
            case 0x0A:
                guard data.count == 1 else { throw bad("TX power length") }
                ad.txPower = Int8(bitPattern: data[0])
            case 0x19:
                guard data.count == 2 else { throw bad("appearance length") }
                ad.appearance = UInt16(data[0]) | UInt16(data[1]) << 8
            case 0x16, 0x20, 0x21:
                let size = type == 0x16 ? 2 : type == 0x20 ? 4 : 16
                guard data.count >= size else { throw bad("service data length") }
                ad.serviceData.append(ServiceData(uuid: BluetoothUUID(littleEndian: Array(data[0..<size]))!, data: Array(data[size...])))
            case 0xFF:
                guard data.count >= 2 else { throw bad("manufacturer data length") }
                ad.manufacturerData.append(ManufacturerData(companyIdentifier: UInt16(data[0]) | UInt16(data[1]) << 8,
                                                            data: Array(data[2...])))
            default:
                ad.other.append((type, data))
            }
        }
        return ad
    }
}
