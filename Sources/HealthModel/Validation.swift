public import Foundation

/// Why a record was refused before it reached the store.
public struct ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var recordID: RecordID
    public var reason: String

    public init(recordID: RecordID, reason: String) {
        self.recordID = recordID
        self.reason = reason
    }

    public var description: String { "record \(recordID): \(reason)" }
}

/// Rules every record must satisfy, whatever its source: the daemon applies them before
/// storing, to records pulled from the server too, and the tracking server before accepting an
/// upload. Limits come from ``PhysicalLimits``.
public struct RecordValidator: Sendable {
    /// Records may start at most this far after `now` (clock skew between a device and this box).
    public var futureTolerance: TimeInterval
    /// Records before this date are refused as corrupt clocks (FIT's epoch is 1989-12-31).
    public var earliest: Date

    public init(futureTolerance: TimeInterval = 300,
                earliest: Date = Date(timeIntervalSince1970: 631_065_600)) {
        self.futureTolerance = futureTolerance
        self.earliest = earliest
    }

    /// Throws ``ValidationError`` (naming the field and the limit) when `record` is
    /// future-dated, ends before it starts, lasts longer than its kind can, has children outside
    /// its span, or carries values no body or sensor can produce.
    public func validate(_ record: HealthRecord, now: Date = Date()) throws {
        do {
            try check(record, now: now)
        } catch {
            throw ValidationError(recordID: record.id, reason: error.text)
        }
    }

