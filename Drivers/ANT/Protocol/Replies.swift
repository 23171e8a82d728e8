/// A message from the stick that cannot be read as the reply its ID names.
public struct ANTProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The payload ends before `field`: `needed` bytes are required, `available` were sent.
        case tooShort(field: String, needed: Int, available: Int)
    }

    public var messageID: UInt8
    public var reason: Reason

    public init(messageID: UInt8, _ reason: Reason) {
        self.messageID = messageID
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .tooShort(let field, let needed, let available):
            "message 0x\(hex(messageID)): \(field) needs \(needed) payload bytes, \(available) received"
        }
    }
}

/// What a stick can do: the 0x54 capabilities reply (4 to 8 bytes; older sticks send fewer).
///
/// Bytes: max channels, max networks, standard options, advanced options, then (when sent)
/// advanced options 2, max SensRcore channels, advanced options 3, advanced options 4. The USB2
/// stick sends `08 03 00 BA 36 00`, the USB-m `08 08 00 BA 36 00 DF`.
public struct ANTCapabilities: Hashable, Sendable {
    public var maxChannels: UInt8
    public var maxNetworks: UInt8
    /// Bits that say what the stick cannot do (0x01 no receive channels ... 0x20 no burst).
    public var standardOptions: UInt8
    public var advancedOptions: UInt8
    public var advancedOptions2: UInt8?
    public var maxSensRcoreChannels: UInt8?
    public var advancedOptions3: UInt8?
    public var advancedOptions4: UInt8?
    /// The payload as received, including bytes this type does not name.
    public var raw: [UInt8]

    /// Reads the 0x54 payload; fewer than 4 bytes is an error.
    public init(payload: [UInt8]) throws(ANTProtocolError) {
        guard payload.count >= 4 else {
            throw ANTProtocolError(messageID: ANTMessageID.capabilities,
                                   .tooShort(field: "capabilities", needed: 4, available: payload.count))
        }
        maxChannels = payload[0]
        maxNetworks = payload[1]
        standardOptions = payload[2]
        advancedOptions = payload[3]
        advancedOptions2 = payload.count > 4 ? payload[4] : nil
        maxSensRcoreChannels = payload.count > 5 ? payload[5] : nil
        advancedOptions3 = payload.count > 6 ? payload[6] : nil
        advancedOptions4 = payload.count > 7 ? payload[7] : nil
        raw = payload
    }

    private func flag(_ byte: UInt8?, _ mask: UInt8) -> Bool { (byte ?? 0) & mask != 0 }

    // Standard options: set bits are missing features.
    public var supportsReceiveChannels: Bool { !flag(standardOptions, 0x01) }
    public var supportsTransmitChannels: Bool { !flag(standardOptions, 0x02) }
    public var supportsReceiveMessages: Bool { !flag(standardOptions, 0x04) }
    public var supportsTransmitMessages: Bool { !flag(standardOptions, 0x08) }
    public var supportsAcknowledgedMessages: Bool { !flag(standardOptions, 0x10) }
    public var supportsBurstMessages: Bool { !flag(standardOptions, 0x20) }

    // Advanced options.
    /// Network keys can be set (`46`).
    public var supportsNetworks: Bool { flag(advancedOptions, 0x02) }
    public var supportsSerialNumber: Bool { flag(advancedOptions, 0x08) }
    public var supportsPerChannelTransmitPower: Bool { flag(advancedOptions, 0x10) }
    /// `63` low-priority search timeout.
    public var supportsLowPrioritySearch: Bool { flag(advancedOptions, 0x20) }
    public var supportsScript: Bool { flag(advancedOptions, 0x40) }
    /// Inclusion/exclusion lists (`59`, `5A`).
    public var supportsSearchList: Bool { flag(advancedOptions, 0x80) }

    // Advanced options 2.
    public var supportsLED: Bool { flag(advancedOptions2, 0x01) }
    /// Extended messages: the sender's channel ID, RSSI and timestamps with received data.
    public var supportsExtendedMessages: Bool { flag(advancedOptions2, 0x02) }
    /// `5B` continuous scan mode.
    public var supportsRxScanMode: Bool { flag(advancedOptions2, 0x04) }
    public var supportsProximitySearch: Bool { flag(advancedOptions2, 0x10) }
    /// The fourth byte of `42` (background scanning, frequency agility, ...).
    public var supportsExtendedAssign: Bool { flag(advancedOptions2, 0x20) }
    public var supportsANTFS: Bool { flag(advancedOptions2, 0x40) }
    public var supportsFIT1: Bool { flag(advancedOptions2, 0x80) }

