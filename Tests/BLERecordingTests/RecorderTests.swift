import Foundation
import GRDB
import Synchronization
import Testing
import BluetoothCentral
import BLEDriver
import BLEHost
import BLERuntime
import HealthModel
import HealthPipeline
import HealthStore
import TestSupport

/// A recorder writing into a fresh database, run against the emulated peer.
final class Recording: Sendable {
    let store: HealthStore
    /// A read-only connection of the test's own on the database file, for the checks.
    let inspector: DatabaseQueue
    let directory: URL
    let task: Task<Void, any Error>
    /// The recording whose database this one reuses (kept alive: it owns the directory).
    let previous: Recording?
    private let log = EventLog()

    final class EventLog: Sendable {
        let started = ContinuousClock.now
        let events = Mutex<[BLERecorderEvent]>([])
        /// The backend's diagnostics, each with the seconds since the recording started.
        let lines = Mutex<[String]>([])

        func add(_ line: String) {
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            lines.withLock { $0.append(String(format: "%7.3f ", seconds) + line) }
        }
    }

    convenience init(_ peer: BLEPeer, devices: [DeviceSelector], gap: TimeInterval = 60, after previous: Recording? = nil) async throws {
        try await self.init(peer.h4, devices: devices, after: previous) { $0.sessionizer.gap = gap }
    }

    convenience init(_ peer: BLEPeer, devices: [DeviceSelector], after previous: Recording? = nil,
                     configure: (inout BLERecorder.Configuration) -> Void) async throws {
        try await self.init(peer.h4, devices: devices, after: previous, configure: configure)
    }

    /// With `previous`: a new recorder (as after a restart) on the previous one's database.
    init(_ controller: TransportAddress, devices: [DeviceSelector], after previous: Recording? = nil,
         configure: (inout BLERecorder.Configuration) -> Void) async throws {
        self.previous = previous
        directory = previous?.directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("hg-rec-\(UUID().uuidString)")
        store = try await HealthStore(path: directory.appendingPathComponent("db.sqlite").path)
        var readOnly = Configuration()
        readOnly.readonly = true
        inspector = try DatabaseQueue(path: store.path, configuration: readOnly)
        var c = BLERecorder.Configuration(controller: controller, devices: devices)
        c.sessionizer.gap = 60
        c.flushInterval = .milliseconds(100)
        c.scanWindow = .seconds(2)
        c.scanPause = .milliseconds(500)
        c.backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(1), jitter: 0.2)
        let log = log
        c.onEvent = { event in
            log.events.withLock { $0.append(event) }
            if let message = event.message { log.add(message) }
        }
        c.log = { log.add("backend: \($0)") }
        configure(&c)
        let recorder = BLERecorder(configuration: c)
        let sink = StoreSink(store: store)
        task = Task { try await recorder.run(into: sink) }
    }

    var events: [BLERecorderEvent] { log.events.withLock { $0 } }

    /// The recorder's events (but stored batches) and the backend's diagnostics, with their
    /// times: the first 60 lines and the last 60 (what went wrong first, and how it ended).
    var diagnostics: String {
        let lines = log.lines.withLock { $0 }
        guard lines.count > 120 else { return lines.joined(separator: "\n") }
        return (lines.prefix(60) + ["... \(lines.count - 120) lines ..."] + lines.suffix(60)).joined(separator: "\n")
    }

    var statistics: BLERecorderStatistics? {
        events.lazy.compactMap { if case .finished(let s) = $0 { s } else { nil } }.first
    }

    /// Samples stored for `address` (live writes reach the database while recording).
    func storedSamples(_ address: DeviceAddress) throws -> Int {
        try count("SELECT count(*) FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.source_device = ?", [address.text])
    }

    func connections(_ address: DeviceAddress) -> Int {
        events.filter { if case .connected(let a, _) = $0 { a.value == address.value } else { false } }.count
    }

    /// Stops the recorder as Ctrl-C would and waits for it.
    func stop() async throws {
        task.cancel()
        try await task.value
    }

    /// Polls until `condition` holds (at most ``Patience/limit``); a timeout says what the
    /// recorder and the backend said meanwhile.
    func wait(_ what: String, until condition: () async throws -> Bool) async throws {
        try await eventually(what, detail: "the recorder's events (but stored batches) and the backend's diagnostics:\n" + diagnostics) {
            try await condition()
        }
    }

    func count(_ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        try inspector.read { try Int.fetchOne($0, sql: sql, arguments: arguments) ?? 0 }
    }

    /// The stored workout of a device, whole.
    func workout(of address: DeviceAddress) async throws -> Workout? {
        let id = try await inspector.read { db in
            try String.fetchOne(db, sql: "SELECT id FROM workouts WHERE source_device = ?", arguments: [address.text])
        }
        guard let id else { return nil }
        return try await store.workout(id: id)
    }

    /// The last sequence number stored for a glucose meter (the `ble` driver's checkpoint).
    func glucoseSync(_ address: DeviceAddress) throws -> Int? {
        try inspector.read { try Int.fetchOne($0, sql: "SELECT json_extract(value, '$.sequence') FROM driver_checkpoints WHERE driver = 'ble' AND device = ?", arguments: [address.text]) }
    }

    deinit { if previous == nil { try? FileManager.default.removeItem(at: directory) } }
}

