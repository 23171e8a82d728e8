import Foundation
import GRDB
import Testing
import TestSupport

/// The real libusb code path of the `healthgate` binary, against usbmon captures of an ANT USB2
/// stick replayed by umockdev (`umockdev-run --pcap`, which `.ci/setup` installs: these tests
/// fail, never skip, without it). The captures and the device description are written by
/// Drivers/ANT/tools/make-usbmon.py; a host that sends other bytes than recorded fails the replay.
@Suite struct ANTUSBReplayTests {
    static let fixtures = PackagePaths.fixtures + "/ant"
    static let sysfs = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2"
    static let key = "01 02 03 04 05 06 07 08"

    /// `healthgate ARGS` with the stick of `capture` plugged in.
    static func run(_ capture: String, _ arguments: [String]) async throws -> Tool.Result {
        let umockdev = "/usr/bin/umockdev-run"
        #expect(FileManager.default.isExecutableFile(atPath: umockdev), "umockdev-run is missing: apt-get install umockdev (.ci/setup)")
        return try await Tool.run(umockdev, ["-d", fixtures + "/usb2.umockdev", "-p", "\(sysfs)=\(fixtures)/\(capture)", "--",
                                             Tool.path("healthgate")] + arguments)
    }

    struct Expected: Decodable {
        struct Reading: Decodable {
            var bpm: Int
            var rr_s: [Double]
        }
        var sensor: String
        var readings: [Reading]
    }

    static func expected(_ name: String) throws -> Expected {
        try JSONDecoder().decode(Expected.self, from: Data(contentsOf: URL(fileURLWithPath: fixtures + "/" + name)))
    }

    @Test("ant list: the stick is reset and identified, in a table and as JSON")
    func list() async throws {
        let text = try await Self.run("identify.pcap", ["ant", "list"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("1-2    ANT USBStick2  001:005  AP2USB1.05  3871234567  8         ok"), "\(text.stdout)")
        let json = try await Self.run("identify.pcap", ["ant", "list", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let sticks = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(sticks.count == 1)
        #expect(sticks.first?["usb_id"] as? String == "0fcf:1008" && sticks.first?["firmware"] as? String == "AP2USB1.05")
        #expect(sticks.first?["serial_number"] as? Int == 3_871_234_567 && sticks.first?["channels"] as? Int == 8)
        #expect(sticks.first?["extended_messages"] as? Bool == true && sticks.first?["error"] == nil)
    }

    @Test("ant list: a stick that answers no reset is named, with the reason")
    func silentStick() async throws {
        let result = try await Self.run("silent.pcap", ["ant", "list", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let sticks = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let error = try #require(sticks.first?["error"] as? String)
        #expect(error.contains("no startup message after 3 resets"), "\(error)")
    }

    @Test("ant watch: every heart rate and RR interval the strap sent, as JSON lines")
    func watch() async throws {
        for (capture, expectation) in [("heart-rate.pcap", "heart-rate.expected.json"),
                                       ("heart-rate-garbled.pcap", "heart-rate-garbled.expected.json")] {
            let expected = try Self.expected(expectation)
            let result = try await Self.run(capture, ["ant", "watch", "--network-key", Self.key, "--sensor", "heart_rate", "--json",
                                                      "--count", String(expected.readings.count)])
            #expect(result.status == 0, "\(capture): \(result.stderr)")
            let lines = result.stdout.split(separator: "\n").compactMap { line in
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            }
            #expect(lines.count == expected.readings.count, "\(capture): \(result.stdout)")
            #expect(lines.allSatisfy { $0["sensor"] as? String == expected.sensor && $0["reading"] as? String == "heart_rate" })
            #expect(lines.map { ($0["values"] as? [String: Double])?["bpm"].map(Int.init) } == expected.readings.map(\.bpm), "\(capture)")
            let rr = lines.map { ($0["rr_s"] as? [Double]) ?? [] }
            #expect(rr == expected.readings.map(\.rr_s), "\(capture)")
            if capture.contains("garbled") {
                // The frame with a wrong checksum is dropped and said; the noise before a sync is
                // skipped; the frame split over two transfers is read whole.
                #expect(result.stderr.contains("checksum"), "\(result.stderr)")
            }
        }
    }

    @Test("ant watch: a stick that stops answering is reset on the bus twice, then rested and tried again; what it said before is all out")
    func stopsAnswering() async throws {
        let expected = try Self.expected("stops-answering.expected.json")
        let result = try await Self.run("stops-answering.pcap", ["ant", "watch", "--network-key", Self.key, "--sensor", "heart_rate", "--json",
                                                                 "--for", "20s"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        #expect(lines.map { ($0["values"] as? [String: Double])?["bpm"].map(Int.init) } == expected.readings.map(\.bpm), "\(result.stdout)")
        // Silent after its eighth message: asked for a channel's status, which it does not take
        // (the replay is over), reset on the bus and opened again, twice; then rested.
        let stderr = result.stderr.split(separator: "\n").filter { !$0.contains("Replay may be stuck") }.joined(separator: "\n")
        #expect(stderr.components(separatedBy: "; resetting the stick").count - 1 == 2, "\(stderr)")
        #expect(stderr.contains("lost heart rate ant:120:12345"), "\(stderr)")
        #expect(stderr.contains("at 1-2 (bus 001 device 005): write 5 bytes to endpoint 0x1: LIBUSB_ERROR_TIMEOUT (Operation timed out), "
                                + "and again after 2 bus reset(s); trying it again in 30 s"), "\(stderr)")
        #expect(stderr.contains("no ANT stick in use; waiting for one"), "\(stderr)")
    }

    @Test("record --ant: the database holds exactly the heart rates and RR intervals the strap sent")
    func record() async throws {
        let folder = try temporaryFolder("ant-record")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/healthgate.sqlite"
        let expected = try Self.expected("heart-rate.expected.json")
        let result = try await Self.run("heart-rate.pcap", ["record", "--ant", "--ant-network-key", Self.key, "--ant-sensor", "heart_rate",
                                                            "--for", "2s", "--db", db, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let queue = try DatabaseQueue(path: db)
        let (workouts, heartRates, rr) = try queue.read { db in
            (try Row.fetchAll(db, sql: "SELECT source_driver, source_device, in_progress FROM workouts"),
             try Int.fetchAll(db, sql: "SELECT heart_rate FROM samples ORDER BY seq"),
             try Double.fetchAll(db, sql: "SELECT rr_s FROM rr_intervals ORDER BY seq"))
        }
        #expect(workouts.count == 1)
        #expect(workouts.first?["source_driver"] as String? == "ant" && workouts.first?["source_device"] as String? == expected.sensor)
        #expect(workouts.first?["in_progress"] as Int? == 0)
        #expect(heartRates == expected.readings.map(\.bpm))
        #expect(rr == expected.readings.flatMap(\.rr_s))
    }
}
