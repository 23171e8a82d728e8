import Foundation
public import HealthModel

/// A line of a program's output that is not a record, with its number (from 1) and why.
public struct ExecLineError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var reason: String
    public var description: String { "line \(line): \(reason)" }
}

/// Reads one line of the exec driver's JSON-lines format (see `Drivers/Exec/README.md`) into a
/// record. Pure. Empty lines and lines starting with `#` are no record (nil).
public struct ExecLineParser: Sendable {
    /// The driver instance's name: part of every derived record id.
    public var instance: String
    /// Lines longer than this are refused.
    public static let maximumLineBytes = 1 << 20

    public init(instance: String) { self.instance = instance }

    public func parse(_ line: String, number: Int) throws(ExecLineError) -> HealthRecord? {
        func fail(_ reason: String) -> ExecLineError { ExecLineError(line: number, reason: reason) }
        let text = line.trimmingCharacters(in: .whitespaces)
        if text.isEmpty || text.hasPrefix("#") { return nil }
        guard text.utf8.count <= Self.maximumLineBytes else { throw fail("longer than \(Self.maximumLineBytes) bytes") }
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                throw fail("not a JSON object")
            }
            object = parsed
        } catch let error as ExecLineError {
            throw error
        } catch {
            throw fail("not JSON: \((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)")")
        }
        var fields = Fields(object: object, line: number)
        guard let type = try fields.string("type") else { throw fail("missing key 'type'") }
        let version = try fields.int("version") ?? 1
        guard version >= 1 else { throw fail("version: must be 1 or more") }
        let key = try fields.string("key")
        let source = Source(driver: "exec", device: try fields.string("device"))
        func id(_ natural: String...) -> RecordID {
            key.map { RecordID.derive("exec", instance, $0) } ?? RecordID.derive(["exec", instance] + natural)
        }
        let record: HealthRecord
        switch type {
        case "measurement":
            guard let kindName = try fields.string("kind") else { throw fail("measurement: missing key 'kind'") }
            guard let kind = MeasurementKind(rawValue: kindName) else {
                throw fail("measurement: kind '\(kindName)' is not one of \(MeasurementKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let time = try fields.requiredTime("time", type)
            guard let value = try fields.double("value") else { throw fail("measurement: missing key 'value'") }
            record = .measurement(Measurement(
                id: id("measurement", source.device ?? "", kind.rawValue, ISO8601.exactString(time)), version: version,
                kind: kind, time: time, end: try fields.time("end"), value: value, extra: try fields.numbers("extra"),
                source: source))
        case "habit":
            guard let habit = try fields.string("habit") else { throw fail("habit: missing key 'habit'") }
            let time = try fields.requiredTime("time", type)
            record = .habit(HabitEvent(
                // One habit, one name: `Reading` and `reading` at one time are one entry.
                id: id("habit", Definition.key(habit), ISO8601.exactString(time)), version: version, habit: habit, time: time,
                value: try fields.double("value"), category: try fields.string("category"), unit: try fields.string("unit"),
                label: try fields.string("label"), note: try fields.string("note"), source: source))
        case "sleep":
            let start = try fields.requiredTime("start", type), end = try fields.requiredTime("end", type)
            var stages: [SleepStageSpan] = []
            for (index, item) in (try fields.array("stages") ?? []).enumerated() {
                guard let object = item as? [String: Any] else { throw fail("stages[\(index)]: not an object") }
                var stage = Fields(object: object, line: number, path: "stages[\(index)].")
                let name = try stage.string("stage") ?? "unknown"
                guard let kind = SleepStage(rawValue: name) else {
                    throw fail("stages[\(index)].stage: '\(name)' is not one of \(SleepStage.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                stages.append(SleepStageSpan(start: try stage.requiredTime("start", "sleep"), end: try stage.requiredTime("end", "sleep"),
                                             stage: kind))
                try stage.finish()
            }
            record = .sleep(SleepSession(id: id("sleep", ISO8601.exactString(start)), version: version, start: start, end: end,
                                         stages: stages, source: source))
        case "workout":
            guard let sport = try fields.string("sport") else { throw fail("workout: missing key 'sport'") }
            let start = try fields.requiredTime("start", type), end = try fields.requiredTime("end", type)
            record = .workout(Workout(
                id: id("workout", sport, ISO8601.exactString(start)), version: version, sport: sport,
                subSport: try fields.string("sub_sport"), start: start, end: end, elapsedS: try fields.double("elapsed_s"),
                timerS: try fields.double("timer_s"), distanceM: try fields.double("distance_m"),
                energyKcal: try fields.double("energy_kcal"), energySource: try fields.double("energy_kcal") == nil ? nil : .device,
                avgHeartRate: try fields.int("avg_hr"), maxHeartRate: try fields.int("max_hr"),
                ascentM: try fields.double("ascent_m"), descentM: try fields.double("descent_m"), source: source))
        default:
            throw fail("unknown type '\(type)' (measurement, habit, sleep or workout)")
        }
        try fields.finish()
        return record
    }
}

