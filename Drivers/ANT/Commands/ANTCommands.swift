public import ANTDriver
import ANTPlusProfiles
import ANTProtocol
public import ArgumentParser
import CommandSupport
import DriverRegistry
import DriverKit
import Foundation
import HealthPipeline
import HealthStore
public import HealthModel
import Synchronization
import USBKit

/// `healthgate ant`: the ANT family's commands, mounted by the executable.
public struct ANTRootCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ant", abstract: "ANT+ through ANT USB sticks: list the sticks, find sensors, watch their live readings.",
        discussion: """
            The sticks are Dynastream/Garmin ANT USB2 (0fcf:1008) and ANT USB-m (0fcf:1009), \
            opened through libusb; the kernel's usb_serial_simple is detached from a stick when \
            it holds it. Listening to ANT+ sensors needs the ANT+ network key: --network-key, or \
            the environment variable HEALTHGATE_ANT_NETWORK_KEY (16 hex digits; ANT+ adopters \
            get it from thisisant.com; HealthGate does not ship it).
            """,
        subcommands: [ANTListCommand.self, ANTScanCommand.self, ANTWatchCommand.self, ANTReplayCommand.self, ANTDownloadCommand.self])

    public init() {}
}

/// The options of the commands that listen to sensors.
struct ANTListenOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The ANT+ network key, 16 hex digits (default: $HEALTHGATE_ANT_NETWORK_KEY).", valueName: "KEY"))
    var networkKey: String?

    @Option(name: .customLong("stick"), help: ArgumentHelp("Only this stick: its USB port (1-2) or bus:address (001:005); repeatable.",
                                                           valueName: "STICK"))
    var sticks: [String] = []

    @Flag(help: "Poll the USB device list instead of waiting for hotplug events.")
    var poll = false

    func key() throws -> [UInt8] {
        guard let text = networkKey ?? ProcessInfo.processInfo.environment["HEALTHGATE_ANT_NETWORK_KEY"] else {
            throw ValidationError("give the ANT+ network key: --network-key KEY or HEALTHGATE_ANT_NETWORK_KEY (16 hex digits)")
        }
        guard let key = ANTPlus.parseNetworkKey(text) else {
            throw ValidationError("the network key must be 8 bytes as 16 hex digits (\"B9A5...\"), optionally separated")
        }
        return key
    }
}

/// A sink for commands that only show readings: stores nothing.
struct DiscardingSink: RecordSink {
    func emit(_ batch: [HealthRecord]) async throws {}
    func emit(_ batch: LiveBatch) async throws {}
}

/// Runs `recorder` until `stop` says so (checked on each event), `duration` passed, or the task is
/// cancelled (Ctrl-C ends the process). Throws what the recorder threw.
func runUntilStopped(_ recorder: ANTRecorder, for duration: Duration?) async throws {
    let task = Task { try await recorder.run(into: DiscardingSink()) }
    let timer = duration.map { limit in
        Task {
            try? await Task.sleep(for: limit)
            task.cancel()
        }
    }
    defer { timer?.cancel() }
    try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
}

// MARK: - list

