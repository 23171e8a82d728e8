/// What `healthgate ble pair` tells bluetoothd it can do (`org.bluez.AgentManager1.RegisterAgent`'s
/// capability); with the peripheral's own capability it decides the pairing method (Just Works,
/// passkey entry, numeric comparison).
public enum AgentCapability: String, CaseIterable, Sendable {
    case noInputNoOutput = "NoInputNoOutput"
    case displayOnly = "DisplayOnly"
    case displayYesNo = "DisplayYesNo"
    case keyboardOnly = "KeyboardOnly"
    case keyboardDisplay = "KeyboardDisplay"

    /// A BlueZ capability name, case-insensitively.
    public init?(parsing text: String) {
        guard let c = Self.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else { return nil }
        self = c
    }
}

/// One call bluetoothd makes to the pairing agent (`org.bluez.Agent1`).
public enum AgentRequest: Equatable, Sendable {
    /// The device asks for the passkey it displays (passkey entry).
    case requestPasskey(device: String)
    /// A classic-Bluetooth PIN code.
    case requestPinCode(device: String)
    /// Show the passkey for the user to type on the device.
    case displayPasskey(device: String, passkey: UInt32, entered: UInt16)
    case displayPinCode(device: String, pinCode: String)
    /// Numeric comparison: does the device show this number? (Just Works with a capability that
    /// can show nothing.)
    case requestConfirmation(device: String, passkey: UInt32)
    /// Just Works: may the device pair?
    case requestAuthorization(device: String)
    case authorizeService(device: String, uuid: String)
    /// bluetoothd gave up the request it made (a timeout, the device cancelled).
    case cancel
    /// bluetoothd no longer uses the agent.
    case release

    /// The device object the request is about, if any.
    public var device: String? {
        switch self {
        case .requestPasskey(let d), .requestPinCode(let d), .displayPasskey(let d, _, _), .displayPinCode(let d, _),
             .requestConfirmation(let d, _), .requestAuthorization(let d), .authorizeService(let d, _): d
        case .cancel, .release: nil
        }
    }

    /// Reads a method call of `org.bluez.Agent1` (member and arguments); nil for anything else.
    public init?(member: String, args: [DBusValue]) {
        let device = args.first?.string ?? ""
        switch member {
        case "RequestPasskey": self = .requestPasskey(device: device)
        case "RequestPinCode": self = .requestPinCode(device: device)
        case "DisplayPasskey":
            guard args.count >= 3, let p = args[1].int, let e = args[2].int else { return nil }
            self = .displayPasskey(device: device, passkey: UInt32(clamping: p), entered: UInt16(clamping: e))
        case "DisplayPinCode":
            guard args.count >= 2, let pin = args[1].string else { return nil }
            self = .displayPinCode(device: device, pinCode: pin)
        case "RequestConfirmation":
            guard args.count >= 2, let p = args[1].int else { return nil }
            self = .requestConfirmation(device: device, passkey: UInt32(clamping: p))
        case "RequestAuthorization": self = .requestAuthorization(device: device)
        case "AuthorizeService":
            guard args.count >= 2, let uuid = args[1].string else { return nil }
            self = .authorizeService(device: device, uuid: uuid)
        case "Cancel": self = .cancel
        case "Release": self = .release
        default: return nil
        }
    }
}

/// What the pairing agent was told on the command line.
public struct AgentOptions: Equatable, Sendable {
    public var capability: AgentCapability
    /// `--passkey`: the answer to a passkey request, and the number a comparison must show.
    public var passkey: UInt32?
    /// `--yes`: accept a numeric comparison without asking.
    public var assumeYes: Bool
    /// Whether a person can be asked (standard input is a terminal).
    public var interactive: Bool

    public init(capability: AgentCapability = .keyboardDisplay, passkey: UInt32? = nil, assumeYes: Bool = false,
                interactive: Bool = false) {
        self.capability = capability
        self.passkey = passkey
        self.assumeYes = assumeYes
        self.interactive = interactive
    }
}