    /// Why a check failed, before the record's id is attached.
    struct Problem: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }

    private func check(_ record: HealthRecord, now: Date) throws(Problem) {
        let limit = now.addingTimeInterval(futureTolerance)
        if !record.start.timeIntervalSince1970.isFinite || !record.end.timeIntervalSince1970.isFinite {
            throw Problem("its time is not a time")
        }
        if record.start > limit || record.end > limit {
            throw Problem("future-dated (\(ISO8601.string(record.end > limit ? record.end : record.start)) is after now, \(ISO8601.string(now)))")
        }
        if record.start < earliest { throw Problem("dated before \(ISO8601.string(earliest)): the device clock was not set") }
        if record.end < record.start { throw Problem("ends (\(ISO8601.string(record.end))) before it starts (\(ISO8601.string(record.start)))") }
        if !PhysicalLimits.versions.contains(record.version) {
            throw Problem("version \(record.version) is outside \(PhysicalLimits.versions.lowerBound)...\(PhysicalLimits.versions.upperBound)")
        }
        try text("source.driver", record.source.driver, PhysicalLimits.shortTextCharacters)
        try text("source.device", record.source.device, PhysicalLimits.shortTextCharacters)
        try text("source.file", record.source.file, PhysicalLimits.pathCharacters)
        switch record {
        case .workout(let w): try check(w)
        case .sleep(let s): try check(s)
        case .habit(let h): try check(h)
        case .measurement(let m): try check(m)
        case .definition(let d): try check(d)
        }
    }

    private func check(_ w: Workout) throws(Problem) {
        let span = w.end.timeIntervalSince(w.start)
        try duration("workout", span, PhysicalLimits.workoutSpanS)
        try text("sport", w.sport, 1...PhysicalLimits.shortTextCharacters.upperBound)
        try text("sub_sport", w.subSport, PhysicalLimits.shortTextCharacters)
        try value("elapsed_s", w.elapsedS, 0...PhysicalLimits.workoutSpanS, "s")
        try value("timer_s", w.timerS, 0...PhysicalLimits.workoutSpanS, "s")
        try value("distance_m", w.distanceM, PhysicalLimits.distanceM, "m")
        try value("energy_kcal", w.energyKcal, PhysicalLimits.workoutEnergyKcal, "kcal")
        try value("avg_heart_rate", w.avgHeartRate.map(Double.init), PhysicalLimits.heartRate, "bpm")
        try value("max_heart_rate", w.maxHeartRate.map(Double.init), PhysicalLimits.heartRate, "bpm")
        try value("ascent_m", w.ascentM, PhysicalLimits.climbM, "m")
        try value("descent_m", w.descentM, PhysicalLimits.climbM, "m")
        try count("samples", w.samples.count)
        try count("rr_intervals", w.rrIntervals.count)
        try count("laps", w.laps.count)
        try count("lengths", w.lengths.count)
        let within = w.start.addingTimeInterval(-PhysicalLimits.childToleranceS)...w.end.addingTimeInterval(PhysicalLimits.childToleranceS)
        for (i, s) in w.samples.enumerated() {
            if let problem = PhysicalLimits.problem(with: s) { throw Problem("samples[\(i)]: \(problem)") }
            try inside("samples[\(i)]", s.time, within, of: "the workout")
        }
        for (i, rr) in w.rrIntervals.enumerated() {
            try value("rr_intervals[\(i)]", rr, PhysicalLimits.rrInterval, "s")
        }
        for (i, lap) in w.laps.enumerated() {
            try inside("laps[\(i)].start", lap.start, within, of: "the workout")
            try inside("laps[\(i)].end", lap.end, within, of: "the workout")
            if lap.end < lap.start { throw Problem("laps[\(i)] ends before it starts") }
            try value("laps[\(i)].elapsed_s", lap.elapsedS, 0...PhysicalLimits.workoutSpanS, "s")
            try value("laps[\(i)].timer_s", lap.timerS, 0...PhysicalLimits.workoutSpanS, "s")
            try value("laps[\(i)].distance_m", lap.distanceM, PhysicalLimits.distanceM, "m")
            try value("laps[\(i)].energy_kcal", lap.energyKcal, PhysicalLimits.workoutEnergyKcal, "kcal")
            try value("laps[\(i)].avg_heart_rate", lap.avgHeartRate.map(Double.init), PhysicalLimits.heartRate, "bpm")
            try value("laps[\(i)].max_heart_rate", lap.maxHeartRate.map(Double.init), PhysicalLimits.heartRate, "bpm")
        }
        for (i, length) in w.lengths.enumerated() {
            try inside("lengths[\(i)]", length.start, within, of: "the workout")
            try value("lengths[\(i)].elapsed_s", length.elapsedS, 0...PhysicalLimits.workoutSpanS, "s")
            try value("lengths[\(i)].strokes", length.strokes.map(Double.init),
                      Double(PhysicalLimits.strokes.lowerBound)...Double(PhysicalLimits.strokes.upperBound), "")
            try text("lengths[\(i)].kind", length.kind, PhysicalLimits.shortTextCharacters)
            try text("lengths[\(i)].stroke", length.stroke, PhysicalLimits.shortTextCharacters)
        }
    }

    private func check(_ s: SleepSession) throws(Problem) {
        try duration("sleep session", s.end.timeIntervalSince(s.start), PhysicalLimits.sleepSpanS)
        try count("stages", s.stages.count)
        try value("assessment.score", s.assessment?.score.map(Double.init), 0...100, "")
        try value("assessment.awakenings", s.assessment?.awakenings.map(Double.init), 0...1000, "")
        let within = s.start.addingTimeInterval(-PhysicalLimits.childToleranceS)...s.end.addingTimeInterval(PhysicalLimits.childToleranceS)
        for (i, stage) in s.stages.enumerated() {
            try inside("stages[\(i)].start", stage.start, within, of: "the session")
            try inside("stages[\(i)].end", stage.end, within, of: "the session")
            if stage.end < stage.start { throw Problem("stages[\(i)] ends before it starts") }
        }
    }

    private func check(_ h: HabitEvent) throws(Problem) {
        try text("habit", h.habit, PhysicalLimits.habitNameCharacters)
        try value("value", h.value, PhysicalLimits.habitValue, "")
        try text("category", h.category, PhysicalLimits.shortTextCharacters)
        try text("unit", h.unit, PhysicalLimits.shortTextCharacters)
        try text("label", h.label, PhysicalLimits.shortTextCharacters)
        try text("note", h.note, PhysicalLimits.noteCharacters)
        switch h.habit {
        case BuiltInHabit.hydration:
            guard let volume = h.value else { throw Problem("a drink needs its volume (value, in ml)") }
            try value("drink", volume, PhysicalLimits.drinkMl, "ml")
        case BuiltInHabit.meal:
            try value("meal", h.value, PhysicalLimits.mealKcal, "kcal")
        case BuiltInHabit.vaping:
            if let trigger = h.category, trigger.trimmingCharacters(in: .whitespaces).isEmpty {
                throw Problem("a vaping session's trigger is empty")
            }
        default:
            break
        }
    }

    private func check(_ d: Definition) throws(Problem) {
        try text("name", d.name, PhysicalLimits.habitNameCharacters)
        if d.name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw Problem("name is empty") }
        if d.id != Definition.id(d.kind, name: d.name) {
            throw Problem("id \(d.id) is not the one of the \(d.kind.rawValue) '\(d.name)' (\(Definition.id(d.kind, name: d.name)))")
        }
        switch d.body {
        case .habit(let habit):
            try text("unit", habit.unit, PhysicalLimits.shortTextCharacters)
            guard PhysicalLimits.definitionItems.contains(habit.categories.count) else {
                throw Problem("\(habit.categories.count) categories: at most \(PhysicalLimits.definitionItems.upperBound)")
            }
            for (i, category) in habit.categories.enumerated() { try text("categories[\(i)]", category, 1...PhysicalLimits.shortTextCharacters.upperBound) }
            if habit.valueKind == .categorical && habit.categories.isEmpty { throw Problem("a categorical habit needs its categories") }
            if let target = habit.target {
                try value("target", target.amount, 0...PhysicalLimits.habitValue.upperBound, habit.unit ?? "")
            }
            if let derivation = habit.derivation {
                if habit.valueKind != .numeric { throw Problem("a derived habit is numeric") }
                if let problem = derivation.problem { throw Problem("derived: \(problem)") }
                // A built-in habit's entries are what hydration and vaping derive from: a habit of
                // that name deriving from them would count itself.
                let own: [HabitDerivation.Source: String] = [.hydration: BuiltInHabit.hydration, .vaping: BuiltInHabit.vaping]
                if let name = own[derivation.source], Definition.key(d.name) == name {
                    throw Problem("'\(d.name)' cannot derive from its own entries (\(derivation.source.rawValue))")
                }
            }
        case .trigger:
            break
        case .meal(let meal):
            try value("kcal", meal.kcal, PhysicalLimits.mealKcal, "kcal")
            guard PhysicalLimits.definitionItems.contains(meal.ingredients.count) else {
                throw Problem("\(meal.ingredients.count) ingredients: at most \(PhysicalLimits.definitionItems.upperBound)")
            }
            for (i, ingredient) in meal.ingredients.enumerated() {
                try text("ingredients[\(i)].name", ingredient.name, 1...PhysicalLimits.shortTextCharacters.upperBound)
                try value("ingredients[\(i)].kcal", ingredient.kcal, PhysicalLimits.mealKcal, "kcal")
            }
        case .profile(let profile):
            try value("weight", profile.weightKg, PhysicalLimits.range(of: .weight), "kg")
            if let goal = profile.goalWeightKg { try value("goal weight", goal, PhysicalLimits.range(of: .weight), "kg") }
        case .preferences(let p):
            guard DayBoundary.allowedStart.contains(p.dayStartMinutes) else {
                throw Problem("day start \(p.dayStartMinutes) minutes is outside 00:00 to 11:59")
            }
        }
    }

    private func check(_ m: Measurement) throws(Problem) {
        try value(m.kind.rawValue, m.value, PhysicalLimits.range(of: m.kind), m.kind.unit)
        if let end = m.end { try duration("measurement interval", end.timeIntervalSince(m.time), PhysicalLimits.measurementSpanS) }
        if m.extra.count > PhysicalLimits.extraKeys {
            throw Problem("extra has \(m.extra.count) values: at most \(PhysicalLimits.extraKeys)")
        }
        for (key, v) in m.extra.sorted(by: { $0.key < $1.key }) {
            try text("an extra key", key, PhysicalLimits.extraKeyCharacters)
            if m.kind == .bloodPressure, PhysicalLimits.pressureKeys.contains(key) {
                try value("extra.\(key)", v, PhysicalLimits.range(of: .bloodPressure), "mmHg")
            } else {
                try value("extra.\(key)", v, PhysicalLimits.extraValue, "")
            }
        }
    }

    // MARK: Checks

    private func value(_ name: String, _ v: Double?, _ range: ClosedRange<Double>, _ unit: String) throws(Problem) {
        guard let v else { return }
        guard v.isFinite else { throw Problem("\(name) is not a number") }
        guard range.contains(v) else {
            let u = unit.isEmpty ? "" : " " + unit
            throw Problem("\(name) \(PhysicalLimits.show(v))\(u) is outside \(PhysicalLimits.show(range.lowerBound))...\(PhysicalLimits.show(range.upperBound))\(u)")
        }
    }

    private func duration(_ what: String, _ seconds: TimeInterval, _ limit: TimeInterval) throws(Problem) {
        guard seconds <= limit else {
            throw Problem("the \(what) lasts \(PhysicalLimits.show(seconds)) s: at most \(PhysicalLimits.show(limit)) s")
        }
    }

    private func inside(_ name: String, _ time: Date, _ span: ClosedRange<Date>, of what: String) throws(Problem) {
        guard span.contains(time) else {
            throw Problem("\(name) at \(ISO8601.string(time)) lies outside \(what) (\(ISO8601.string(span.lowerBound)) to \(ISO8601.string(span.upperBound)) with tolerance)")
        }
    }

    private func count(_ name: String, _ n: Int) throws(Problem) {
        guard PhysicalLimits.seriesCount.contains(n) else { throw Problem("\(n) \(name): at most \(PhysicalLimits.seriesCount.upperBound)") }
    }

    private func text(_ name: String, _ value: String?, _ characters: ClosedRange<Int>) throws(Problem) {
        guard let value else { return }
        // Counted in Unicode scalars (cheap, and bounded by the bytes anyway).
        let n = value.unicodeScalars.count
        guard characters.contains(n) else {
            throw Problem(n < characters.lowerBound ? "\(name) is empty" : "\(name) has \(n) characters: at most \(characters.upperBound)")
        }
    }
}