/// The well-formed values a peripheral sent, in order, across all its links.
func sent(_ peer: BLEPeer, _ peripheral: String) -> [[String: Any]] {
    peer.sentLog().filter { $0["peripheral"] as? String == peripheral && $0["malformed"] is NSNull }
}

func fields(_ entry: [String: Any]) -> [String: Any] { entry["fields"] as? [String: Any] ?? [:] }

@Suite(.serialized) struct RecorderTests {
    @Test func theDatabaseHoldsExactlyTheValuesThePeerSent() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "10")
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"]).address, csc = try #require(peer.peripherals["csc"]).address
        let r = try await Recording(peer, devices: [.auto, .service(BluetoothUUID(0x1816))])

        // Live writes: while recording, both workouts are in the database and growing. Both
        // connected (set up: subscribed, battery read) too, so that stopping them ends two
        // connections: on a loaded machine values flow before the set-up ends, and a link lost
        // during it is a failed attempt, not a disconnection (a full run waited for one for 5 min).
        try await r.wait("samples of both devices stored, both connected") {
            try r.count("SELECT count(*) FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.source_device = ?", [hr.text]) >= 15
                && r.count("SELECT count(*) FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.source_device = ?", [csc.text]) >= 15
                && r.connections(hr) >= 1 && r.connections(csc) >= 1
        }
        #expect(try r.count("SELECT count(*) FROM workouts WHERE in_progress = 1") == 2)
        #expect(try r.count("SELECT count(*) FROM outbox WHERE record_type = 'workout'") == 0)  // not complete yet

        // The peer goes quiet (links down, nothing in flight), then recording stops.
        try await peer.control("stop hr")
        try await peer.control("stop csc")
        try await r.wait("both disconnections seen") {
            r.events.filter { if case .disconnected = $0 { true } else { false } }.count >= 2
        }
        // Every value the peer sent reaches the database before the recorder stops.
        try await r.wait("every value stored") {
            try r.storedSamples(hr) == sent(peer, "hr").count && r.storedSamples(csc) == sent(peer, "csc").count
        }
        try await r.stop()

        #expect(try r.count("SELECT count(*) FROM workouts WHERE in_progress = 0") == 2)
        #expect(try r.count("SELECT count(*) FROM outbox WHERE record_type = 'workout'") == 2)

        // Heart rate: every bpm and every RR interval, in order; energy from the kJ counter.
        let hrSent = sent(peer, "hr")
        let strap = try #require(try await r.workout(of: hr))
        #expect(strap.samples.count == hrSent.count)
        #expect(strap.samples.map(\.heartRate) == hrSent.map { fields($0)["bpm"] as? Int })
        let rr = hrSent.flatMap { (fields($0)["rr"] as? [Int] ?? []).map { Double($0) / 1024 } }
        #expect(strap.rrIntervals.count == rr.count)
        #expect(zip(strap.rrIntervals, rr).allSatisfy { abs($0 - $1) < 1e-12 })
        #expect(strap.source == Source(driver: "ble", device: hr.text))
        let bpm = hrSent.compactMap { fields($0)["bpm"] as? Int }
        #expect(strap.maxHeartRate == bpm.max())
        #expect(strap.avgHeartRate == Int((Double(bpm.reduce(0, +)) / Double(bpm.count)).rounded()))
        let kj = hrSent.compactMap { fields($0)["energy_kj"] as? Int }
        if let first = kj.first, let last = kj.last, last > first {
            #expect(strap.energyKcal == ((Double(first == 0 ? last : last - first) / 4.184) * 10).rounded() / 10)
            #expect(strap.energySource == .device)
        }

        // Speed and cadence: one sample per value; distance from the wheel counter (with the
        // 32-bit rollover the peer's script crosses), speed from the last two values.
        let cscSent = sent(peer, "csc")
        let bike = try #require(try await r.workout(of: csc))
        #expect(bike.sport == "cycling")
        #expect(bike.samples.count == cscSent.count)
        let revs = cscSent.compactMap { fields($0)["wheel_revs"] as? Int }
        let events = cscSent.compactMap { fields($0)["wheel_event"] as? Int }
        let turned = (revs.last! - revs.first!) & 0xFFFF_FFFF
        #expect(abs((bike.distanceM ?? -1) - Double(turned) * 2.096) < 1e-6)
        let dRevs = (revs[revs.count - 1] - revs[revs.count - 2]) & 0xFFFF_FFFF
        let dTime = Double((events[events.count - 1] - events[events.count - 2]) & 0xFFFF) / 1024
        if dTime > 0 { #expect(abs((bike.samples.last?.speedMps ?? -1) - Double(dRevs) * 2.096 / dTime) < 1e-9) }

        // Battery: read on connecting (the peer's heart-rate sensor reports 87 %; its speed
        // sensor has no Battery service).
        let battery = try await r.store.measurements(kind: .batteryLevel)
        #expect(battery.map(\.value) == [87])
        #expect(battery.first?.source.device == hr.text)
        #expect(r.statistics?.malformed == 0)
    }

    @Test func aDeviceThatComesBackIsReconnectedAndItsWorkoutGoesOn() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"]).address
        let r = try await Recording(peer, devices: [.address(hr)])
        // Connected means set up (subscribed and battery read): on a loaded machine values can
        // flow before that, and a link lost during set-up is a failed attempt, not a connection.
        try await r.wait("first samples") { try r.count("SELECT count(*) FROM samples") >= 10 && r.connections(hr) >= 1 }
        try await peer.control("stop hr")
        try await r.wait("the link dropped") { r.events.contains { if case .disconnected = $0 { true } else { false } } }
        try await peer.control("start hr")
        try await r.wait("reconnected") { r.connections(hr) >= 2 }
        let before = try r.count("SELECT count(*) FROM samples")
        try await r.wait("samples after the reconnection") { try r.count("SELECT count(*) FROM samples") >= before + 10 }
        try await peer.control("stop hr")
        try await r.wait("disconnected again") {
            r.events.filter { if case .disconnected = $0 { true } else { false } }.count >= 2
        }
        try await r.stop()

        // One workout (the silence was shorter than the gap) holding every value of both links.
        #expect(try r.count("SELECT count(*) FROM workouts") == 1)
        let strap = try #require(try await r.workout(of: hr))
        let hrSent = sent(peer, "hr")
        #expect(strap.samples.map(\.heartRate) == hrSent.map { fields($0)["bpm"] as? Int })
        #expect(Set(hrSent.compactMap { $0["central"] as? String }).count == 1)  // same host address both times
        #expect(r.statistics?.devices[hr.text]?.connections == 2)
    }

    /// A recorder that waits for its controller (the daemon's driver): nothing listens on the
    /// controller's socket yet, so it says it waits, once; when the controller is there it
    /// records. Without waiting, the same start fails at once.
    @Test func aWaitingRecorderWaitsForItsController() async throws {
        let folder = try temporaryFolder("ble-wait")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let socket = folder + "/h4.sock"
        let impatient = try await Recording(.unix(path: socket), devices: [.auto]) { _ in }
        await #expect(throws: BLEError.self) { try await impatient.task.value }
        let r = try await Recording(.unix(path: socket), devices: [.auto]) { $0.waitForController = true }
        try await r.wait("the wait reported") { r.events.contains { if case .backend = $0 { true } else { false } } }
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10", h4Path: socket)
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"]).address
        try await r.wait("samples once the controller is there") { try r.storedSamples(hr) >= 10 }
        try await r.stop()
        let backend = r.events.compactMap { if case .backend(let message, let trouble) = $0 { "\(trouble ? "loss" : "recovery"): \(message)" } else { nil } }
        #expect(backend.count == 2 && backend.first?.hasPrefix("loss: unix:\(socket): ") == true
                && backend.first?.hasSuffix("; waiting for the controller") == true
                && backend.last == "recovery: controller unix:\(socket) is there", "\(backend)")
    }

    /// The controller gone for good (the peer's process ends, so the H4 link closes): the
    /// sessions give up, and the recorder ends by itself with the runtime's final error after
    /// storing what it received (workout completed), so that the daemon's supervisor restarts the
    /// driver. It used to wait for ever with nothing left to record.
    @Test func aControllerThatIsGoneEndsTheRecorderWithItsError() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        let hr = try #require(peer.peripherals["hr"]).address
        let r = try await Recording(peer, devices: [.address(hr)])
        try await r.wait("first samples") { try r.count("SELECT count(*) FROM samples") >= 10 && r.connections(hr) >= 1 }
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let task = r.task
        Task { let result = await task.result; outcome.withLock { $0 = result } }
        peer.stop()
        do {
            try await r.wait("the recorder ended by itself") { outcome.withLock { $0 != nil } }
        } catch {
            Issue.record(error)
            try? await r.stop()
            return
        }
        guard case .failure(let error)? = outcome.withLock({ $0 }) else { Issue.record("the recorder ended without an error"); return }
        let runtimeError = try #require(error as? BLEError)
        #expect(runtimeError.isFinal, "\(runtimeError)")
        #expect(r.statistics != nil)  // it finished in order
        #expect(try r.count("SELECT count(*) FROM workouts WHERE in_progress = 0") == 1)
        #expect(try r.storedSamples(hr) == r.statistics?.samples)
    }

    @Test func malformedValuesAreCountedAndTheOtherDeviceKeepsRecording() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "10")
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"]).address, csc = try #require(peer.peripherals["csc"]).address
        let r = try await Recording(peer, devices: [.name("HG *")])
        try await r.wait("both recording") { r.connections(hr) >= 1 && r.connections(csc) >= 1 }
        try await r.wait("csc samples") {
            try r.count("SELECT count(*) FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.source_device = ?", [csc.text]) >= 5
        }
        let reply = try await peer.control("malformed csc")
        let malformed = (reply["sent"] as? [Any])?.count ?? 0
        #expect(malformed >= 2)
        try await r.wait("the malformed values counted") {
            r.events.filter { if case .malformed(let a, _, _) = $0 { a.value == csc.value } else { false } }.count >= malformed
        }
        try await peer.control("stop hr")
        try await peer.control("stop csc")
        try await r.wait("both disconnected") {
            r.events.filter { if case .disconnected = $0 { true } else { false } }.count >= 2
        }
        try await r.stop()

        let stats = try #require(r.statistics)
        #expect(stats.malformed == malformed)
        #expect(stats.devices[csc.text]?.malformed == malformed && stats.devices[hr.text]?.malformed == 0)
        #expect(r.events.contains { if case .malformed(let a, _, _) = $0 { a.value == csc.value } else { false } })
        // Neither device lost a value: the well-formed ones before and after are all stored.
        #expect(try #require(try await r.workout(of: hr)).samples.map(\.heartRate) == sent(peer, "hr").map { fields($0)["bpm"] as? Int })
        #expect(try #require(try await r.workout(of: csc)).samples.count == sent(peer, "csc").count)
    }

    @Test func aDisconnectDuringDiscoveryIsRetriedWhileTheOtherDeviceRecords() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "10")
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"]).address, csc = try #require(peer.peripherals["csc"]).address
        try await peer.control("disconnect-during-discovery csc")
        let r = try await Recording(peer, devices: [.address(hr), .address(csc)])
        try await r.wait("csc recording after a failed first attempt") { r.connections(csc) >= 1 }
        #expect(r.events.contains { if case .retrying(let a, _, _) = $0 { a.value == csc.value } else { false } })
        // Both devices' samples stored before the stop: connected alone, the retried csc has no
        // workout yet (under load its first values came after the stop once, and one workout was found).
        func samples(_ address: String) throws -> Int {
            try r.count("SELECT count(*) FROM samples s JOIN workouts w ON w.id = s.workout_id WHERE w.source_device = ?", [address])
        }
        try await r.wait("hr and csc samples") { try samples(hr.text) >= 10 && samples(csc.text) >= 3 }
        try await r.stop()
        #expect(try r.count("SELECT count(*) FROM workouts WHERE in_progress = 0") == 2)
    }

    /// Scales, cuffs and thermometers indicate (each value confirmed before the next); those and
    /// the oximeter become measurements, the run and power sensors workouts.
    @Test func everyOtherProfileLandsAsTheRightRecords() async throws {
        let kinds = ["scale", "bp", "thermometer", "plx", "rsc", "power"]
        let peer = try await BLEPeer.start(peripherals: kinds, rate: "8")
        defer { peer.stop() }
        let r = try await Recording(peer, devices: [.name("HG *")]) { $0.sessionizer.timeZone = TimeZone(identifier: "UTC")! }
        try await r.wait("every device sent a few values") {
            kinds.allSatisfy { sent(peer, $0).count >= 6 } && r.events.filter { if case .connected = $0 { true } else { false } }.count == kinds.count
        }
        for kind in kinds { try await peer.control("stop \(kind)") }
        try await r.wait("all disconnected") {
            r.events.filter { if case .disconnected = $0 { true } else { false } }.count >= kinds.count
        }
        func close(_ a: [Double], _ b: [Double], _ tolerance: Double = 1e-9) -> Bool {
            a.count == b.count && zip(a.sorted(), b.sorted()).allSatisfy { abs($0 - $1) <= tolerance }
        }
        func values(_ kind: MeasurementKind) throws -> [Double] {
            try r.inspector.read { try Double.fetchAll($0, sql: "SELECT value FROM measurements WHERE deleted = 0 AND kind = ?",
                                                       arguments: [kind.rawValue]) }
        }
        func logged(_ kind: String, _ field: String) -> [Double] {
            sent(peer, kind).compactMap { (fields($0)[field] as? NSNumber)?.doubleValue }
        }
        let rscAddress = try #require(peer.peripherals["rsc"]).address, powerAddress = try #require(peer.peripherals["power"]).address
        // Every value the peer sent reaches the database before the recorder stops.
        try await r.wait("every value stored") {
            try values(.weight).count == logged("scale", "weight_kg").count && values(.bloodPressure).count == logged("bp", "systolic").count
                && values(.temperature).count == logged("thermometer", "temperature_c").count && values(.spo2).count == logged("plx", "spo2_pct").count
                && r.storedSamples(rscAddress) == sent(peer, "rsc").count && r.storedSamples(powerAddress) == sent(peer, "power").count
        }
        try await r.stop()
        #expect(r.statistics?.malformed == 0)

        #expect(close(try values(.weight), logged("scale", "weight_kg")))
        #expect(close(try values(.bmi), logged("scale", "bmi")))
        #expect(close(try values(.bloodPressure), logged("bp", "systolic")))
        #expect(close(try await r.store.measurements(kind: .bloodPressure).compactMap { $0.extra["diastolic"] }, logged("bp", "diastolic")))
        #expect(close(try values(.temperature), logged("thermometer", "temperature_c"), 1e-6))
        #expect(close(try values(.spo2), logged("plx", "spo2_pct")))
        #expect(try values(.batteryLevel) == Array(repeating: 87, count: kinds.count))

        // A device timestamp is the measurement's time (read in the configured zone, UTC here).
        let stamped = sent(peer, "thermometer").compactMap { e -> (String, Double)? in
            guard let t = fields(e)["timestamp"] as? String, let c = fields(e)["temperature_c"] as? Double else { return nil }
            return (t, c)
        }
        let temperatures = try await r.store.measurements(kind: .temperature)
        for (time, celsius) in stamped {
            let match = temperatures.first { ISO8601.string($0.time) == time + "Z" }
            #expect(match.map { abs($0.value - celsius) < 1e-6 } == true, "\(time)")
        }

        let rsc = try #require(peer.peripherals["rsc"]).address, power = try #require(peer.peripherals["power"]).address
        let run = try #require(try await r.workout(of: rsc))
        #expect(run.sport == "running")
        #expect(close(run.samples.compactMap(\.speedMps), logged("rsc", "speed_mps")))
        let ride = try #require(try await r.workout(of: power))
        #expect(ride.sport == "cycling")
        #expect(close(ride.samples.compactMap(\.powerW), logged("power", "power_w")))
    }

    /// The driver asks a glucose meter for its stored records on each connection: all of them
    /// the first time, then those from the highest sequence number it received on (that record
    /// again, to check it); they are stored like live readings (the meter's sent log, exactly,
    /// the record sent twice stored once).
    @Test func aGlucoseMetersStoredRecordsAreRecordedOnConnect() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        let meter = try #require(peer.peripherals["glucose"]).address
        let r = try await Recording(peer, devices: [.address(meter)])
        try await r.wait("the 3 stored records") { try r.count(Self.glucoseCount, [meter.text]) >= 3 && r.connections(meter) >= 1 }
        try await peer.control("stop glucose")
        try await r.wait("the link dropped") { r.events.contains { if case .disconnected = $0 { true } else { false } } }
        try await peer.control("add-records glucose 2")
        try await peer.control("start glucose")
        try await r.wait("reconnected") { r.connections(meter) >= 2 }
        try await r.wait("the 2 new records") { try r.count(Self.glucoseCount, [meter.text]) >= 5 }
        try await r.stop()

        #expect(try await racpRequests(peer) == ["0101", "0103010300"])  // all, then >= sequence 3
        #expect(sentSequences(peer) == [1, 2, 3, 3, 4, 5])
        let logged = sentRecordValues(peer)
        let stored = try await r.inspector.read { db in
            try Double.fetchAll(db, sql: "SELECT value FROM measurements WHERE kind = 'glucose' ORDER BY value")
        }
        #expect(logged.count == 5)
        #expect(stored.count == 5 && zip(stored, logged).allSatisfy { abs($0 - $1) < 1e-9 }, "\(stored) vs \(logged)")
    }

    /// The RACP requests a glucose meter received, in order.
    func racpRequests(_ peer: BLEPeer) async throws -> [String]? {
        let status = try await peer.control("status")
        return ((status["peripherals"] as? [String: Any])?["glucose"] as? [String: Any])?["racp_requests"] as? [String]
    }

    /// The values (mmol/L) of the records a meter that was not reset sent, each record once
    /// (one sent again is the same record), in ascending order.
    func sentRecordValues(_ peer: BLEPeer) -> [Double] {
        let bySequence = sent(peer, "glucose").filter { $0["characteristic"] as? String == "2A18" }
            .reduce(into: [Int: Double]()) { values, entry in
                if let seq = entry["seq"] as? Int, let value = fields(entry)["mmol_l"] as? Double { values[seq] = value }
            }
        return bySequence.values.sorted()
    }

    /// The glucose values stored and those the meter sent (a reset meter's too), as sets of
    /// mmol/L in tenths (the store keeps the SI value's conversion).
    func glucoseTenths(_ r: Recording, _ peer: BLEPeer) async throws -> (stored: Set<Int>, sent: Set<Int>) {
        let sentTenths = Set(sent(peer, "glucose").filter { $0["characteristic"] as? String == "2A18" }
            .compactMap { (fields($0)["mmol_l"] as? Double).map { Int(($0 * 10).rounded()) } })
        let stored = try await r.inspector.read { db in
            try Double.fetchAll(db, sql: "SELECT value FROM measurements WHERE kind = 'glucose'")
        }
        return (Set(stored.map { Int(($0 * 10).rounded()) }), sentTenths)
    }

    /// The sequence numbers of the records the meter sent (measurements), in order.
    func sentSequences(_ peer: BLEPeer) -> [Int] {
        sent(peer, "glucose").filter { $0["characteristic"] as? String == "2A18" }.compactMap { $0["seq"] as? Int }
    }

    static let glucoseCount = "SELECT count(*) FROM measurements WHERE kind = 'glucose' AND source_device = ?"

    /// A first recorder on the peer's meter (3 records) until they are stored, then stopped.
    func recordedThreeRecords(_ peer: BLEPeer) async throws -> (DeviceAddress, Recording) {
        let meter = try #require(peer.peripherals["glucose"]).address
        let first = try await Recording(peer, devices: [.address(meter)])
        try await first.wait("the 3 stored records") { try first.count(Self.glucoseCount, [meter.text]) >= 3 }
        try await first.stop()
        return (meter, first)
    }

    /// The meter's 3 records stored by a first recorder; then the meter is reset with `records`
    /// new ones, and a second recorder (as after a restart) starts on the same database.
    func recorderAfterAReset(_ peer: BLEPeer, records: Int) async throws -> (DeviceAddress, Recording) {
        let (meter, first) = try await recordedThreeRecords(peer)
        try await peer.control("reset-records glucose \(records)")
        return (meter, try await Recording(peer, devices: [.address(meter)], after: first))
    }

    @Test func aRestartedRecorderAsksTheMeterOnlyForRecordsAfterTheStoredOnes() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        let (meter, first) = try await recordedThreeRecords(peer)
        // The last sequence number is stored with the records.
        #expect(try first.glucoseSync(meter) == 3)

        // A new recorder on the same database (a restarted daemon); the meter gained 2 records.
        try await peer.control("add-records glucose 2")
        let second = try await Recording(peer, devices: [.address(meter)], after: first)
        try await second.wait("the 2 new records") { try second.count(Self.glucoseCount, [meter.text]) >= 5 }
        try await second.stop()
        // All, then (after the restart) >= 3: record 3 again, checked, and the two new ones.
        #expect(try await racpRequests(peer) == ["0101", "0103010300"])
        #expect(sentSequences(peer) == [1, 2, 3, 3, 4, 5])
        #expect(try second.glucoseSync(meter) == 5)
        let logged = sentRecordValues(peer)
        let stored = try await second.inspector.read { db in
            try Double.fetchAll(db, sql: "SELECT value FROM measurements WHERE kind = 'glucose' ORDER BY value")
        }
        #expect(stored.count == 5 && zip(stored, logged).allSatisfy { abs($0 - $1) < 1e-9 }, "\(stored) vs \(logged)")
    }

    @Test func aResetMeterIsDownloadedAgainAndItsSequenceNumbersStartOver() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        // The meter is reset: 2 new records, sequence numbers 1 and 2 again.
        let (meter, second) = try await recorderAfterAReset(peer, records: 2)
        try await second.wait("the reset meter's 2 records") { try second.count(Self.glucoseCount, [meter.text]) >= 5 }
        try await second.wait("the reset seen, connected") {
            second.events.contains { if case .glucoseMeterReset = $0 { true } else { false } } && second.connections(meter) >= 1
        }
        #expect(try second.glucoseSync(meter) == 2)
        // Nothing new: the meter still holds record 2, so it was not reset again.
        try await peer.control("stop glucose")
        try await second.wait("the link dropped") { second.events.contains { if case .disconnected = $0 { true } else { false } } }
        try await peer.control("start glucose")
        try await second.wait("reconnected") { second.connections(meter) >= 2 }
        try await second.wait("record 2 sent again") { try await racpRequests(peer)?.count == 4 && sentSequences(peer).count == 6 }
        // One more record: only it is asked for.
        try await peer.control("stop glucose")
        try await second.wait("the link dropped again") {
            second.events.filter { if case .disconnected = $0 { true } else { false } }.count >= 2
        }
        try await peer.control("add-records glucose 1")
        try await peer.control("start glucose")
        try await second.wait("the new record") { try second.count(Self.glucoseCount, [meter.text]) >= 6 }
        try await second.stop()

        #expect(try await racpRequests(peer) == [
            "0101",                  // first run: every record
            "0103010300", "0101",    // nothing from 3 on (neither 3 nor after): reset, every record
            "0103010200",            // from 2: record 2, the same: no reset
            "0103010200",            // record 3 added: 2 again and 3
        ])
        #expect(sentSequences(peer) == [1, 2, 3, 1, 2, 2, 2, 3])
        #expect(second.events.filter { if case .glucoseMeterReset = $0 { true } else { false } }.count == 1)
        #expect(try second.count(Self.glucoseCount, [meter.text]) == 6)  // record 2, sent three times, stored once
        #expect(try second.glucoseSync(meter) == 3)
        let (stored, logged) = try await glucoseTenths(second, peer)
        #expect(stored == logged)
    }

    /// A meter reset and then filled past the last stored sequence number before the driver
    /// connects again: it holds a record 3, but not the stored one. Record 3 comes back changed,
    /// so every record is asked for: the new meter's 1 and 2 too, which asking for the records
    /// after 3 would have skipped. The cursor ends at the new 5.
    @Test func aMeterResetAndFilledPastTheStoredNumberIsDownloadedWhole() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        let (meter, second) = try await recorderAfterAReset(peer, records: 5)
        try await second.wait("the reset meter's 5 records") { try second.count(Self.glucoseCount, [meter.text]) >= 8 }
        try await second.wait("the cursor at 5") { try second.glucoseSync(meter) == 5 }
        try await second.stop()

        #expect(try await racpRequests(peer) == ["0101", "0103010300", "0101"])  // every record, from 3 (changed): every record
        #expect(sentSequences(peer) == [1, 2, 3, 3, 4, 5, 1, 2, 3, 4, 5])
        let resets = second.events.compactMap { if case .glucoseMeterReset(_, let last, let changed) = $0 { (last, changed) } else { nil } }
        #expect(resets.count == 1 && resets.first?.0 == 3 && resets.first?.1 == true, "\(resets)")
        #expect(try second.count(Self.glucoseCount, [meter.text]) == 8)  // the old meter's 3, the new one's 5
        let (stored, logged) = try await glucoseTenths(second, peer)
        #expect(stored == logged)
    }
}
