import Foundation
import HealthStore
import Testing
import TestSupport

/// `healthgate record` through the built binary against the emulated peer.
@Suite(.serialized) struct RecordCommandTests {
    func hci(_ peer: BLEPeer) -> String {
        switch peer.h4 {
        case .tcp(let host, let port): "tcp:\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        default: "?"
        }
    }

    func temporaryDatabase() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hg-record-\(UUID().uuidString).sqlite").path
    }

    /// The bpm values the peer sent, in order.
    func sentBPM(_ peer: BLEPeer) -> [Int] {
        peer.sentLog().filter { $0["peripheral"] as? String == "hr" && $0["malformed"] is NSNull }
            .compactMap { ($0["fields"] as? [String: Any])?["bpm"] as? Int }
    }

    @Test func recordForADurationPrintsWhatItStored() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let db = temporaryDatabase()
        defer { try? FileManager.default.removeItem(atPath: db) }
        let report = try #require(try await CLI.json(["record", "--hci", hci(peer), "--for", "2", "--sport", "running",
                                               "--db", db, "--json"]) as? [String: Any])
        let workouts = try #require(report["workouts"] as? [[String: Any]])
        #expect(workouts.count == 1)
        let w = try #require(workouts.first)
        #expect(w["sport"] as? String == "running")
        #expect(w["in_progress"] as? Bool == false)
        #expect((w["source"] as? [String: Any])?["device"] as? String == peer.peripherals["hr"]?.address.text)
        let measurements = try #require(report["measurements"] as? [[String: Any]])
        #expect(measurements.map { $0["kind"] as? String } == ["battery_level"])
        let devices = try #require(report["devices"] as? [[String: Any]])
        #expect(devices.first?["name"] as? String == peer.peripherals["hr"]?.name)

        // What the report says is what the database holds, and it is what the peer sent (the
        // recorder hung up first, so at most a value in flight at that moment is missing).
        let store = try await HealthStore(path: db)
        let id = try #require(w["id"] as? String)
        let stored = try #require(try await store.workout(id: id)).samples.compactMap(\.heartRate)
        let sent = sentBPM(peer)
        #expect(w["samples"] as? Int == stored.count)
        #expect(stored.count >= 10 && stored.count <= sent.count && sent.count - stored.count <= 2)
        #expect(Array(sent.prefix(stored.count)) == stored)
        #expect(try await store.tableCounts()["outbox"] == 2)
    }

    @Test func ctrlCStopsInOrderAndKeepsEverything() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let db = temporaryDatabase()
        defer { try? FileManager.default.removeItem(atPath: db) }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLI.executable)
        process.arguments = ["record", "--hci", hci(peer), "--device", "HG HR", "--db", db]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Wait until samples are on disk (live writes), then interrupt as Ctrl-C does.
        var samples = 0
        #expect(await cameTrue {
            samples = (try? await HealthStore(path: db).tableCounts()["samples"]) ?? 0
            return samples >= 10
        }, "\(samples) samples on disk, not 10")
        kill(process.processIdentifier, SIGINT)
        let (stdout, stderr) = try await onOwnThread {
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (stdout, stderr)
        }
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(stdout.contains("1 workout(s), 1 measurement(s)"), "\(stdout)")
        #expect(stderr.contains("found HG HR"))
        let store = try await HealthStore(path: db)
        let summary = try #require(try await store.workouts().first)
        #expect(!summary.inProgress)
        #expect(summary.samples >= samples)
    }

    @Test func badSelectorsAndOptionsAreExplained() async throws {
        let badService = try await CLI.run(["record", "--hci", "tcp:127.0.0.1:1", "--device", "service:nope"])
        #expect(badService.status != 0 && badService.stderr.contains("service UUID"))
        let badSport = try await CLI.run(["record", "--hci", "tcp:127.0.0.1:1", "--sport", "quidditch"])
        #expect(badSport.status != 0 && badSport.stderr.contains("quidditch"))
        let noController = try await CLI.run(["record", "--hci", "tcp:127.0.0.1:1", "--for", "1", "--db", temporaryDatabase()])
        #expect(noController.status != 0 && noController.stderr.contains("tcp:127.0.0.1:1"))
    }
}