/// The keys of one JSON object, read once each; unknown keys are an error.
struct Fields {
    let object: [String: Any]
    let line: Int
    var path = ""
    private var used: Set<String> = []

    init(object: [String: Any], line: Int, path: String = "") {
        self.object = object
        self.line = line
        self.path = path
    }

    func fail(_ key: String, _ reason: String) -> ExecLineError { ExecLineError(line: line, reason: "\(path)\(key): \(reason)") }

    private mutating func value(_ key: String) -> Any? {
        used.insert(key)
        guard let value = object[key], !(value is NSNull) else { return nil }
        return value
    }

    mutating func string(_ key: String) throws(ExecLineError) -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value as? String else { throw fail(key, "must be a string") }
        return text
    }

    mutating func double(_ key: String) throws(ExecLineError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = Self.number(value) else { throw fail(key, "must be a number") }
        return number
    }

    mutating func int(_ key: String) throws(ExecLineError) -> Int? {
        guard let number = try double(key) else { return nil }
        guard number.rounded() == number, let whole = Int(exactly: number) else { throw fail(key, "must be a whole number") }
        return whole
    }

    mutating func time(_ key: String) throws(ExecLineError) -> Date? {
        guard let text = try string(key) else { return nil }
        guard let date = ISO8601.parse(text) else { throw fail(key, "'\(text)' is not an ISO 8601 time") }
        return date
    }

    mutating func requiredTime(_ key: String, _ type: String) throws(ExecLineError) -> Date {
        guard let date = try time(key) else { throw ExecLineError(line: line, reason: "\(type): missing key '\(path)\(key)'") }
        return date
    }

    mutating func array(_ key: String) throws(ExecLineError) -> [Any]? {
        guard let value = value(key) else { return nil }
        guard let items = value as? [Any] else { throw fail(key, "must be a list") }
        return items
    }

    mutating func numbers(_ key: String) throws(ExecLineError) -> [String: Double] {
        guard let value = value(key) else { return [:] }
        guard let map = value as? [String: Any] else { throw fail(key, "must be an object of numbers") }
        var out: [String: Double] = [:]
        for (name, item) in map {
            guard let number = Self.number(item) else { throw fail("\(key).\(name)", "must be a number") }
            out[name] = number
        }
        return out
    }

    /// A JSON number (not a boolean: JSONSerialization gives both as NSNumber, booleans with
    /// the C type `c`), finite.
    static func number(_ value: Any) -> Double? {
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c", number.doubleValue.isFinite else {
            return nil
        }
        return number.doubleValue
    }

    func finish() throws(ExecLineError) {
        if let unknown = object.keys.sorted().first(where: { !used.contains($0) }) { throw fail(unknown, "unknown key") }
    }
}
