public import BluetoothCentral
public struct ATTRequestID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: ATTRequestID, b: ATTRequestID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "#\(rawValue)" }
}

public enum ATTRequestError: Error, Equatable, Sendable {
    /// The peer's Error Response.
    case peer(ATTErrorCode, handle: UInt16)
    /// No response within the ATT transaction timeout; the bearer is closed.
    case timeout
    /// The connection went away, or the bearer closed after a timeout.
    case closed
}

/// The client side of one ATT bearer (the fixed channel of one LE connection) as a pure state
/// machine.
///
/// - One request outstanding at a time; the rest wait in order.
/// - `start` sends Exchange MTU; the MTU is min(preferred, server's), at least 23.
/// - Responses and Error Responses are matched to the outstanding request by opcode; other
///   responses are reported as `unexpected` and the request keeps waiting.
/// - Notifications and indications are delivered; an indication is confirmed at once.
/// - A request without a response within `transactionTimeout` (30 s per the specification) ends
///   with `.timeout`, and the bearer is closed: per the specification no further ATT PDUs may be
///   sent on it, so the caller should disconnect.
/// - Requests from the peer (its GATT client probing ours) get the answer an empty server gives,
///   so the peer does not wait for its own timeout.
public struct ATTBearer: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var preferredMTU: UInt16
        public var transactionTimeout: Duration
        public var maxQueuedRequests: Int
        public init(preferredMTU: UInt16 = 247, transactionTimeout: Duration = .seconds(30), maxQueuedRequests: Int = 64) {
            self.preferredMTU = max(23, preferredMTU)
            self.transactionTimeout = transactionTimeout
            self.maxQueuedRequests = maxQueuedRequests
        }
    }

    public enum Action: Equatable, Sendable {
        /// Send this ATT PDU to the peer.
        case send([UInt8])
        case response(ATTRequestID, Result<ATTPDU, ATTRequestError>)
        case notification(handle: UInt16, value: [UInt8])
        case indication(handle: UInt16, value: [UInt8])
        case mtuChanged(UInt16)
        /// A PDU that does not decode, or a response nobody asked for; for the log.
        case unexpected(String)
        /// The bearer closed after a transaction timeout; disconnect the link.
        case closed
    }

    public enum RequestError: Error, Equatable, Sendable {
        case notARequest(opcode: UInt8)
        case tooLong(length: Int, mtu: UInt16)
        case queueFull(limit: Int)
        case closed
    }

    public static let defaultMTU: UInt16 = 23

    public let configuration: Configuration
    public private(set) var mtu: UInt16 = ATTBearer.defaultMTU
    public private(set) var isClosed = false
    private var nextID: UInt64 = 1
    private var pending: [(id: ATTRequestID, pdu: ATTPDU)] = []
    private var outstanding: (id: ATTRequestID, opcode: UInt8, deadline: HostInstant)?
    private var mtuRequest: ATTRequestID?
    private var mtuExchanged = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var nextDeadline: HostInstant? { outstanding?.deadline }
    public var queuedCount: Int { pending.count }
    public var outstandingRequest: ATTRequestID? { outstanding?.id }

    /// Starts the bearer with an MTU exchange (when the preferred MTU is above 23).
    public mutating func start(now: HostInstant) -> [Action] {
        guard configuration.preferredMTU > Self.defaultMTU, !mtuExchanged, mtuRequest == nil else { return [] }
        let id = allocateID()
        mtuRequest = id
        pending.insert((id, .exchangeMTURequest(configuration.preferredMTU)), at: 0)
        return pump(now: now)
    }

    /// Queues a request; the id comes back with its `.response`.
    public mutating func request(_ pdu: ATTPDU, now: HostInstant) throws(RequestError) -> (ATTRequestID, [Action]) {
        guard !isClosed else { throw .closed }
        guard ATTPDU.isRequest(pdu.opcode) else { throw .notARequest(opcode: pdu.opcode) }
        let length = pdu.encoded.count
        guard length <= Int(mtu) || pdu.opcode == ATTPDU.Opcode.exchangeMTURequest else { throw .tooLong(length: length, mtu: mtu) }
        guard pending.count < configuration.maxQueuedRequests else { throw .queueFull(limit: configuration.maxQueuedRequests) }
        let id = allocateID()
        pending.append((id, pdu))
        return (id, pump(now: now))
    }

    /// Sends a command (Write Command): no response, no queueing.
    public func command(handle: UInt16, value: [UInt8]) throws(RequestError) -> [Action] {
        guard !isClosed else { throw .closed }
        let pdu = ATTPDU.writeCommand(handle: handle, value: value).encoded
        guard pdu.count <= Int(mtu) else { throw .tooLong(length: pdu.count, mtu: mtu) }
        return [.send(pdu)]
    }

    /// Feeds one ATT PDU from the peer.
    public mutating func receive(_ bytes: [UInt8], now: HostInstant) -> [Action] {
        guard !isClosed else { return [] }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU.decode(bytes)
        } catch {
            // A malformed request from the peer still deserves an answer, or it waits 30 s.
            if let op = bytes.first, ATTPDU.isRequest(op) {
                return [.send(ATTPDU.errorResponse(requestOpcode: op, handle: 0, error: .invalidPDU).encoded)]
            }
            return [.unexpected(error.description)]
        }
        switch pdu {
        case .handleValueNotification(let handle, let value):
            return [.notification(handle: handle, value: value)]
        case .handleValueIndication(let handle, let value):
            return [.indication(handle: handle, value: value), .send(ATTPDU.handleValueConfirmation.encoded)]
        case .exchangeMTURequest(let clientMTU):
            var actions: [Action] = [.send(ATTPDU.exchangeMTUResponse(configuration.preferredMTU).encoded)]
            if !mtuExchanged { actions += applyMTU(clientMTU) }
            return actions
        case .errorResponse(let op, let handle, let error):
            guard let current = outstanding, current.opcode == op else { return [.unexpected("error response for opcode 0x\(hex(op))")] }
            return finish(current.id, .failure(.peer(error, handle: handle)), now: now)
        default:
            break
        }
        let op = pdu.opcode
        if ATTPDU.isRequest(op) {
            return [.send(Self.emptyServerAnswer(pdu).encoded)]
        }
        if op & 0x40 != 0 { return [] }  // commands from the peer need no answer
        guard let current = outstanding, op == current.opcode + 1 else {
            return [.unexpected("unsolicited ATT opcode 0x\(hex(op))")]
        }
        var actions: [Action] = []
        if current.id == mtuRequest, case .exchangeMTUResponse(let serverMTU) = pdu {
            actions += applyMTU(serverMTU)
        }
        return actions + finish(current.id, .success(pdu), now: now)
    }

    /// Ends the outstanding request if its deadline passed; then the bearer is closed.
    public mutating func tick(now: HostInstant) -> [Action] {
        guard let current = outstanding, current.deadline <= now else { return [] }
        outstanding = nil
        return responseAction(current.id, .failure(.timeout)) + close(.closed)
    }

    /// The connection went away: every waiting request fails with `.closed`.
    public mutating func disconnected() -> [Action] {
        var actions: [Action] = []
        if let current = outstanding {
            outstanding = nil
            actions += responseAction(current.id, .failure(.closed))
        }
        return actions + close(nil)
    }

    private mutating func close(_ final: Action?) -> [Action] {
        isClosed = true
        let failed = pending.map { Action.response($0.id, .failure(.closed)) }
        pending.removeAll()
        return failed + (final.map { [$0] } ?? [])
    }

    private mutating func applyMTU(_ peerMTU: UInt16) -> [Action] {
        mtuExchanged = true
        let new = max(Self.defaultMTU, min(configuration.preferredMTU, peerMTU))
        guard new != mtu else { return [] }
        mtu = new
        return [.mtuChanged(new)]
    }

    private mutating func finish(_ id: ATTRequestID, _ result: Result<ATTPDU, ATTRequestError>, now: HostInstant) -> [Action] {
        outstanding = nil
        return responseAction(id, result) + pump(now: now)
    }

    /// The bearer's own MTU exchange ends without a `.response` (nobody holds its id); a peer that
    /// refuses it leaves the MTU at 23.
    private mutating func responseAction(_ id: ATTRequestID, _ result: Result<ATTPDU, ATTRequestError>) -> [Action] {
        guard id == mtuRequest else { return [.response(id, result)] }
        mtuRequest = nil
        mtuExchanged = true
        return []
    }

    private mutating func allocateID() -> ATTRequestID {
        defer { nextID += 1 }
        return ATTRequestID(nextID)
    }

    private mutating func pump(now: HostInstant) -> [Action] {
        guard outstanding == nil, !isClosed, !pending.isEmpty else { return [] }
        let next = pending.removeFirst()
        outstanding = (next.id, next.pdu.opcode, now.advanced(by: configuration.transactionTimeout))
        return [.send(next.pdu.encoded)]
    }

    /// What a server with no attributes answers.
    static func emptyServerAnswer(_ request: ATTPDU) -> ATTPDU {
        let error: ATTErrorCode, handle: UInt16
        switch request {
        case .findInformationRequest(let start, _), .readByTypeRequest(let start, _, _), .readByGroupTypeRequest(let start, _, _):
            (error, handle) = (.attributeNotFound, start)
        case .readRequest(let h), .readBlobRequest(let h, _), .writeRequest(let h, _):
            (error, handle) = (.invalidHandle, h)
        default:
            (error, handle) = (.requestNotSupported, 0)
        }
        return .errorResponse(requestOpcode: request.opcode, handle: handle, error: error)
    }
}
