public import ArgumentParser
import BLEDriver
import BluetoothCentral
import CommandSupport
import Foundation
import GATTProfiles
import HealthModel

/// `healthgate ble`: the Bluetooth LE family's commands, mounted by the executable.
public struct BLECommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "ble", abstract: "Bluetooth LE: find devices, pair them, watch their live readings, replay captures.",
        discussion: """
            --hci names the controller: bluez (the system's bluetoothd over D-Bus, sharing its \
            first adapter; bluez:hci1 for another one), auto (bluez when bluetoothd runs, else \
            the first hciN), hci0 (an adapter handed to HealthGate \
            through the HCI user channel), tcp:HOST:PORT or unix:PATH (an H4 stream, e.g. an \
            emulated controller), or serial:/dev/ttyACM0[:baud] (a UART controller). With the \
            own host stack (all but bluez), --snoop FILE records the session as a \
            btsnoop capture that `ble replay FILE` decodes again.
            """,
        subcommands: [BLEScanCommand.self, BLEWatchCommand.self, BLEReplayCommand.self, BLEPairCommand.self, BLEDownloadCommand.self])
}

/// `--hci` and `--snoop`, shared by the BLE commands that talk to a controller.
public struct ControllerOptions: ParsableArguments {
    public init() {}

    @Option(name: .customLong("hci"), help: ArgumentHelp("The controller (required; `record --ant` records ANT+ alone without it): bluez[:hciN] (through bluetoothd), auto, hci0, tcp:HOST:PORT, unix:PATH or serial:/dev/ttyACM0[:baud].",
                               valueName: "ADDR"))
    public var hciOption: String?

    /// The controller named by --hci (a usage error without one).
    var hci: String {
        get throws {
            guard let hciOption else { throw ValidationError("--hci is required: bluez[:hciN], auto, hci0, tcp:HOST:PORT, unix:PATH or serial:DEV") }
            return hciOption
        }
    }

    @Option(help: ArgumentHelp(
        "Write a btsnoop capture (H4) of everything exchanged with the controller to FILE (replaced if it exists); `healthgate ble replay FILE` decodes it.",
        valueName: "FILE"))
    public var snoop: String?

    @Flag(help: "Print the backend's diagnostics to standard error: connection attempts given up, links down and why, D-Bus calls that failed.")
    public var verbose = false

    /// The `--verbose` sink for the backend's diagnostics, nil without it.
    var diagnostics: (@Sendable (String) -> Void)? { Self.diagnostics(verbose) }

    /// With `verbose`: the backend's diagnostics as `ble: ` lines on standard error.
    static func diagnostics(_ verbose: Bool) -> (@Sendable (String) -> Void)? {
        guard verbose else { return nil }
        return { line in CommandOutput.stderr("ble: " + DisplayText.safe(line, limit: 1000) + "\n") }
    }

    /// The `--snoop` path, after checking the file can be created (the runtime writes the
    /// capture; find out now, not after the session, that it cannot).
    func snoopPath() throws -> String? {
        guard let snoop else { return nil }
        // A capture holds the readings: its owner's alone, like the database.
        guard FileManager.default.createFile(atPath: snoop, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CommandFailure("--snoop: cannot create \(snoop)")
        }
        return snoop
    }

    public func validate() throws {
        guard hciOption != nil else { return }
        if case .bluez = try address(), snoop != nil {
            throw ValidationError("--snoop records the own host stack's controller link; with --hci bluez use btmon")
        }
    }

    func address() throws -> BLEController {
        let hci = try hci
        do { return try BLEController(parsing: hci) } catch { throw ValidationError("--hci: \(error)") }
    }

    /// Opens and initializes the controller (`Controllers.open`, as the daemon's driver does),
    /// runs `body` with it, and closes it afterwards whether `body` succeeded or threw.
    func withController<T>(_ body: (any BLECentral) async throws -> T) async throws -> T {
        let hci = try hci
        // `auto` resolved first: a capture asked of what turns out to be BlueZ is refused before
        // its file is created.
        let controller: BLEController
        do { controller = try await Controllers.resolve(try address()) } catch { throw CommandFailure.controller(hci, error) }
        if case .bluez = controller, snoop != nil {
            throw CommandFailure("--snoop: \(hci) is BlueZ here; a capture needs the own host stack (with BlueZ use btmon)")
        }
        var options = Controllers.Options()
        options.snoopPath = try snoopPath()
        options.log = diagnostics
        let central: any BLECentral
        do { central = try await Controllers.open(controller, options).central } catch {
            throw CommandFailure.controller(hci, error)
        }
        do {
            let result = try await body(central)
            await central.close()
            return result
        } catch {
            await central.close()
            throw error
        }
    }
}

