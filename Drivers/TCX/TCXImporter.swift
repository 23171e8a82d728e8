public import DriverKit
import Foundation
public import HealthModel
import XMLStream

/// Imports Garmin Training Center XML (TCX v2) files: each `Activity` becomes one ``Workout``.
///
/// Courses, Workouts and Folders sections are ignored. The file must be well-formed XML: a
/// file malformed part-way emits the activities finished before the damage and throws
/// ``DecodeError`` with its line and column (the pipeline reports it partial).
/// See Drivers/TCX/README.md for the mapping rules.
public struct TCXImporter: FileImporter {
    public static let id = "tcx"

    /// Takes no keys of its own (`[importers.tcx]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("tcx")) {}

    /// A `.tcx` file, or any file whose head shows a `TrainingCenterDatabase` root.
    public static func canImport(_ probe: FileProbe) -> Bool {
        probe.fileExtension == "tcx" || probe.textHead.contains("<TrainingCenterDatabase")
    }

    /// Reads the file in chunks: memory holds one chunk and the activity being read, and each
    /// finished workout goes to the sink before the next is read. A file malformed part-way
    /// emits the workouts finished before the damage, then throws the ``DecodeError``.
    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        var parser = TCXParser(path: file.path)
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

    /// Decodes a whole TCX document into workouts, in file order. Pure: no I/O.
    ///
    /// `path` is only used for provenance (``Source/file``) and error messages.
    public static func decode(_ bytes: some Collection<UInt8>, path: String = "") throws(DecodeError) -> [Workout] {
        var parser = TCXParser(path: path)
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
}

// MARK: - Parsing

/// One trackpoint as read, before it becomes a ``Sample``.
private struct PointDraft {
    var time: Date?
    var latitude: Double?
    var longitude: Double?
    var altitude: Double?
    var distance: Double?
    var heartRate: Int?
    var cadence: Double?
    var speed: Double?
    var watts: Double?
    var runCadence: Double?
}

private struct LapDraft {
    var start: Date?
    var totalTime: Double?
    var distance: Double?
    var calories: Double?
    var avgHeartRate: Int?
    var maxHeartRate: Int?
    var samples: [Sample] = []
}

private struct ActivityDraft {
    var sportName: String
    var location: XMLLocation
    var id: Date?
    var laps: [LapDraft] = []
    var creatorName: String?
    var unitID: String?
    var productID: String?
    var multisportID: RecordID?
}

/// A pure state machine over XML events: element path, leaf text, and the drafts being filled.
private struct TCXParser: XMLEventHandler {
    let path: String
    var workouts: [Workout] = []

