import TestSupport
import DriverKit
import Foundation
import GPXDriver
import HealthModel
import TCXDriver
import Testing

/// Runs `importer` on `bytes` as the pipeline would; returns the error and what was emitted.
func attempt(_ importer: some FileImporter, _ bytes: [UInt8]) async -> (DecodeError?, [HealthRecord]) {
    let sink = CollectingSink()
    do {
        try await importer.importFile(ImportSource(path: "input", data: Data(bytes)), into: sink)
        return (nil, sink.records)
    } catch let error as DecodeError {
        return (error, sink.records)
    } catch {
        Issue.record("not a DecodeError: \(error)")
        return (nil, sink.records)
    }
}

func isLine(_ position: InputPosition?) -> Bool {
    if case .line(let line, let column) = position { return line >= 1 && column >= 1 }
    return false
}

@Suite("TCX and GPX drivers: malformed and hostile input")
struct MalformedInputTests {
    static let importers: [any FileImporter] = [TCXImporter(), GPXImporter()]

    /// Named hostile inputs with the line and column each must fail at.
    static func cases() throws -> [(String, [UInt8], Int, Int)] {
        let truncated = Array(try fixtureBytes("tcx/garmin-forerunner410-run.tcx").prefix(100_000))
        // The end of the truncated input, counted independently: lines, and columns after the last one.
        let endLine = truncated.filter { $0 == 0x0A }.count + 1
        let endColumn = truncated.count - (truncated.lastIndex(of: 0x0A) ?? -1)
        var garbage = SeededGenerator(seed: 42)
        return [
            ("truncated TCX", truncated, endLine, endColumn),
            ("mismatched tag", Array("<gpx>\n <trk><name>x</trk>\n</gpx>".utf8), 2, 14),
            ("billion laughs", Array(XMLReaderSecurityTests.billionLaughs.utf8), 15, 7),
            ("XXE", Array("<?xml version=\"1.0\"?>\n<!DOCTYPE gpx [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n<gpx>&xxe;</gpx>".utf8), 3, 6),
            ("binary garbage", [0x0E, 0x10] + (0..<4096).map { _ in UInt8.random(in: 0...255, using: &garbage) }, 1, 1),
            ("empty file", [], 1, 1),
            ("huge attribute", Array("<gpx creator=\"".utf8) + [UInt8](repeating: 0x41, count: 2 << 20) + Array("\"/>".utf8), 1, 6),
            // The 257th attribute: 5 + 10 x 7 + 90 x 8 + 156 x 9 characters precede it.
            ("many attributes", Array(("<gpx " + (0..<300).map { "a\($0)='1'" }.joined(separator: " ") + "/>").utf8), 1, 2200),
            ("deep nesting", Array(String(repeating: "<trk>", count: 300).utf8), 1, 1281),
            ("text after root", Array("<gpx></gpx>\nextra".utf8), 2, 1),
            ("bad number", Array("<gpx><trk><trkseg><trkpt lat=\"north\" lon=\"1\"/></trkseg></trk></gpx>".utf8), 1, 19),
        ]
    }

    @Test func eachFailsWithLineColumnAndEmitsNothing() async throws {
        for (name, bytes, line, column) in try Self.cases() {
            for importer in Self.importers {
                let kind = type(of: importer).id
                // A GPX coordinate is no TCX field: the TCX driver reads that document as empty.
                if name == "bad number" && kind == "tcx" { continue }
                let (error, emitted) = await attempt(importer, bytes)
                #expect(error != nil, "\(name) via \(kind): accepted")
                #expect(error?.position == .line(line, column: column), "\(name) via \(kind): \(String(describing: error))")
                #expect(emitted.isEmpty, "\(name) via \(kind): emitted \(emitted.count)")
                #expect(error?.file == "input")
            }
        }
    }