extension CommandFailure {
    /// The controller `hci` could not be opened or used. Named once: a transport's error already
    /// starts with the transport's name (`tcp:127.0.0.1:1: connect: ...`); other errors get `hci`.
    static func controller(_ hci: String, _ error: any Error) -> CommandFailure {
        if let failure = error as? CommandFailure { return failure }
        if case .transport(let cause) = error as? BLEError { return CommandFailure(cause.description) }
        return CommandFailure("\(hci): \(error)")
    }
}

/// A device seen while scanning, as printed by `ble scan`.
struct ScannedDevice: Encodable {
    var address: String
    var name: String?
    var services: [String]
    var rssi: Int?
    var connectable: Bool
    /// Advertised service data: UUID (as in `services`) and the bytes in hex.
    var serviceData: [[String: String]]
    /// Advertised manufacturer data: company identifier (4 hex digits) and the bytes in hex.
    var manufacturerData: [[String: String]]
    var txPower: Int?
    var flags: Int?

    init(_ d: DiscoveredDevice) {
        address = d.address.description
        name = d.name
        services = d.serviceUUIDs.map(Self.uuidText)
        rssi = d.rssi.map(Int.init)
        connectable = d.isConnectable
        serviceData = d.serviceData.map { ["uuid": Self.uuidText($0.uuid), "data": Self.hex($0.data)] }
        manufacturerData = d.manufacturerData.map { ["company": String(format: "%04X", $0.companyIdentifier), "data": Self.hex($0.data)] }
        txPower = d.txPower.map(Int.init)
        flags = d.flags.map(Int.init)
    }

    static func uuidText(_ uuid: BluetoothUUID) -> String { uuid.uint16.map { String(format: "%04X", $0) } ?? uuid.description }
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    enum CodingKeys: String, CodingKey {
        case address, name, services, rssi, connectable
        case serviceData = "service_data", manufacturerData = "manufacturer_data", txPower = "tx_power", flags
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(address, forKey: .address)
        try c.encode(name, forKey: .name)
        try c.encode(services, forKey: .services)
        try c.encode(rssi, forKey: .rssi)
        try c.encode(connectable, forKey: .connectable)
        try c.encode(serviceData, forKey: .serviceData)
        try c.encode(manufacturerData, forKey: .manufacturerData)
        try c.encode(txPower, forKey: .txPower)
        try c.encode(flags, forKey: .flags)
    }
}

/// Scans for `time`, merging repeated reports of one device.
func scanDevices(_ runtime: any BLECentral, for time: DurationArgument, stopWhen: (DiscoveredDevice) -> Bool = { _ in false }) async throws -> [DiscoveredDevice] {
    var devices: [DeviceAddress: DiscoveredDevice] = [:]
    var order: [DeviceAddress] = []
    let stream = try await runtime.scan(for: time.duration)
    for await device in stream {
        if devices[device.address] == nil { order.append(device.address) }
        var merged = device
        if let old = devices[device.address] {
            merged.name = device.name ?? old.name
            merged.serviceUUIDs = Array(Set(old.serviceUUIDs + device.serviceUUIDs)).sorted { $0.description < $1.description }
            for d in old.serviceData where !merged.serviceData.contains(where: { $0.uuid == d.uuid }) { merged.serviceData.append(d) }
            for d in old.manufacturerData where !merged.manufacturerData.contains(where: { $0.companyIdentifier == d.companyIdentifier }) {
                merged.manufacturerData.append(d)
            }
            merged.txPower = device.txPower ?? old.txPower
            merged.flags = device.flags ?? old.flags
        }
        devices[device.address] = merged
        if stopWhen(merged) { break }
    }
    return order.compactMap { devices[$0] }
}