struct ANTListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "The ANT sticks plugged in: model, USB port, firmware, serial, channels, or why one cannot be used.",
        discussion: """
            Each stick is opened, reset and asked what it is, then closed (a few hundred \
            milliseconds). A stick that cannot be opened says why: permissions (the udev rule), \
            another program holding it, a kernel driver that cannot be detached.
            """)

    @OptionGroup var output: OutputOptions

    struct Stick: Encodable {
        var port: String
        var bus: Int
        var address: Int
        var usbID: String
        var model: String
        var kernelDriver: String?
        var firmware: String?
        var serialNumber: UInt32?
        var channels: Int?
        var networks: Int?
        var extendedMessages: Bool?
        var error: String?

        enum CodingKeys: String, CodingKey {
            case port, bus, address, usbID = "usb_id", model, kernelDriver = "kernel_driver", firmware, serialNumber = "serial_number",
                 channels, networks, extendedMessages = "extended_messages", error
        }
    }

    func run() async throws {
        let context: USBContext
        do { context = try USBContext() } catch { throw CommandFailure("\(error)") }
        let found: [USBDeviceInfo]
        do { found = try context.devices(matching: ANTStickModel.matches) } catch { throw CommandFailure("\(error)") }
        var sticks: [Stick] = []
        for info in found {
            var stick = Stick(port: info.sysfsName, bus: Int(info.bus), address: Int(info.address), usbID: info.ids,
                              model: ANTStickModel.name(info.productID), kernelDriver: info.kernelDriver())
            do {
                let identified = try await Self.identify(info, context: context)
                stick.firmware = identified.version
                stick.serialNumber = identified.serialNumber
                stick.channels = identified.capabilities.map { Int($0.maxChannels) }
                stick.networks = identified.capabilities.map { Int($0.maxNetworks) }
                stick.extendedMessages = identified.capabilities?.supportsExtendedMessages
            } catch {
                stick.error = "\(error)"
            }
            sticks.append(stick)
        }
        if output.json { return try CommandOutput.printJSON(sticks) }
        if sticks.isEmpty {
            print("no ANT stick plugged in (looked for 0fcf:1008 and 0fcf:1009)")
            return
        }
        CommandOutput.printTable(["STICK", "MODEL", "USB", "FIRMWARE", "SERIAL", "CHANNELS", "STATE"], sticks.map { s in
            [s.port, s.model, String(format: "%03d:%03d", s.bus, s.address), s.firmware ?? "-", s.serialNumber.map(String.init) ?? "-",
             s.channels.map(String.init) ?? "-", s.error.map { "cannot be used: \($0)" } ?? "ok"]
        })
    }

    /// Opens the stick, lets the controller identify it, and closes it.
    static func identify(_ info: USBDeviceInfo, context: USBContext) async throws -> ANTStickController.StickInfo {
        var configuration = ANTStickController.Configuration()
        configuration.resets = 3
        var stick = ANTStick(context: context, configuration: configuration)
        stick.maximumResets = 0  // a listing says what is wrong rather than mending it
        let found = Mutex<ANTStickController.StickInfo?>(nil)
        let task = Task {
            try await stick.run(info) { event in
                if case .identified(let identified) = event {
                    found.withLock { $0 = identified }
                    withUnsafeCurrentTask { $0?.cancel() }
                }
            }
        }
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(10))
            task.cancel()
        }
        defer { watchdog.cancel() }
        try await task.value
        guard let identified = found.withLock({ $0 }) else { throw CommandFailure("it did not say what it is within 10 s") }
        return identified
    }
}

// MARK: - scan

