import BluetoothCentral
import BLEHost
import BLERuntime
import DriverKit
import Foundation
import GATTProfiles
import HealthModel
import Testing
@testable import BLEDriver

/// Readings are built from characteristic bytes as a device sends them, through the real decoders.
func reading(_ characteristic: UInt16, _ bytes: [UInt8], at seconds: Double, device: String = "C0:4E:47:00:00:01") throws -> LiveReading {
    let decoded = try #require(try GATTProfileDecoder.decode(characteristic: characteristic, bytes))
    return LiveReading(device: device, receivedAt: Date(timeIntervalSince1970: seconds), reading: decoded)
}

/// Heart Rate Measurement: flags (energy + RR present), 8-bit bpm, energy kJ, one RR interval.
func heartRate(_ bpm: UInt8, energyKJ: UInt16, rr1024: UInt16) -> [UInt8] {
    [0x18, bpm, UInt8(energyKJ & 0xFF), UInt8(energyKJ >> 8), UInt8(rr1024 & 0xFF), UInt8(rr1024 >> 8)]
}

let t0 = 1_700_000_000.0
let utc = GATTSessionizer.Configuration(gap: 60, timeZone: TimeZone(identifier: "UTC")!)

/// A sessionizer whose output is put back together into whole records, as a store would hold them.
struct Assembled {
    var sessionizer: GATTSessionizer
    var assembler = WorkoutAssembler()
    init(_ configuration: GATTSessionizer.Configuration) { sessionizer = GATTSessionizer(configuration: configuration) }

    mutating func receive(_ r: LiveReading) -> [HealthRecord] { assembler.add(sessionizer.receive(r)) }
    mutating func tick(now: Date) -> [HealthRecord] { assembler.add(sessionizer.flush(now: now)) }
    mutating func finish() -> [HealthRecord] { assembler.add(sessionizer.finish()) }
    var recordingDevices: [String] { sessionizer.recordingDevices }
}

@Suite struct LiveSessionizerTests {
    @Test func heartRateStreamBecomesOneWorkoutAfterTheGap() throws {
        var s = Assembled(utc)
        for i in 0..<10 {
            let out = s.receive(try reading(GATTCharacteristic.heartRateMeasurement,
                                            heartRate(UInt8(120 + i), energyKJ: UInt16(100 + i), rr1024: 512), at: t0 + Double(i)))
            #expect(out.isEmpty)
        }
        #expect(s.tick(now: Date(timeIntervalSince1970: t0 + 30)).isEmpty)  // within the gap: still recording
        let closed = s.tick(now: Date(timeIntervalSince1970: t0 + 9 + 61))
        guard case .workout(let w) = try #require(closed.first) else { Issue.record("not a workout"); return }
        #expect(closed.count == 1)
        #expect(w.sport == "other")
        #expect(w.samples.map(\.heartRate) == (120..<130).map { $0 })
        #expect(w.rrIntervals == Array(repeating: 0.5, count: 10))
        #expect(w.start == Date(timeIntervalSince1970: t0) && w.end == Date(timeIntervalSince1970: t0 + 9))
        #expect(w.avgHeartRate == 125 && w.maxHeartRate == 129)
        #expect(w.energyKcal == ((9.0 / 4.184) * 10).rounded() / 10)  // kJ counter 100 -> 109
        #expect(w.source == Source(driver: "ble", device: "C0:4E:47:00:00:01"))
        #expect(s.recordingDevices.isEmpty)
    }

