public import BluetoothCentral
/// LE connection parameters in controller units: intervals in 1.25 ms, timeout in 10 ms,
/// connection-event lengths in 0.625 ms.
public struct LEConnectionParameters: Equatable, Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(intervalMin: UInt16 = 24, intervalMax: UInt16 = 40, maxLatency: UInt16 = 0,
                supervisionTimeout: UInt16 = 400, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    /// The ranges of Vol 4 Part E 7.8.12 / Vol 3 Part A 4.20: intervals 6...3200 with min <= max,
    /// latency <= 499, timeout 10...3200 and longer than (1 + latency) * intervalMax * 2.
    public var isValid: Bool {
        guard (6...3200).contains(intervalMin), (6...3200).contains(intervalMax), intervalMin <= intervalMax,
              maxLatency <= 499, (10...3200).contains(supervisionTimeout) else { return false }
        // timeout * 10 ms > (1 + latency) * intervalMax * 1.25 ms * 2, in units of 0.25 ms:
        return Int(supervisionTimeout) * 40 > (1 + Int(maxLatency)) * Int(intervalMax) * 10
    }

    func write(to w: inout ByteWriter) {
        w.uint16(intervalMin); w.uint16(intervalMax); w.uint16(maxLatency)
        w.uint16(supervisionTimeout); w.uint16(minCELength); w.uint16(maxCELength)
    }
}

public struct LEScanParameters: Equatable, Sendable {
    public enum ScanType: UInt8, Sendable { case passive = 0, active = 1 }
    public var type: ScanType
    /// In 0.625 ms units, 0x0004...0x4000.
    public var interval: UInt16
    public var window: UInt16
    public var ownAddressType: UInt8
    public var filterPolicy: UInt8

    public init(type: ScanType = .passive, interval: UInt16 = 0x0060, window: UInt16 = 0x0030,
                ownAddressType: UInt8 = 1, filterPolicy: UInt8 = 0) {
        self.type = type
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }
}

public struct LECreateConnectionParameters: Equatable, Sendable {
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var useFilterAcceptList: Bool
    public var peer: DeviceAddress
    public var ownAddressType: UInt8
    public var connection: LEConnectionParameters

    public init(peer: DeviceAddress, scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060,
                useFilterAcceptList: Bool = false, ownAddressType: UInt8 = 1,
                connection: LEConnectionParameters = LEConnectionParameters()) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.useFilterAcceptList = useFilterAcceptList
        self.peer = peer
        self.ownAddressType = ownAddressType
        self.connection = connection
    }
}

/// The HCI commands the host issues.
public enum HCICommand: Equatable, Sendable {
    case reset
    case readBDAddr
    case readLocalVersion
    case readBufferSize
    case setEventMask(UInt64)
    case leSetEventMask(UInt64)
    case leReadBufferSize
    case leSetRandomAddress(DeviceAddress)
    case leSetScanParameters(LEScanParameters)
    case leSetScanEnable(enabled: Bool, filterDuplicates: Bool)
    /// Scanning on LE 1M only (PHY bit 0): one set of scan type, interval and window.
    case leSetExtendedScanParameters(LEScanParameters)
    /// Duration in 10 ms units and period in 1.28 s units; 0 means until disabled.
    case leSetExtendedScanEnable(enabled: Bool, filterDuplicates: Bool, duration: UInt16, period: UInt16)
    case leCreateConnection(LECreateConnectionParameters)
    case leCreateConnectionCancel
    case disconnect(handle: UInt16, reason: HCIStatus)
    case leConnectionUpdate(handle: UInt16, LEConnectionParameters)
    case leRemoteConnectionParameterRequestReply(handle: UInt16, LEConnectionParameters)
    /// Anything else, already encoded.
    case raw(HCIOpcode, [UInt8])

    public var opcode: HCIOpcode {
        switch self {
        case .reset: .reset
        case .readBDAddr: .readBDAddr
        case .readLocalVersion: .readLocalVersion
        case .readBufferSize: .readBufferSize
        case .setEventMask: .setEventMask
        case .leSetEventMask: .leSetEventMask
        case .leReadBufferSize: .leReadBufferSize
        case .leSetRandomAddress: .leSetRandomAddress
        case .leSetScanParameters: .leSetScanParameters
        case .leSetScanEnable: .leSetScanEnable
        case .leSetExtendedScanParameters: .leSetExtendedScanParameters
        case .leSetExtendedScanEnable: .leSetExtendedScanEnable
        case .leCreateConnection: .leCreateConnection
        case .leCreateConnectionCancel: .leCreateConnectionCancel
        case .disconnect: .disconnect
        case .leConnectionUpdate: .leConnectionUpdate
        case .leRemoteConnectionParameterRequestReply: .leRemoteConnectionParameterRequestReply
        case .raw(let op, _): op
        }
    }