    private var stack: [String] = []
    private var text = ""
    private var textLocation = XMLLocation(line: 1, column: 1)
    private var inActivities = false
    private var activity: ActivityDraft?
    private var lap: LapDraft?
    private var point: PointDraft?
    private var sessionID: RecordID?

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
            try end(name.local, parent: stack.last ?? "", grandparent: stack.dropLast().last ?? "")
            text = ""
        }
    }

    private mutating func start(_ name: String, _ attributes: [XMLAttribute], at location: XMLLocation) throws {
        switch name {
        case "Activities" where stack.count == 1:
            inActivities = true
        case "Activity" where inActivities && activity == nil:
            activity = ActivityDraft(sportName: attributes.value(of: "Sport") ?? "Other", location: location,
                                     multisportID: sessionID)
        case "Lap" where activity != nil && stack.last == "Activity":
            var draft = LapDraft()
            if let startTime = attributes.value(of: "StartTime") {
                draft.start = try time(startTime, at: location, "Lap StartTime")
            }
            lap = draft
        case "Trackpoint" where lap != nil:
            point = PointDraft()
        default:
            break
        }
    }

    private mutating func end(_ name: String, parent: String, grandparent: String) throws {
        switch (name, parent) {
        case ("Activities", _):
            inActivities = false
        case ("Activity", _) where activity != nil:
            workouts.append(try makeWorkout(activity!))
            activity = nil
        case ("Id", "MultiSportSession") where inActivities:
            sessionID = RecordID.derive("multisport", "tcx", text.trimmed)
        case ("MultiSportSession", _):
            sessionID = nil
        case ("Id", "Activity") where activity != nil:
            // The schema makes it a dateTime; a producer that writes something else loses nothing.
            activity!.id = ISO8601.parse(text.trimmed)
        case ("Lap", "Activity") where lap != nil:
            activity?.laps.append(lap!)
            lap = nil
        case ("Trackpoint", _) where point != nil:
            if let p = point, let time = p.time {
                lap?.samples.append(Sample(time: time, heartRate: p.heartRate, cadence: p.cadence ?? p.runCadence,
                                           powerW: p.watts, speedMps: p.speed, distanceM: p.distance,
                                           latitude: p.latitude, longitude: p.longitude, altitudeM: p.altitude))
            }
            point = nil
        case ("Name", "Creator") where activity != nil && grandparent == "Activity":
            activity!.creatorName = text.trimmed
        case ("UnitId", "Creator") where activity != nil && grandparent == "Activity":
            activity!.unitID = text.trimmed
        case ("ProductID", "Creator") where activity != nil && grandparent == "Activity":
            activity!.productID = text.trimmed
        default:
            if point != nil {
                try endPointField(name, parent: parent)
            } else if lap != nil && (parent == "Lap" || grandparent == "Lap") {
                try endLapField(name, parent: parent)
            }
        }
    }

    private mutating func endLapField(_ name: String, parent: String) throws {
        switch (name, parent) {
        case ("TotalTimeSeconds", "Lap"): lap!.totalTime = try number(name)
        case ("DistanceMeters", "Lap"): lap!.distance = try number(name)
        case ("Calories", "Lap"): lap!.calories = try number(name)
        case ("Value", "AverageHeartRateBpm"): lap!.avgHeartRate = try heartRate(name)
        case ("Value", "MaximumHeartRateBpm"): lap!.maxHeartRate = try heartRate(name)
        default: break
        }
    }

    private mutating func endPointField(_ name: String, parent: String) throws {
        switch (name, parent) {
        case ("Time", "Trackpoint"): point!.time = try time(text, at: textLocation, "Time")
        case ("LatitudeDegrees", "Position"): point!.latitude = try coordinate(name, limit: 90)
        case ("LongitudeDegrees", "Position"): point!.longitude = try coordinate(name, limit: 180)
        case ("AltitudeMeters", "Trackpoint"): point!.altitude = try number(name)
        case ("DistanceMeters", "Trackpoint"): point!.distance = try number(name)
        case ("Value", "HeartRateBpm"): point!.heartRate = try heartRate(name)
        case ("Cadence", "Trackpoint"): point!.cadence = try number(name)
        case ("Speed", "TPX"): point!.speed = try number(name)
        case ("Watts", "TPX"): point!.watts = try number(name)
        case ("RunCadence", "TPX"): point!.runCadence = try number(name)
        default: break
        }
    }

    // MARK: Values

    private func failure(_ reason: String, at location: XMLLocation? = nil) -> DecodeError {
        let at = location ?? textLocation
        return DecodeError(file: path, at: .line(at.line, column: at.column), reason)
    }

    /// The element's number; nil when the element is empty; an error when it is not a finite number.
    private func number(_ element: String) throws -> Double? {
        let value = text.trimmed
        if value.isEmpty { return nil }
        guard let number = Double(value), number.isFinite else {
            throw failure("<\(element)> holds '\(value.prefix(40))', not a number")
        }
        return number
    }

    private func coordinate(_ element: String, limit: Double) throws -> Double? {
        guard let value = try number(element) else { return nil }
        guard abs(value) <= limit else { throw failure("<\(element)> \(value) is outside ±\(Int(limit)) degrees") }
        return value
    }

    /// Beats per minute; 0 means "no reading" and becomes nil.
    private func heartRate(_ element: String) throws -> Int? {
        guard let value = try number(element) else { return nil }
        guard value >= 0, value < 256 else { throw failure("heart rate \(value) bpm in <\(element)> is out of range") }
        let bpm = Int(value.rounded())
        return bpm == 0 ? nil : bpm
    }

    private func time(_ value: String, at location: XMLLocation, _ what: String) throws -> Date {
        guard let date = ISO8601.parse(value.trimmed) else {
            throw failure("\(what) '\(value.trimmed.prefix(40))' is not an ISO 8601 date-time", at: location)
        }
        return date
    }

    // MARK: Workout

    private func makeWorkout(_ a: ActivityDraft) throws -> Workout {
        let samples = a.laps.flatMap(\.samples)
        guard let start = a.id ?? a.laps.lazy.compactMap(\.start).first ?? samples.first?.time else {
            throw failure("activity has no Id, lap StartTime or trackpoint Time: a workout needs a start", at: a.location)
        }
        var laps: [Lap] = []
        for draft in a.laps {
            let lapStart = draft.start ?? draft.samples.first?.time ?? start
            var lapEnd = lapStart.addingTimeInterval(draft.totalTime ?? 0)
            if let last = draft.samples.map(\.time).max(), last > lapEnd { lapEnd = last }
            let hrs = draft.samples.compactMap(\.heartRate)
            laps.append(Lap(start: lapStart, end: lapEnd, elapsedS: lapEnd.timeIntervalSince(lapStart),
                            timerS: draft.totalTime, distanceM: draft.distance,
                            energyKcal: draft.calories.map { $0.rounded() },
                            avgHeartRate: draft.avgHeartRate ?? mean(hrs),
                            maxHeartRate: draft.maxHeartRate ?? hrs.max()))
        }

        var end = start
        if let last = samples.map(\.time).max(), last > end { end = last }
        if let lastLap = laps.last, let total = a.laps.last?.totalTime {
            let lapEnd = lastLap.start.addingTimeInterval(total)
            if lapEnd > end { end = lapEnd }
        }

        let timed = a.laps.compactMap(\.totalTime)
        let timer = timed.isEmpty ? nil : timed.reduce(0, +)
        let lapDistances = a.laps.compactMap(\.distance)
        let distance = lapDistances.isEmpty ? samples.last(where: { $0.distanceM != nil })?.distanceM
                                            : lapDistances.reduce(0, +)
        // Calories is an unsignedShort in the schema: each lap's value is rounded to whole kcal.
        let energy = a.laps.compactMap(\.calories).reduce(0) { $0 + $1.rounded() }

        let hrs = samples.compactMap(\.heartRate)
        let weighted = a.laps.compactMap { l -> (Double, Double)? in
            guard let hr = l.avgHeartRate, let t = l.totalTime, t > 0 else { return nil }
            return (Double(hr), t)
        }
        let lapAverages = a.laps.compactMap(\.avgHeartRate)
        let avgHR: Int?
        if !weighted.isEmpty {
            avgHR = Int((weighted.reduce(0) { $0 + $1.0 * $1.1 } / weighted.reduce(0) { $0 + $1.1 }).rounded())
        } else if !lapAverages.isEmpty {
            avgHR = mean(lapAverages)
        } else {
            avgHR = mean(hrs)
        }
        let maxHR = (a.laps.compactMap(\.maxHeartRate) + hrs).max()
        let (ascent, descent) = climb(samples.compactMap(\.altitudeM))

        let (sport, subSport) = Self.sport(a.sportName)
        let device = Self.device(name: a.creatorName, unitID: a.unitID, productID: a.productID)
        let id = RecordID.derive("workout", TCXImporter.id, device ?? "", String(Int(start.timeIntervalSince1970)),
                                 sport.rawValue)
        return Workout(id: id, sport: sport.rawValue, subSport: subSport, start: start, end: end, timerS: timer,
                       distanceM: distance, energyKcal: energy > 0 ? energy : nil,
                       energySource: energy > 0 ? .device : nil, avgHeartRate: avgHR, maxHeartRate: maxHR,
                       ascentM: ascent, descentM: descent, multisportID: a.multisportID, laps: laps,
                       samples: samples, source: Source(driver: TCXImporter.id, device: device, file: path))
    }

    /// TCX's `Sport` is Running, Biking or Other; other producers write their own names. The
    /// original is kept as the sub-sport only when it says more than the normalized sport.
    static func sport(_ name: String) -> (Sport, String?) {
        let sport = Sport.normalize(name)
        let key = name.trimmed.lowercased().replacingOccurrences(of: " ", with: "_")
        if key.isEmpty || ["running", "biking", "other", sport.rawValue].contains(key) { return (sport, nil) }
        return (sport, key)
    }

    /// `<name>/<unit id>`, lower-cased, from the activity's `Creator`: the name without a trailing
    /// "Software Version ...", prefixed with "garmin " when a Garmin product id is given.
    static func device(name: String?, unitID: String?, productID: String?) -> String? {
        var base = (name ?? "").trimmed.lowercased()
        if let range = base.range(of: " software version") { base = String(base[..<range.lowerBound]).trimmed }
        if let product = productID.flatMap({ Int($0) }), product > 0, !base.isEmpty, !base.hasPrefix("garmin") {
            base = "garmin " + base
        }
        let unit = (unitID ?? "").trimmed
        let hasUnit = !unit.isEmpty && unit != "0"
        switch (base.isEmpty, hasUnit) {
        case (true, false): return nil
        case (true, true): return "tcx-unit/" + unit
        case (false, false): return base
        case (false, true): return base + "/" + unit
        }
    }
}

/// The rounded mean, nil for no values.
private func mean(_ values: [Int]) -> Int? {
    values.isEmpty ? nil : Int((Double(values.reduce(0, +)) / Double(values.count)).rounded())
}

/// Total gain and loss between consecutive altitudes (raw, unsmoothed); nil below two values.
func climb(_ altitudes: [Double]) -> (Double?, Double?) {
    guard altitudes.count >= 2 else { return (nil, nil) }
    var up = 0.0, down = 0.0
    for (a, b) in zip(altitudes, altitudes.dropFirst()) {
        if b > a { up += b - a } else { down += a - b }
    }
    return (up, down)
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension TCXImporter {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.importer(
        TCXImporter.self, summary: "Garmin Training Center XML (TCX v2) exports: each activity becomes a workout with laps and samples", sample: PackageResources.sample_toml)
}
