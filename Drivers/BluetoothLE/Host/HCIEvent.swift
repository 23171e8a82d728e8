public import BluetoothCentral
/// Return parameters of a Command Complete, decoded for the commands the host issues.
public enum HCICommandReturn: Equatable, Sendable {
    /// Status only (Reset, Set Event Mask, scan commands, ...).
    case none
    case bdAddr(DeviceAddress)
    case localVersion(LocalVersion)
    case bufferSize(BufferSize)
    case leBufferSize(LEBufferSize)
    case connectionHandle(UInt16)
    /// A command this module does not decode: the bytes after the status.
    case unknown([UInt8])

    public struct LocalVersion: Equatable, Sendable {
        public var hciVersion: UInt8
        public var hciSubversion: UInt16
        public var lmpVersion: UInt8
        public var companyIdentifier: UInt16
        public var lmpSubversion: UInt16
    }

    public struct BufferSize: Equatable, Sendable {
        public var aclDataPacketLength: UInt16
        public var synchronousDataPacketLength: UInt8
        public var totalACLDataPackets: UInt16
        public var totalSynchronousDataPackets: UInt16
    }

    /// A length or count of 0 means the controller shares the BR/EDR buffers (Read Buffer Size).
    public struct LEBufferSize: Equatable, Sendable {
        public var aclDataPacketLength: UInt16
        public var totalACLDataPackets: UInt8
    }

    /// Decodes the return parameters after the status byte for `opcode`.
    public static func decode(opcode: HCIOpcode, _ bytes: [UInt8], base: Int = 0) throws(BLEDecodeError) -> HCICommandReturn {
        var r = ByteReader(bytes, layer: .hciEvent, base: base)
        let value: HCICommandReturn
        switch opcode {
        case .readBDAddr:
            value = .bdAddr(DeviceAddress(littleEndian: try r.bytes(6, "BD_ADDR")))
        case .readLocalVersion:
            value = .localVersion(LocalVersion(hciVersion: try r.uint8("HCI version"), hciSubversion: try r.uint16("HCI subversion"),
                                               lmpVersion: try r.uint8("LMP version"), companyIdentifier: try r.uint16("company"),
                                               lmpSubversion: try r.uint16("LMP subversion")))
        case .readBufferSize:
            value = .bufferSize(BufferSize(aclDataPacketLength: try r.uint16("ACL length"), synchronousDataPacketLength: try r.uint8("SCO length"),
                                           totalACLDataPackets: try r.uint16("ACL count"), totalSynchronousDataPackets: try r.uint16("SCO count")))
        case .leReadBufferSize:
            value = .leBufferSize(LEBufferSize(aclDataPacketLength: try r.uint16("LE ACL length"), totalACLDataPackets: try r.uint8("LE ACL count")))
        case .leRemoteConnectionParameterRequestReply:
            value = .connectionHandle(try r.uint16("connection handle"))
        case .reset, .setEventMask, .leSetEventMask, .leSetRandomAddress, .leSetScanParameters, .leSetScanEnable,
             .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leCreateConnectionCancel:
            value = .none
        default:
            return .unknown(r.rest())
        }
        try r.expectEnd()
        return value
    }
}

public struct CommandComplete: Equatable, Sendable {
    public var numCommandPackets: UInt8
    public var opcode: HCIOpcode
    /// Everything after the opcode, status included (empty for the NOP opcode 0x0000).
    public var returnParameters: [UInt8]

    public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }
}

public struct CommandStatus: Equatable, Sendable {
    public var status: HCIStatus
    public var numCommandPackets: UInt8
    public var opcode: HCIOpcode
}

public struct CompletedPackets: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var count: UInt16
    public init(handle: UInt16, count: UInt16) {
        self.handle = handle
        self.count = count
    }
}

/// LE Connection Complete (0x01) or LE Enhanced Connection Complete (0x0A, with the private
/// addresses).
public struct LEConnectionComplete: Equatable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    /// 0 central, 1 peripheral.
    public var role: UInt8
    public var peer: DeviceAddress
    public var peerAddressType: UInt8
    public var localResolvablePrivateAddress: DeviceAddress?
    public var peerResolvablePrivateAddress: DeviceAddress?
    /// 1.25 ms units.
    public var interval: UInt16
    public var peripheralLatency: UInt16
    /// 10 ms units.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8
    public var enhanced: Bool
}

/// One advertising report from either LE Advertising Report (0x02) or LE Extended Advertising
/// Report (0x0D), in the extended form. Legacy event types map to the extended bits.
public struct AdvertisingReport: Equatable, Sendable {
    /// Extended event type bits: 0 connectable, 1 scannable, 2 directed, 3 scan response, 4 legacy,
    /// 5-6 data status.
    public var eventType: UInt16
    public var addressType: UInt8
    public var address: DeviceAddress
    public var primaryPHY: UInt8
    public var secondaryPHY: UInt8
    public var advertisingSID: UInt8
    /// dBm; nil when not available (127).
    public var txPower: Int8?
    /// dBm; nil when not available (127).
    public var rssi: Int8?
    public var periodicAdvertisingInterval: UInt16
    public var data: [UInt8]
    /// True when it came from the legacy 0x02 subevent.
    public var fromLegacyEvent: Bool