    /// The command's parameters.
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .reset, .readBDAddr, .readLocalVersion, .readBufferSize, .leReadBufferSize, .leCreateConnectionCancel:
            break
        case .setEventMask(let mask), .leSetEventMask(let mask):
            w.uint64(mask)
        case .leSetRandomAddress(let address):
            w.append(address.littleEndianBytes)
        case .leSetScanParameters(let p):
            w.uint8(p.type.rawValue); w.uint16(p.interval); w.uint16(p.window)
            w.uint8(p.ownAddressType); w.uint8(p.filterPolicy)
        case .leSetScanEnable(let enabled, let filter):
            w.uint8(enabled ? 1 : 0); w.uint8(filter ? 1 : 0)
        case .leSetExtendedScanParameters(let p):
            w.uint8(p.ownAddressType); w.uint8(p.filterPolicy); w.uint8(0x01)
            w.uint8(p.type.rawValue); w.uint16(p.interval); w.uint16(p.window)
        case .leSetExtendedScanEnable(let enabled, let filter, let duration, let period):
            w.uint8(enabled ? 1 : 0); w.uint8(filter ? 1 : 0); w.uint16(duration); w.uint16(period)
        case .leCreateConnection(let p):
            w.uint16(p.scanInterval); w.uint16(p.scanWindow); w.uint8(p.useFilterAcceptList ? 1 : 0)
            w.uint8(p.peer.kind.rawValue); w.append(p.peer.littleEndianBytes); w.uint8(p.ownAddressType)
            p.connection.write(to: &w)
        case .disconnect(let handle, let reason):
            w.uint16(handle); w.uint8(reason.rawValue)
        case .leConnectionUpdate(let handle, let p), .leRemoteConnectionParameterRequestReply(let handle, let p):
            w.uint16(handle); p.write(to: &w)
        case .raw(_, let bytes):
            w.append(bytes)
        }
        return w.bytes
    }

    /// The command packet after the H4 type indicator: opcode, parameter length, parameters.
    /// Raw parameters beyond 255 bytes are cut to 255 (the length field is one byte).
    public var packet: [UInt8] {
        let params = parameters.prefix(255)
        return [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(params.count)] + params
    }

    public var h4Packet: H4Packet { H4Packet(.command, packet) }

    /// Decodes a command packet (for btsnoop replay and tests); unknown opcodes become `.raw`.
    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> HCICommand {
        var r = ByteReader(bytes, layer: .hciCommand)
        let op = HCIOpcode(rawValue: try r.uint16("opcode"))
        let length = Int(try r.uint8("parameter length"))
        let params = try r.bytes(length, "parameters")
        try r.expectEnd()
        var p = ByteReader(params, layer: .hciCommand, base: 3)
        func conn(_ p: inout ByteReader) throws(BLEDecodeError) -> LEConnectionParameters {
            LEConnectionParameters(intervalMin: try p.uint16("interval min"), intervalMax: try p.uint16("interval max"),
                                   maxLatency: try p.uint16("max latency"), supervisionTimeout: try p.uint16("timeout"),
                                   minCELength: try p.uint16("min CE length"), maxCELength: try p.uint16("max CE length"))
        }
        let command: HCICommand
        switch op {
        case .reset: command = .reset
        case .readBDAddr: command = .readBDAddr
        case .readLocalVersion: command = .readLocalVersion
        case .readBufferSize: command = .readBufferSize
        case .leReadBufferSize: command = .leReadBufferSize
        case .leCreateConnectionCancel: command = .leCreateConnectionCancel
        case .setEventMask: command = .setEventMask(try p.uint64("event mask"))
        case .leSetEventMask: command = .leSetEventMask(try p.uint64("LE event mask"))
        case .leSetRandomAddress:
            command = .leSetRandomAddress(DeviceAddress(littleEndian: try p.bytes(6, "address"), kind: .random))
        case .leSetScanParameters:
            let type = try p.uint8("scan type")
            command = .leSetScanParameters(LEScanParameters(
                type: type == 1 ? .active : .passive, interval: try p.uint16("interval"), window: try p.uint16("window"),
                ownAddressType: try p.uint8("own address type"), filterPolicy: try p.uint8("filter policy")))
        case .leSetScanEnable:
            command = .leSetScanEnable(enabled: try p.uint8("enable") != 0, filterDuplicates: try p.uint8("filter") != 0)
        case .leSetExtendedScanParameters:
            let own = try p.uint8("own address type"), filter = try p.uint8("filter policy")
            let phys = try p.uint8("scanning PHYs")
            guard phys == 1 else { return .raw(op, params) }
            let type = try p.uint8("scan type")
            command = .leSetExtendedScanParameters(LEScanParameters(
                type: type == 1 ? .active : .passive, interval: try p.uint16("interval"), window: try p.uint16("window"),
                ownAddressType: own, filterPolicy: filter))
        case .leSetExtendedScanEnable:
            command = .leSetExtendedScanEnable(enabled: try p.uint8("enable") != 0, filterDuplicates: try p.uint8("filter") != 0,
                                               duration: try p.uint16("duration"), period: try p.uint16("period"))
        case .leCreateConnection:
            let interval = try p.uint16("scan interval"), window = try p.uint16("scan window")
            let policy = try p.uint8("filter policy"), peerType = try p.uint8("peer address type")
            let peer = DeviceAddress(littleEndian: try p.bytes(6, "peer address"), hciAddressType: peerType)
            let own = try p.uint8("own address type")
            command = .leCreateConnection(LECreateConnectionParameters(
                peer: peer, scanInterval: interval, scanWindow: window, useFilterAcceptList: policy != 0,
                ownAddressType: own, connection: try conn(&p)))
        case .disconnect:
            command = .disconnect(handle: try p.uint16("handle"), reason: HCIStatus(rawValue: try p.uint8("reason")))
        case .leConnectionUpdate:
            command = .leConnectionUpdate(handle: try p.uint16("handle"), try conn(&p))
        case .leRemoteConnectionParameterRequestReply:
            command = .leRemoteConnectionParameterRequestReply(handle: try p.uint16("handle"), try conn(&p))
        default:
            return .raw(op, params)
        }
        try p.expectEnd()
        return command
    }
}