struct ANTScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan", abstract: "The ANT+ sensors in range: kind, device number, signal, battery, maker.",
        discussion: """
            Listens with every stick in the receive scan mode (all sensors on the ANT+ frequency \
            at once) for --for, then prints one line per sensor heard. The device number is what \
            `sensors = ["KIND:NUMBER"]` (the ant driver) and `ant watch --sensor` take.
            """)

    @OptionGroup var listen: ANTListenOptions
    @Option(name: .customLong("for"), help: ArgumentHelp("How long to listen: \(DurationArgument.forms).", valueName: "DURATION"))
    var duration = DurationArgument(seconds: 10)
    @OptionGroup var output: OutputOptions

    struct Sensor: Encodable {
        var sensor: String
        var kind: String
        var deviceType: Int
        var deviceNumber: UInt32
        var messages: Int
        var rssi: Int?
        var battery: Int?
        var batteryStatus: String?
        var manufacturer: Int?
        var model: Int?
        var serialNumber: UInt32?
        var software: String?

        enum CodingKeys: String, CodingKey {
            case sensor, kind, deviceType = "device_type", deviceNumber = "device_number", messages, rssi, battery,
                 batteryStatus = "battery_status", manufacturer, model, serialNumber = "serial_number", software
        }
    }

    func run() async throws {
        try duration.requireLongerThanZero("--for")
        var stick = ANTStickController.Configuration(networkKey: try listen.key(), scanMode: true)
        stick.silence = 30
        var configuration = ANTRecorder.Configuration(stick: stick)
        configuration.sticks = listen.sticks.isEmpty ? nil : listen.sticks
        configuration.pollForSticks = listen.poll
        let seen = Mutex<[ANTSensorID: Sensor]>([:])
        let json = output.json
        configuration.onEvent = { event in
            switch event {
            case .readings(let id, let readings, _, let rssi):
                seen.withLock { all in
                    var s = all[id] ?? Sensor(sensor: id.description, kind: id.kind, deviceType: Int(id.deviceType),
                                              deviceNumber: id.deviceNumber, messages: 0)
                    s.messages += 1
                    if let rssi { s.rssi = Int(rssi) }
                    for reading in readings {
                        switch reading {
                        case .battery(let percent, _, let status):
                            if let percent { s.battery = percent }
                            if let status { s.batteryStatus = "\(status)" }
                        case .manufacturer(let maker, let model, _):
                            s.manufacturer = Int(maker)
                            s.model = Int(model)
                        case .product(let serial, let software):
                            s.serialNumber = serial
                            s.software = software
                        default: break
                        }
                    }
                    all[id] = s
                }
            case .stickEnded(_, let reason?) where !json:
                CommandOutput.stderr("healthgate: \(DisplayText.safe(reason, limit: 500))\n")
            default:
                if !json, let message = event.message { CommandOutput.stderr(DisplayText.safe(message, limit: 500) + "\n") }
            }
        }
        do { try await ANTWatchCommand.runRecorder(ANTRecorder(configuration: configuration), for: duration.duration) } catch {
            throw CommandFailure("\(error)")
        }
        let sensors = seen.withLock { Array($0.values) }.sorted { ($0.deviceType, $0.deviceNumber) < ($1.deviceType, $1.deviceNumber) }
        if json { return try CommandOutput.printJSON(sensors) }
        if sensors.isEmpty {
            print("no ANT+ sensor heard in \(duration)")
            return
        }
        CommandOutput.printTable(["SENSOR", "KIND", "MESSAGES", "RSSI", "BATTERY", "MAKER/MODEL"], sensors.map { s in
            [s.sensor, s.kind, String(s.messages), s.rssi.map { "\($0) dBm" } ?? "-",
             s.battery.map { "\($0)%" } ?? s.batteryStatus ?? "-",
             s.manufacturer.map { "\($0)/\(s.model.map(String.init) ?? "-")" } ?? "-"]
        })
    }
}

// MARK: - watch

struct ANTWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print ANT+ sensors' decoded live readings as they arrive.",
        discussion: """
            Opens one channel per sensor kind named with --sensor (default: one of each kind, \
            paired with the first sensor found) on every stick, and prints each reading: heart \
            rate with RR intervals, speed, cadence, power, stride, fitness equipment, weight, \
            battery and the sensors' maker pages. --json prints one object per line.
            """)

    @OptionGroup var listen: ANTListenOptions
    @Option(name: .customLong("sensor"), help: ArgumentHelp("A sensor: auto, KIND or KIND:DEVICE_NUMBER (heart_rate, speed, cadence, speed_cadence, power, fitness_equipment, stride, weight_scale); repeatable.", valueName: "SENSOR"))
    var sensors: [String] = ["auto"]
    @Option(help: "Stop after this many readings.")
    var count: Int?
    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long: \(DurationArgument.forms).", valueName: "DURATION"))
    var duration: DurationArgument?
    @Option(name: .customLong("wheel-circumference"), help: "Metres per wheel revolution (0.5 to 4).")
    var wheel = 2.096
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        try duration?.requireLongerThanZero("--for")
        guard (0.5...4).contains(wheel) else { throw ValidationError("--wheel-circumference must be 0.5 to 4") }
    }

    func run() async throws {
        let plans: [ANTStickController.ChannelPlan]
        do { plans = try ANTSensorSelector.plans(sensors) } catch { throw ValidationError("--sensor: \(error.reason)") }
        var configuration = ANTRecorder.Configuration(stick: ANTStickController.Configuration(networkKey: try listen.key(), channels: plans))
        configuration.sticks = listen.sticks.isEmpty ? nil : listen.sticks
        configuration.pollForSticks = listen.poll
        configuration.wheelCircumference = wheel
        let json = output.json
        let printed = Mutex(0)
        let limit = count
        let (done, finished) = AsyncStream.makeStream(of: Void.self)
        configuration.onEvent = { event in
            switch event {
            case .readings(let sensor, let readings, let time, let rssi):
                for reading in readings {
                    let line = WatchLine(time: time, sensor: sensor, reading: reading, rssi: rssi)
                    if json { try? CommandOutput.printJSONLine(line) } else { CommandOutput.printLine(line.text) }
                    let total = printed.withLock { n in
                        n += 1
                        return n
                    }
                    if let limit, total >= limit { finished.yield() }
                }
            case .stickEnded(_, let reason?):
                CommandOutput.stderr("healthgate: \(DisplayText.safe(reason, limit: 500))\n")
            default:
                if let message = event.message { CommandOutput.stderr(DisplayText.safe(message, limit: 500) + "\n") }
            }
        }
        let recorder = ANTRecorder(configuration: configuration)
        let stopAfter = duration?.duration
        let task = Task { try await Self.runRecorder(recorder, for: stopAfter) }
        let stopper = Task {
            for await _ in done { break }
            task.cancel()
        }
        defer { stopper.cancel() }
        do { try await task.value } catch { throw CommandFailure("\(error)") }
    }

    /// Runs `recorder` into no store until cancelled or `duration` passed.
    static func runRecorder(_ recorder: ANTRecorder, for duration: Duration?) async throws {
        try await runUntilStopped(recorder, for: duration)
    }
}

