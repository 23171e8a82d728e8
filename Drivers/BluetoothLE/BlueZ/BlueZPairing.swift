public import BluetoothCentral
import Foundation

/// How a `pair` ended well.
public enum PairOutcome: String, Sendable, Equatable {
    /// Paired now: bluetoothd keeps the keys (and the device is trusted).
    case bonded
    /// bluetoothd already had keys for the device: nothing was done.
    case alreadyBonded = "already-bonded"
}

/// The terminal side of the pairing agent: `show` prints a line; `ask` prints a prompt and
/// reads an answer, blocking (it runs on a thread of its own, never on the bus thread or
/// Swift's task pool); nil at the end of input.
public struct PairingPrompter: Sendable {
    public var show: @Sendable (String) -> Void
    public var ask: @Sendable (String) -> String?
    public init(show: @escaping @Sendable (String) -> Void, ask: @escaping @Sendable (String) -> String?) {
        self.show = show
        self.ask = ask
    }
}

extension BlueZCentral {
    /// The object path of the pairing agent HealthGate registers while it pairs.
    static let agentPath = "/org/healthgate/agent"

    /// Whether bluetoothd holds keys for `peer` (`Device1.Paired`); nil when it does not know the device.
    public func isPaired(_ peer: DeviceAddress) async throws(BLEError) -> Bool? {
        let state = self.state
        return try await Self.onBus(bus, timeout: .seconds(10)) { (reply: Reply<Bool?>) in
            reply.succeed(state.paired(peer))
        }
    }

    /// Pairs with `peer` through bluetoothd: registers an `org.bluez.Agent1` (answering with
    /// `PairingAgentPolicy`), calls `Device1.Pair`, sets `Trusted`, unregisters the agent and
    /// disconnects. The device must be known to bluetoothd (scan first). `timeout` bounds the
    /// pairing, typing a passkey included.
    public func pair(_ peer: DeviceAddress, options: AgentOptions, prompter: PairingPrompter,
                     timeout: Duration) async throws(BLEError) -> PairOutcome {
        let state = self.state
        return try await Self.onBus(bus, timeout: timeout + .seconds(15), onTimeout: .timedOut("pairing")) {
            (reply: Reply<PairOutcome>) in state.pair(peer, options: options, prompter: prompter, timeout: timeout, reply)
        }
    }

    /// Plain words for bluetoothd's pairing errors.
    static func pairingFailure(_ error: DBusError) -> BLEError {
        let name = error.name.replacingOccurrences(of: "org.bluez.Error.", with: "")
        let what = switch name {
        case "AuthenticationFailed": "authentication failed: the keys did not match (a wrong passkey, or the comparison was refused)"
        case "AuthenticationRejected": "the pairing was rejected (by the agent or the device)"
        case "AuthenticationCanceled": "the pairing was cancelled"
        case "AuthenticationTimeout": "the pairing timed out (no passkey or confirmation in time)"
        case "ConnectionAttemptFailed": "could not connect to the device (is it in range and advertising?)"
        case "InProgress": "another pairing with this device is in progress"
        default: "\(error)"
        }
        return .bluez("pairing failed: \(what) [\(error.name)]")
    }
}

extension BlueZCentral.State {
    func paired(_ peer: DeviceAddress) -> Bool? {
        guard let device = tree.device(adapterPath: adapterPath, address: peer) else { return nil }
        return tree.objects[device.path]?[BlueZ.device]?["Paired"]?.bool ?? false
    }