    @Test func silenceLongerThanTheGapStartsANewWorkout() throws {
        var s = Assembled(utc)
        _ = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, heartRate(100, energyKJ: 0, rr1024: 600), at: t0))
        _ = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, heartRate(101, energyKJ: 0, rr1024: 600), at: t0 + 1))
        let first = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, heartRate(140, energyKJ: 0, rr1024: 600), at: t0 + 500))
        #expect(first.count == 1)
        let second = s.finish()
        guard case .workout(let a) = try #require(first.first), case .workout(let b) = try #require(second.first) else {
            Issue.record("not workouts"); return
        }
        #expect(a.samples.count == 2 && b.samples.count == 1)
        #expect(a.id != b.id)
        #expect(a.energyKcal == nil)  // a counter that stayed at 0 says nothing
    }

    @Test func devicesRecordSeparatelyAndIndoorBikeSetsTheSport() throws {
        var s = Assembled(utc)
        // Indoor Bike Data: speed (flag bit 0 clear), cadence, total distance, power.
        let bike: [UInt8] = [0x54, 0x00, 0xB8, 0x0B, 0xB4, 0x00, 0xE8, 0x03, 0x00, 0xC8, 0x00]
        _ = s.receive(try reading(GATTCharacteristic.indoorBikeData, bike, at: t0, device: "bike"))
        _ = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, heartRate(130, energyKJ: 5, rr1024: 480), at: t0, device: "strap"))
        #expect(s.recordingDevices == ["bike", "strap"])
        let closed = s.finish()
        #expect(closed.count == 2)
        guard case .workout(let w) = try #require(closed.first) else { Issue.record("not a workout"); return }
        #expect(w.source.device == "bike")
        #expect(w.sport == "cycling" && w.subSport == "indoor_cycling")
        let sample = try #require(w.samples.first)
        #expect(abs((sample.speedMps ?? 0) - 30 / 3.6) < 1e-9)
        #expect(sample.cadence == 90 && sample.powerW == 200 && sample.distanceM == 1000)
        #expect(w.distanceM == 1000)
    }

    @Test func cyclingSpeedAndCadenceGiveSpeedAndDistance() throws {
        var s = Assembled(utc)
        // CSC Measurement with wheel data: 2 wheel revolutions per second (event time in 1/1024 s).
        for i in 0..<5 {
            let revs = UInt32(100 + 2 * i), time = UInt16(1024 * i)
            let bytes: [UInt8] = [0x01, UInt8(revs & 0xFF), UInt8(revs >> 8 & 0xFF), 0, 0, UInt8(time & 0xFF), UInt8(time >> 8)]
            _ = s.receive(try reading(GATTCharacteristic.cscMeasurement, bytes, at: t0 + Double(i), device: "csc"))
        }
        guard case .workout(let w) = try #require(s.finish().first) else { Issue.record("not a workout"); return }
        #expect(w.sport == "cycling")
        #expect(w.samples.first?.speedMps == nil)  // the first reading only sets the baseline
        #expect(abs((w.samples.last?.speedMps ?? 0) - 2 * 2.096) < 1e-9)
        #expect(abs((w.distanceM ?? 0) - 8 * 2.096) < 1e-9)
    }

    @Test func pointReadingsBecomeMeasurements() throws {
        var s = Assembled(utc)
        // Weight Scale: SI, timestamp 2023-11-14 22:13:20 (the device clock, read as UTC here), 70 kg.
        let weight: [UInt8] = [0x02, 0xB0, 0x36, 0xE7, 0x07, 11, 14, 22, 13, 20]
        let w = s.receive(try reading(GATTCharacteristic.weightMeasurement, weight, at: t0 + 100, device: "scale"))
        guard case .measurement(let kg) = try #require(w.first) else { Issue.record("no measurement"); return }
        #expect(kg.kind == .weight && kg.value == 70)
        #expect(kg.time == Date(timeIntervalSince1970: 1_700_000_000))

        // Blood Pressure in mmHg: 120/80, MAP 93 (SFLOAT, exponent 0).
        let bp = s.receive(try reading(GATTCharacteristic.bloodPressureMeasurement,
                                       [0x00, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00], at: t0, device: "cuff"))
        guard case .measurement(let p) = try #require(bp.first) else { Issue.record("no measurement"); return }
        #expect(p.kind == .bloodPressure && p.value == 120)
        #expect(p.extra["diastolic"] == 80 && p.extra["mean_arterial"] == 93)
        #expect(p.time == Date(timeIntervalSince1970: t0))  // no device timestamp: arrival time

        let battery = s.receive(try reading(GATTCharacteristic.batteryLevel, [87], at: t0))
        guard case .measurement(let b) = try #require(battery.first) else { Issue.record("no measurement"); return }
        #expect(b.kind == .batteryLevel && b.value == 87)

        // A blood pressure value of NaN (0x07FF) is not a reading.
        let nan = s.receive(try reading(GATTCharacteristic.bloodPressureMeasurement,
                                        [0x00, 0xFF, 0x07, 0x50, 0x00, 0x5D, 0x00], at: t0 + 1, device: "cuff"))
        #expect(nan.isEmpty)
        #expect(s.recordingDevices.isEmpty)  // point readings open no workout
    }

    @Test func sameReadingTwiceHasTheSameIdentity() throws {
        var a = Assembled(utc), b = Assembled(utc)
        let r = try reading(GATTCharacteristic.batteryLevel, [50], at: t0)
        #expect(a.receive(r).map(\.id) == b.receive(r).map(\.id))
    }

    @Test func flushHandsOutOnlyNewSamplesWithTheirOffsets() throws {
        var s = GATTSessionizer(configuration: utc)
        func hr(_ i: Int) throws -> LiveReading {
            try reading(GATTCharacteristic.heartRateMeasurement, heartRate(UInt8(100 + i), energyKJ: UInt16(i), rr1024: 1024), at: t0 + Double(i))
        }
        for i in 0..<3 { #expect(s.receive(try hr(i)).isEmpty) }
        let first = s.flush(now: Date(timeIntervalSince1970: t0 + 3))
        #expect(first.records.isEmpty && first.workouts.count == 1)
        let a = try #require(first.workouts.first)
        #expect(!a.isFinal && a.sampleOffset == 0 && a.rrOffset == 0)
        #expect(a.workout.samples.map(\.heartRate) == [100, 101, 102])
        #expect(a.workout.rrIntervals == [1, 1, 1])
        #expect(a.workout.avgHeartRate == 101 && a.workout.maxHeartRate == 102)

        // Nothing new: no piece (flushed samples are not kept or sent again).
        #expect(s.flush(now: Date(timeIntervalSince1970: t0 + 3.5)).isEmpty)

        for i in 3..<5 { _ = s.receive(try hr(i)) }
        let b = try #require(s.flush(now: Date(timeIntervalSince1970: t0 + 5)).workouts.first)
        #expect(b.workout.id == a.workout.id)
        #expect(b.sampleOffset == 3 && b.rrOffset == 3)
        #expect(b.workout.samples.map(\.heartRate) == [103, 104])
        #expect(b.workout.avgHeartRate == 102 && b.workout.maxHeartRate == 104)  // over all five samples
        #expect(b.workout.end == Date(timeIntervalSince1970: t0 + 4))

        let last = try #require(s.finish().workouts.first)
        #expect(last.isFinal && last.sampleOffset == 5 && last.workout.samples.isEmpty)
        #expect(last.workout.energyKcal == ((4 / 4.184) * 10).rounded() / 10)
        #expect(s.recordingDevices.isEmpty)
    }

    @Test func zeroBeatsPerMinuteIsNoHeartRate() throws {
        var s = Assembled(utc)
        _ = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, [0x00, 0], at: t0))
        _ = s.receive(try reading(GATTCharacteristic.heartRateMeasurement, [0x00, 90], at: t0 + 1))
        guard case .workout(let w) = try #require(s.finish().first) else { Issue.record("not a workout"); return }
        #expect(w.samples.map(\.heartRate) == [nil, 90])
        #expect(w.avgHeartRate == 90)
    }

    @Test func anUnchangedBatteryLevelIsRecordedOncePerInterval() throws {
        var s = Assembled(GATTSessionizer.Configuration(gap: 60, timeZone: TimeZone(identifier: "UTC")!, batteryInterval: 600))
        let levels: [(UInt8, Double)] = [(80, 0), (80, 60), (79, 120), (79, 500), (79, 800)]
        let recorded = try levels.flatMap { level, at in s.receive(try reading(GATTCharacteristic.batteryLevel, [level], at: t0 + at)) }
        let values = recorded.compactMap { r -> Double? in if case .measurement(let m) = r { m.value } else { nil } }
        #expect(values == [80, 79, 79])  // 80 at 0; 79 when it changed at 120; 79 again 680 s later
    }
}