    // Advanced options 3.
    public var supportsAdvancedBurst: Bool { flag(advancedOptions3, 0x01) }
    public var supportsEventBuffering: Bool { flag(advancedOptions3, 0x02) }
    public var supportsEventFiltering: Bool { flag(advancedOptions3, 0x04) }
    public var supportsHighDutySearch: Bool { flag(advancedOptions3, 0x08) }
    public var supportsSearchSharing: Bool { flag(advancedOptions3, 0x10) }
    public var supportsSelectiveDataUpdates: Bool { flag(advancedOptions3, 0x40) }
    public var supportsEncryptedChannels: Bool { flag(advancedOptions3, 0x80) }
}

/// Broadcast or acknowledged data received on a channel, with the extended fields the stick
/// appended when configured to (`66` legacy format, or `6E` flagged format).
public struct ANTDataMessage: Hashable, Sendable {
    public var channel: UInt8
    /// The 8 data bytes: an ANT+ data page.
    public var data: [UInt8]
    /// The sender's channel ID, when the stick appended it.
    public var channelID: ANTChannelID?
    /// Received signal strength in dBm, when the stick appended it.
    public var rssi: Int8?
    /// The RSSI threshold configured for proximity search (sent with the RSSI).
    public var rssiThreshold: Int8?
    /// Receive time stamp in 1/32768 s, rolling over every 2 s.
    public var rxTimestamp: UInt16?

    public init(channel: UInt8, data: [UInt8], channelID: ANTChannelID? = nil, rssi: Int8? = nil, rssiThreshold: Int8? = nil,
                rxTimestamp: UInt16? = nil) {
        self.channel = channel
        self.data = data
        self.channelID = channelID
        self.rssi = rssi
        self.rssiThreshold = rssiThreshold
        self.rxTimestamp = rxTimestamp
    }
}

/// One 0x50 (or 0x5F) burst packet: 8 bytes of a longer transfer.
public struct ANTBurstPacket: Hashable, Sendable {
    /// The channel (the low 5 bits of the first payload byte).
    public var channel: UInt8
    /// 0 for the first packet, then 1, 2, 3, 1, ... (bits 5-6 of the first byte).
    public var sequence: UInt8
    /// The last packet of the transfer (bit 7 of the first byte).
    public var isLast: Bool
    public var data: [UInt8]
    /// The sender's channel ID, when the stick appended it.
    public var channelID: ANTChannelID?

    public init(channel: UInt8, sequence: UInt8, isLast: Bool, data: [UInt8], channelID: ANTChannelID? = nil) {
        self.channel = channel
        self.sequence = sequence
        self.isLast = isLast
        self.data = data
        self.channelID = channelID
    }
}

/// A message from the stick, read by its ID.
public enum ANTReply: Hashable, Sendable {
    /// 0x6F after a reset: the reason bits (0x00 power-on, 0x01 reset line, 0x02 watchdog,
    /// 0x20 command, 0x40 synchronous, 0x80 suspend).
    case startup(reason: UInt8)
    case capabilities(ANTCapabilities)
    /// 0x3E: the firmware version text up to its NUL ("AP2USB1.05").
    case version(String)
    /// 0x61: the stick's serial number (little-endian).
    case serialNumber(UInt32)
    /// 0x40 answering the command `messageID`.
    case channelResponse(channel: UInt8, messageID: UInt8, code: ANTResponseCode)
    /// 0x40 with message ID 1: an event on a channel.
    case channelEvent(channel: UInt8, code: ANTResponseCode)
    /// 0x4E, or the legacy extended 0x5D.
    case broadcast(ANTDataMessage)
    /// 0x4F, or the legacy extended 0x5E.
    case acknowledged(ANTDataMessage)
    /// 0x50, or the legacy extended 0x5F.
    case burst(ANTBurstPacket)
    /// 0x51: the channel ID of a channel (after a wildcard search, the device found).
    case channelID(channel: UInt8, ANTChannelID)
    /// 0x52: the channel state, the low 2 bits of the status byte (0 unassigned, 1 assigned,
    /// 2 searching, 3 tracking).
    case channelStatus(channel: UInt8, state: UInt8)
    /// 0xAE: the stick could not read a frame (0 no sync byte first, 2 bad checksum, 3 too long).
    case serialError(UInt8)
    /// Any other message, unread.
    case other(ANTMessage)

