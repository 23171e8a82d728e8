import Foundation
import Testing
import TestSupport

/// `healthgate ble scan` and `ble watch` against the emulated Bumble peer (Tests/peers).
@Suite(.serialized) struct BLECommandTests {
    func hci(_ peer: BLEPeer) -> String {
        switch peer.h4 {
        case .tcp(let host, let port): "tcp:\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        default: "?"
        }
    }

    @Test func scanListsBothPeripheralsWithTheirServices() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "4")
        defer { peer.stop() }
        let devices = try #require(try await CLI.json(["ble", "scan", "--hci", hci(peer), "--for", "2", "--json"]) as? [[String: Any]])
        let hr = try #require(devices.first { $0["name"] as? String == peer.peripherals["hr"]?.name })
        #expect((hr["services"] as? [String])?.contains("180D") == true)
        #expect((hr["address"] as? String)?.hasPrefix(peer.peripherals["hr"]!.address.description.prefix(17)) == true)
        let csc = try #require(devices.first { $0["name"] as? String == peer.peripherals["csc"]?.name })
        #expect((csc["services"] as? [String])?.contains("1816") == true)
    }

    /// Service data, manufacturer data, TX power and flags as the peer advertises them (the
    /// `ble-bluez-power` VM scenario checks the same through BlueZ); null and empty when absent.
    @Test func scanPrintsAdvertisedDataFields() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr", "csc"], rate: "4", extraArguments: [
            "--service-data", "hr=181C:0102", "--manufacturer-data", "hr=0059:cafe", "--tx-power", "csc=-8"])
        defer { peer.stop() }
        let devices = try #require(try await CLI.json(["ble", "scan", "--hci", hci(peer), "--for", "2", "--json"]) as? [[String: Any]])
        let hr = try #require(devices.first { $0["name"] as? String == peer.peripherals["hr"]?.name })
        #expect(hr["service_data"] as? [[String: String]] == [["uuid": "181C", "data": "0102"]], "\(hr)")
        #expect(hr["manufacturer_data"] as? [[String: String]] == [["company": "0059", "data": "cafe"]], "\(hr)")
        #expect(hr["flags"] as? Int == 0x06 && hr["tx_power"] is NSNull, "\(hr)")
        let csc = try #require(devices.first { $0["name"] as? String == peer.peripherals["csc"]?.name })
        #expect(csc["tx_power"] as? Int == -8 && (csc["service_data"] as? [Any])?.isEmpty == true, "\(csc)")
    }

    @Test func watchPrintsExactlyWhatThePeerSent() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let name = try #require(peer.peripherals["hr"]?.name)
        // --count ends it; --for only guards against a hang (a fixed 2 s window printed 3 of the
        // expected 5 once, on a loaded machine).
        let result = try await CLI.run(["ble", "watch", "--hci", hci(peer), name, "--count", "5", "--for", "120", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 5, "\(result.stdout)")
        let heartRates = lines.filter { $0["characteristic"] as? String == "2A37" }
        #expect(heartRates.count == 5, "\(result.stdout)")  // the peer's battery level never changes: no notification
        // Every value printed is one the peer logged as sent, decoded to the bpm it encoded.
        let sent = peer.sentLog().filter { $0["characteristic"] as? String == "2A37" }
        let sentHex = Set(sent.compactMap { $0["hex"] as? String })
        for line in heartRates {
            let hex = try #require(line["hex"] as? String)
            #expect(sentHex.contains(hex), "\(hex) was not sent")
            let values = try #require(line["values"] as? [String: Any])
            let bpm = try #require(values["heart_rate_bpm"] as? Double)
            let bytes = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
                UInt8(hex[hex.index(hex.startIndex, offsetBy: i)..<hex.index(hex.startIndex, offsetBy: i + 2)], radix: 16)!
            }
            #expect(bpm == Double(bytes[0] & 1 == 0 ? Int(bytes[1]) : Int(bytes[1]) | Int(bytes[2]) << 8))
        }
    }

    /// `--verbose` prints the backend's diagnostics on standard error (the controller, the link
    /// and its end), each line marked `ble: `; without it there are none.
    @Test func verbosePrintsTheBackendsDiagnostics() async throws {
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "10")
        defer { peer.stop() }
        let hr = try #require(peer.peripherals["hr"])
        let verbose = try await CLI.run(["ble", "watch", "--hci", hci(peer), hr.name, "--count", "2", "--for", "120", "--verbose"])
        #expect(verbose.status == 0, "\(verbose.stderr)")
        let lines = verbose.stderr.split(separator: "\n").filter { $0.hasPrefix("ble: ") }
        #expect(lines.first?.hasPrefix("ble: controller F0:F1:F2:F3:F4:F5") == true, "\(verbose.stderr)")
        #expect(lines.contains { $0.hasPrefix("ble: connected to \(hr.address.text) as 0x") }, "\(verbose.stderr)")
        let quiet = try await CLI.run(["ble", "watch", "--hci", hci(peer), hr.name, "--count", "2", "--for", "120"])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(!quiet.stderr.contains("ble: "), "\(quiet.stderr)")
    }

    @Test func unknownDeviceAndBadAddressAreExplained() async throws {
        let bad = try await CLI.run(["ble", "scan", "--hci", "bluetooth!", "--for", "1"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--hci"))
        let peer = try await BLEPeer.start(peripherals: ["hr"], rate: "1")
        defer { peer.stop() }
        let missing = try await CLI.run(["ble", "watch", "--hci", hci(peer), "No Such Device", "--scan-for", "2", "--for", "1"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no device named 'No Such Device'"))
    }
}

/// `healthgate ble pair` (its checks: the agent itself needs bluetoothd, see the VM scenario
/// ble-pair-bluez) and `ble download` against the peer's glucose meter over the own host stack.
@Suite(.serialized) struct BLEPairDownloadCommandTests {
    @Test func pairNeedsBlueZAndChecksItsOptions() async throws {
        let own = try await CLI.run(["ble", "pair", "--hci", "hci0", "C0:4E:47:00:00:0A"])
        #expect(own.status == 64)
        #expect(own.stderr.contains("pairing needs the BlueZ backend"))
        let capability = try await CLI.run(["ble", "pair", "--capability", "Telepathy", "C0:4E:47:00:00:0A"])
        #expect(capability.status == 64 && capability.stderr.contains("--capability: 'Telepathy' is none of"))
        let passkey = try await CLI.run(["ble", "pair", "--passkey", "1234567", "C0:4E:47:00:00:0A"])
        #expect(passkey.status == 64 && passkey.stderr.contains("--passkey: '1234567' is not a passkey"))
        // No bluetoothd (and no system bus) here: one clear line, exit 1.
        let noBlueZ = try await CLI.run(["ble", "pair", "--hci", "bluez", "C0:4E:47:00:00:0A", "--scan-for", "1"])
        #expect(noBlueZ.status == 1)
        #expect(noBlueZ.stderr.hasPrefix("healthgate: bluez: "))
    }

    @Test func downloadStoresEveryRecordOnceThenOnlyNewOnes() async throws {
        let peer = try await BLEPeer.start(peripherals: ["glucose"], rate: "1", extraArguments: ["--glucose-records", "3"])
        defer { peer.stop() }
        let hci = BLECommandTests().hci(peer)
        let address = try #require(peer.peripherals["glucose"]?.address.text)
        let folder = try temporaryFolder("ble-download")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/hg.sqlite"
        func download(_ extra: [String] = []) async throws -> (Tool.Result, [String: Any]) {
            let result = try await CLI.run(["ble", "download", "--hci", hci, "--db", db, "--json", "--silence", "5"] + extra + [address])
            let json = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
            return (result, json)
        }
        func storedGlucose() async throws -> [Double] {
            let list = try #require(try await CLI.json(["measurements", "--db", db, "--kind", "glucose", "--json"]) as? [[String: Any]])
            return list.compactMap { $0["value"] as? Double }
        }
        let (first, summary) = try await download()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(summary["received"] as? Int == 3 && summary["stored"] as? Int == 3 && summary["meter_count"] as? Int == 3)
        #expect(first.stderr.contains("records: 3/3"))
        let sent = peer.sentLog().filter { $0["characteristic"] as? String == "2A18" }
            .compactMap { ($0["fields"] as? [String: Any])?["mmol_l"] as? Double }
        #expect(try await storedGlucose().sorted() == sent.sorted())

        // Nothing new: from 3, the last one stored, which comes again (checked) and is stored once.
        let (second, again) = try await download()
        #expect(second.status == 0)
        #expect(again["from"] as? Int == 3 && again["received"] as? Int == 1 && again["stored"] as? Int == 0
                && again["already_stored"] as? Int == 1 && again["outcome"] as? String == "complete", "\(again)")

        _ = try await peer.control("add-records glucose 1")
        let (_, third) = try await download()
        #expect(third["received"] as? Int == 2 && third["stored"] as? Int == 1 && third["last_sequence"] as? Int == 4, "\(third)")
        #expect(try await storedGlucose().count == 4)
        #expect(third["meter_reset"] as? Bool == false)

        // The meter reset: 2 new records numbered 1 and 2. Asked for 4 on: none, so it was
        // reset, and every record is downloaded; the last sequence number becomes 2.
        _ = try await peer.control("reset-records glucose 2")
        let (fourth, reset) = try await download()
        #expect(fourth.status == 0, "\(fourth.stderr)")
        #expect(reset["meter_reset"] as? Bool == true && reset["received"] as? Int == 2 && reset["stored"] as? Int == 2
                && reset["last_sequence"] as? Int == 2, "\(reset)")
        #expect(try await storedGlucose().count == 6)
        let (_, fifth) = try await download()
        #expect(fifth["meter_reset"] as? Bool == false && fifth["from"] as? Int == 2 && fifth["stored"] as? Int == 0, "\(fifth)")

        // Reset again and filled past 2 (4 new records): record 2 comes back changed, so every
        // record is downloaded, 1 included; the text output says why.
        _ = try await peer.control("reset-records glucose 4")
        let sixth = try await CLI.run(["ble", "download", "--hci", hci, "--db", db, "--silence", "5", address])
        #expect(sixth.status == 0, "\(sixth.stderr)")
        #expect(sixth.stdout.contains("\(address): the meter was reset (its record 2 is not the one stored): every record asked for"),
                "\(sixth.stdout)")
        #expect(sixth.stdout.contains("4 records received (all, after the reset; sequence 2 on before), 4 new, 0 already stored; last sequence number 4"),
                "\(sixth.stdout)")
        #expect(try await storedGlucose().count == 10)
    }
}