@Suite struct DeviceSelectorTests {
    func device(_ name: String?, services: [UInt16] = [], address: UInt64 = 0xC0_4E_47_00_00_01) -> DiscoveredDevice {
        DiscoveredDevice(address: DeviceAddress(address, kind: .random), addressType: 1, name: name,
                         serviceUUIDs: services.map(BluetoothUUID.init), rssi: -40, isConnectable: true,
                         fromExtendedReport: false, serviceData: [], manufacturerData: [])
    }

    @Test func parsesEveryForm() throws {
        #expect(try DeviceSelector(parsing: "auto") == .auto)
        #expect(try DeviceSelector(parsing: " AUTO ") == .auto)
        #expect(try DeviceSelector(parsing: "c0:4e:47:00:00:01") == .address(DeviceAddress(0xC0_4E_47_00_00_01)))
        #expect(try DeviceSelector(parsing: "service:1816") == .service(BluetoothUUID(0x1816)))
        #expect(try DeviceSelector(parsing: "Polar H10*") == .name("Polar H10*"))
        #expect(throws: DeviceSelector.ParseError.self) { try DeviceSelector(parsing: "service:xyz") }
        #expect(throws: DeviceSelector.ParseError.self) { try DeviceSelector(parsing: "  ") }
    }

    @Test func matchesByServiceAddressAndName() throws {
        let strap = device("Polar H10 12345", services: [0x180D])
        let bike = device("KICKR", services: [0x1826], address: 0xC0_00_00_00_00_02)
        #expect(DeviceSelector.auto.matches(strap) && !DeviceSelector.auto.matches(bike))
        #expect(try DeviceSelector(parsing: "service:1826").matches(bike))
        #expect(try DeviceSelector(parsing: "C0:4E:47:00:00:01").matches(strap))  // the address type does not matter
        #expect(try DeviceSelector(parsing: "polar h10*").matches(strap))
        #expect(try DeviceSelector(parsing: "Polar H10 1234?").matches(strap))
        #expect(!(try DeviceSelector(parsing: "Polar H10").matches(strap)))  // no wildcard: the whole name
        #expect(!(try DeviceSelector(parsing: "*").matches(device(nil))))  // a nameless device has no name to match
        #expect(DeviceSelector.glob("a*b*c", "axxbyyc") && !DeviceSelector.glob("a*b*c", "axxbyy") && DeviceSelector.glob("**", ""))
    }

