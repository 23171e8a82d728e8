/// A channel ID: which device a channel talks to. Four bytes on the wire: device number
/// (little-endian 16 bits), device type (bits 0-6) with the pairing bit (bit 7), transmission type.
///
/// A slave channel set to device number 0, device type 0 or transmission type 0 matches any value
/// there (a wildcard); the stick reports the real values of the device it found (0x51 reply, or
/// extended data).
public struct ANTChannelID: Hashable, Sendable, CustomStringConvertible {
    public var deviceNumber: UInt16
    /// The device type, 7 bits (120 heart rate, 11 power, ...).
    public var deviceType: UInt8
    /// Bit 7 of the device type byte: the master asks to be paired.
    public var pairing: Bool
    /// Bits 0-1 channel type, bit 2 global data pages, bits 4-7 the high nibble of a 20-bit device
    /// number (ANT+).
    public var transmissionType: UInt8

    /// `deviceType` keeps its low 7 bits.
    public init(deviceNumber: UInt16, deviceType: UInt8, pairing: Bool = false, transmissionType: UInt8) {
        self.deviceNumber = deviceNumber
        self.deviceType = deviceType & 0x7F
        self.pairing = pairing
        self.transmissionType = transmissionType
    }

    /// The 4 wire bytes, read from `bytes[offset...]`; nil when fewer than 4 bytes are there.
    public init?(bytes: some Collection<UInt8>, at offset: Int = 0) {
        let b = Array(bytes.dropFirst(offset).prefix(4))
        guard b.count == 4 else { return nil }
        self.init(deviceNumber: UInt16(b[0]) | UInt16(b[1]) << 8, deviceType: b[2] & 0x7F, pairing: b[2] & 0x80 != 0,
                  transmissionType: b[3])
    }

    /// The 20-bit device number ANT+ devices use: the transmission type's high nibble above the
    /// 16-bit device number.
    public var extendedDeviceNumber: UInt32 {
        UInt32(transmissionType >> 4) << 16 | UInt32(deviceNumber)
    }

    /// The 4 wire bytes.
    public var encoded: [UInt8] {
        [UInt8(deviceNumber & 0xFF), UInt8(deviceNumber >> 8), (deviceType & 0x7F) | (pairing ? 0x80 : 0), transmissionType]
    }

    /// `device 12345 type 120 trans 1` (with `pairing` when set).
    public var description: String {
        "device \(deviceNumber) type \(deviceType) trans \(transmissionType)\(pairing ? " pairing" : "")"
    }
}

/// Builders of the commands a host sends to the stick. Each returns the message to frame with
/// `ANTMessage.encoded`; the stick answers most with a 0x40 channel response.
///
/// The ANT+ network key is not here: it is user configuration (see `ANTPlus.parseNetworkKey`).
public enum ANTCommand {
    /// The channel type of `assignChannel`.
    public enum ChannelType: UInt8, Hashable, Sendable {
        /// A slave channel that receives (0x00): what a sensor receiver uses.
        case receive = 0x00
        /// A master channel that transmits (0x10).
        case transmit = 0x10
    }

    /// Extended assignment flags of `assignChannel` (its optional fourth byte).
    public enum ExtendedAssignment {
        /// Background scanning.
        public static let backgroundScanning: UInt8 = 0x01
        public static let frequencyAgility: UInt8 = 0x04
        public static let fastChannelInitiation: UInt8 = 0x10
        public static let asynchronousTransmission: UInt8 = 0x20
    }

    /// Flags of `libConfig`: what the stick appends to received data (flagged extended format).
    public enum LibConfigFlag {
        public static let channelID: UInt8 = 0x80
        public static let rssi: UInt8 = 0x40
        public static let rxTimestamp: UInt8 = 0x20
    }

    /// Resets the stick (`4A 00`); it answers with the startup message 0x6F.
    public static func reset() -> ANTMessage {
        ANTMessage(ANTMessageID.resetSystem, [0x00])
    }

    /// Sets a network's 8-byte key (`46 [network, key×8]`). The key must have
    /// `ANTPlus.networkKeyLength` bytes: check configuration with `ANTPlus.parseNetworkKey` first.
    public static func setNetworkKey(network: UInt8, key: [UInt8]) -> ANTMessage {
        precondition(key.count == ANTPlus.networkKeyLength, "an ANT network key has 8 bytes")
        return ANTMessage(ANTMessageID.networkKey, [network] + key)
    }

    /// `42 [channel, type, network(, extended assignment)]`.
    public static func assignChannel(_ channel: UInt8, type: ChannelType, network: UInt8, extendedAssignment: UInt8? = nil)
        -> ANTMessage
    {
        var payload = [channel, type.rawValue, network]
        if let extendedAssignment { payload.append(extendedAssignment) }
        return ANTMessage(ANTMessageID.assignChannel, payload)
    }