/// One reading of `ant watch`, as text and as a JSON line.
struct WatchLine: Encodable {
    var time: Date
    var sensor: String
    var kind: String
    var reading: String
    var values: [String: Double]
    var rr: [Double]?
    var rssi: Int?

    init(time: Date, sensor: ANTSensorID, reading: ANTPlusReading, rssi: Int8?) {
        self.time = time
        self.sensor = sensor.description
        kind = sensor.kind
        self.rssi = rssi.map(Int.init)
        var values: [String: Double] = [:]
        switch reading {
        case .heartRate(let bpm, let rrSeconds):
            self.reading = "heart_rate"
            values["bpm"] = Double(bpm)
            rr = rrSeconds
        case .speed(let speed, let distance):
            self.reading = "speed"
            values["speed_mps"] = speed
            values["distance_m"] = distance
        case .cadence(let rpm):
            self.reading = "cadence"
            values["cadence_rpm"] = rpm
        case .power(let watts, let cadence, let balance):
            self.reading = "power"
            values["power_w"] = watts
            values["cadence_rpm"] = cadence
            values["right_percent"] = balance
        case .stride(let speed, let steps, let distance, let strides):
            self.reading = "stride"
            values["speed_mps"] = speed
            values["steps_per_min"] = steps
            values["distance_m"] = distance
            values["strides"] = strides.map(Double.init)
        case .fitnessEquipment(let s):
            self.reading = "fitness_equipment"
            values["speed_mps"] = s.speedMetersPerSecond
            values["distance_m"] = s.distanceMeters
            values["heart_rate"] = s.heartRate.map(Double.init)
            values["power_w"] = s.powerWatts
            values["cadence"] = s.cadence
            values["elapsed_s"] = s.elapsedSeconds
            values["kcal"] = s.kilocalories
        case .weight(let w):
            self.reading = "weight"
            values["weight_kg"] = w.weightKilograms
            values["body_fat_percent"] = w.bodyFatPercent
            values["hydration_percent"] = w.hydrationPercent
            values["muscle_kg"] = w.muscleMassKilograms
            values["bone_kg"] = w.boneMassKilograms
            values["basal_kcal"] = w.basalMetabolicRateKilocalories
            values["user_profile"] = w.userProfile.map(Double.init)
        case .battery(let percent, let voltage, _):
            self.reading = "battery"
            values["percent"] = percent.map(Double.init)
            values["voltage"] = voltage
        case .manufacturer(let maker, let model, let hardware):
            self.reading = "manufacturer"
            values["manufacturer"] = Double(maker)
            values["model"] = Double(model)
            values["hardware_revision"] = Double(hardware)
        case .product(let serial, _):
            self.reading = "product"
            values["serial_number"] = serial.map(Double.init)
        case .operatingTime(let seconds):
            self.reading = "operating_time"
            values["seconds"] = seconds
        }
        self.values = values.compactMapValues { $0.isFinite ? $0 : nil }
    }

    enum CodingKeys: String, CodingKey { case time, sensor, kind, reading, values, rr = "rr_s", rssi }

