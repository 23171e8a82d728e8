public import BluetoothCentral
public struct ATTHandleUUID: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    public init(handle: UInt16, uuid: BluetoothUUID) { self.handle = handle; self.uuid = uuid }
}

public struct ATTHandleValue: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, value: [UInt8]) { self.handle = handle; self.value = value }
}

public struct ATTGroupValue: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle; self.endGroupHandle = endGroupHandle; self.value = value
    }
}

/// ATT PDUs a GATT client sends and receives.
///
/// The list responses carry one length for all entries: `encoded` uses the first entry's size, so
/// callers pass entries of one size (16-bit and 128-bit UUIDs in separate responses).
public enum ATTPDU: Equatable, Hashable, Sendable {
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(UInt16)
    case exchangeMTUResponse(UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse([ATTHandleUUID])
    case readByTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByTypeResponse([ATTHandleValue])
    case readRequest(handle: UInt16)
    case readResponse([UInt8])
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse([UInt8])
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByGroupTypeResponse([ATTGroupValue])
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    case writeCommand(handle: UInt16, value: [UInt8])
    case handleValueNotification(handle: UInt16, value: [UInt8])
    case handleValueIndication(handle: UInt16, value: [UInt8])
    case handleValueConfirmation
    /// Any other opcode, with its parameters.
    case other(opcode: UInt8, parameters: [UInt8])

    public enum Opcode {
        public static let errorResponse: UInt8 = 0x01
        public static let exchangeMTURequest: UInt8 = 0x02
        public static let exchangeMTUResponse: UInt8 = 0x03
        public static let findInformationRequest: UInt8 = 0x04
        public static let findInformationResponse: UInt8 = 0x05
        public static let findByTypeValueRequest: UInt8 = 0x06
        public static let readByTypeRequest: UInt8 = 0x08
        public static let readByTypeResponse: UInt8 = 0x09
        public static let readRequest: UInt8 = 0x0A
        public static let readResponse: UInt8 = 0x0B
        public static let readBlobRequest: UInt8 = 0x0C
        public static let readBlobResponse: UInt8 = 0x0D
        public static let readMultipleRequest: UInt8 = 0x0E
        public static let readByGroupTypeRequest: UInt8 = 0x10
        public static let readByGroupTypeResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12
        public static let writeResponse: UInt8 = 0x13
        public static let prepareWriteRequest: UInt8 = 0x16
        public static let executeWriteRequest: UInt8 = 0x18
        public static let handleValueNotification: UInt8 = 0x1B
        public static let handleValueIndication: UInt8 = 0x1D
        public static let handleValueConfirmation: UInt8 = 0x1E
        public static let writeCommand: UInt8 = 0x52
    }

    public var opcode: UInt8 {
        switch self {
        case .errorResponse: Opcode.errorResponse
        case .exchangeMTURequest: Opcode.exchangeMTURequest
        case .exchangeMTUResponse: Opcode.exchangeMTUResponse
        case .findInformationRequest: Opcode.findInformationRequest
        case .findInformationResponse: Opcode.findInformationResponse
        case .readByTypeRequest: Opcode.readByTypeRequest
        case .readByTypeResponse: Opcode.readByTypeResponse
        case .readRequest: Opcode.readRequest
        case .readResponse: Opcode.readResponse
        case .readBlobRequest: Opcode.readBlobRequest
        case .readBlobResponse: Opcode.readBlobResponse
        case .readByGroupTypeRequest: Opcode.readByGroupTypeRequest
        case .readByGroupTypeResponse: Opcode.readByGroupTypeResponse
        case .writeRequest: Opcode.writeRequest
        case .writeResponse: Opcode.writeResponse
        case .writeCommand: Opcode.writeCommand
        case .handleValueNotification: Opcode.handleValueNotification
        case .handleValueIndication: Opcode.handleValueIndication
        case .handleValueConfirmation: Opcode.handleValueConfirmation
        case .other(let op, _): op
        }
    }

    /// Requests expect exactly one response (or an Error Response).
    public static func isRequest(_ opcode: UInt8) -> Bool {
        switch opcode {
        case Opcode.exchangeMTURequest, Opcode.findInformationRequest, Opcode.findByTypeValueRequest, Opcode.readByTypeRequest,
             Opcode.readRequest, Opcode.readBlobRequest, Opcode.readMultipleRequest, Opcode.readByGroupTypeRequest,
             Opcode.writeRequest, Opcode.prepareWriteRequest, Opcode.executeWriteRequest, 0x20:
            true
        default:
            false
        }
    }

    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.uint8(opcode)
        switch self {
        case .errorResponse(let op, let handle, let error):
            w.uint8(op); w.uint16(handle); w.uint8(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            w.uint16(mtu)
        case .findInformationRequest(let start, let end):
            w.uint16(start); w.uint16(end)
        case .findInformationResponse(let entries):
            let long = entries.first.map { $0.uuid.uint16 == nil } ?? false
            w.uint8(long ? 2 : 1)
            for e in entries { w.uint16(e.handle); w.append(long ? e.uuid.bytes128 : e.uuid.attBytes) }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            w.uint16(start); w.uint16(end); w.append(type.attBytes)
        case .readByTypeResponse(let entries):
            w.uint8(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for e in entries { w.uint16(e.handle); w.append(e.value) }
        case .readByGroupTypeResponse(let entries):
            w.uint8(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
            for e in entries { w.uint16(e.handle); w.uint16(e.endGroupHandle); w.append(e.value) }
        case .readRequest(let handle):
            w.uint16(handle)
        case .readResponse(let value), .readBlobResponse(let value):
            w.append(value)
        case .readBlobRequest(let handle, let offset):
            w.uint16(handle); w.uint16(offset)
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            w.uint16(handle); w.append(value)
        case .writeResponse, .handleValueConfirmation:
            break
        case .other(_, let parameters):
            w.append(parameters)
        }
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> ATTPDU {
        var r = ByteReader(bytes, layer: .att)
        let opcode = try r.uint8("opcode")
        func uuid(_ r: inout ByteReader, _ count: Int, _ field: String) throws(BLEDecodeError) -> BluetoothUUID {
            let at = r.offset
            let raw = try r.bytes(count, field)
            guard let u = BluetoothUUID(littleEndian: raw) else { throw r.error(.invalidValue(field: field + " size", value: count), at: at) }
            return u
        }
        let pdu: ATTPDU
        switch opcode {
        case Opcode.errorResponse:
            pdu = .errorResponse(requestOpcode: try r.uint8("request opcode"), handle: try r.uint16("handle"),
                                 error: ATTErrorCode(rawValue: try r.uint8("error code")))
        case Opcode.exchangeMTURequest:
            pdu = .exchangeMTURequest(try r.uint16("client MTU"))
        case Opcode.exchangeMTUResponse:
            pdu = .exchangeMTUResponse(try r.uint16("server MTU"))
        case Opcode.findInformationRequest:
            pdu = .findInformationRequest(start: try r.uint16("start handle"), end: try r.uint16("end handle"))
        case Opcode.findInformationResponse:
            let format = try r.uint8("format")
            guard format == 1 || format == 2 else { throw r.error(.invalidValue(field: "format", value: Int(format)), at: 1) }
            let size = format == 1 ? 2 : 16
            guard r.remaining > 0, r.remaining % (2 + size) == 0 else {
                throw r.error(.invalidValue(field: "information data length", value: r.remaining))
            }
            var entries: [ATTHandleUUID] = []
            while !r.isAtEnd { entries.append(ATTHandleUUID(handle: try r.uint16("handle"), uuid: try uuid(&r, size, "UUID"))) }
            pdu = .findInformationResponse(entries)
        case Opcode.readByTypeRequest, Opcode.readByGroupTypeRequest:
            let start = try r.uint16("start handle"), end = try r.uint16("end handle")
            let type = try uuid(&r, r.remaining, "attribute type")
            pdu = opcode == Opcode.readByTypeRequest ? .readByTypeRequest(start: start, end: end, type: type)
                : .readByGroupTypeRequest(start: start, end: end, type: type)
        case Opcode.readByTypeResponse:
            let length = Int(try r.uint8("length"))
            guard length >= 2, r.remaining > 0, r.remaining % length == 0 else {
                throw r.error(.invalidValue(field: "length", value: length), at: 1)
            }
            var entries: [ATTHandleValue] = []
            while !r.isAtEnd { entries.append(ATTHandleValue(handle: try r.uint16("handle"), value: try r.bytes(length - 2, "value"))) }
            pdu = .readByTypeResponse(entries)
        case Opcode.readByGroupTypeResponse:
            let length = Int(try r.uint8("length"))
            guard length >= 4, r.remaining > 0, r.remaining % length == 0 else {
                throw r.error(.invalidValue(field: "length", value: length), at: 1)
            }
            var entries: [ATTGroupValue] = []
            while !r.isAtEnd {
                entries.append(ATTGroupValue(handle: try r.uint16("handle"), endGroupHandle: try r.uint16("end group handle"),
                                             value: try r.bytes(length - 4, "value")))
            }
            pdu = .readByGroupTypeResponse(entries)
        case Opcode.readRequest:
            pdu = .readRequest(handle: try r.uint16("handle"))
        case Opcode.readResponse:
            pdu = .readResponse(r.rest())
        case Opcode.readBlobRequest:
            pdu = .readBlobRequest(handle: try r.uint16("handle"), offset: try r.uint16("offset"))
        case Opcode.readBlobResponse:
            pdu = .readBlobResponse(r.rest())
        case Opcode.writeRequest:
            pdu = .writeRequest(handle: try r.uint16("handle"), value: r.rest())
        case Opcode.writeResponse:
            pdu = .writeResponse
        case Opcode.writeCommand:
            pdu = .writeCommand(handle: try r.uint16("handle"), value: r.rest())
        case Opcode.handleValueNotification:
            pdu = .handleValueNotification(handle: try r.uint16("handle"), value: r.rest())
        case Opcode.handleValueIndication:
            pdu = .handleValueIndication(handle: try r.uint16("handle"), value: r.rest())
        case Opcode.handleValueConfirmation:
            pdu = .handleValueConfirmation
        default:
            return .other(opcode: opcode, parameters: r.rest())
        }
        try r.expectEnd()
        return pdu
    }
}