extension PhysicalLimits {
    /// The first channel of `sample` out of its range, as "heart_rate 100000 is outside 0...300",
    /// or nil. (The sample's time is checked against its workout by the validator.)
    public static func problem(with sample: Sample) -> String? {
        let channels: [(String, Double?, ClosedRange<Double>)] = [
            ("heart_rate", sample.heartRate.map(Double.init), heartRate), ("cadence", sample.cadence, cadence),
            ("power_w", sample.powerW, powerW), ("speed_mps", sample.speedMps, speedMps), ("distance_m", sample.distanceM, distanceM),
            ("latitude", sample.latitude, latitude), ("longitude", sample.longitude, longitude),
            ("altitude_m", sample.altitudeM, altitudeM), ("temperature_c", sample.temperatureC, ambientTemperatureC),
        ]
        for (name, value, range) in channels {
            guard let value else { continue }
            if !value.isFinite || !range.contains(value) {
                return "\(name) \(show(value)) is outside \(show(range.lowerBound))...\(show(range.upperBound))"
            }
        }
        return nil
    }

    /// `sample` with every channel out of its range removed, and whether anything was removed.
    public static func cleaned(_ sample: Sample) -> (sample: Sample, removed: Int) {
        var s = sample
        var removed = 0
        func keep(_ value: Double?, _ range: ClosedRange<Double>) -> Double? {
            guard let value else { return nil }
            if value.isFinite, range.contains(value) { return value }
            removed += 1
            return nil
        }
        s.heartRate = keep(s.heartRate.map(Double.init), heartRate).map { Int(saturating: $0) }
        s.cadence = keep(s.cadence, cadence)
        s.powerW = keep(s.powerW, powerW)
        s.speedMps = keep(s.speedMps, speedMps)
        s.distanceM = keep(s.distanceM, distanceM)
        s.latitude = keep(s.latitude, latitude)
        s.longitude = keep(s.longitude, longitude)
        s.altitudeM = keep(s.altitudeM, altitudeM)
        s.temperatureC = keep(s.temperatureC, ambientTemperatureC)
        return (s, removed)
    }