    /// `12:00:01.250  ant:120:12345  heart_rate  bpm=120 rr_s=0.500`.
    var text: String {
        let clock = ISO8601.string(time)
        let parts = values.sorted { $0.key < $1.key }.map { "\($0.key)=\(CommandSupportNumber.text($0.value))" }
            + (rr.map { $0.isEmpty ? [] : ["rr_s=" + $0.map { CommandSupportNumber.text($0) }.joined(separator: ",")] } ?? [])
        return "\(clock)  \(sensor)  \(reading)  " + parts.joined(separator: " ")
    }
}

/// Numbers as readings show them: at most three decimals, no trailing zeros.
enum CommandSupportNumber {
    static func text(_ value: Double) -> String {
        var text = String(format: "%.3f", value)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

// MARK: - replay

struct ANTReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Print (or store) the ANT+ readings in a usbmon capture of an ANT stick.",
        discussion: """
            FILE is a Linux usbmon capture (pcap or pcapng, link type 220 or 189: Wireshark, \
            tcpdump -i usbmonN) of a session with an ANT USB stick, by HealthGate or any other \
            program. What the stick sent is decoded as a live session would have, and each \
            reading printed like `ant watch` prints it, with the time it was captured (--json: \
            one object per line). A summary goes to standard error. --record stores what a live \
            recording would have stored, with the capture's times: replaying it again stores \
            nothing new.
            """)

    @OptionGroup var output: OutputOptions
    @Flag(help: "Store the readings in the database (--db).")
    var record = false
    @OptionGroup(title: "With --record") var database: DatabaseOptions
    @Option(help: ArgumentHelp("Silence that ends a workout; \(DurationArgument.forms).", valueName: "DURATION"))
    var gap = DurationArgument(seconds: 120)
    @Option(name: .customLong("wheel-circumference"), help: "Metres per wheel revolution (0.5 to 4).")
    var wheel = 2.096
    @Argument(help: "The usbmon capture: pcap or pcapng.")
    var file: String

    func run() async throws {
        guard let data = FileManager.default.contents(atPath: file) else { throw CommandFailure("\(file): cannot be read") }
        var configuration = ANTCaptureReplay.Configuration()
        configuration.sessions.gap = gap.seconds
        configuration.wheelCircumference = wheel
        let result: ANTCaptureReplay.Result
        do { result = try ANTCaptureReplay.replay(Array(data), configuration: configuration) } catch {
            throw CommandFailure("\(file): \(error)")
        }
        for reading in result.readings {
            for value in reading.readings {
                let line = WatchLine(time: reading.time, sensor: reading.sensor, reading: value, rssi: reading.rssi)
                if output.json { try CommandOutput.printJSONLine(line) } else { CommandOutput.printLine(line.text) }
            }
        }
        let s = result.statistics
        var summary = "\((file as NSString).lastPathComponent): \(s.records) record(s)"
        if let first = result.first, let last = result.last { summary += ", \(ISO8601.string(first)) to \(ISO8601.string(last))" }
        summary += "\n\(s.sticks.count) stick(s) \(s.sticks.joined(separator: ", ")): \(s.messages) message(s) in \(s.bytesFromSticks) bytes, "
            + "\(result.readings.count) reading(s) from \(Set(result.readings.map(\.sensor)).count) sensor(s); "
            + "\(s.droppedFrames) frame(s) dropped, \(s.malformedPages) malformed page(s), \(s.skipped) record(s) skipped\n"
        for problem in result.problems { summary += "  \(DisplayText.safe(problem, limit: 300))\n" }
        CommandOutput.stderr(summary)
        if record {
            // Through the live drivers' sink: normalized, and stored once by id.
            let sink = StoreSink(store: try await database.open())
            try await sink.emit(result.batch)
            let workouts = result.batch.workouts.filter(\.isFinal).count
            CommandOutput.stderr("stored into \(database.db): \(workouts) workout(s), \(result.batch.records.count) measurement(s) "
                                 + "(those stored before are kept once)"
                                 + (sink.rejected.count > 0 ? ", \(sink.rejected.count) rejected" : "") + "\n")
        }
        if let damage = result.damage { throw CommandFailure("\(file): \(damage)") }
    }
}

// MARK: - download