    /// `51 [channel, device number LE16, device type | pairing, transmission type]`.
    public static func setChannelID(_ channel: UInt8, _ id: ANTChannelID) -> ANTMessage {
        ANTMessage(ANTMessageID.channelID, [channel] + id.encoded)
    }

    /// `43 [channel, period LE16]`: the message period in 1/32768 s (8070 = 4.06 Hz).
    public static func setChannelPeriod(_ channel: UInt8, period: UInt16) -> ANTMessage {
        ANTMessage(ANTMessageID.channelPeriod, [channel, UInt8(period & 0xFF), UInt8(period >> 8)])
    }

    /// `44 [channel, units]`: the high-priority search timeout in 2.5 s units (0xFF: never).
    public static func setSearchTimeout(_ channel: UInt8, _ units: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.searchTimeout, [channel, units])
    }

    /// `63 [channel, units]`: the low-priority search timeout in 2.5 s units (0xFF: never).
    public static func setLowPrioritySearchTimeout(_ channel: UInt8, _ units: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.lowPrioritySearchTimeout, [channel, units])
    }

    /// `45 [channel, offset]`: the RF frequency, 2400 MHz + offset (ANT+ uses 57).
    public static func setRFFrequency(_ channel: UInt8, _ offset: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.radioFrequency, [channel, offset])
    }

    /// `49 [channel, value LE16]`: the search waveform (ANT-FS uses 53).
    public static func setSearchWaveform(_ channel: UInt8, _ value: UInt16) -> ANTMessage {
        ANTMessage(ANTMessageID.searchWaveform, [channel, UInt8(value & 0xFF), UInt8(value >> 8)])
    }

    /// `4B [channel]`.
    public static func openChannel(_ channel: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.openChannel, [channel])
    }

    /// `4C [channel]`: the stick answers, then sends the event "channel closed" when it is.
    public static func closeChannel(_ channel: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.closeChannel, [channel])
    }

    /// `41 [channel]`.
    public static func unassignChannel(_ channel: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.unassignChannel, [channel])
    }

    /// `5B 00`: continuous scan on channel 0 (which must be assigned as a receive channel).
    public static func openRxScanMode() -> ANTMessage {
        ANTMessage(ANTMessageID.openRxScanMode, [0x00])
    }

    /// `4D [channel, id]`: asks for the message `id` (0x54 capabilities, 0x3E version, 0x61
    /// serial number, 0x52 channel status, 0x51 channel ID).
    public static func requestMessage(channel: UInt8, _ id: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.requestMessage, [channel, id])
    }

    /// `66 [00, 0|1]`: legacy extended messages (0x5D/0x5E/0x5F with the sender's channel ID).
    public static func enableExtendedMessages(_ on: Bool) -> ANTMessage {
        ANTMessage(ANTMessageID.enableExtendedReceive, [0x00, on ? 0x01 : 0x00])
    }

    /// `6E [00, flags]`: flagged extended data; see `LibConfigFlag`.
    public static func libConfig(_ flags: UInt8) -> ANTMessage {
        ANTMessage(ANTMessageID.libConfig, [0x00, flags])
    }

    /// `4F [channel, 8 data]`: acknowledged data. Shorter data is padded with zeros; more than 8
    /// bytes is a programming error (use `burst`).
    public static func acknowledged(channel: UInt8, _ data: [UInt8]) -> ANTMessage {
        precondition(data.count <= 8, "acknowledged data carries 8 bytes")
        return ANTMessage(ANTMessageID.acknowledgedData, [channel] + data + [UInt8](repeating: 0, count: 8 - data.count))
    }

    /// A burst transfer of `data`, split into 8-byte packets `50 [sequence << 5 | channel, 8 data]`.
    /// The sequence is 0 for the first packet, then 1, 2, 3, 1, 2, 3, ...; the last packet has bit 2
    /// of the sequence set (0x80 in the first byte). The last packet is padded with zeros. Empty data
    /// gives one packet of zeros. The channel keeps its low 5 bits.
    public static func burst(channel: UInt8, _ data: [UInt8]) -> [ANTMessage] {
        let count = max(1, (data.count + 7) / 8)
        var packets: [ANTMessage] = []
        packets.reserveCapacity(count)
        for index in 0..<count {
            var chunk = Array(data.dropFirst(index * 8).prefix(8))
            chunk += [UInt8](repeating: 0, count: 8 - chunk.count)
            var sequence: UInt8 = index == 0 ? 0 : UInt8((index - 1) % 3 + 1)
            if index == count - 1 { sequence |= 0x04 }
            packets.append(ANTMessage(ANTMessageID.burstData, [sequence << 5 | (channel & 0x1F)] + chunk))
        }
        return packets
    }
}
