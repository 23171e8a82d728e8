import BluetoothCentral
import BLEBlueZ
import Testing

/// The pairing agent's decisions (`PairingAgentPolicy.decide`): which answer each request of
/// bluetoothd gets, given the command line's options; and the calls read from D-Bus arguments.
struct PairingAgentPolicyTests {
    static let target = "/org/bluez/hci0/dev_C0_4E_47_00_00_01"
    static let other = "/org/bluez/hci0/dev_C0_4E_47_00_00_02"

    func decide(_ r: AgentRequest, _ o: AgentOptions) -> AgentDecision {
        PairingAgentPolicy.decide(r, target: Self.target, options: o)
    }

    @Test func justWorksIsAcceptedWithoutAsking() {
        for capability in AgentCapability.allCases {
            let o = AgentOptions(capability: capability)
            #expect(decide(.requestAuthorization(device: Self.target), o) == .accept(notice: nil))
            #expect(decide(.authorizeService(device: Self.target, uuid: "00001808-0000-1000-8000-00805f9b34fb"), o) == .accept(notice: nil))
        }
        // A confirmation to an agent that can show nothing is Just Works: nothing to compare.
        #expect(decide(.requestConfirmation(device: Self.target, passkey: 123_456), AgentOptions(capability: .noInputNoOutput))
                == .accept(notice: nil))
    }

    @Test func passkeyEntry() {
        let request = AgentRequest.requestPasskey(device: Self.target)
        #expect(decide(request, AgentOptions(passkey: 42)) == .replyPasskey(42))
        #expect(decide(request, AgentOptions(passkey: 999_999, interactive: true)) == .replyPasskey(999_999))
        guard case .askPasskey(let prompt) = decide(request, AgentOptions(interactive: true)) else {
            Issue.record("a terminal without --passkey asks")
            return
        }
        #expect(prompt.contains("6-digit passkey"))
        guard case .reject(let reason) = decide(request, AgentOptions()) else {
            Issue.record("no terminal and no --passkey: rejected")
            return
        }
        #expect(reason.contains("--passkey"))
        #expect(decide(.requestPinCode(device: Self.target), AgentOptions(passkey: 1234)) == .replyPinCode("001234"))
    }

    @Test func numericComparison() {
        let request = AgentRequest.requestConfirmation(device: Self.target, passkey: 4_321)
        #expect(decide(request, AgentOptions(assumeYes: true)) == .accept(notice: "Confirming 004321 (--yes)"))
        #expect(decide(request, AgentOptions(interactive: true)) == .askConfirmation(prompt: "Does the device show 004321? [y/n] "))
        guard case .accept = decide(request, AgentOptions(passkey: 4_321)) else {
            Issue.record("--passkey equal to the shown number confirms")
            return
        }
        #expect(decide(request, AgentOptions(passkey: 4_322, assumeYes: true))
                == .reject(reason: "the device shows 004321, not 004322 (--passkey)"))
        guard case .reject(let reason) = decide(request, AgentOptions()) else {
            Issue.record("no terminal, no --yes: rejected")
            return
        }
        #expect(reason.contains("--yes"))
    }

    @Test func displayedPasskeysAreShown() {
        #expect(decide(.displayPasskey(device: Self.target, passkey: 7, entered: 0), AgentOptions())
                == .show(message: "Type the passkey 000007 on the device"))
        #expect(decide(.displayPasskey(device: Self.target, passkey: 123_456, entered: 3), AgentOptions())
                == .show(message: "Type the passkey 123456 on the device (3 digits typed)"))
        #expect(decide(.displayPinCode(device: Self.target, pinCode: "0000"), AgentOptions())
                == .show(message: "Type the PIN code 0000 on the device"))
    }

    @Test func requestsForAnotherDeviceAreRejected() {
        let o = AgentOptions(passkey: 1, assumeYes: true, interactive: true)
        for request in [AgentRequest.requestPasskey(device: Self.other), .requestAuthorization(device: Self.other),
                        .requestConfirmation(device: Self.other, passkey: 1), .authorizeService(device: Self.other, uuid: "x"),
                        .requestPinCode(device: Self.other)] {
            guard case .reject(let reason) = decide(request, o) else {
                Issue.record("\(request) was not rejected")
                continue
            }
            #expect(reason.contains(Self.other))
        }
        #expect(decide(.cancel, AgentOptions()) == .note(message: "bluetoothd cancelled the request (the device gave up or took too long)"))
    }

    @Test func callsReadFromDBusArguments() {
        let device = DBusValue.objectPath(Self.target)
        #expect(AgentRequest(member: "RequestPasskey", args: [device]) == .requestPasskey(device: Self.target))
        #expect(AgentRequest(member: "DisplayPasskey", args: [device, .uint32(654_321), .uint16(2)])
                == .displayPasskey(device: Self.target, passkey: 654_321, entered: 2))
        #expect(AgentRequest(member: "RequestConfirmation", args: [device, .uint32(12)]) == .requestConfirmation(device: Self.target, passkey: 12))
        #expect(AgentRequest(member: "RequestAuthorization", args: [device]) == .requestAuthorization(device: Self.target))
        #expect(AgentRequest(member: "AuthorizeService", args: [device, .string("180d")]) == .authorizeService(device: Self.target, uuid: "180d"))
        #expect(AgentRequest(member: "DisplayPinCode", args: [device, .string("1234")]) == .displayPinCode(device: Self.target, pinCode: "1234"))
        #expect(AgentRequest(member: "Cancel", args: []) == .cancel)
        #expect(AgentRequest(member: "Release", args: []) == .release)
        #expect(AgentRequest(member: "DisplayPasskey", args: [device]) == nil)
        #expect(AgentRequest(member: "Introspect", args: []) == nil)
    }

    @Test func typedAnswers() {
        #expect(PairingAgentPolicy.parsePasskey("123456") == 123_456)
        #expect(PairingAgentPolicy.parsePasskey(" 000042\n") == 42)
        #expect(PairingAgentPolicy.parsePasskey("1234567") == nil)
        #expect(PairingAgentPolicy.parsePasskey("12a456") == nil)
        #expect(PairingAgentPolicy.parsePasskey("") == nil)
        #expect(PairingAgentPolicy.parsePasskey("-1") == nil)
        #expect(PairingAgentPolicy.parseYesNo("Y") == true)
        #expect(PairingAgentPolicy.parseYesNo("no ") == false)
        #expect(PairingAgentPolicy.parseYesNo("maybe") == nil)
        #expect(AgentCapability(parsing: "keyboardonly") == .keyboardOnly)
        #expect(AgentCapability(parsing: "keyboard") == nil)
    }
}
