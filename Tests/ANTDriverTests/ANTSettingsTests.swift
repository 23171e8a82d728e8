import ANTProtocol
import DriverKit
import Testing
@testable import ANTDriver

/// The `ant` driver's table: the network key required and checked, sticks and sensors as lists or
/// one string, every mistake named by its key path.
@Suite struct ANTSettingsTests {
    let key = ConfigValue.string("01:02:03:04:05:06:07:08")

    func decode(_ table: [String: ConfigValue]) throws(ConfigError) -> ANTRecorder.Settings {
        try ConfigDecoder.decode(ANTRecorder.Settings.self, from: table, keyPath: "drivers.ant")
    }

    @Test("defaults: every stick, one channel of each kind")
    func defaults() throws {
        let s = try decode(["network_key": key])
        #expect(s.networkKey == [1, 2, 3, 4, 5, 6, 7, 8] && s.sticks == nil)
        #expect(s.sensors.map(\.description) == ANTPlusChannelParameters.all.map(\.key))
    }

    @Test("sensors by kind and 20-bit device number; sticks by port or bus:address")
    func sensorsAndSticks() throws {
        let s = try decode(["network_key": key, "sensors": .array([.string("heart_rate"), .string("power:1048575"), .string("heart_rate")]),
                            "sticks": .string("1-2"), "sport": .string("run"), "gap_s": .integer(30)])
        #expect(s.sensors.count == 2)
        #expect(s.sensors[1].deviceNumber == 0xF_FFFF && s.sensors[1].description == "power:1048575")
        // The stick searches with the low 16 bits and any transmission type (a non-zero one must
        // match whole, the sensor's own low nibble included).
        #expect(s.sensors[1].channelID == ANTChannelID(deviceNumber: 0xFFFF, deviceType: 11, transmissionType: 0))
        #expect(s.sticks == ["1-2"] && s.sport == .running && s.gap == .seconds(30))
    }

    @Test("every mistake names its key")
    func mistakes() {
        func reason(_ table: [String: ConfigValue]) -> String? {
            do { _ = try decode(table) } catch { return error.keyPath + ": " + error.reason }
            return nil
        }
        #expect(reason([:])?.hasPrefix("drivers.ant.network_key: is required") == true)
        #expect(reason(["network_key": .string("B9A5")])?.hasPrefix("drivers.ant.network_key: must be 8 bytes") == true)
        #expect(reason(["network_key": key, "sensors": .string("glucose")])?.contains("drivers.ant.sensors: 'glucose' is not auto") == true)
        #expect(reason(["network_key": key, "sensors": .string("power:0")])?.contains("device number must be 1 to 1048575") == true)
        #expect(reason(["network_key": key, "sensors": .array([])])?.contains("at least one sensor") == true)
        #expect(reason(["network_key": key, "sport": .string("chess")])?.contains("drivers.ant.sport") == true)
        #expect(reason(["network_key": key, "flush_ms": .integer(1)])?.contains("drivers.ant.flush_ms") == true)
        #expect(reason(["network_key": key, "wheel_circumference_m": .float(9)])?.contains("drivers.ant.wheel_circumference_m") == true)
    }
}
