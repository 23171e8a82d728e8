public import BluetoothCentral
extension AdvertisingData {
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
