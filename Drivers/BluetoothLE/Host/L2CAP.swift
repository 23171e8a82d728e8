import BluetoothCentral
/// An L2CAP basic frame: length (of the payload), channel ID, payload.
public struct L2CAPFrame: Equatable, Hashable, Sendable {
    public var channel: UInt16
    public var payload: [UInt8]

    public init(channel: UInt16, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }

    /// LE fixed channels.
    public static let attChannel: UInt16 = 0x0004
    public static let leSignalingChannel: UInt16 = 0x0005
    public static let smpChannel: UInt16 = 0x0006

    public var encoded: [UInt8] {
        let payload = payload.prefix(0xFFFF)
        return [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(channel & 0xFF), UInt8(channel >> 8)] + payload
    }

    /// Decodes a complete PDU; the length field must match the payload exactly.
    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> L2CAPFrame {
        var r = ByteReader(bytes, layer: .l2cap)
        let length = Int(try r.uint16("length"))
        let channel = try r.uint16("channel ID")
        let payload = try r.bytes(length, "payload")
        try r.expectEnd()
        return L2CAPFrame(channel: channel, payload: payload)
    }
}

/// Commands on the LE signaling channel (Vol 3 Part A 4).
public enum LESignalingCommand: Equatable, Sendable {
    case commandReject(identifier: UInt8, reason: UInt16, data: [UInt8])
    /// Intervals in 1.25 ms, timeout in 10 ms.
    case connectionParameterUpdateRequest(identifier: UInt8, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16)
    /// Result 0 accepted, 1 rejected.
    case connectionParameterUpdateResponse(identifier: UInt8, result: UInt16)
    /// LE Credit Based Connection Request: only answered (refused), never opened.
    case leCreditBasedConnectionRequest(identifier: UInt8, psm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16)
    case leCreditBasedConnectionResponse(identifier: UInt8, destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: UInt16)
    case other(code: UInt8, identifier: UInt8, data: [UInt8])

    public enum Code {
        public static let commandReject: UInt8 = 0x01
        public static let connectionParameterUpdateRequest: UInt8 = 0x12
        public static let connectionParameterUpdateResponse: UInt8 = 0x13
        public static let leCreditBasedConnectionRequest: UInt8 = 0x14
        public static let leCreditBasedConnectionResponse: UInt8 = 0x15
    }

    public var identifier: UInt8 {
        switch self {
        case .commandReject(let id, _, _), .connectionParameterUpdateRequest(let id, _, _, _, _),
             .connectionParameterUpdateResponse(let id, _), .leCreditBasedConnectionRequest(let id, _, _, _, _, _),
             .leCreditBasedConnectionResponse(let id, _, _, _, _, _), .other(_, let id, _):
            id
        }
    }