struct ANTDownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download a watch's new FIT files over ANT-FS and import them.",
        discussion: """
            For the watches that hand over their backlog through an ANT stick: Forerunner 310XT, \
            610, 910XT, FR60, FR70, Swim, vívoactive HR (the FR405/410 speak Garmin's older \
            protocol inside ANT-FS and are not supported). Put the watch in pairing or sync mode \
            near the stick. The first time, --pair asks the watch to pair: accept on the watch; \
            the passkey it gives is kept for the watch's serial (FILES/SERIAL/passkey, 0600). Every \
            FIT file not fetched before (--since: only those dated from DATE on) is downloaded \
            block by block with its CRC checked, kept under FILES/SERIAL/ and imported; the watch \
            is never written to. The ANT-FS network key comes from --antfs-key or \
            HEALTHGATE_ANTFS_NETWORK_KEY.
            """)

    @Option(name: .customLong("antfs-key"), help: ArgumentHelp("The ANT-FS network key, 16 hex digits (default: $HEALTHGATE_ANTFS_NETWORK_KEY).",
                                                               valueName: "KEY"))
    var networkKey: String?
    @Flag(help: "Pair with a watch that has no stored passkey (accept on the watch).")
    var pair = false
    @Option(help: ArgumentHelp("Only files dated from this date or time on (local unless it says Z).", valueName: "DATE"))
    var since: String?
    @OptionGroup var database: DatabaseOptions
    @Option(name: .customLong("files"), help: ArgumentHelp("Where passkeys and downloaded files are kept (default: antfs/ next to the database).",
                                                           valueName: "DIR"))
    var folder: String?
    @Option(name: .customLong("stick"), help: ArgumentHelp("Use this stick: its USB port (1-2) or bus:address (001:005).", valueName: "STICK"))
    var stick: String?
    @Option(name: .customLong("timeout"), help: ArgumentHelp("Give up after this long: \(DurationArgument.forms).", valueName: "DURATION"))
    var timeout = DurationArgument(seconds: 600)
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let since, CommandDates.localDate(since) == nil {
            throw ValidationError("--since '\(since)' is not a date (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)")
        }
        try timeout.requireLongerThanZero("--timeout")
    }

    func run() async throws {
        guard let text = networkKey ?? ProcessInfo.processInfo.environment["HEALTHGATE_ANTFS_NETWORK_KEY"] else {
            throw ValidationError("give the ANT-FS network key: --antfs-key KEY or HEALTHGATE_ANTFS_NETWORK_KEY (16 hex digits)")
        }
        guard let key = ANTPlus.parseNetworkKey(text) else { throw ValidationError("the ANT-FS key must be 16 hex digits") }
        let db = database.db
        let folder = self.folder ?? ((db as NSString).deletingLastPathComponent.isEmpty ? "." : (db as NSString).deletingLastPathComponent) + "/antfs"
        let store = try await database.open()
        var configuration = ANTFSDownloader.Configuration(networkKey: key, hostSerial: try ANTFSDownloader.hostSerial(folder: folder), folder: folder)
        configuration.allowPairing = pair
        configuration.since = since.flatMap { CommandDates.localDate($0) }
        configuration.sticks = stick.map { [$0] }
        configuration.timeout = timeout.duration
        let quiet = output.json
        configuration.onEvent = { event in
            let line: String? = switch event {
            case .stickOpened(let info): "opened \(ANTStickModel.name(info.productID)) \(info)"
            case .searching: "looking for a watch (put it in sync or pairing mode near the stick)"
            case .identified(let serial, let name): "found \(name.isEmpty ? "a watch" : name) (serial \(serial))"
            case .acceptOnWatch: "accept the pairing request on the watch"
            case .paired(let serial): "paired with \(serial); its passkey is kept"
            case .directory(let total, let selected): "\(total) file(s) on the watch, \(selected.count) to fetch"
            case .progress(let index, let received, let total): "file \(index): \(received)/\(total) bytes"
            case .saved(let path, _): "saved \(path)"
            case .imported(let report): "\(report.path): \(report.status.rawValue)" + (report.records > 0 ? ", \(report.records) record(s)" : "")
            case .fileFailed(let entry, let reason): "\(entry.suggestedFileName): \(reason)"
            }
            if !quiet, let line { CommandOutput.stderr(DisplayText.safe(line, limit: 500) + "\n") }
        }
        let pipeline = ImportPipeline(store: store, importers: Registry.fileImporters())
        let summary: ANTFSDownloader.Summary
        do { summary = try await ANTFSDownloader(configuration: configuration).run(sink: StoreSink(store: store), files: pipeline) } catch {
            throw CommandFailure("\(error)")
        }
        if output.json { return try CommandOutput.printJSON(summary) }
        print("\(summary.watchName ?? "watch") \(summary.watchSerial.map(String.init) ?? ""): \(summary.filesOnWatch) file(s), "
              + "\(summary.fetched.count) fetched"
              + (summary.bytes > 0 ? String(format: " (%d bytes in %.1f s, %.1f kB/s)", summary.bytes, summary.downloadSeconds,
                                            Double(summary.bytes) / max(summary.downloadSeconds, 0.001) / 1000) : "")
              + ", \(summary.imported.filter { $0.status == .imported }.count) imported"
              + (summary.failed.isEmpty ? "" : ", \(summary.failed.count) failed: " + summary.failed.joined(separator: "; ")))
        if !summary.failed.isEmpty { throw ExitCode(1) }
    }
}