    /// A number for a message.
    static func show(_ v: Double) -> String { NumberText.plain(v) }
}

/// Records refused by validation over a long run (a huge file, a daemon's lifetime): how many,
/// and the reasons of the first ``keptLimit`` only, so that memory stays bounded whatever comes
/// (an export with 600,000 future-dated samples once held 290 MB of reasons).
public struct Rejections: Sendable, Equatable {
    public static let keptLimit = 100
    /// Every refusal counted.
    public private(set) var count = 0
    /// The first ``keptLimit`` refusals, in order.
    public private(set) var kept: [ValidationError] = []

    public init() {}

    public var isEmpty: Bool { count == 0 }

    public mutating func add(_ errors: [ValidationError]) {
        count += errors.count
        if kept.count < Self.keptLimit { kept += errors.prefix(Self.keptLimit - kept.count) }
    }
}

/// ISO 8601 UTC formatting shared by the store, the CLI and JSON output (`2019-05-18T19:16:02Z`,
/// fractional seconds only when present).
public enum ISO8601 {
    public static func string(_ date: Date) -> String { format(date, alwaysMilliseconds: false) }

    /// With `.000` for a whole second too: a bound compared as text with stored times, in
    /// which `.` sorts before `Z`.
    public static func stringWithMilliseconds(_ date: Date) -> String { format(date, alwaysMilliseconds: true) }

