/// Device Information service (0x180A) values.
public enum DeviceInformation {
    /// The UTF-8 string characteristics: manufacturer (0x2A29), model (0x2A24), serial (0x2A25),
    /// firmware (0x2A26), hardware (0x2A27), software (0x2A28).
    ///
    /// Trailing NUL bytes (fixed-size buffers on the device) are trimmed. Invalid UTF-8 is
    /// repaired with U+FFFD rather than rejected: a label is more useful than an error here.
    /// Values longer than `maximumStringLength` bytes are cut there (explicit limit).
    public static func string(_ bytes: [UInt8]) -> String {
        var end = min(bytes.count, maximumStringLength)
        while end > 0, bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The longest string this module keeps: a GATT attribute value is at most 512 bytes.
    public static let maximumStringLength = 512

    /// The characteristics `string(_:)` applies to.
    public static let stringCharacteristics: Set<UInt16> = [
        GATTCharacteristic.manufacturerName, GATTCharacteristic.modelNumber,
        GATTCharacteristic.serialNumber, GATTCharacteristic.firmwareRevision,
        GATTCharacteristic.hardwareRevision, GATTCharacteristic.softwareRevision,
    ]
}

/// System ID (0x2A23): a 40-bit manufacturer-defined identifier and a 24-bit OUI.
public struct SystemID: Hashable, Sendable {
    public var manufacturerIdentifier: UInt64
    public var organizationallyUniqueIdentifier: UInt32
    public var ignoredTrailingBytes: Int

    /// The 64-bit EUI-64 form: OUI in the top 24 bits.
    public var eui64: UInt64 { UInt64(organizationallyUniqueIdentifier) << 40 | manufacturerIdentifier }

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> SystemID {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.systemID)
        let manufacturer = try c.unsigned(5, "manufacturer identifier")
        let oui = try c.uint24("organizationally unique identifier")
        return SystemID(manufacturerIdentifier: manufacturer, organizationallyUniqueIdentifier: oui,
                        ignoredTrailingBytes: c.remaining)
    }
}

/// PnP ID (0x2A50).
public struct PnPID: Hashable, Sendable {
    /// 1 = Bluetooth SIG company identifier, 2 = USB Implementer's Forum vendor id.
    public var vendorIDSource: UInt8
    public var vendorID: UInt16
    public var productID: UInt16
    public var productVersion: UInt16
    public var ignoredTrailingBytes: Int

    public static func decode(_ bytes: [UInt8]) throws(ProfileDecodeError) -> PnPID {
        var c = ByteCursor(bytes, characteristic: GATTCharacteristic.pnpID)
        return PnPID(vendorIDSource: try c.uint8("vendor id source"), vendorID: try c.uint16("vendor id"),
                     productID: try c.uint16("product id"), productVersion: try c.uint16("product version"),
                     ignoredTrailingBytes: c.remaining)
    }
}
