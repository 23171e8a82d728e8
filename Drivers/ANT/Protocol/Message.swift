/// One ANT serial message: its message ID and its payload, without the framing.
///
/// On the wire (USB bulk endpoints, or the old sticks' UART) a message is framed as
/// `A4 | length | id | payload[length] | checksum`, where the checksum is the XOR of every byte
/// before it, sync byte included.
public struct ANTMessage: Hashable, Sendable, CustomStringConvertible {
    /// The sync byte that starts every frame.
    public static let sync: UInt8 = 0xA4
    /// The largest payload the length byte can describe.
    public static let maximumPayloadLength = 255

    public var id: UInt8
    public var payload: [UInt8]

    public init(_ id: UInt8, _ payload: [UInt8]) {
        self.id = id
        self.payload = payload
    }

    /// The framed bytes: `A4 len id payload xor`. The payload must fit the length byte (255 bytes);
    /// every message this module builds or decodes does.
    public var encoded: [UInt8] {
        precondition(payload.count <= Self.maximumPayloadLength, "an ANT payload has at most 255 bytes")
        var bytes: [UInt8] = [Self.sync, UInt8(payload.count), id]
        bytes.append(contentsOf: payload)
        bytes.append(Self.checksum(bytes))
        return bytes
    }

    /// The XOR of `bytes`: the frame checksum when given every byte before it.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt8 {
        bytes.reduce(0, ^)
    }

    /// `0x4E [00 01 02 …]`: the ID and the payload in hexadecimal.
    public var description: String {
        "0x\(hex(id)) [\(payload.map(hex).joined(separator: " "))]"
    }
}

/// Two hexadecimal digits, upper case.
func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// The message IDs of the ANT serial protocol ("ANT Message Protocol and Usage"; openant
/// `Message.ID`; GoldenCheetah src/ANT/ANT.h).
///
/// IDs sent by the host are commands (configuration, control, data); the stick answers with
/// replies (0x40 channel response or event, 0x52 status, 0x54 capabilities, ...) and forwards the
/// data it receives (0x4E broadcast, 0x4F acknowledged, 0x50 burst, and their extended forms).
public enum ANTMessageID {
    // Notifications and replies.
    /// Reply to a command, or a channel event (`[channel, message ID or 1, code]`).
    public static let channelResponse: UInt8 = 0x40
    /// The stick's firmware version, a NUL-terminated ASCII string (requested with 0x4D).
    public static let version: UInt8 = 0x3E
    /// The state of one channel (requested with 0x4D).
    public static let channelStatus: UInt8 = 0x52
    /// The stick's capabilities (requested with 0x4D).
    public static let capabilities: UInt8 = 0x54
    /// The stick's serial number, 4 bytes little-endian (requested with 0x4D).
    public static let serialNumber: UInt8 = 0x61
    /// Sent once after a reset, with the reset reason.
    public static let startup: UInt8 = 0x6F
    /// The stick could not read a frame the host sent.
    public static let serialError: UInt8 = 0xAE

    // Configuration.
    public static let unassignChannel: UInt8 = 0x41
    public static let assignChannel: UInt8 = 0x42
    /// Channel period, in units of 1/32768 s.
    public static let channelPeriod: UInt8 = 0x43
    /// Search timeout in units of 2.5 s (0xFF: never).
    public static let searchTimeout: UInt8 = 0x44
    /// RF frequency as an offset from 2400 MHz.
    public static let radioFrequency: UInt8 = 0x45
    public static let networkKey: UInt8 = 0x46
    public static let transmitPower: UInt8 = 0x47
    public static let searchWaveform: UInt8 = 0x49
    /// Channel ID: device number, device type (bit 7: pairing), transmission type. Also the reply.
    public static let channelID: UInt8 = 0x51
    public static let addChannelIDToList: UInt8 = 0x59
    public static let configureIDList: UInt8 = 0x5A
    public static let channelTransmitPower: UInt8 = 0x60
    public static let lowPrioritySearchTimeout: UInt8 = 0x63
    /// Makes the stick append the sender's channel ID to received data (legacy flag format).
    public static let enableExtendedReceive: UInt8 = 0x66
    public static let enableLED: UInt8 = 0x68
    /// Library configuration: which extended fields (channel ID, RSSI, timestamp) to append.
    public static let libConfig: UInt8 = 0x6E
    public static let frequencyAgility: UInt8 = 0x70
    public static let proximitySearch: UInt8 = 0x71

    // Control.
    public static let resetSystem: UInt8 = 0x4A
    public static let openChannel: UInt8 = 0x4B
    public static let closeChannel: UInt8 = 0x4C
    /// Asks the stick for a message (capabilities, version, serial number, channel status/ID).
    public static let requestMessage: UInt8 = 0x4D
    /// Opens channel 0 in continuous receive (scan) mode.
    public static let openRxScanMode: UInt8 = 0x5B

    // Data.
    public static let broadcastData: UInt8 = 0x4E
    public static let acknowledgedData: UInt8 = 0x4F
    public static let burstData: UInt8 = 0x50
    /// Legacy extended broadcast: `[channel, device number LE16, device type, transmission type, 8 data]`.
    public static let extendedBroadcastData: UInt8 = 0x5D
    /// Legacy extended acknowledged data (same layout as 0x5D).
    public static let extendedAcknowledgedData: UInt8 = 0x5E
    /// Legacy extended burst data (same layout as 0x5D, with the sequence in the channel byte).
    public static let extendedBurstData: UInt8 = 0x5F
    public static let advancedBurstData: UInt8 = 0x72
}