    public var isConnectable: Bool { eventType & 0x01 != 0 }
    public var isScannable: Bool { eventType & 0x02 != 0 }
    public var isDirected: Bool { eventType & 0x04 != 0 }
    public var isScanResponse: Bool { eventType & 0x08 != 0 }
    public var isLegacyPDU: Bool { eventType & 0x10 != 0 }
    /// 0 complete, 1 incomplete with more to come, 2 incomplete and truncated.
    public var dataStatus: UInt8 { UInt8((eventType >> 5) & 0x03) }

    /// Legacy event types 0...4 (ADV_IND, ADV_DIRECT_IND, ADV_SCAN_IND, ADV_NONCONN_IND, SCAN_RSP) in
    /// extended bits, as the specification's table for legacy PDUs gives them.
    static func extendedEventType(legacy: UInt8) -> UInt16? {
        switch legacy {
        case 0: 0b0001_0011
        case 1: 0b0001_0101
        case 2: 0b0001_0010
        case 3: 0b0001_0000
        case 4: 0b0001_1011
        default: nil
        }
    }
}

public enum LEMetaEvent: Equatable, Sendable {
    case connectionComplete(LEConnectionComplete)
    case advertisingReports([AdvertisingReport])
    case connectionUpdateComplete(status: HCIStatus, handle: UInt16, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    case remoteConnectionParameterRequest(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, supervisionTimeout: UInt16)
    case dataLengthChange(handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16)
    case other(subevent: UInt8, parameters: [UInt8])
}

/// HCI events the host understands; the rest are kept as `.other`.
public enum HCIEvent: Equatable, Sendable {
    case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
    case commandComplete(CommandComplete)
    case commandStatus(CommandStatus)
    case numberOfCompletedPackets([CompletedPackets])
    case le(LEMetaEvent)
    case other(code: UInt8, parameters: [UInt8])

    public enum Code {
        public static let disconnectionComplete: UInt8 = 0x05
        public static let commandComplete: UInt8 = 0x0E
        public static let commandStatus: UInt8 = 0x0F
        public static let numberOfCompletedPackets: UInt8 = 0x13
        public static let leMeta: UInt8 = 0x3E
    }

    /// Upper bound on reports per advertising event (the event length allows at most 25 legacy ones).
    public static let maxReportsPerEvent = 25

    /// Decodes an event packet after the H4 type indicator: code, length, parameters.
    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> HCIEvent {
        var head = ByteReader(bytes, layer: .hciEvent)
        let code = try head.uint8("event code")
        let length = Int(try head.uint8("parameter length"))
        let params = try head.bytes(length, "parameters")
        try head.expectEnd()
        var r = ByteReader(params, layer: .hciEvent, base: 2)
        let event: HCIEvent
        switch code {
        case Code.disconnectionComplete:
            event = .disconnectionComplete(status: HCIStatus(rawValue: try r.uint8("status")),
                                           handle: try r.uint16("handle") & 0x0FFF,
                                           reason: HCIStatus(rawValue: try r.uint8("reason")))
        case Code.commandComplete:
            event = .commandComplete(CommandComplete(numCommandPackets: try r.uint8("Num_HCI_Command_Packets"),
                                                     opcode: HCIOpcode(rawValue: try r.uint16("opcode")),
                                                     returnParameters: r.rest()))
        case Code.commandStatus:
            event = .commandStatus(CommandStatus(status: HCIStatus(rawValue: try r.uint8("status")),
                                                 numCommandPackets: try r.uint8("Num_HCI_Command_Packets"),
                                                 opcode: HCIOpcode(rawValue: try r.uint16("opcode"))))
        case Code.numberOfCompletedPackets:
            let n = Int(try r.uint8("Num_Handles"))
            var entries: [CompletedPackets] = []
            for _ in 0..<n {
                entries.append(CompletedPackets(handle: try r.uint16("handle") & 0x0FFF, count: try r.uint16("completed packets")))
            }
            event = .numberOfCompletedPackets(entries)
        case Code.leMeta:
            event = .le(try decodeLEMeta(&r))
        default:
            return .other(code: code, parameters: params)
        }
        try r.expectEnd()
        return event
    }