/// The agent's answer to one request. The D-Bus edge carries it out: `reply*` and `reject`
/// answer bluetoothd's call; `ask*` prompt at the terminal first.
public enum AgentDecision: Equatable, Sendable {
    /// Answer with this passkey (0...999999).
    case replyPasskey(UInt32)
    case replyPinCode(String)
    /// Answer with success (no value); `notice` is printed first when set.
    case accept(notice: String?)
    /// Answer with `org.bluez.Error.Rejected`; `reason` says why, in plain words.
    case reject(reason: String)
    /// Print `message`, then answer with success.
    case show(message: String)
    /// Ask for a 6-digit passkey with this prompt, then answer with it (or reject when none is given).
    case askPasskey(prompt: String)
    /// Ask yes or no with this prompt, then accept or reject.
    case askConfirmation(prompt: String)
    /// Nothing to answer (Cancel, Release); print `message`.
    case note(message: String)
}

/// The pairing agent's decisions: a pure function of the request, the device being paired and
/// the options. Requests about another device are rejected (the agent is only there for the
/// pairing `ble pair` started).
public enum PairingAgentPolicy {
    public static func decide(_ request: AgentRequest, target: String, options: AgentOptions) -> AgentDecision {
        if let device = request.device, device != target {
            return .reject(reason: "a request for \(device), not the device being paired")
        }
        let six = sixDigits
        switch request {
        case .requestPasskey:
            if let passkey = options.passkey { return .replyPasskey(passkey) }
            if options.interactive { return .askPasskey(prompt: "Enter the 6-digit passkey the device shows: ") }
            return .reject(reason: "the device asks for the passkey it shows; give it with --passkey N (no terminal to ask at)")
        case .requestPinCode:
            if let passkey = options.passkey { return .replyPinCode(six(passkey)) }
            if options.interactive { return .askPasskey(prompt: "Enter the PIN code the device shows: ") }
            return .reject(reason: "the device asks for a PIN code; give it with --passkey N (no terminal to ask at)")
        case .displayPasskey(_, let passkey, let entered):
            return .show(message: "Type the passkey \(six(passkey)) on the device" + (entered > 0 ? " (\(entered) digits typed)" : ""))
        case .displayPinCode(_, let pin):
            return .show(message: "Type the PIN code \(pin) on the device")
        case .requestConfirmation(_, let passkey):
            // Just Works through an agent that can show nothing: nothing to compare.
            if options.capability == .noInputNoOutput { return .accept(notice: nil) }
            if let expected = options.passkey {
                return expected == passkey
                    ? .accept(notice: "The device shows \(six(passkey)), as --passkey says: confirmed")
                    : .reject(reason: "the device shows \(six(passkey)), not \(six(expected)) (--passkey)")
            }
            if options.assumeYes { return .accept(notice: "Confirming \(six(passkey)) (--yes)") }
            if options.interactive { return .askConfirmation(prompt: "Does the device show \(six(passkey))? [y/n] ") }
            return .reject(reason: "numeric comparison (\(six(passkey))) needs a terminal to confirm at, or --yes")
        case .requestAuthorization, .authorizeService:
            return .accept(notice: nil)
        case .cancel:
            return .note(message: "bluetoothd cancelled the request (the device gave up or took too long)")
        case .release:
            return .note(message: "bluetoothd released the agent")
        }
    }

    /// A passkey as the 6 digits devices show (`000042`).
    public static func sixDigits(_ n: UInt32) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// Reads a typed passkey: 1 to 6 digits (0...999999), spaces around ignored; nil otherwise.
    public static func parsePasskey(_ text: String) -> UInt32? {
        let t = text.trimmedOfWhitespace
        guard (1...6).contains(t.count), t.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt32(t)
    }

    /// Reads a typed yes or no; nil for anything else.
    public static func parseYesNo(_ text: String) -> Bool? {
        switch text.trimmedOfWhitespace.lowercased() {
        case "y", "yes": true
        case "n", "no": false
        default: nil
        }
    }
}

extension String {
    /// Without white space (spaces, tabs, line ends) at either end.
    fileprivate var trimmedOfWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
