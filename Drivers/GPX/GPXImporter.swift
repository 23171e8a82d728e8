public import DriverKit
import Foundation
public import HealthModel
import XMLStream

/// Imports GPX 1.1 (and 1.0) files: each `trk` with timestamps becomes one ``Workout``.
///
/// Waypoints and routes are ignored. A track whose points have no `time` cannot become a
/// workout and fails the file with a ``DecodeError``; a track without points is skipped. The file
/// must be well-formed XML: a file malformed part-way emits the workouts finished before the damage
/// and throws ``DecodeError`` with its line and column (the pipeline reports it partial). See Drivers/GPX/README.md for the mapping rules.
public struct GPXImporter: FileImporter {
    public static let id = "gpx"

    /// Mean Earth radius used for distances (IUGG mean radius R1, in metres).
    public static let earthRadiusM = 6_371_000.0

    /// Takes no keys of its own (`[importers.gpx]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("gpx")) {}

    /// A `.gpx` file, or any file whose head shows a `gpx` root.
    public static func canImport(_ probe: FileProbe) -> Bool {
        probe.fileExtension == "gpx" || probe.textHead.contains("<gpx")
    }

    /// Reads the file in chunks: memory holds one chunk and the activity being read, and each
    /// finished workout goes to the sink before the next is read. A file malformed part-way
    /// emits the workouts finished before the damage, then throws the ``DecodeError``.
    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        var parser = GPXParser(path: file.path)
        let reader = XMLReader(skipsWhitespaceText: true)
        for try await chunk in file.chunks() {
            reader.append(chunk)
            try Self.reading(file.path) { _ = try reader.read(into: &parser) }
            if !parser.workouts.isEmpty { try await sink.emit(parser.takeWorkouts().map { .workout($0) }) }
        }
        reader.finishInput()
        try Self.reading(file.path) { _ = try reader.read(into: &parser) }
        if !parser.workouts.isEmpty { try await sink.emit(parser.takeWorkouts().map { .workout($0) }) }
    }

    /// Decodes a whole GPX document into workouts, one per track, in file order. Pure: no I/O.
    public static func decode(_ bytes: some Collection<UInt8>, path: String = "") throws(DecodeError) -> [Workout] {
        var parser = GPXParser(path: path)
        let reader = XMLReader(bytes: bytes, skipsWhitespaceText: true)
        try reading(path) { _ = try reader.read(into: &parser) }
        return parser.workouts
    }

    /// Runs `work`, turning what it throws into a ``DecodeError`` naming the file and position.
    private static func reading(_ path: String, _ work: () throws -> Void) throws(DecodeError) {
        do {
            try work()
        } catch let error as XMLError {
            throw DecodeError(file: path, at: .line(error.line, column: error.column), error.reason)
        } catch let error as DecodeError {
            throw error
        } catch {
            throw DecodeError(file: path, at: .file, "\(error)")
        }
    }

    /// Great-circle distance in metres between two points given in degrees (haversine formula on
    /// a sphere of radius ``earthRadiusM``).
    public static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let phi1 = lat1 * .pi / 180, phi2 = lat2 * .pi / 180
        let dPhi = phi2 - phi1, dLambda = (lon2 - lon1) * .pi / 180
        let a = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        return 2 * earthRadiusM * asin(min(1, a.squareRoot()))
    }
}

// MARK: - Parsing

private struct PointDraft {
    var latitude: Double
    var longitude: Double
    var elevation: Double?
    var time: Date?
    var heartRate: Int?
    var cadence: Double?
    var temperature: Double?
    var power: Double?
    var speed: Double?
}

private struct TrackDraft {
    var location: XMLLocation
    var name: String?
    var type: String?
    var segments: [[PointDraft]] = []
}

/// A pure state machine over XML events: element path, leaf text, and the drafts being filled.
private struct GPXParser: XMLEventHandler {
    let path: String
    var workouts: [Workout] = []

    private var stack: [String] = []
    private var text = ""
    private var textLocation = XMLLocation(line: 1, column: 1)
    private var creator: String?
    private var track: TrackDraft?
    private var point: PointDraft?
    /// Depth of the point's `extensions` element while inside it.
    private var extensionsDepth: Int?