    /// Reads `message`. A payload too short for its ID's fields is an error naming the message
    /// ID and the bytes needed; extra trailing bytes are ignored.
    public init(_ message: ANTMessage) throws(ANTProtocolError) {
        let p = message.payload
        let id = message.id
        func need(_ count: Int, _ field: String) throws(ANTProtocolError) {
            guard p.count >= count else {
                throw ANTProtocolError(messageID: id, .tooShort(field: field, needed: count, available: p.count))
            }
        }
        switch id {
        case ANTMessageID.startup:
            try need(1, "startup reason")
            self = .startup(reason: p[0])
        case ANTMessageID.capabilities:
            self = .capabilities(try ANTCapabilities(payload: p))
        case ANTMessageID.version:
            try need(1, "version")
            let text = p.prefix { $0 != 0 }.map { $0 < 0x80 ? Character(Unicode.Scalar($0)) : "?" }
            self = .version(String(text))
        case ANTMessageID.serialNumber:
            try need(4, "serial number")
            self = .serialNumber(UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24)
        case ANTMessageID.channelResponse:
            try need(3, "channel response")
            if p[1] == 0x01 {
                self = .channelEvent(channel: p[0], code: ANTResponseCode(p[2]))
            } else {
                self = .channelResponse(channel: p[0], messageID: p[1], code: ANTResponseCode(p[2]))
            }
        case ANTMessageID.broadcastData, ANTMessageID.acknowledgedData:
            try need(9, "channel and data")
            let ext = try Self.flaggedExtension(p, messageID: id)
            let data = ANTDataMessage(channel: p[0], data: Array(p[1..<9]), channelID: ext.channelID, rssi: ext.rssi,
                                      rssiThreshold: ext.threshold, rxTimestamp: ext.timestamp)
            self = id == ANTMessageID.broadcastData ? .broadcast(data) : .acknowledged(data)
        case ANTMessageID.burstData:
            try need(9, "sequence, channel and data")
            let ext = try Self.flaggedExtension(p, messageID: id)
            self = .burst(Self.burstPacket(p[0], Array(p[1..<9]), ext.channelID))
        case ANTMessageID.extendedBroadcastData, ANTMessageID.extendedAcknowledgedData, ANTMessageID.extendedBurstData:
            try need(13, "channel, channel ID and data")
            let channelID = ANTChannelID(bytes: p, at: 1)
            let data = Array(p[5..<13])
            switch id {
            case ANTMessageID.extendedBroadcastData: self = .broadcast(ANTDataMessage(channel: p[0], data: data, channelID: channelID))
            case ANTMessageID.extendedAcknowledgedData:
                self = .acknowledged(ANTDataMessage(channel: p[0], data: data, channelID: channelID))
            default: self = .burst(Self.burstPacket(p[0], data, channelID))
            }
        case ANTMessageID.channelID:
            try need(5, "channel ID")
            self = .channelID(channel: p[0], ANTChannelID(bytes: p, at: 1)!)
        case ANTMessageID.channelStatus:
            try need(2, "channel status")
            self = .channelStatus(channel: p[0], state: p[1] & 0x03)
        case ANTMessageID.serialError:
            try need(1, "serial error")
            self = .serialError(p[0])
        default:
            self = .other(message)
        }
    }

    private static func burstPacket(_ first: UInt8, _ data: [UInt8], _ channelID: ANTChannelID?) -> ANTBurstPacket {
        ANTBurstPacket(channel: first & 0x1F, sequence: (first >> 5) & 0x03, isLast: first & 0x80 != 0, data: data, channelID: channelID)
    }

    /// The flagged extended fields after the 9 bytes of channel and data: a flag byte, then the
    /// channel ID (flag 0x80, 4 bytes), the RSSI (0x40: measurement type, RSSI, threshold) and the
    /// receive time stamp (0x20: LE16), in that order.
    private static func flaggedExtension(_ p: [UInt8], messageID: UInt8) throws(ANTProtocolError)
        -> (channelID: ANTChannelID?, rssi: Int8?, threshold: Int8?, timestamp: UInt16?)
    {
        guard p.count > 9 else { return (nil, nil, nil, nil) }
        let flag = p[9]
        var needed = 10
        if flag & 0x80 != 0 { needed += 4 }
        if flag & 0x40 != 0 { needed += 3 }
        if flag & 0x20 != 0 { needed += 2 }
        guard p.count >= needed else {
            throw ANTProtocolError(messageID: messageID, .tooShort(field: "extended data (flag 0x\(hex(flag)))", needed: needed,
                                                                   available: p.count))
        }
        var at = 10
        var channelID: ANTChannelID?
        var rssi: Int8?
        var threshold: Int8?
        var timestamp: UInt16?
        if flag & 0x80 != 0 {
            channelID = ANTChannelID(bytes: p, at: at)
            at += 4
        }
        if flag & 0x40 != 0 {
            rssi = Int8(bitPattern: p[at + 1])
            threshold = Int8(bitPattern: p[at + 2])
            at += 3
        }
        if flag & 0x20 != 0 {
            timestamp = UInt16(p[at]) | UInt16(p[at + 1]) << 8
        }
        return (channelID, rssi, threshold, timestamp)
    }
}