    @Test func messagesNameTheProblem() async throws {
        let cases = Dictionary(uniqueKeysWithValues: try Self.cases().map { ($0.0, $0.1) })
        let tcx = TCXImporter()
        func reason(_ name: String) async -> String { await attempt(tcx, cases[name]!).0?.reason ?? "" }
        #expect(await reason("billion laughs").contains("entity expansion is disabled"))
        #expect(await reason("XXE").contains("reference to entity '&xxe;': entity expansion is disabled"))
        #expect(await reason("truncated TCX").contains("unexpected end of input"))
        #expect(await reason("mismatched tag").contains("mismatched end tag"))
        #expect(await reason("huge attribute").contains("longer than 1048576 bytes"))
        #expect(await reason("empty file").contains("empty input"))
        let error = await attempt(tcx, cases["XXE"]!).0
        #expect(error?.description == "input: line 3, column 6: reference to entity '&xxe;': entity expansion is disabled (only &lt; &gt; &amp; &apos; &quot; and character references are read; DOCTYPE declarations are never interpreted)")
    }

    @Test func badValuesInWellFormedFilesFailWithTheirPosition() throws {
        let tcx = """
            <TrainingCenterDatabase><Activities><Activity Sport="Running"><Id>2020-01-01T00:00:00Z</Id>
            <Lap StartTime="2020-01-01T00:00:00Z"><Track><Trackpoint><Time>yesterday</Time></Trackpoint></Track></Lap>
            </Activity></Activities></TrainingCenterDatabase>
            """
        #expect(throws: DecodeError(at: .line(2, column: 58), "Time 'yesterday' is not an ISO 8601 date-time")) {
            try TCXImporter.decode(Array(tcx.utf8))
        }
        let hr = tcx.replacingOccurrences(of: "<Time>yesterday</Time>", with: "<HeartRateBpm><Value>9000</Value></HeartRateBpm>")
        #expect(throws: DecodeError(at: .line(2, column: 72), "heart rate 9000.0 bpm in <Value> is out of range")) {
            try TCXImporter.decode(Array(hr.utf8))
        }
        let gpx = "<gpx><trk><trkseg><trkpt lat=\"1\" lon=\"2\"><ele>high</ele></trkpt></trkseg></trk></gpx>"
        #expect(throws: DecodeError(at: .line(1, column: 42), "<ele> holds 'high', not a number")) {
            try GPXImporter.decode(Array(gpx.utf8))
        }
    }

    /// A deterministic mutation loop: truncations and byte flips of every TCX and GPX fixture.
    /// A cut document must fail exactly at its end (line and column counted here); any failure
    /// must point at a line and column inside the input; a flipped byte that still decodes cannot
    /// have added or removed a workout or a sample (one byte cannot open and close an element).
    @Test func seededMutationsDecodeOrFailCleanly() async throws {
        let fixtures = ["tcx/garmin-forerunner410-run.tcx", "tcx/garmin-vivoactivehr-sup.tcx",
                        "tcx/mapmyride-biking-no-hr.tcx", "gpx/apple-health-workout-route.gpx",
                        "gpx/garmin-connect-9266323613-hr.gpx", "gpx/runkeeper-garmin-trackpointext-hr.gpx",
                        "gpx/edge-cases/garmin-hr0-empty-atemp-nonstandard-alt.gpx"]
        var rng = SeededGenerator(seed: 2024)
        var decoded = 0, failed = 0, cutAtTheEnd = 0
        var problems: [String] = []
        for path in fixtures {
            let original = try fixtureBytes(path)
            func decode(_ bytes: [UInt8]) -> Result<[Workout], DecodeError> {
                path.hasPrefix("tcx") ? Result { () throws(DecodeError) in try TCXImporter.decode(bytes, path: path) }
                    : Result { () throws(DecodeError) in try GPXImporter.decode(bytes, path: path) }
            }
            let reference = try decode(original).get()
            // Where the root element ends: a cut after it removes only trailing whitespace.
            let rootEnd = try #require(original.lastIndex(of: UInt8(ascii: ">"))) + 1
            // The 880 KB file is slow in debug builds: fewer runs, same kinds of damage.
            let runs = original.count > 500_000 ? 40 : 600
            for run in 0..<runs {
                // Long CPU-bound loops give the (2-thread) pool to other tests now and then, or
                // their timers and processes starve.
                await Task.yield()
                var bytes = original
                switch run % 3 {
                case 0:
                    bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
                case 1:
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                default:
                    // Flip a byte inside markup-dense regions: a '<', '>', '"', '&' or digit.
                    let index = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[index] = [0x3C, 0x3E, 0x22, 0x26, 0x2F, 0x30, 0x00, 0xFF].randomElement(using: &rng)!
                }
                let what = "\(path) run \(run)"
                switch decode(bytes) {
                case .success(let workouts):
                    decoded += 1
                    if run % 3 == 0, bytes.count < rootEnd { problems.append("\(what): a document cut at byte \(bytes.count) decoded") }
                    if workouts.count != reference.count || zip(workouts, reference).contains(where: { $0.samples.count != $1.samples.count }) {
                        problems.append("\(what): \(workouts.map(\.samples.count)) samples, the fixture has \(reference.map(\.samples.count))")
                    }
                    if bytes == original, workouts != reference { problems.append("\(what): unchanged bytes decode differently") }
                case .failure(let error):
                    failed += 1
                    if let p = Self.positionProblem(error, bytes) { problems.append("\(what): \(p)") }
                    if error.reason.isEmpty { problems.append("\(what): no reason") }
                    if run % 3 == 0 {
                        // Cut: the reader runs out of input, so the error is at the very end.
                        if error.position == Self.endPosition(bytes) { cutAtTheEnd += 1 } else { problems.append("\(what): cut at \(bytes.count) but \(error)") }
                    }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(decoded + failed == 5 * 600 + 40 + 600)
        #expect(failed > 1000 && decoded > 100 && cutAtTheEnd > 500, "decoded \(decoded), failed \(failed), cut \(cutAtTheEnd)")
    }

    /// Where each line of `bytes` starts (memchr: the fixtures are large and the tests run unoptimized).
    static func lineStarts(_ bytes: [UInt8]) -> [Int] {
        var starts = [0]
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var at = 0
            while at < raw.count, let hit = memchr(base + at, 0x0A, raw.count - at) {
                at = base.distance(to: UnsafeRawPointer(hit)) + 1
                starts.append(at)
            }
        }
        return starts
    }

    /// The line and column just past the last byte of `bytes` (columns count bytes, from 1).
    static func endPosition(_ bytes: [UInt8]) -> InputPosition {
        let starts = lineStarts(bytes)
        return .line(starts.count, column: bytes.count - starts[starts.count - 1] + 1)
    }

    /// nil when `error` names a line and column inside `bytes` (or just past its last byte).
    static func positionProblem(_ error: DecodeError, _ bytes: [UInt8]) -> String? {
        guard case .line(let line, let column) = error.position else { return "\(error) names no line" }
        let starts = lineStarts(bytes)
        guard (1...starts.count).contains(line), column >= 1 else { return "\(error): the input has \(starts.count) lines" }
        let lineLength = (line < starts.count ? starts[line] - 1 : bytes.count) - starts[line - 1]
        return column <= lineLength + 1 ? nil : "\(error): line \(line) has \(lineLength) bytes"
    }
}

/// Inputs `make fuzz` found (Fuzz/regressions/fuzz-gpx and fuzz-tcx), and the smallest form of each.
@Suite("TCX and GPX drivers: inputs the fuzzer found")
struct FuzzRegressionTests {
    /// Each decodes or fails with a DecodeError; none traps.
    @Test func everyFoundInputDecodesOrFails() throws {
        let gpx = try fuzzRegressionInputs("fuzz-gpx")
        #expect(gpx.count >= 1)
        for (_, bytes) in gpx { _ = try? GPXImporter.decode(bytes, path: "fuzz.gpx") }
        for (_, bytes) in try fuzzRegressionInputs("fuzz-tcx") { _ = try? TCXImporter.decode(bytes, path: "fuzz.tcx") }
    }

    /// A `<trkseg>` that is not a direct child of `<trk>` (here inside an unclosed `<type>`) opens
    /// no segment, so its points are not the track's: they were appended to a segment that did
    /// not exist (index -1, a trap).
    @Test func pointsOfAMisplacedSegmentAreIgnored() throws {
        let text = #"""
            <gpx><trk><trkseg><trkpt lat="1" lon="2"><time>2025-03-03T07:00:00Z</time></trkpt>
            <trkpt lat="1.001" lon="2"><time>2025-03-03T07:00:10Z</time></trkpt></trkseg>
            <type>running<trkseg><trkpt lat="3" lon="4"><time>2025-03-03T07:00:20Z</time></trkpt></trkseg></type>
            </trk></gpx>
            """#
        let workouts = try GPXImporter.decode(Array(text.utf8), path: "misplaced.gpx")
        #expect(workouts.count == 1)
        #expect(workouts.first?.samples.map(\.latitude) == [1, 1.001])
        // Without any well-placed segment: no points, so no workout, and no trap.
        let only = #"<gpx><trk><x><trkseg><trkpt lat="3" lon="4"></trkpt></trkseg></x></trk></gpx>"#
        #expect(try GPXImporter.decode(Array(only.utf8), path: "only.gpx").isEmpty)
    }
}

/// The TCX and GPX importers read their file in chunks: cut anywhere, a document gives the same
/// workouts as read whole, and a file damaged part-way keeps the activities finished before.
@Suite struct ChunkedXMLImportTests {
    @Test(arguments: [13, 4096])
    func chunksCutAnywhereGiveTheSameWorkouts(chunkSize: Int) async throws {
        var workouts = 0
        for (folder, importer) in [("tcx", TCXImporter() as any FileImporter), ("gpx", GPXImporter())] {
            for name in try FileManager.default.contentsOfDirectory(atPath: fixtureURL(folder).path).sorted()
            where name.hasSuffix("." + folder) {
                let bytes = try fixtureBytes(folder + "/" + name)
                let whole = folder == "tcx" ? try TCXImporter.decode(bytes, path: name) : try GPXImporter.decode(bytes, path: name)
                let sink = CollectingSink()
                try await importer.importFile(ImportSource(path: name, data: Data(bytes), chunkSize: chunkSize), into: sink)
                #expect(sink.records == whole.map { .workout($0) }, "\(name) in chunks of \(chunkSize)")
                workouts += whole.count
            }
        }
        #expect(workouts >= 5)  // the top-level fixtures hold five activities
    }

    @Test func aDocumentDamagedInItsSecondActivityKeepsTheFirst() async throws {
        func activity(_ minute: Int) -> String {
            """
            <Activity Sport="Running"><Id>2024-05-01T10:\(minute):00Z</Id><Lap StartTime="2024-05-01T10:\(minute):00Z">\
            <TotalTimeSeconds>60</TotalTimeSeconds><Track><Trackpoint><Time>2024-05-01T10:\(minute):00Z</Time>\
            <HeartRateBpm><Value>120</Value></HeartRateBpm></Trackpoint></Track></Lap></Activity>
            """
        }
        let tcx = "<TrainingCenterDatabase><Activities>" + activity(10) + activity(20) + "</Activities></TrainingCenterDatabase>"
        let cut = Array(tcx.utf8.prefix(tcx.utf8.count - 60))
        let (error, records) = await attempt(TCXImporter(), cut)
        #expect(isLine(error?.position), "\(String(describing: error))")
        #expect(records.count == 1)
        #expect(records.first.flatMap { if case .workout(let w) = $0 { ISO8601.string(w.start) } else { nil } } == "2024-05-01T10:10:00Z")

        func track(_ minute: Int) -> String {
            "<trk><trkseg><trkpt lat=\"1\" lon=\"2\"><time>2024-05-01T10:\(minute):00Z</time></trkpt></trkseg></trk>"
        }
        let gpx = "<gpx version=\"1.1\" creator=\"x\">" + track(10) + track(20) + "</gpx>"
        let (gpxError, gpxRecords) = await attempt(GPXImporter(), Array(gpx.utf8.prefix(gpx.utf8.count - 20)))
        #expect(isLine(gpxError?.position), "\(String(describing: gpxError))")
        #expect(gpxRecords.count == 1)
    }
}