    static func format(_ date: Date, alwaysMilliseconds: Bool) -> String {
        // Round to the millisecond first, so that 59.9996 s becomes the next second, not 59 s.
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let wholeSeconds = Int64((Double(totalMillis) / 1000).rounded(.down))
        let millis = Int(totalMillis - wholeSeconds * 1000)
        var text = dateTime(unixSeconds: wholeSeconds)
        if millis > 0 || alwaysMilliseconds {
            text.append(UInt8(ascii: "."))
            appendDigits(millis, width: 3, to: &text)
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS` of a Unix time in whole seconds, as UTF-8 (written digit by digit:
    /// `String(format:)` costs more than the rest of a record's encoding).
    static func dateTime(unixSeconds: Int64) -> [UInt8] {
        var tm = tm()
        var seconds = time_t(unixSeconds)
        gmtime_r(&seconds, &tm)
        var text: [UInt8] = []
        text.reserveCapacity(40)
        appendDigits(Int(tm.tm_year) + 1900, width: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(Int(tm.tm_mon) + 1, width: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(Int(tm.tm_mday), width: 2, to: &text)
        text.append(UInt8(ascii: "T"))
        appendDigits(Int(tm.tm_hour), width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(Int(tm.tm_min), width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(Int(tm.tm_sec), width: 2, to: &text)
        return text
    }

    /// `value` in decimal, zero-padded to `width` digits (more if it needs them; `-` first if negative).
    static func appendDigits(_ value: Int, width: Int, to text: inout [UInt8]) {
        if value < 0 { text.append(UInt8(ascii: "-")) }
        var digits: [UInt8] = []
        var rest = value.magnitude
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        for _ in digits.count..<max(width, digits.count) { text.append(UInt8(ascii: "0")) }
        text.append(contentsOf: digits.reversed())
    }

    /// Like ``string(_:)``, but with the fewest fractional digits that give back exactly the same
    /// `Date` through ``parse(_:)`` (`...T07:00:00.32Z` for a time logged at .32 s, though the
    /// stored fraction is 0.3200000524...); whole seconds as `...T07:00:00Z`. For data that must
    /// travel unchanged (the sync protocol, the JSON export).
    public static func preciseString(_ date: Date) -> String {
        let (r, whole, fraction, base) = parts(date)
        guard fraction > 0 else { return base + "Z" }
        // The shortest decimal fraction that `parse` adds back to the same Double (it adds the
        // whole seconds and the correctly rounded fraction once): at most 9 digits for a time
        // more than 97 days from 2001-01-01 (whose Doubles are coarser than a nanosecond), a few
        // more nearer to it.
        var scale = 1.0
        for places in 1...15 {
            scale *= 10
            let n = (fraction * scale).rounded()
            guard n < scale else { continue }  // 0.98 to one place: 1.0, not a fraction
            var digits = String(Int(n))
            digits = String(repeating: "0", count: places - digits.count) + digits
            if let back = Double("0." + digits), whole + back == r {
                while digits.hasSuffix("0") { digits.removeLast() }
                return base + "." + digits + "Z"
            }
        }
        return exactString(date)
    }

    /// The time with the shortest digits of the stored binary fraction itself
    /// (`...T18:26:47.3200000524520874Z` for a time logged at .32 s), which also reads back as the
    /// same `Date`. Record ids derived from times use it and must keep it: the same line read
    /// again must give the same id. Anything shown or sent uses ``preciseString(_:)``.
    public static func exactString(_ date: Date) -> String {
        let (_, _, fraction, base) = parts(date)
        guard fraction > 0 else { return base + "Z" }
        var digits = "\(fraction)"  // shortest form that reads back as the same Double
        if digits.contains("e") {
            // Tiny fractions print in exponent form: write 17 significant digits out instead.
            let places = 17 + Int(-log10(fraction).rounded(.down))
            digits = String(format: "%.\(places)f", fraction)
            while digits.hasSuffix("0") { digits.removeLast() }
        }
        return base + "." + digits.dropFirst(2) + "Z"
    }

    /// A time as `Date` stores it (the interval since the reference date, so nothing is rounded
    /// on the way): the interval, its whole seconds, the exact fraction after them, and the whole
    /// seconds written out (`2026-11-28T18:26:47`).
    private static func parts(_ date: Date) -> (r: Double, whole: Double, fraction: Double, base: String) {
        let r = date.timeIntervalSinceReferenceDate
        let whole = r.rounded(.down)
        let base = String(decoding: dateTime(unixSeconds: Int64(whole) + Int64(Date.timeIntervalBetween1970AndReferenceDate)),
                          as: UTF8.self)
        return (r, whole, r - whole, base)
    }

    /// Days of `month` (1...12) in the proleptic Gregorian `year`.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or `±HH:MM`; a date or time
    /// without an offset is read as UTC.
    public static func parse(_ text: String) -> Date? {
        let s = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= s.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard s[i] >= 48, s[i] <= 57 else { return nil }
                v = v * 10 + Int(s[i] - 48)
            }
            return v
        }
        guard let year = num(0, 4), s.count >= 10, s[4] == 45, let month = num(5, 2), s[7] == 45,
              let day = num(8, 2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        var hour = 0, minute = 0, second = 0, fraction = 0.0, offset = 0
        var i = 10
        if i < s.count {
            guard s[i] == 84 || s[i] == 32, let h = num(i + 1, 2), s.count > i + 3, s[i + 3] == 58,
                  let m = num(i + 4, 2) else { return nil }
            hour = h; minute = m; i += 6
            if i < s.count, s[i] == 58 {
                guard let sec = num(i + 1, 2) else { return nil }
                second = sec; i += 3
                if i < s.count, s[i] == 46 {
                    var j = i + 1
                    while j < s.count, s[j] >= 48, s[j] <= 57 { j += 1 }
                    guard j > i + 1 else { return nil }
                    // Correctly rounded, so that `preciseString` round-trips exactly.
                    fraction = Double("0." + String(decoding: s[(i + 1)..<j], as: UTF8.self)) ?? 0
                    i = j
                }
            }
            if i < s.count {
                if s[i] == 90 { i += 1 } else if s[i] == 43 || s[i] == 45 {
                    let sign = s[i] == 45 ? -1 : 1
                    guard let oh = num(i + 1, 2) else { return nil }
                    var om = 0
                    if i + 3 < s.count, s[i + 3] == 58 {
                        guard let m = num(i + 4, 2) else { return nil }
                        om = m; i += 6
                    } else if let m = num(i + 3, 2) { om = m; i += 5 } else { i += 3 }
                    offset = sign * (oh * 3600 + om * 60)
                } else { return nil }
            }
            guard i == s.count, hour < 24, minute < 60, second < 61 else { return nil }
        }
        // Days from the civil date (proleptic Gregorian), valid for all years here.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        // Whole seconds and the fraction are added once, so an exact fraction gives an exact time.
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSinceReferenceDate: Double(seconds - Int(Date.timeIntervalBetween1970AndReferenceDate)) + fraction)
    }
}
