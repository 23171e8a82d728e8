public import BluetoothCentral
/// How a command ended.
public enum HCICommandOutcome: Equatable, Sendable {
    /// Command Complete with success; the decoded return parameters.
    case completed(HCICommandReturn)
    /// Command Status with success: the controller started it; the result comes in a later event
    /// (LE Create Connection, Disconnect, LE Connection Update).
    case started
    /// Command Complete or Command Status with an error status.
    case failed(HCIStatus)
    /// Command Complete with success but return parameters that do not decode.
    case malformed(BLEDecodeError)
}

/// HCI command flow control as a pure state machine (`CommandQueue` in the design notes).
///
/// The controller grants `Num_HCI_Command_Packets` credits (1 before it says anything); each sent
/// command uses one; every Command Complete or Command Status sets the count again. Replies are
/// matched to the outstanding command by opcode; at most one command per opcode is outstanding, so
/// a second command with the same opcode waits. Every sent command has a deadline: when `tick`
/// passes it, the command ends with `timedOut` and the queue assumes one credit again, because
/// some controllers never answer some commands.
public struct HCICommandQueue: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var timeout: Duration
        public var maxQueued: Int
        public init(timeout: Duration = .seconds(2), maxQueued: Int = 64) {
            self.timeout = timeout
            self.maxQueued = maxQueued
        }
    }

    public enum Action: Equatable, Sendable {
        /// Write this command packet (after the H4 type indicator) to the controller.
        case send(HCICommand)
        case complete(HCIOpcode, HCICommandOutcome)
        case timedOut(HCIOpcode)
        /// A Command Complete or Status for no outstanding command (late, or unsolicited).
        case unmatched(HCIOpcode)
    }

    public enum EnqueueError: Error, Equatable, Sendable {
        case queueFull(limit: Int)
    }

    public let configuration: Configuration
    public private(set) var credits: Int = 1
    private var waiting: [HCICommand] = []
    private var outstanding: [(opcode: HCIOpcode, deadline: HostInstant)] = []

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var queuedCount: Int { waiting.count }
    public var outstandingOpcodes: [HCIOpcode] { outstanding.map(\.opcode) }
    /// When `tick` next has something to do; nil when nothing is outstanding.
    public var nextDeadline: HostInstant? { outstanding.map(\.deadline).min() }

    public mutating func enqueue(_ command: HCICommand, now: HostInstant) throws(EnqueueError) -> [Action] {
        guard waiting.count < configuration.maxQueued else { throw .queueFull(limit: configuration.maxQueued) }
        waiting.append(command)
        return pump(now: now)
    }

    /// Feeds an event; only Command Complete and Command Status concern the queue (others give []).
    public mutating func receive(_ event: HCIEvent, now: HostInstant) -> [Action] {
        let opcode: HCIOpcode, outcome: HCICommandOutcome
        switch event {
        case .commandComplete(let cc):
            credits = Int(cc.numCommandPackets)
            opcode = cc.opcode
            guard let status = cc.status else {
                outcome = .malformed(BLEDecodeError(.hciEvent, offset: 5, .truncated(field: "status", needed: 1, available: 0)))
                break
            }
            if !status.isSuccess {
                outcome = .failed(status)
            } else {
                do {
                    outcome = .completed(try HCICommandReturn.decode(opcode: opcode, Array(cc.returnParameters.dropFirst()), base: 6))
                } catch {
                    outcome = .malformed(error)
                }
            }
        case .commandStatus(let cs):
            credits = Int(cs.numCommandPackets)
            opcode = cs.opcode
            outcome = cs.status.isSuccess ? .started : .failed(cs.status)
        default:
            return []
        }
        var actions: [Action] = []
        if opcode != .nop {
            if let i = outstanding.firstIndex(where: { $0.opcode == opcode }) {
                outstanding.remove(at: i)
                actions.append(.complete(opcode, outcome))
            } else {
                actions.append(.unmatched(opcode))
            }
        }
        return actions + pump(now: now)
    }

    /// Ends every outstanding command whose deadline is at or before `now`.
    public mutating func tick(now: HostInstant) -> [Action] {
        var actions: [Action] = []
        let expired = outstanding.filter { $0.deadline <= now }
        guard !expired.isEmpty else { return [] }
        outstanding.removeAll { $0.deadline <= now }
        for e in expired { actions.append(.timedOut(e.opcode)) }
        credits = max(credits, 1)
        return actions + pump(now: now)
    }

    /// Fails everything (transport closed): outstanding commands time out, queued ones are dropped
    /// and returned.
    public mutating func reset() -> [HCICommand] {
        defer { waiting.removeAll(); outstanding.removeAll(); credits = 1 }
        return waiting
    }

    private mutating func pump(now: HostInstant) -> [Action] {
        var actions: [Action] = []
        // Strictly in order: a command whose opcode is still outstanding blocks the ones behind it.
        while credits > 0, let command = waiting.first,
              !outstanding.contains(where: { $0.opcode == command.opcode }) {
            waiting.removeFirst()
            credits -= 1
            outstanding.append((command.opcode, now.advanced(by: configuration.timeout)))
            actions.append(.send(command))
        }
        return actions
    }
}