    public var encoded: [UInt8] {
        var w = ByteWriter()
        let code: UInt8
        switch self {
        case .commandReject(_, let reason, let data):
            code = Code.commandReject; w.uint16(reason); w.append(data)
        case .connectionParameterUpdateRequest(_, let a, let b, let c, let d):
            code = Code.connectionParameterUpdateRequest; w.uint16(a); w.uint16(b); w.uint16(c); w.uint16(d)
        case .connectionParameterUpdateResponse(_, let result):
            code = Code.connectionParameterUpdateResponse; w.uint16(result)
        case .leCreditBasedConnectionRequest(_, let psm, let cid, let mtu, let mps, let credits):
            code = Code.leCreditBasedConnectionRequest; w.uint16(psm); w.uint16(cid); w.uint16(mtu); w.uint16(mps); w.uint16(credits)
        case .leCreditBasedConnectionResponse(_, let cid, let mtu, let mps, let credits, let result):
            code = Code.leCreditBasedConnectionResponse; w.uint16(cid); w.uint16(mtu); w.uint16(mps); w.uint16(credits); w.uint16(result)
        case .other(let c, _, let data):
            code = c; w.append(data)
        }
        let data = w.bytes.prefix(0xFFFF)
        return [code, identifier, UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
    }

    /// Decodes one command (an LE signaling frame carries exactly one).
    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> LESignalingCommand {
        var head = ByteReader(bytes, layer: .signaling)
        let code = try head.uint8("code")
        let id = try head.uint8("identifier")
        let length = Int(try head.uint16("length"))
        let data = try head.bytes(length, "data")
        try head.expectEnd()
        var r = ByteReader(data, layer: .signaling, base: 4)
        let command: LESignalingCommand
        switch code {
        case Code.commandReject:
            command = .commandReject(identifier: id, reason: try r.uint16("reason"), data: r.rest())
        case Code.connectionParameterUpdateRequest:
            command = .connectionParameterUpdateRequest(identifier: id, intervalMin: try r.uint16("interval min"),
                                                        intervalMax: try r.uint16("interval max"), latency: try r.uint16("latency"),
                                                        timeout: try r.uint16("timeout"))
        case Code.connectionParameterUpdateResponse:
            command = .connectionParameterUpdateResponse(identifier: id, result: try r.uint16("result"))
        case Code.leCreditBasedConnectionRequest:
            command = .leCreditBasedConnectionRequest(identifier: id, psm: try r.uint16("SPSM"), sourceCID: try r.uint16("source CID"),
                                                      mtu: try r.uint16("MTU"), mps: try r.uint16("MPS"), initialCredits: try r.uint16("credits"))
        case Code.leCreditBasedConnectionResponse:
            command = .leCreditBasedConnectionResponse(identifier: id, destinationCID: try r.uint16("destination CID"), mtu: try r.uint16("MTU"),
                                                       mps: try r.uint16("MPS"), initialCredits: try r.uint16("credits"), result: try r.uint16("result"))
        default:
            return .other(code: code, identifier: id, data: data)
        }
        try r.expectEnd()
        return command
    }
}

/// SMP: only what a host that never pairs needs (Vol 3 Part H 3).
public enum SMP {
    public static let pairingRequest: UInt8 = 0x01
    public static let pairingFailed: UInt8 = 0x05
    public static let securityRequest: UInt8 = 0x0B
    public static let reasonPairingNotSupported: UInt8 = 0x05
    public static let reasonCommandNotSupported: UInt8 = 0x07
}

/// What the LE fixed-channel layer asks for.
public enum L2CAPAction: Equatable, Sendable {
    /// An ATT PDU for the bearer of this connection.
    case att([UInt8])
    /// Send this frame on the same connection.
    case send(L2CAPFrame)
    /// Issue this HCI command (the connection update the peripheral asked for).
    case command(HCICommand)
    /// A frame that needs no answer, or one that does not decode; with a reason for the log.
    case ignored(channel: UInt16, reason: String)
}

/// Routes the LE fixed channels of one connection, as a pure function of each frame.
///
/// - ATT (0x0004) goes to the ATT bearer.
/// - Signaling (0x0005): a Connection Parameter Update Request with valid parameters is accepted and
///   turned into an HCI LE Connection Update; invalid ones are rejected; an LE credit-based
///   connection request is refused (SPSM not supported); other requests get Command Reject
///   (command not understood). Responses and rejects from the peer need nothing.
/// - SMP (0x0006): Pairing Request and Security Request get Pairing Failed (Pairing Not Supported),
///   since the profiles HealthGate reads need no pairing; other unexpected commands get Pairing
///   Failed (Command Not Supported); a Pairing Failed from the peer needs nothing.
public enum LEFixedChannels {
    public static func route(_ frame: L2CAPFrame, handle: UInt16) -> [L2CAPAction] {
        switch frame.channel {
        case L2CAPFrame.attChannel:
            return [.att(frame.payload)]
        case L2CAPFrame.leSignalingChannel:
            return signaling(frame.payload, handle: handle)
        case L2CAPFrame.smpChannel:
            guard let code = frame.payload.first else { return [.ignored(channel: frame.channel, reason: "empty SMP PDU")] }
            switch code {
            case SMP.pairingFailed:
                return [.ignored(channel: frame.channel, reason: "peer reported pairing failed")]
            case SMP.pairingRequest, SMP.securityRequest:
                return [.send(L2CAPFrame(channel: L2CAPFrame.smpChannel, payload: [SMP.pairingFailed, SMP.reasonPairingNotSupported]))]
            default:
                return [.send(L2CAPFrame(channel: L2CAPFrame.smpChannel, payload: [SMP.pairingFailed, SMP.reasonCommandNotSupported]))]
            }
        default:
            return [.ignored(channel: frame.channel, reason: "no fixed channel 0x\(hex(frame.channel, width: 4))")]
        }
    }

    static func signaling(_ payload: [UInt8], handle: UInt16) -> [L2CAPAction] {
        let command: LESignalingCommand
        do {
            command = try LESignalingCommand.decode(payload)
        } catch {
            // A PDU that does not decode: reject it if at least the identifier is there.
            guard payload.count >= 2, payload[1] != 0 else {
                return [.ignored(channel: L2CAPFrame.leSignalingChannel, reason: error.description)]
            }
            return [.send(signalingFrame(.commandReject(identifier: payload[1], reason: 0x0000, data: [])))]
        }
        switch command {
        case .connectionParameterUpdateRequest(let id, let min, let max, let latency, let timeout):
            let parameters = LEConnectionParameters(intervalMin: min, intervalMax: max, maxLatency: latency, supervisionTimeout: timeout)
            guard parameters.isValid else {
                return [.send(signalingFrame(.connectionParameterUpdateResponse(identifier: id, result: 0x0001)))]
            }
            return [.send(signalingFrame(.connectionParameterUpdateResponse(identifier: id, result: 0x0000))),
                    .command(.leConnectionUpdate(handle: handle, parameters))]
        case .leCreditBasedConnectionRequest(let id, _, _, _, _, _):
            return [.send(signalingFrame(.leCreditBasedConnectionResponse(identifier: id, destinationCID: 0, mtu: 0, mps: 0,
                                                                          initialCredits: 0, result: 0x0002)))]
        case .commandReject, .connectionParameterUpdateResponse, .leCreditBasedConnectionResponse:
            return [.ignored(channel: L2CAPFrame.leSignalingChannel, reason: "response needs no answer")]
        case .other(_, let id, _):
            if id == 0 { return [.ignored(channel: L2CAPFrame.leSignalingChannel, reason: "identifier 0 is invalid")] }
            return [.send(signalingFrame(.commandReject(identifier: id, reason: 0x0000, data: [])))]
        }
    }

    static func signalingFrame(_ command: LESignalingCommand) -> L2CAPFrame {
        L2CAPFrame(channel: L2CAPFrame.leSignalingChannel, payload: command.encoded)
    }
}