    @Test func onlyWildcardsAndServicesKeepScanning() throws {
        #expect(DeviceSelector.auto.isOpenEnded && DeviceSelector.service(BluetoothUUID(0x1816)).isOpenEnded)
        #expect(DeviceSelector.name("HG *").isOpenEnded && !DeviceSelector.name("HG HR").isOpenEnded)
        #expect(!(try DeviceSelector(parsing: "C0:4E:47:00:00:01").isOpenEnded))
    }

    /// BlueZ's discovery filter lists services only when every selector names services.
    @Test func discoveryServicesOnlyWhenEverySelectorNamesServices() throws {
        #expect(DeviceSelector.discoveryServices([.auto]) == [BluetoothUUID(0x180D)])
        #expect(DeviceSelector.discoveryServices([.auto, .service(BluetoothUUID(0x1816))]) == [BluetoothUUID(0x180D), BluetoothUUID(0x1816)])
        #expect(DeviceSelector.discoveryServices([.auto, .name("HG *")]) == nil)
        #expect(DeviceSelector.discoveryServices([.service(BluetoothUUID(0x1809)), try DeviceSelector(parsing: "C0:4E:47:00:00:01")]) == nil)
    }

    @Test func driverTableIsValidated() throws {
        func make(_ table: [String: ConfigValue]) throws(ConfigError) -> BLERecorder {
            try BLERecorder(settings: ConfigDecoder.decode(BLERecorder.Settings.self, from: table), context: .standalone("strap"))
        }
        let r = try make(["hci": .string("tcp:127.0.0.1:9000"), "devices": .array([.string("auto"), .string("HG *")]),
                          "gap_s": .integer(300), "sport": .string("Rowing"), "flush_ms": .integer(500),
                          "wheel_circumference_m": .float(2.1)])
        #expect(r.configuration.devices == [.auto, .name("HG *")])
        #expect(r.configuration.sessionizer.gap == 300 && r.configuration.sessionizer.defaultSport == .rowing)
        #expect(r.configuration.flushInterval == .milliseconds(500) && r.configuration.sessionizer.wheelCircumference == 2.1)
        #expect(try make(["hci": .string("hci0"), "devices": .string("C0:4E:47:00:00:01")]).configuration.devices.count == 1)
        #expect(try make(["hci": .string("bluez")]).configuration.controller == .bluez(adapter: nil))
        #expect(try make(["hci": .string("bluez:hci1")]).configuration.controller == .bluez(adapter: "hci1"))
        #expect(try make(["hci": .string("auto")]).configuration.controller == .auto)
        #expect(try make(["hci": .string("hci2")]).configuration.controller == .host(.hci(index: 2)))
        do {
            _ = try make(["hci": .string("bluez:wlan0")])
            Issue.record("accepted bluez:wlan0")
        } catch {
            #expect(error.keyPath == "hci" && "\(error)".contains("bluez:hci<N>"), "\(error)")
        }
        let hci0: [String: ConfigValue] = ["hci": .string("hci0")]
        let bad: [([String: ConfigValue], String)] = [
            (["devices": .array([.string("auto")])], "hci"),
            (["hci": .string("bluetooth!")], "hci"),
            (hci0.merging(["gap_s": .integer(0)]) { $1 }, "gap_s"),
            (hci0.merging(["sport": .string("quidditch")]) { $1 }, "sport"),
            (hci0.merging(["flush_ms": .string("fast")]) { $1 }, "flush_ms"),
            (hci0.merging(["devices": .array([.string("service:?")])]) { $1 }, "devices"),
            (hci0.merging(["devices": .array([])]) { $1 }, "devices"),
            (hci0.merging(["wheel_circumference_m": .integer(9)]) { $1 }, "wheel_circumference_m"),
            (hci0.merging(["gap": .integer(9)]) { $1 }, "gap"),
        ]
        for (table, key) in bad {
            do {
                _ = try make(table)
                Issue.record("accepted \(table)")
            } catch {
                #expect(error.keyPath == key, "\(table): \(error)")
            }
        }
    }
}
