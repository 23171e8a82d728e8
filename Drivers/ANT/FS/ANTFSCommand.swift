/// What a host asks for in an ANT-FS AUTHENTICATE command.
public enum ANTFSAuthType: UInt8, Hashable, Sendable {
    /// Go to transport without authenticating (clients that allow it).
    case passthrough = 0
    /// Ask for the client's serial number and name.
    case serial = 1
    /// Ask to pair: the user accepts on the watch, which answers with a passkey to keep.
    case pairing = 2
    /// Authenticate with the passkey kept from pairing.
    case passkey = 3
}

/// A command from the host to an ANT-FS client: `44 id` and its parameters, padded with zeros
/// to a multiple of 8 bytes. Eight bytes go out as an acknowledged message, longer ones as a
/// burst (`isBurst`).
public enum ANTFSCommand: Hashable, Sendable, CustomStringConvertible {
    /// LINK `44 02 [frequency, period code, host serial LE32]`: the client moves to `frequency`
    /// (MHz above 2400) at the beacon rate of `period` (a period code, see
    /// ``ANTFSBeacon/beaconHz``) and enters authentication; the host retunes its channel to
    /// follow.
    case link(frequency: UInt8, period: UInt8, hostSerial: UInt32)
    /// DISCONNECT `44 03 [type, time duration, application-specific duration]`. Type 0 returns
    /// the client to link state, 1 to broadcast.
    case disconnect(type: UInt8, timeDuration: UInt8 = 0, applicationSpecificDuration: UInt8 = 0)
    /// AUTHENTICATE `44 04 [type, data length, host serial LE32]` and `data` padded to 8: nothing
    /// for the serial request, the host's name for pairing, the passkey for passkey
    /// authentication. Data beyond 255 bytes (the length byte's limit) is not sent.
    case authenticate(type: ANTFSAuthType, hostSerial: UInt32, data: [UInt8])
    /// DOWNLOAD `44 09 [index LE16, offset LE32, 0, initial, CRC seed LE16, max block size LE32]`:
    /// ask for the file at `index` (0 is the directory) from `offset`. `initial` is set on the
    /// first request of a file, clear on the continuations; `crcSeed` is the CRC of the file's
    /// bytes before `offset` (the previous block's CRC). A maximum block size of 0 lets the
    /// client choose.
    case download(index: UInt16, offset: UInt32, initial: Bool, crcSeed: UInt16, maxBlockSize: UInt32)
    /// PING `44 05`: keeps the session alive.
    case ping

    /// The first byte of every command and response.
    public static let marker: UInt8 = 0x44

    /// The command's ID, the byte after `44`.
    public var id: UInt8 {
        switch self {
        case .link: 0x02
        case .disconnect: 0x03
        case .authenticate: 0x04
        case .ping: 0x05
        case .download: 0x09
        }
    }

    /// The bytes to send.
    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.marker, id]
        switch self {
        case .link(let frequency, let period, let hostSerial):
            out += [frequency, period]
            out.appendLE32(hostSerial)
        case .disconnect(let type, let timeDuration, let applicationSpecificDuration):
            out += [type, timeDuration, applicationSpecificDuration]
        case .authenticate(let type, let hostSerial, let data):
            let sent = data.prefix(255)
            out += [type.rawValue, UInt8(sent.count)]
            out.appendLE32(hostSerial)
            out += sent
        case .download(let index, let offset, let initial, let crcSeed, let maxBlockSize):
            out.appendLE16(index)
            out.appendLE32(offset)
            out += [0, initial ? 1 : 0]
            out.appendLE16(crcSeed)
            out.appendLE32(maxBlockSize)
        case .ping:
            break
        }
        out.padToEight()
        return out
    }

    /// True when the command is longer than 8 bytes and goes out as a burst.
    public var isBurst: Bool { bytes.count > 8 }

    /// In plain words, for errors and logs (never the passkey).
    public var description: String {
        switch self {
        case .link(let frequency, let period, _): "the LINK command (frequency \(frequency), period code \(period))"
        case .disconnect: "the DISCONNECT command"
        case .authenticate(.passthrough, _, _): "the pass-through authentication"
        case .authenticate(.serial, _, _): "the request for the watch's serial number"
        case .authenticate(.pairing, _, _): "the pairing request"
        case .authenticate(.passkey, _, _): "the passkey authentication"
        case .download(let index, let offset, _, _, _):
            index == 0 ? "the directory request at offset \(offset)" : "the download request for file \(index) at offset \(offset)"
        case .ping: "the PING command"
        }
    }
}