// MARK: - record --ant

/// `healthgate record --ant ...`: ANT+ sensors recorded next to Bluetooth LE devices (or alone)
/// into the same database, by the same live sessionizer rules.
public struct ANTRecordOptions: ParsableArguments, Sendable {
    @Flag(name: .customLong("ant"), help: "Record ANT+ sensors through the ANT sticks too (alone without --hci).")
    public var enabled = false

    @Option(name: .customLong("ant-sensor"), help: ArgumentHelp("An ANT+ sensor: auto, KIND or KIND:DEVICE_NUMBER (repeatable; default auto).",
                                                                valueName: "SENSOR"))
    var sensors: [String] = []

    @Option(name: .customLong("ant-network-key"), help: ArgumentHelp("The ANT+ network key, 16 hex digits (default: $HEALTHGATE_ANT_NETWORK_KEY).",
                                                                     valueName: "KEY"))
    var networkKey: String?

    @Option(name: .customLong("ant-stick"), help: ArgumentHelp("Only this ANT stick: its USB port (1-2) or bus:address (001:005); repeatable.",
                                                               valueName: "STICK"))
    var sticks: [String] = []

    public init() {}

    public func validate() throws {
        guard enabled else {
            if !sensors.isEmpty || networkKey != nil || !sticks.isEmpty { throw ValidationError("--ant-sensor, --ant-network-key and --ant-stick go with --ant") }
            return
        }
        _ = try plans()
    }

    func plans() throws -> [ANTStickController.ChannelPlan] {
        do { return try ANTSensorSelector.plans(sensors.isEmpty ? ["auto"] : sensors) } catch { throw ValidationError("--ant-sensor: \(error.reason)") }
    }

    /// The recorder's configuration (nil without --ant): workouts by `gap`, `sport` and `wheel`,
    /// what happens printed on standard error unless `quiet`.
    public func configuration(gap: Double, sport: Sport, wheel: Double, quiet: Bool) throws -> ANTRecorder.Configuration? {
        guard enabled else { return nil }
        let key = try ANTListenOptions(networkKey: networkKey).key()
        var configuration = ANTRecorder.Configuration(stick: ANTStickController.Configuration(networkKey: key, channels: try plans()))
        configuration.sticks = sticks.isEmpty ? nil : sticks
        configuration.sessions.gap = gap
        configuration.sessions.defaultSport = sport
        configuration.wheelCircumference = wheel
        configuration.onEvent = { event in
            if case .stickEnded(_, let reason?) = event {
                CommandOutput.stderr("healthgate: \(DisplayText.safe(reason, limit: 500))\n")
            } else if !quiet, let message = event.message {
                CommandOutput.stderr("ant: " + DisplayText.safe(message, limit: 500) + "\n")
            }
        }
        return configuration
    }

    /// What recording ANT+ reads, for the start line: `heart_rate, power:12345`.
    public var summary: String { (try? plans().map(\.description).joined(separator: ", ")) ?? "" }
}

extension ANTListenOptions {
    init(networkKey: String?) {
        self.init()
        self.networkKey = networkKey
    }
}
