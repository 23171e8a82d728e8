import DriverKit
import Testing

/// Typed settings from configuration tables: values, defaults, and a key path and reason for
/// every mistake.
@Suite struct ConfigDecoderTests {
    enum Mode: String, ConfigChoice { case fast, slow }

    struct Settings: Decodable, Equatable {
        struct Peer: Decodable, Equatable {
            var host: String
            var port: Int
        }

        var name: String
        var count: Int?
        var ratio: Double?
        var on: Bool?
        var mode: Mode?
        var tags: [String]?
        var peers: [Peer]?
        var wait: Duration?
        var small: UInt8?

        enum CodingKeys: String, CodingKey { case name, count, ratio, on, mode, tags, peers, wait = "wait_ms", small }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name, required: "what to call it")
            count = try c.decodeIfPresent(Int.self, forKey: .count, in: 1...10)
            ratio = try c.decodeIfPresent(Double.self, forKey: .ratio, in: 0...1)
            on = try c.decodeIfPresent(Bool.self, forKey: .on)
            mode = try c.decodeIfPresent(Mode.self, forKey: .mode)
            tags = try c.decodeIfPresent([String].self, forKey: .tags)
            peers = try c.decodeIfPresent([Peer].self, forKey: .peers)
            wait = try c.decodeIfPresent(duration: .wait, unit: .milliseconds, in: .milliseconds(1)...(.seconds(60)))
            small = try c.decodeIfPresent(UInt8.self, forKey: .small)
        }
    }

    func decode(_ table: [String: ConfigValue]) throws(ConfigError) -> Settings {
        try ConfigDecoder.decode(Settings.self, from: table, keyPath: "drivers.x")
    }

    @Test func decodesEveryKind() throws {
        let settings = try decode([
            "name": .string("a"), "count": .integer(3), "ratio": .integer(1), "on": .bool(true), "mode": .string("slow"),
            "tags": .array([.string("x,y"), .string("z")]),
            "peers": .array([.table(["host": .string("h"), "port": .integer(1)])]),
            "wait_ms": .string("30s"), "small": .integer(255),
        ])
        #expect(settings.count == 3 && settings.ratio == 1 && settings.on == true && settings.mode == .slow)
        #expect(settings.tags == ["x,y", "z"] && settings.peers == [Settings.Peer(host: "h", port: 1)])
        #expect(settings.wait == .seconds(30) && settings.small == 255)
        #expect(try decode(["name": .string("a"), "wait_ms": .float(2.5)]).wait == .microseconds(2500))
        #expect(try decode(["name": .string("b")]).count == nil)
    }

    @Test func everyMistakeNamesItsKeyPath() {
        let base: [String: ConfigValue] = ["name": .string("a")]
        let cases: [([String: ConfigValue], String)] = [
            ([:], "drivers.x.name: is required (what to call it)"),
            (["name": .integer(1)], "drivers.x.name: must be a string"),
            (base.merging(["count": .integer(11)]) { $1 }, "drivers.x.count: 11 is out of range (1 to 10)"),
            (base.merging(["count": .float(1.5)]) { $1 }, "drivers.x.count: must be a whole number"),
            (base.merging(["ratio": .float(1.5)]) { $1 }, "drivers.x.ratio: 1.5 is out of range (0 to 1)"),
            (base.merging(["ratio": .string("half")]) { $1 }, "drivers.x.ratio: must be a number"),
            (base.merging(["on": .string("yes")]) { $1 }, "drivers.x.on: must be true or false"),
            (base.merging(["mode": .string("warp")]) { $1 }, "drivers.x.mode: 'warp' is not one of fast, slow"),
            (base.merging(["tags": .string("x")]) { $1 }, "drivers.x.tags: must be a list"),
            (base.merging(["tags": .array([.string("x"), .bool(true)])]) { $1 }, "drivers.x.tags[1]: must be a string"),
            (base.merging(["peers": .array([.table(["host": .string("h")])])]) { $1 }, "drivers.x.peers[0].port: is required"),
            (base.merging(["peers": .array([.table(["host": .string("h"), "port": .integer(1), "tls": .bool(true)])])]) { $1 },
             "drivers.x.peers[0].tls: unknown key"),
            (base.merging(["peers": .array([.integer(1)])]) { $1 }, "drivers.x.peers[0]: must be a table ([peers[0]])"),
            (base.merging(["wait_ms": .integer(0)]) { $1 }, "drivers.x.wait_ms: is out of range (1 to 60000)"),
            (base.merging(["wait_ms": .string("2 fortnights")]) { $1 },
             "drivers.x.wait_ms: '2 fortnights' is not a duration (a number, or like 10s, 250ms, 5m, 1h30m)"),
            (base.merging(["wait_ms": .bool(true)]) { $1 },
             "drivers.x.wait_ms: must be a duration (a number, or a string like 10s, 250ms, 5m, 1h30m)"),
            (base.merging(["small": .integer(256)]) { $1 }, "drivers.x.small: 256 is out of range (0 to 255)"),
            (base.merging(["nmae": .string("b")]) { $1 }, "drivers.x.nmae: unknown key"),
        ]
        for (table, message) in cases {
            do {
                _ = try decode(table)
                Issue.record("accepted \(table)")
            } catch {
                #expect(error.description == message, "\(table)")
            }
        }
    }

    /// Settings without keys refuse any key; a table taken whole (`ConfigValue`) hides nothing
    /// under it from its later reader.
    @Test func noSettingsAndWholeTables() throws {
        #expect(throws: ConfigError(keyPath: "x", reason: "unknown key")) { try ConfigDecoder.decode(NoSettings.self, from: ["x": .integer(1)]) }
        struct Outer: Decodable { var inner: [String: ConfigValue] }
        let outer = try ConfigDecoder.decode(Outer.self, from: ["inner": .table(["a": .table(["b": .integer(1)])])])
        #expect(outer.inner == ["a": .table(["b": .integer(1)])])
    }
}
