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
        let result = try await CLI.run(["ble", "watch", "--hci", hci(peer), name, "--for", "2", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let heartRates = lines.filter { $0["characteristic"] as? String == "2A37" }
        #expect(heartRates.count >= 5)
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
