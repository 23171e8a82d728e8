/// An HCI command opcode: OGF in the top 6 bits, OCF in the low 10.
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF) }

    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x3FF }

    public static let nop = HCIOpcode(rawValue: 0x0000)
    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    public static let readLocalVersion = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDAddr = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)

    public var description: String { "0x" + hex(rawValue, width: 4) }
}

/// HCI error codes (Vol 1 Part F); only the ones the host acts on are named.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownCommand = HCIStatus(rawValue: 0x01)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let invalidParameters = HCIStatus(rawValue: 0x12)
    public static let remoteUserTerminated = HCIStatus(rawValue: 0x13)
    public static let localHostTerminated = HCIStatus(rawValue: 0x16)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let unacceptableConnectionParameters = HCIStatus(rawValue: 0x3B)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)
    public static let unknownConnectionCancelled = HCIStatus(rawValue: 0x44)

    public var isSuccess: Bool { rawValue == 0 }
    public var description: String { "0x" + hex(rawValue) }
}
