import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate ble replay` on the committed capture (Fixtures/ble), on damaged copies, and on a
/// capture `ble watch --snoop` records against the emulated peer.
@Suite(.serialized) struct BLEReplayCommandTests {
    let capture = PackagePaths.fixtures + "/ble/hr-csc-watch.btsnoop"

    func sentLog() throws -> [[String: Any]] {
        try String(contentsOfFile: PackagePaths.fixtures + "/ble/hr-csc-watch.sent.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func replayPrintsTheSentValuesDecoded() async throws {
        let result = try await CLI.run(["ble", "replay", capture, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = jsonLines(result.stdout)
        let sent = try sentLog()
        #expect(lines.count == sent.count)
        for (id, characteristic) in [("hr", "2A37"), ("csc", "2A5B")] {
            let entries = sent.filter { $0["peripheral"] as? String == id }
            let address = try #require(entries.first?["address"] as? String)
            let printed = lines.filter { $0["device"] as? String == address + " (random)" }
            #expect(printed.count == entries.count, "\(id)")
            for (line, entry) in zip(printed, entries) {
                #expect(line["characteristic"] as? String == characteristic)
                #expect(line["hex"] as? String == entry["hex"] as? String)
                #expect(line["error"] == nil || line["error"] is NSNull)
                let values = try #require(line["values"] as? [String: Any])
                let fields = try #require(entry["fields"] as? [String: Any])
                if id == "hr" {
                    #expect(values["heart_rate_bpm"] as? Double == (fields["bpm"] as? Int).map(Double.init))
                    let rr = (fields["rr"] as? [Int] ?? []).map { Double($0) / 1024 }
                    #expect(rr.indices.map { values["rr\($0)_s"] as? Double } == rr.map { $0 })
                } else {
                    #expect(values["wheel_revolutions"] as? Double == (fields["wheel_revs"] as? Int).map(Double.init))
                    #expect(values["crank_revolutions"] as? Double == (fields["crank_revs"] as? Int).map(Double.init))
                }
            }
        }
        let times = lines.compactMap { $0["time"] as? String }
        #expect(times.count == lines.count && times == times.sorted() && times.allSatisfy { $0.hasSuffix("Z") })
        #expect(result.stderr.contains("2 connections, 24 notifications, 0 indications, 2 reads; 0 values on unknown handles, 0 decode errors"))
        #expect(result.stderr.contains("Heart Rate Measurement (2A37): 12 notifications"))
        #expect(result.stderr.contains("CSC Measurement (2A5B): 12 notifications"))

        // The text form is `ble watch`'s: time, name, values sorted by name.
        let text = try await CLI.run(["ble", "replay", capture])
        #expect(text.status == 0)
        let first = try #require(text.stdout.split(separator: "\n").first)
        #expect(first == "\(times[0])  Heart Rate Measurement  energy_kj=0 heart_rate_bpm=70 rr0_s=0.830 rr1_s=0.834")
        #expect(text.stdout.split(separator: "\n").count == 24)
    }

    /// `--record` stores what a live recording would have: one workout per device with every
    /// value of the sent log, the battery read; a second replay stores nothing new.
    @Test func recordStoresTheCaptureOnce() async throws {
        let db = FileManager.default.temporaryDirectory.appendingPathComponent("hg-replay-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) } }
        let first = try await CLI.run(["ble", "replay", capture, "--record", "--db", db, "--sport", "running"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("3 new record(s) (2 workout(s), 1 measurement(s)"), "\(first.stderr)")
        let again = try await CLI.run(["ble", "replay", capture, "--record", "--db", db])
        #expect(again.stderr.contains("0 new record(s)") && again.stderr.contains("3 already stored"), "\(again.stderr)")

        let workouts = try #require(try await CLI.json(["workouts", "--db", db, "--json"]) as? [[String: Any]])
        #expect(workouts.count == 2)
        let sent = try sentLog()
        for (id, sport) in [("hr", "running"), ("csc", "cycling")] {
            let entries = sent.filter { $0["peripheral"] as? String == id }
            let address = try #require(entries.first?["address"] as? String)
            let w = try #require(workouts.first { ($0["source"] as? [String: Any])?["device"] as? String == address })
            #expect(w["sport"] as? String == sport)
            #expect(w["samples"] as? Int == entries.count)
            #expect(w["in_progress"] as? Bool == false)
            if id == "hr" {
                let workoutID = try #require(w["id"] as? String)
                let stored = try #require(try await HealthStore(path: db).workout(id: workoutID))
                #expect(stored.samples.map(\.heartRate) == entries.map { ($0["fields"] as? [String: Any])?["bpm"] as? Int })
            }
        }
        let battery = try #require(try await CLI.json(["measurements", "--kind", "battery_level", "--db", db, "--json"]) as? [[String: Any]])
        #expect(battery.map { $0["value"] as? Double } == [87])
    }

    @Test func damagedCaptureNamesTheFileAndTheOffset() async throws {
        let scratch = try Scratch()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: capture)))
        // Where the last record's data starts: the cut below falls inside it.
        var lastData = 16
        while true {
            let included = bytes[(lastData + 4)..<(lastData + 8)].reduce(0) { $0 << 8 | Int($1) }
            if lastData + 24 + included >= bytes.count { lastData += 24; break }
            lastData += 24 + included
        }
        let truncated = try scratch.file("truncated.btsnoop", Array(bytes.dropLast(3)))
        let cut = try await CLI.run(["ble", "replay", truncated, "--json"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("healthgate: \(truncated): damaged btsnoop capture at byte \(lastData): packet data truncated"),
                "\(cut.stderr)")
        // What came before the damage is still printed.
        #expect(jsonLines(cut.stdout).count == 24)

        var wrong = bytes
        wrong[0] = 0x00
        let notCapture = try scratch.file("not-a-capture.btsnoop", wrong)
        let bad = try await CLI.run(["ble", "replay", notCapture])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("healthgate: \(notCapture): not a btsnoop capture"))
        #expect(bad.stdout.isEmpty)

        let missing = try await CLI.run(["ble", "replay", scratch.folder + "/missing.btsnoop"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("cannot read \(scratch.folder)/missing.btsnoop"))
    }

    /// The same session as pcap and pcapng (link type 201, written by
    /// Fixtures/ble/tools/btsnoop-to-pcap.py) prints exactly what the btsnoop prints: the same
    /// lines, and the same summary but for the first line's file name and format and, for the
    /// pcapng, the line naming its one USB packet as skipped.
    @Test func pcapAndPcapngPrintWhatTheBtsnoopPrints() async throws {
        let json = try await CLI.run(["ble", "replay", capture, "--json"])
        let text = try await CLI.run(["ble", "replay", capture])
        #expect(json.status == 0 && text.status == 0, "\(json.stderr)")
        var summary = json.stderr.split(separator: "\n").map(String.init)
        let first = summary.removeFirst()
        #expect(first.hasPrefix("hr-csc-watch.btsnoop: 152 records (btsnoop H4), "))
        for format in ["pcap", "pcapng"] {
            let file = PackagePaths.fixtures + "/ble/hr-csc-watch.\(format)"
            let formatJSON = try await CLI.run(["ble", "replay", file, "--json"])
            let formatText = try await CLI.run(["ble", "replay", file])
            #expect(formatJSON.status == 0 && formatText.status == 0, "\(format): \(formatJSON.stderr)")
            #expect(formatJSON.stdout == json.stdout, "\(format)")
            #expect(formatText.stdout == text.stdout, "\(format)")
            #expect(jsonLines(formatJSON.stdout).count == 24)
            var lines = formatJSON.stderr.split(separator: "\n").map(String.init)
            let head = lines.removeFirst()
            // The same record count and time range.
            #expect(head == first.replacingOccurrences(of: "hr-csc-watch.btsnoop: 152 records (btsnoop H4)",
                                                       with: "hr-csc-watch.\(format): 152 records (\(format))"), "\(head)")
            if format == "pcapng" {
                let skipped = lines.firstIndex { $0.contains("is not Bluetooth H4") }
                let line = try #require(skipped.map { lines.remove(at: $0) }, "\(formatJSON.stderr)")
                #expect(line.hasPrefix("  record 152 (byte "))
                #expect(line.hasSuffix("): link type 220 (USB Linux, 64-byte header) is not Bluetooth H4 with direction (201); "
                                       + "1 record of other link types skipped"), "\(line)")
            }
            #expect(lines == summary, "\(format)")
        }
    }

    /// A pcap stores what the btsnoop of the same session stores: after one, the other adds nothing.
    @Test func pcapngRecordsTheSameAsTheBtsnoop() async throws {
        let db = FileManager.default.temporaryDirectory.appendingPathComponent("hg-replay-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) } }
        let pcapng = PackagePaths.fixtures + "/ble/hr-csc-watch.pcapng"
        let first = try await CLI.run(["ble", "replay", pcapng, "--record", "--db", db, "--sport", "running"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("3 new record(s) (2 workout(s), 1 measurement(s)"), "\(first.stderr)")
        let again = try await CLI.run(["ble", "replay", capture, "--record", "--db", db])
        #expect(again.stderr.contains("0 new record(s)") && again.stderr.contains("3 already stored"), "\(again.stderr)")
    }

    @Test func damagedPcapNamesTheFileAndTheOffset() async throws {
        let scratch = try Scratch()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: PackagePaths.fixtures + "/ble/hr-csc-watch.pcap")))
        // Where the last record's data starts (little-endian captured lengths): the cut falls inside it.
        var last = 24
        while true {
            let captured = bytes[(last + 8)..<(last + 12)].reversed().reduce(0) { $0 << 8 | Int($1) }
            if last + 16 + captured >= bytes.count { break }
            last += 16 + captured
        }
        let truncated = try scratch.file("truncated.pcap", Array(bytes.dropLast(3)))
        let cut = try await CLI.run(["ble", "replay", truncated, "--json"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("healthgate: \(truncated): damaged pcap capture at byte \(last + 16): packet data truncated"),
                "\(cut.stderr)")
        #expect(cut.stderr.contains("truncated.pcap: 151 records (pcap)"), "\(cut.stderr)")
        #expect(jsonLines(cut.stdout).count == 24)

        var version = bytes
        version[4] = 3
        let header = try scratch.file("version.pcap", version)
        let bad = try await CLI.run(["ble", "replay", header])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("healthgate: \(header): damaged pcap capture at byte 4: unsupported version 3.4"), "\(bad.stderr)")
        // Damage in the header leaves no summary.
        #expect(!bad.stderr.contains("records ("), "\(bad.stderr)")
        #expect(bad.stdout.isEmpty)
    }

    /// `ble watch --snoop` records a capture that replays to the lines watch printed.
    @Test func watchSnoopCaptureReplaysToTheSameLines() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let scratch = try Scratch()
        let snoop = scratch.folder + "/watch.btsnoop"
        let name = try #require(peer.peripherals["hr"]?.name)
        let hci: String
        switch peer.h4 {
        case .tcp(let host, let port): hci = "tcp:\(host):\(port)"
        default: hci = "?"
        }
        // --count ends the watch (--for only guards against a hang): a fixed window printed too
        // few values on a loaded machine.
        let watch = try await CLI.run(["ble", "watch", "--hci", hci, "--snoop", snoop, name, "--count", "5", "--for", "120", "--json"])
        #expect(watch.status == 0, "\(watch.stderr)")
        let replayStarted = Date()
        let replay = try await CLI.run(["ble", "replay", snoop, "--json"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let watched = jsonLines(watch.stdout), replayed = jsonLines(replay.stdout)
        #expect(watched.count == 5)
        // Values that arrived after watch stopped printing, before the link was down, are in the
        // capture too: the replay starts with what watch printed.
        #expect(replayed.count >= watched.count && replayed.count <= watched.count + 5)
        func withoutTime(_ line: [String: Any]) -> String {
            var l = line
            l["time"] = nil
            return String(decoding: try! JSONSerialization.data(withJSONObject: l, options: [.sortedKeys]), as: UTF8.self)
        }
        #expect(replayed.prefix(watched.count).map(withoutTime) == watched.map(withoutTime))
        // Times: the capture's record times, not the replay's clock: each before the replay
        // started, and near watch's delivery time (a bound that only a wrong clock breaks).
        for (w, r) in zip(watched, replayed) {
            let wt = try #require(ISO8601.parse(w["time"] as? String ?? ""))
            let rt = try #require(ISO8601.parse(r["time"] as? String ?? ""))
            #expect(rt < replayStarted)
            #expect(abs(wt.timeIntervalSince(rt)) < 5)
        }
        #expect(replay.stderr.contains("1 connection, \(replayed.count) notification"))
        // Every value replayed is one the peer sent.
        let sent = Set(peer.sentLog().compactMap { $0["hex"] as? String })
        #expect(replayed.allSatisfy { sent.contains($0["hex"] as? String ?? "") })
    }
}