    func pair(_ peer: DeviceAddress, options: AgentOptions, prompter: PairingPrompter, timeout: Duration,
              _ reply: BlueZCentral.Reply<PairOutcome>) {
        guard let device = tree.device(adapterPath: adapterPath, address: peer) else {
            return reply.fail(.bluez("bluetoothd does not know \(peer): it was not found while scanning"))
        }
        if paired(peer) == true { return reply.succeed(.alreadyBonded) }
        let path = device.path
        let agentPath = BlueZCentral.agentPath
        let slot: OpaquePointer
        do {
            slot = try bus.exportObject(agentPath) { [unowned self] call in
                agentCall(call, target: path, options: options, prompter: prompter)
            }
        } catch {
            return reply.fail(.bluez("D-Bus: cannot export the pairing agent: \(error)"))
        }
        // Unregister, forget the object, then answer.
        let finish = { [unowned self] (result: Result<PairOutcome, BLEError>) in
            call("/org/bluez", "org.bluez.AgentManager1", "UnregisterAgent", [.objectPath(agentPath)], timeout: .seconds(5)) {
                [unowned self] _ in
                bus.removeObject(slot)
                call(path, BlueZ.device, "Disconnect", timeout: .seconds(10)) { _ in reply.resolve(result) }
            }
        }
        call("/org/bluez", "org.bluez.AgentManager1", "RegisterAgent", [.objectPath(agentPath), .string(options.capability.rawValue)],
             timeout: .seconds(10)) { [unowned self] result in
            if case .failure(let error) = result {
                bus.removeObject(slot)
                return reply.fail(.bluez("BlueZ RegisterAgent: \(error)"))
            }
            call(path, BlueZ.device, "Pair", timeout: timeout) { [unowned self] result in
                switch result {
                case .failure(let error) where error.name.hasSuffix("AlreadyExists"):
                    finish(.success(.alreadyBonded))
                case .failure(let error):
                    finish(.failure(BlueZCentral.pairingFailure(error)))
                case .success:
                    bus.setProperty(BlueZ.service, path, BlueZ.device, "Trusted", .bool(true), timeout: .seconds(10)) {
                        [unowned self] result in
                        if case .failure(let error) = result { log("Set Trusted \(path): \(error)") }
                        finish(.success(.bonded))
                    }
                }
            }
        }
    }

    /// One call to the agent: decided by `PairingAgentPolicy`, answered here (after asking at
    /// the terminal, on a thread of its own, when the decision says so).
    private func agentCall(_ call: SDBus.MethodCall, target: String, options: AgentOptions, prompter: PairingPrompter) {
        let rejected = "org.bluez.Error.Rejected"
        guard adapter.owner == nil || call.sender == adapter.owner else {
            return bus.replyError(call, rejected, "only bluetoothd may use this agent")
        }
        guard call.interface == "org.bluez.Agent1", let request = AgentRequest(member: call.member, args: call.args) else {
            return bus.replyError(call, "org.freedesktop.DBus.Error.UnknownMethod", "\(call.interface).\(call.member)")
        }
        switch PairingAgentPolicy.decide(request, target: target, options: options) {
        case .replyPasskey(let passkey): bus.reply(call, [.uint32(passkey)])
        case .replyPinCode(let pin): bus.reply(call, [.string(pin)])
        case .accept(let notice):
            if let notice { prompter.show(notice) }
            bus.reply(call)
        case .reject(let reason):
            prompter.show("Refused: \(reason)")
            bus.replyError(call, rejected, reason)
        case .show(let message):
            prompter.show(message)
            bus.reply(call)
        case .note(let message):
            prompter.show(message)
            bus.reply(call)
        case .askPasskey(let prompt):
            let bus = self.bus
            let pin = if case .requestPinCode = request { true } else { false }
            Thread.detachNewThread {
                var typed: UInt32?
                for _ in 0..<3 {
                    guard let line = prompter.ask(prompt) else { break }
                    if let n = PairingAgentPolicy.parsePasskey(line) { typed = n; break }
                    prompter.show("A passkey is 1 to 6 digits (000000 to 999999).")
                }
                let answer = typed
                bus.post {
                    guard let answer else { return bus.replyError(call, rejected, "no passkey given") }
                    if pin {
                        bus.reply(call, [.string(PairingAgentPolicy.sixDigits(answer))])
                    } else {
                        bus.reply(call, [.uint32(answer)])
                    }
                }
            }
        case .askConfirmation(let prompt):
            let bus = self.bus
            Thread.detachNewThread {
                var typed: Bool?
                for _ in 0..<3 {
                    guard let line = prompter.ask(prompt) else { break }
                    if let yes = PairingAgentPolicy.parseYesNo(line) { typed = yes; break }
                }
                let answer = typed
                bus.post {
                    if answer == true { bus.reply(call) } else { bus.replyError(call, rejected, "the numbers were not confirmed") }
                }
            }
        }
    }
}