struct BLEScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan", abstract: "List nearby devices: address, name, services, signal strength.")

    @OptionGroup var controller: ControllerOptions
    @OptionGroup var output: OutputOptions

    @Option(name: .customLong("for"), help: ArgumentHelp("How long to scan; \(DurationArgument.forms).", valueName: "DURATION"))
    var time = DurationArgument(seconds: 5)

    func validate() throws { try time.requireLongerThanZero("--for") }

    func run() async throws {
        let devices = try await controller.withController { runtime in
            try await scanDevices(runtime, for: time).map(ScannedDevice.init)
        }
        if output.json { return try CommandOutput.printJSON(devices) }
        guard !devices.isEmpty else { return print("No devices found in \(time).") }
        CommandOutput.printTable(["ADDRESS", "NAME", "RSSI", "SERVICES"], devices.map { d in
            [d.address, d.name ?? "-", d.rssi.map { "\($0) dBm" } ?? "-",
             d.services.map { s in UInt16(s, radix: 16).flatMap { GATTNames.service($0) }.map { "\($0) (\(s))" } ?? s }
                .joined(separator: ", ")]
        })
    }
}

struct BLEWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Connect to a device and print its decoded live readings.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF) or a name as advertised. HealthGate \
            subscribes to every standard measurement the device offers (heart rate, speed and \
            cadence, power, fitness machine data, weight, blood pressure, temperature, SpO2, \
            glucose) and prints one line per reading until --count readings were printed, --for \
            elapses or Ctrl-C; --json prints one JSON object per line.
            """)

    @OptionGroup var controller: ControllerOptions
    @OptionGroup var output: OutputOptions

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (default: until Ctrl-C); \(DurationArgument.forms).",
                                                         valueName: "DURATION"))
    var time: DurationArgument?

    @Option(help: ArgumentHelp("Stop after this many readings (e.g. --count 1 --json for one reading in a script).",
                               valueName: "N"))
    var count: Int?

    @Option(help: ArgumentHelp("How long to look for a device given by name; \(DurationArgument.forms).", valueName: "DURATION"))
    var scanFor = DurationArgument(seconds: 10)

    @Argument(help: "The device's address or advertised name.")
    var device: String

    func validate() throws {
        try time?.requireLongerThanZero("--for")
        try scanFor.requireLongerThanZero("--scan-for")
        if let count, count < 1 { throw ValidationError("--count must be at least 1 (got \(count))") }
    }

    /// Measurement characteristics worth subscribing to (the recorder's list).
    static let measurements: [UInt16] = BLERecorder.measurements

    struct Line: Encodable {
        var time: String
        var device: String
        var characteristic: String
        var name: String
        var hex: String
        var values: [String: Double]
        var error: String?
    }

    func run() async throws {
        try await controller.withController { runtime in try await watch(runtime) }
    }

    private func watch(_ runtime: any BLECentral) async throws {
        let wanted = device.uppercased()
        let address: DeviceAddress
        if let given = DeviceAddress(device, kind: .random) {
            address = given
        } else {
            let found = try await scanDevices(runtime, for: scanFor) { $0.name?.uppercased() == wanted }
            guard let match = found.first(where: { $0.name?.uppercased() == wanted }) else {
                throw CommandFailure("no device named '\(device)' found in \(scanFor) (try `healthgate ble scan`)")
            }
            address = match.address
        }
        let client: any BLEConnection
        let database: GATTDatabase
        do {
            client = try await runtime.connect(address, timeout: .seconds(10))
            database = try await client.discover(timeout: .seconds(10))
        } catch {
            throw CommandFailure("\(address): \(error)")
        }
        let (stream, continuation) = AsyncStream.makeStream(of: GATTNotification.self)
        var subscribed = 0
        for uuid in Self.measurements {
            let characteristic = BluetoothUUID(uuid)
            guard !database.characteristics(characteristic).isEmpty else { continue }
            if (try? await client.subscribe(characteristic, into: continuation, timeout: .seconds(5))) != nil { subscribed += 1 }
        }
        guard subscribed > 0 else { throw CommandFailure("\(address) offers no measurement HealthGate reads") }
        if !output.json { CommandOutput.stderr("watching \(address) (\(subscribed) characteristics); Ctrl-C to stop\n") }
        if let time {
            Task {
                try? await Task.sleep(for: time.duration)
                continuation.finish()
            }
        }
        Task {
            _ = try? await client.disconnected(timeout: nil)
            continuation.finish()
        }
        var printed = 0
        for await notification in stream {
            try Self.printLine(Self.describe(notification), json: output.json)
            printed += 1
            if printed == count { break }
        }
        _ = try? await client.disconnect(timeout: .seconds(3))
    }

    /// Prints one reading: with `json` one JSON object on a line, else `time  name  values`
    /// (or the decode error).
    static func printLine(_ line: Line, json: Bool) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            CommandOutput.printLine(String(decoding: try encoder.encode(line), as: UTF8.self))
        } else {
            let values = line.values.sorted { $0.key < $1.key }.map { key, value in
                "\(key)=\(value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : CommandOutput.number(value, decimals: 3))"
            }
            CommandOutput.printLine(DisplayText.safe("\(line.time)  \(line.name)  \(line.error ?? values.joined(separator: " "))", limit: 1000))
        }
    }

    /// Decodes a notification into named values for printing.
    static func describe(_ n: GATTNotification) -> Line {
        let uuid = n.characteristic.uint16 ?? 0
        var line = Line(time: ISO8601.string(n.receivedAt), device: n.peer.description,
                        characteristic: String(format: "%04X", uuid), name: GATTNames.characteristic(uuid) ?? n.characteristic.description,
                        hex: n.value.map { String(format: "%02x", $0) }.joined(), values: [:])
        do {
            guard let reading = try GATTProfileDecoder.decode(characteristic: uuid, n.value) else { return line }
            line.values = ReadingValues.of(reading)
        } catch {
            line.error = "\(error)"
        }
        return line
    }
}

/// The main numbers of a reading, by name (units in the names).
enum ReadingValues {
    static func of(_ reading: GATTReading) -> [String: Double] {
        var v: [String: Double] = [:]
        switch reading {
        case .heartRate(let m):
            v["heart_rate_bpm"] = Double(m.beatsPerMinute)
            for (i, rr) in m.rrIntervals.enumerated() { v["rr\(i)_s"] = rr }
            v["energy_kj"] = m.energyExpendedKilojoules.map(Double.init)
        case .batteryLevel(let b): v["battery_percent"] = Double(b.percent)
        case .csc(let m):
            v["wheel_revolutions"] = m.wheel.map { Double($0.cumulativeRevolutions) }
            v["crank_revolutions"] = m.crank.map { Double($0.cumulativeRevolutions) }
        case .rsc(let m):
            v["speed_mps"] = m.speedMetersPerSecond
            v["cadence_spm"] = Double(m.cadence)
        case .cyclingPower(let m): v["power_w"] = Double(m.instantaneousPower)
        case .indoorBike(let m):
            v["speed_kmh"] = m.instantaneousSpeedKilometersPerHour
            v["cadence_rpm"] = m.instantaneousCadenceRPM
            v["power_w"] = m.instantaneousPower.map(Double.init)
            v["heart_rate_bpm"] = m.common.heartRate.map(Double.init)
        case .treadmill(let m):
            v["speed_kmh"] = m.instantaneousSpeedKilometersPerHour
            v["heart_rate_bpm"] = m.common.heartRate.map(Double.init)
        case .rower(let m):
            v["stroke_rate_spm"] = m.strokeRatePerMinute
            v["power_w"] = m.instantaneousPower.map(Double.init)
        case .crossTrainer(let m):
            v["speed_kmh"] = m.instantaneousSpeedKilometersPerHour
            v["power_w"] = m.instantaneousPower.map(Double.init)
        case .weight(let m): v["weight_kg"] = m.weightKilograms
        case .bodyComposition(let m): v["body_fat_percent"] = m.bodyFatPercentage
        case .bloodPressure(let m):
            v["systolic_mmhg"] = m.systolicMmHg
            v["diastolic_mmhg"] = m.diastolicMmHg
        case .temperature(let m): v["temperature_c"] = m.celsius
        case .plxSpotCheck(let m): v["spo2_percent"] = m.reading.spO2.doubleValue
        case .plxContinuous(let m): v["spo2_percent"] = m.normal.spO2.doubleValue
        case .glucose(let m): v["glucose_mmol_l"] = m.millimolesPerLiter
        default: break
        }
        return v.compactMapValues { $0 }.filter { $0.value.isFinite }
    }
}