    init(path: String) { self.path = path }

    /// Takes the workouts finished so far.
    mutating func takeWorkouts() -> [Workout] {
        defer { workouts = [] }
        return workouts
    }

    mutating func handle(_ event: XMLEvent, at location: XMLLocation) throws {
        switch event {
        case .startElement(let name, let attributes):
            try start(name.local, attributes, at: location)
            stack.append(name.local)
            text = ""
            textLocation = location
        case .text(let chunk):
            text += chunk
        case .endElement(let name):
            stack.removeLast()
            try end(name.local, parent: stack.last ?? "")
            text = ""
        }
    }

    private mutating func start(_ name: String, _ attributes: [XMLAttribute], at location: XMLLocation) throws {
        switch name {
        case "gpx" where stack.isEmpty:
            let value = (attributes.value(of: "creator") ?? "").trimmed.lowercased()
            creator = value.isEmpty ? nil : value
        case "trk" where stack.count == 1:
            track = TrackDraft(location: location)
        // Segments directly in the track, points directly in a segment: a point of a `<trkseg>`
        // nested elsewhere (one that opened no segment) is ignored.
        case "trkseg" where track != nil && stack.count == 2 && stack.last == "trk":
            track!.segments.append([])
        case "trkpt" where track != nil && stack.count == 3 && stack.last == "trkseg":
            point = PointDraft(latitude: try coordinate(attributes.value(of: "lat"), "lat", limit: 90, at: location),
                               longitude: try coordinate(attributes.value(of: "lon"), "lon", limit: 180, at: location))
        case "extensions" where point != nil && stack.last == "trkpt":
            extensionsDepth = stack.count
        default:
            break
        }
    }

    private mutating func end(_ name: String, parent: String) throws {
        if point != nil {
            if let depth = extensionsDepth {
                if stack.count == depth { extensionsDepth = nil } else { try endExtensionField(name) }
                return
            }
            switch (name, parent) {
            case ("trkpt", _):
                track!.segments[track!.segments.count - 1].append(point!)
                point = nil
            case ("ele", "trkpt"):
                point!.elevation = try number(name)
            case ("time", "trkpt"):
                let value = text.trimmed
                if !value.isEmpty {
                    guard let date = ISO8601.parse(value) else {
                        throw failure("<time> '\(value.prefix(40))' is not an ISO 8601 date-time")
                    }
                    point!.time = date
                }
            default:
                break  // non-standard elements such as <alt> are ignored
            }
            return
        }
        guard track != nil else { return }
        switch (name, parent) {
        case ("name", "trk"):
            track!.name = text.trimmed
        case ("type", "trk"):
            track!.type = text.trimmed
        case ("trk", _):
            if let workout = try makeWorkout(track!) { workouts.append(workout) }
            track = nil
        default:
            break
        }
    }

    /// Garmin TrackPointExtension v1/v2 (`hr`, `cad`, `atemp`, `speed`), `power` as written by
    /// Strava and others, Garmin PowerExtension `PowerInWatts`, Apple's `speed`. Empty ones are absent.
    private mutating func endExtensionField(_ name: String) throws {
        switch name {
        case "hr":
            if let value = try number(name) {
                guard value >= 0, value < 256 else { throw failure("heart rate \(value) bpm in <hr> is out of range") }
                let bpm = Int(value.rounded())
                point!.heartRate = bpm == 0 ? nil : bpm  // 0 means "no reading"
            }
        case "cad": point!.cadence = try number(name)
        case "atemp": point!.temperature = try number(name)
        case "power", "PowerInWatts": point!.power = try number(name)
        case "speed": point!.speed = try number(name)
        default: break
        }
    }

    // MARK: Values

    private func failure(_ reason: String, at location: XMLLocation? = nil) -> DecodeError {
        let at = location ?? textLocation
        return DecodeError(file: path, at: .line(at.line, column: at.column), reason)
    }

