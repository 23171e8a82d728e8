import ArgumentParser
import BLEBlueZ
import BLEDriver
import BluetoothCentral
import CommandSupport
import Foundation

struct BLEPairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair", abstract: "Pair (bond) with a device through BlueZ, so it can be recorded without prompts.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF) or a name as advertised; it must be \
            advertising (in pairing mode) while HealthGate scans for it (--scan-for). HealthGate \
            registers a pairing agent with bluetoothd, pairs, marks the device trusted and \
            disconnects; bluetoothd keeps the keys, and `record` and the daemon's ble driver then \
            connect to it with encryption and no prompt. Just Works needs no answer; when the \
            device shows a passkey, type it at the prompt (or give --passkey); for numeric \
            comparison, answer y if the device shows the same number (or give --yes, or --passkey \
            with the number it shows). A device bluetoothd already holds keys for is reported as \
            already bonded (exit 0). Pairing needs the BlueZ backend: the own host stack (hciN, \
            tcp:, unix:, serial:) does not pair.
            """)

    @Option(help: ArgumentHelp("The BlueZ adapter: bluez (bluetoothd's first adapter), bluez:hciN, or auto.", valueName: "ADDR"))
    var hci = "bluez"

    @Option(help: ArgumentHelp(
        "What HealthGate can do for the pairing: \(AgentCapability.allCases.map(\.rawValue).joined(separator: ", ")) (BlueZ's names); with the device's own it decides the method.",
        valueName: "CAPABILITY"))
    var capability = AgentCapability.keyboardDisplay.rawValue

    @Option(help: ArgumentHelp("The passkey the device shows (0 to 999999), for scripts: answers a passkey request and checks a numeric comparison.",
                               valueName: "N"))
    var passkey: String?

    @Flag(help: "Accept a numeric comparison without asking.")
    var yes = false

    @Flag(help: "Print the backend's diagnostics to standard error: D-Bus calls that failed, links down.")
    var verbose = false

    @Option(help: ArgumentHelp("How long to look for the device; \(DurationArgument.forms).", valueName: "DURATION"))
    var scanFor = DurationArgument(seconds: 15)

    @Option(help: ArgumentHelp("How long the pairing may take, typing a passkey included; \(DurationArgument.forms).", valueName: "DURATION"))
    var timeout = DurationArgument(seconds: 90)

    @OptionGroup var output: OutputOptions

    @Argument(help: "The device's address or advertised name.")
    var device: String

    struct Result: Encodable {
        var device: String
        var name: String?
        var result: String
    }

    func validate() throws {
        try scanFor.requireLongerThanZero("--scan-for")
        try timeout.requireLongerThanZero("--timeout")
        guard AgentCapability(parsing: capability) != nil else {
            throw ValidationError("--capability: '\(capability)' is none of \(AgentCapability.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let passkey, PairingAgentPolicy.parsePasskey(passkey) == nil {
            throw ValidationError("--passkey: '\(passkey)' is not a passkey (1 to 6 digits, 0 to 999999)")
        }
        if case .host = try controller() { throw ValidationError(Self.needsBlueZ(hci)) }
    }

    static func needsBlueZ(_ hci: String) -> String {
        "--hci \(hci): pairing needs the BlueZ backend (--hci bluez or bluez:hciN, with bluetoothd running); the own host stack does not pair (no SMP)"
    }

    func controller() throws -> BLEController {
        do { return try BLEController(parsing: hci) } catch { throw ValidationError("--hci: \(error)") }
    }

    func run() async throws {
        let resolved: BLEController
        do { resolved = try await Controllers.resolve(try controller()) } catch let error as BLEError { throw CommandFailure.controller(hci, error) }
        guard case .bluez(let adapter) = resolved else { throw CommandFailure(Self.needsBlueZ(hci)) }
        let central: BlueZCentral
        var configuration = BlueZCentral.Configuration(adapter: adapter)
        configuration.log = ControllerOptions.diagnostics(verbose)
        do { central = try await BlueZCentral.open(configuration) } catch {
            throw CommandFailure.controller(hci, error)
        }
        do {
            let result = try await pair(central)
            await central.close()
            if output.json { return try CommandOutput.printJSON(result) }
            print(result.result == PairOutcome.alreadyBonded.rawValue
                  ? "\(result.device) is already bonded (bluetoothd holds its keys); nothing to do."
                  : "Paired with \(result.device)\(result.name.map { " (\($0))" } ?? ""): bonded and trusted.")
        } catch {
            await central.close()
            throw error
        }
    }

    private func pair(_ central: BlueZCentral) async throws -> Result {
        let wanted = device.uppercased()
        var address = DeviceAddress(device, kind: .random)
        var name: String?
        if let address, try await central.isPaired(address) == true {
            return Result(device: address.description, name: nil, result: PairOutcome.alreadyBonded.rawValue)
        }
        if !output.json { CommandOutput.stderr("looking for \(device) (up to \(scanFor))\n") }
        let found = try await scanDevices(central, for: scanFor) { d in
            address.map { $0.value == d.address.value } ?? (d.name?.uppercased() == wanted)
        }
        guard let match = found.first(where: { d in address.map { $0.value == d.address.value } ?? (d.name?.uppercased() == wanted) }) else {
            throw CommandFailure("\(device) was not found in \(scanFor): is it advertising (in pairing mode) and in range? (`healthgate ble scan --hci \(hci)` lists what is)")
        }
        address = match.address
        name = match.name
        guard let address else { throw CommandFailure("\(device): no address") }
        let options = AgentOptions(capability: AgentCapability(parsing: capability) ?? .keyboardDisplay,
                                   passkey: passkey.flatMap(PairingAgentPolicy.parsePasskey), assumeYes: yes,
                                   interactive: isatty(STDIN_FILENO) == 1)
        if !output.json { CommandOutput.stderr("pairing with \(address)\(name.map { " (\($0))" } ?? "") as \(options.capability.rawValue)\n") }
        let prompter = PairingPrompter(show: { CommandOutput.stderr($0 + "\n") }, ask: { prompt in
            CommandOutput.stderr(prompt)
            return readLine(strippingNewline: true)
        })
        let outcome: PairOutcome
        do {
            outcome = try await central.pair(address, options: options, prompter: prompter, timeout: timeout.duration)
        } catch {
            throw CommandFailure("\(address): \(error)")
        }
        return Result(device: address.description, name: name, result: outcome.rawValue)
    }
}
