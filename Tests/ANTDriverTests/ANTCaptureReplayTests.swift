import ANTPlusProfiles
import Foundation
import GRDB
import Testing
import TestSupport
@testable import ANTDriver

/// `ant replay`: usbmon captures decoded as a live session would have, with the capture's times.
@Suite struct ANTCaptureReplayTests {
    static let fixtures = PackagePaths.fixtures + "/ant"

    func capture(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/" + name))) }

    @Test("every heart rate and RR interval of the capture, with its time; the same records on every replay")
    func heartRate() throws {
        for (name, expectation) in [("heart-rate.pcap", "heart-rate.expected.json"), ("heart-rate-garbled.pcap", "heart-rate-garbled.expected.json")] {
            let expected = try ANTUSBReplayTests.expected(expectation)
            let result = try ANTCaptureReplay.replay(try capture(name))
            let heartRates = result.readings.flatMap(\.readings).compactMap { reading -> (Int, [Double])? in
                if case .heartRate(let bpm, let rr) = reading { return (bpm, rr) }
                return nil
            }
            #expect(heartRates.map(\.0) == expected.readings.map(\.bpm), "\(name)")
            #expect(heartRates.map(\.1) == expected.readings.map(\.rr_s), "\(name)")
            #expect(Set(result.readings.map(\.sensor.description)) == [expected.sensor])
            #expect(result.statistics.droppedFrames == (name.contains("garbled") ? 2 : 0), "\(name): \(result.problems)")
            #expect(result.damage == nil && result.statistics.sticks == ["001:005"])
            // One workout, completed, with every sample and RR interval; the same on a second replay.
            let workouts = result.batch.workouts
            #expect(workouts.last?.isFinal == true && Set(workouts.map(\.workout.id)).count == 1)
            #expect(workouts.flatMap(\.workout.samples).count == expected.readings.count)
            #expect(workouts.flatMap(\.workout.rrIntervals) == expected.readings.flatMap(\.rr_s))
            #expect(try ANTCaptureReplay.replay(try capture(name)).batch == result.batch)
        }
    }

    @Test("a damaged capture gives what precedes the damage and says where; other files are refused")
    func damage() throws {
        let whole = try capture("heart-rate.pcap")
        let cut = try ANTCaptureReplay.replay(Array(whole.prefix(whole.count - 30)))
        #expect(cut.damage != nil && !cut.readings.isEmpty)
        #expect(throws: (any Error).self) { try ANTCaptureReplay.replay(Array("not a capture".utf8)) }
        // A capture of something else entirely (Bluetooth): nothing from a stick, every record skipped.
        let ble = Array(try Data(contentsOf: URL(fileURLWithPath: PackagePaths.fixtures + "/ble/hr-csc-watch.pcap")))
        let other = try ANTCaptureReplay.replay(ble)
        #expect(other.readings.isEmpty && other.statistics.skipped == other.statistics.records)
        // Every cut of the capture: never a trap, readings only from what is whole.
        for length in stride(from: 0, to: whole.count, by: 97) {
            if let partial = try? ANTCaptureReplay.replay(Array(whole.prefix(length))) {
                #expect(partial.readings.count <= 24)
            }
        }
    }

    @Test("ant replay prints the readings; --record stores them once however often it runs")
    func command() async throws {
        let folder = try temporaryFolder("ant-replay")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/healthgate.sqlite"
        let healthgate = Tool.path("healthgate")
        let json = try await Tool.run(healthgate, ["ant", "replay", "--json", Self.fixtures + "/heart-rate.pcap"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.split(separator: "\n").count == 24)
        #expect(json.stderr.contains("24 reading(s) from 1 sensor(s)"), "\(json.stderr)")
        for _ in 0..<2 {
            let stored = try await Tool.run(healthgate, ["ant", "replay", "--record", "--db", db, Self.fixtures + "/heart-rate.pcap"])
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        let queue = try DatabaseQueue(path: db)
        let counts = try await queue.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM workouts"), try Int.fetchOne(db, sql: "SELECT count(*) FROM rr_intervals"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox"))
        }
        #expect(counts.0 == 1 && counts.1 == 17 && counts.2 == 1)
        let bad = try await Tool.run(healthgate, ["ant", "replay", PackagePaths.root + "/README.md"])
        #expect(bad.status == 1 && bad.stderr.contains("no pcap or pcapng magic number"), "\(bad.stderr)")
    }
}