    private func number(_ element: String) throws -> Double? {
        let value = text.trimmed
        if value.isEmpty { return nil }
        guard let number = Double(value), number.isFinite else {
            throw failure("<\(element)> holds '\(value.prefix(40))', not a number")
        }
        return number
    }

    private func coordinate(_ text: String?, _ attribute: String, limit: Double, at location: XMLLocation) throws -> Double {
        guard let text else { throw failure("<trkpt> has no \(attribute) attribute", at: location) }
        guard let value = Double(text.trimmed), value.isFinite, abs(value) <= limit else {
            throw failure("<trkpt> \(attribute)=\"\(text.prefix(40))\" is not a coordinate within ±\(Int(limit)) degrees", at: location)
        }
        return value
    }

    // MARK: Workout

    private func makeWorkout(_ track: TrackDraft) throws -> Workout? {
        let points = track.segments.joined()
        if points.isEmpty { return nil }
        let timed = points.compactMap(\.time)
        guard let start = timed.first, let end = timed.last else {
            let name = track.name.map { " '\($0)'" } ?? ""
            throw failure("track\(name) has \(points.count) points but no <time>: a workout needs timestamps",
                          at: track.location)
        }

        var distance = 0.0
        var ascent = 0.0, descent = 0.0, climbs = 0
        var gaps = 0.0
        var previousSegmentEnd: Date?
        for segment in track.segments {
            for (a, b) in zip(segment, segment.dropFirst()) {
                distance += GPXImporter.haversine(a.latitude, a.longitude, b.latitude, b.longitude)
                if let ea = a.elevation, let eb = b.elevation {
                    if eb > ea { ascent += eb - ea } else { descent += ea - eb }
                    climbs += 1
                }
            }
            let times = segment.compactMap(\.time)
            if let first = times.first, let previous = previousSegmentEnd, first > previous {
                gaps += first.timeIntervalSince(previous)
            }
            if let last = times.last { previousSegmentEnd = last }
        }

        let samples = points.compactMap { p -> Sample? in
            guard let time = p.time else { return nil }
            return Sample(time: time, heartRate: p.heartRate, cadence: p.cadence, powerW: p.power, speedMps: p.speed,
                          latitude: p.latitude, longitude: p.longitude, altitudeM: p.elevation,
                          temperatureC: p.temperature)
        }
        let hrs = samples.compactMap(\.heartRate)
        let avgHR = hrs.isEmpty ? nil : Int((Double(hrs.reduce(0, +)) / Double(hrs.count)).rounded())

        let elapsed = end.timeIntervalSince(start)
        let (sport, subSport) = Self.sport(track.type)
        let id = RecordID.derive("workout", GPXImporter.id, creator ?? "", String(Int(start.timeIntervalSince1970)),
                                 sport.rawValue)
        return Workout(id: id, sport: sport.rawValue, subSport: subSport, start: start, end: end, elapsedS: elapsed,
                       timerS: max(0, elapsed - gaps), distanceM: distance, avgHeartRate: avgHR,
                       maxHeartRate: hrs.max(), ascentM: climbs > 0 ? ascent : nil,
                       descentM: climbs > 0 ? descent : nil, samples: samples,
                       source: Source(driver: GPXImporter.id, device: creator, file: path))
    }

    /// The track `type` through ``Sport/normalize(_:)``; numeric types (Garmin and Strava codes)
    /// become `other`. The written type is kept as the sub-sport when it says more.
    static func sport(_ type: String?) -> (Sport, String?) {
        let key = (type ?? "").trimmed.lowercased().replacingOccurrences(of: " ", with: "_")
            .replacingOccurrences(of: "-", with: "_")
        if key.isEmpty || key.allSatisfy(\.isNumber) { return (.other, nil) }
        let sport = Sport.normalize(key)
        if key == sport.rawValue || ["run", "ride", "biking", "bike", "walk", "hike", "swim"].contains(key) {
            return (sport, nil)
        }
        return (sport, key)
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension GPXImporter {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.importer(
        GPXImporter.self, summary: "GPX 1.0/1.1 tracks with timestamps: each track becomes a workout with its points as samples", sample: PackageResources.sample_toml)
}