    private static func decodeLEMeta(_ r: inout ByteReader) throws(BLEDecodeError) -> LEMetaEvent {
        let subevent = try r.uint8("subevent")
        switch subevent {
        case 0x01, 0x0A:
            let enhanced = subevent == 0x0A
            let status = HCIStatus(rawValue: try r.uint8("status"))
            let handle = try r.uint16("handle") & 0x0FFF
            let role = try r.uint8("role")
            let peerType = try r.uint8("peer address type")
            let peer = DeviceAddress(littleEndian: try r.bytes(6, "peer address"), hciAddressType: peerType)
            var local: DeviceAddress?, peerRPA: DeviceAddress?
            if enhanced {
                local = DeviceAddress(littleEndian: try r.bytes(6, "local RPA"), kind: .random)
                peerRPA = DeviceAddress(littleEndian: try r.bytes(6, "peer RPA"), kind: .random)
                if local?.value == 0 { local = nil }
                if peerRPA?.value == 0 { peerRPA = nil }
            }
            return .connectionComplete(LEConnectionComplete(
                status: status, handle: handle, role: role, peer: peer, peerAddressType: peerType,
                localResolvablePrivateAddress: local, peerResolvablePrivateAddress: peerRPA,
                interval: try r.uint16("interval"), peripheralLatency: try r.uint16("latency"),
                supervisionTimeout: try r.uint16("supervision timeout"), centralClockAccuracy: try r.uint8("clock accuracy"),
                enhanced: enhanced))
        case 0x02:
            let n = Int(try r.uint8("Num_Reports"))
            guard (1...maxReportsPerEvent).contains(n) else {
                throw r.error(.invalidValue(field: "Num_Reports", value: n), at: r.offset - 1)
            }
            var reports: [AdvertisingReport] = []
            for _ in 0..<n {
                let typeOffset = r.offset
                let legacyType = try r.uint8("event type")
                guard let type = AdvertisingReport.extendedEventType(legacy: legacyType) else {
                    throw r.error(.invalidValue(field: "event type", value: Int(legacyType)), at: typeOffset)
                }
                let addressType = try r.uint8("address type")
                let address = DeviceAddress(littleEndian: try r.bytes(6, "address"), hciAddressType: addressType)
                let length = Int(try r.uint8("data length"))
                guard length <= 31 else { throw r.error(.tooLong(field: "advertising data", length: length, limit: 31), at: r.offset - 1) }
                let data = try r.bytes(length, "advertising data")
                let rssi = try r.int8("RSSI")
                reports.append(AdvertisingReport(eventType: type, addressType: addressType, address: address, primaryPHY: 1,
                                                 secondaryPHY: 0, advertisingSID: 0xFF, txPower: nil,
                                                 rssi: rssi == 127 ? nil : rssi, periodicAdvertisingInterval: 0,
                                                 data: data, fromLegacyEvent: true))
            }
            return .advertisingReports(reports)
        case 0x0D:
            let n = Int(try r.uint8("Num_Reports"))
            guard (1...maxReportsPerEvent).contains(n) else {
                throw r.error(.invalidValue(field: "Num_Reports", value: n), at: r.offset - 1)
            }
            var reports: [AdvertisingReport] = []
            for _ in 0..<n {
                let type = try r.uint16("event type")
                let addressType = try r.uint8("address type")
                let address = DeviceAddress(littleEndian: try r.bytes(6, "address"), hciAddressType: addressType)
                let primary = try r.uint8("primary PHY"), secondary = try r.uint8("secondary PHY")
                let sid = try r.uint8("advertising SID")
                let tx = try r.int8("TX power"), rssi = try r.int8("RSSI")
                let interval = try r.uint16("periodic advertising interval")
                _ = try r.uint8("direct address type")
                _ = try r.bytes(6, "direct address")
                let length = Int(try r.uint8("data length"))
                let data = try r.bytes(length, "advertising data")
                reports.append(AdvertisingReport(eventType: type, addressType: addressType, address: address, primaryPHY: primary,
                                                 secondaryPHY: secondary, advertisingSID: sid, txPower: tx == 127 ? nil : tx,
                                                 rssi: rssi == 127 ? nil : rssi, periodicAdvertisingInterval: interval,
                                                 data: data, fromLegacyEvent: false))
            }
            return .advertisingReports(reports)
        case 0x03:
            return .connectionUpdateComplete(status: HCIStatus(rawValue: try r.uint8("status")), handle: try r.uint16("handle") & 0x0FFF,
                                             interval: try r.uint16("interval"), latency: try r.uint16("latency"),
                                             supervisionTimeout: try r.uint16("supervision timeout"))
        case 0x06:
            return .remoteConnectionParameterRequest(handle: try r.uint16("handle") & 0x0FFF, intervalMin: try r.uint16("interval min"),
                                                     intervalMax: try r.uint16("interval max"), maxLatency: try r.uint16("max latency"),
                                                     supervisionTimeout: try r.uint16("timeout"))
        case 0x07:
            return .dataLengthChange(handle: try r.uint16("handle") & 0x0FFF, maxTxOctets: try r.uint16("max TX octets"),
                                     maxTxTime: try r.uint16("max TX time"), maxRxOctets: try r.uint16("max RX octets"),
                                     maxRxTime: try r.uint16("max RX time"))
        default:
            return .other(subevent: subevent, parameters: r.rest())
        }
    }
}
