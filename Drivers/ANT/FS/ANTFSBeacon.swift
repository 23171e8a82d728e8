/// The state an ANT-FS client (the watch) says it is in, in every beacon.
public enum ANTFSState: Hashable, Sendable, CustomStringConvertible {
    /// Waiting for a host's LINK, on its search frequency.
    case link
    /// Linked to a host (whose serial the beacon carries), waiting for it to authenticate.
    case authentication
    /// Authenticated: serving downloads, uploads and erases.
    case transport
    /// Working on a request (preparing a file, waiting for the user): the host waits.
    case busy
    /// A state this module does not know (the low nibble of the second status byte).
    case other(UInt8)

    /// The state for the low nibble of the second status byte.
    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .link
        case 1: self = .authentication
        case 2: self = .transport
        case 3: self = .busy
        default: self = .other(rawValue)
        }
    }

    /// The state's value in a beacon.
    public var rawValue: UInt8 {
        switch self {
        case .link: 0
        case .authentication: 1
        case .transport: 2
        case .busy: 3
        case .other(let v): v
        }
    }

    public var description: String {
        switch self {
        case .link: "link"
        case .authentication: "authentication"
        case .transport: "transport"
        case .busy: "busy"
        case .other(let v): "state \(v)"
        }
    }
}

/// An ANT-FS beacon: the 8-byte broadcast an ANT-FS client sends at its beacon rate, and the
/// first 8 bytes of every burst it sends back.
///
/// Layout: `43 s1 s2 auth desc[4]`. s1: 0x20 data available, 0x10 upload enabled, 0x08 pairing
/// enabled, bits 0-2 the beacon period code. s2: the state in its low nibble. auth: the client's
/// authentication type. desc: in link state the client's device type and manufacturer (LE16
/// each); in the other states the serial number of the host it is talking to (LE32).
public struct ANTFSBeacon: Hashable, Sendable {
    /// The first byte of every beacon.
    public static let id: UInt8 = 0x43

    /// The watch has files to download (status 1, 0x20).
    public var dataAvailable: Bool
    /// The watch takes uploads (status 1, 0x10).
    public var uploadEnabled: Bool
    /// The watch accepts pairing requests (status 1, 0x08).
    public var pairingEnabled: Bool
    /// Bits 0-2 of the first status byte: 0 = 0.5 Hz, 1 = 1 Hz, 2 = 2 Hz, 3 = 4 Hz, 4 = 8 Hz,
    /// 7 = keep the established channel period (see `beaconHz`).
    public var periodCode: UInt8
    /// The watch's state (low nibble of status 2).
    public var state: ANTFSState
    /// The client's authentication type, as sent (3 in every public capture: passkey and
    /// pairing).
    public var authenticationType: UInt8
    /// The four descriptor bytes, as sent.
    public var descriptor: [UInt8]

    /// Decodes the beacon at the start of `data` (8 bytes; bytes after them are ignored, so a
    /// payload with extended data appended decodes too).
    public init(_ data: [UInt8]) throws(ANTFSError) {
        guard data.count >= 8 else { throw .truncated(field: "beacon", offset: 0, needed: 8, available: data.count) }
        guard data[0] == Self.id else { throw .invalidValue(field: "beacon id", offset: 0, value: Int(data[0])) }
        dataAvailable = data[1] & 0x20 != 0
        uploadEnabled = data[1] & 0x10 != 0
        pairingEnabled = data[1] & 0x08 != 0
        periodCode = data[1] & 0x07
        state = ANTFSState(rawValue: data[2] & 0x0F)
        authenticationType = data[3]
        descriptor = Array(data[4..<8])
    }

    /// A beacon built from its fields (for tests and simulated clients).
    public init(
        state: ANTFSState, dataAvailable: Bool = true, uploadEnabled: Bool = false, pairingEnabled: Bool = true,
        periodCode: UInt8 = 4, authenticationType: UInt8 = 3, descriptor: [UInt8]
    ) {
        self.state = state
        self.dataAvailable = dataAvailable
        self.uploadEnabled = uploadEnabled
        self.pairingEnabled = pairingEnabled
        self.periodCode = periodCode & 0x07
        self.authenticationType = authenticationType
        self.descriptor = Array((descriptor + [0, 0, 0, 0]).prefix(4))
    }

    /// The 8 bytes on the air.
    public var bytes: [UInt8] {
        var s1 = periodCode & 0x07
        if dataAvailable { s1 |= 0x20 }
        if uploadEnabled { s1 |= 0x10 }
        if pairingEnabled { s1 |= 0x08 }
        return [Self.id, s1, state.rawValue & 0x0F, authenticationType] + descriptor
    }

    /// The beacon rate the period code stands for; nil for the codes without a rate (5, 6, and
    /// 7 = keep the established period).
    public var beaconHz: Double? { Self.beaconHz(periodCode: periodCode) }

    /// The beacon rate of a period code (see `beaconHz`).
    public static func beaconHz(periodCode: UInt8) -> Double? {
        switch periodCode {
        case 0: 0.5
        case 1: 1
        case 2: 2
        case 3: 4
        case 4: 8
        default: nil
        }
    }

    /// The ANT channel period (in 1/32768 s) for a period code: 32768 / Hz, and 65535 for
    /// 0.5 Hz (the largest period ANT allows); nil for the codes without a rate.
    public static func channelPeriod(periodCode: UInt8) -> UInt16? {
        switch periodCode {
        case 0: 65535
        case 1: 32768
        case 2: 16384
        case 3: 8192
        case 4: 4096
        default: nil
        }
    }

    /// In link state: the client's device type (the product, e.g. 1018 for a Forerunner 310XT).
    public var deviceType: UInt16? { state == .link ? descriptor.le16(at: 0) : nil }
    /// In link state: the client's manufacturer (1 = Garmin).
    public var manufacturerID: UInt16? { state == .link ? descriptor.le16(at: 2) : nil }
    /// In the other states: the serial number of the host the client is linked to.
    public var hostSerial: UInt32? { state == .link ? nil : descriptor.le32(at: 0) }
}
