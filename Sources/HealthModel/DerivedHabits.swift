public import Foundation

/// Where a derived habit's daily values come from (docs/derived-habits.md): what the devices
/// and the other apps already recorded, never typed. One source and its conditions.
public struct HabitDerivation: Hashable, Sendable {
    public enum Source: String, Codable, Sendable, CaseIterable {
        /// Steps counted (step measurements), in steps.
        case steps
        /// Minutes inside workouts (optionally of one sport, at least `minMinutes` long), each
        /// minute once where workouts overlap.
        case activeMinutes = "active_minutes"
        /// Workouts (optionally of one sport, at least `minMinutes` long); workouts that overlap
        /// (one run recorded by a watch and a phone) count once.
        case workouts
        /// Minutes with the heart rate above `bpm` (workout samples and heart-rate readings).
        case heartRateAbove = "heart_rate_above"
        /// Minutes with the heart rate below `bpm`.
        case heartRateBelow = "heart_rate_below"
        /// Minutes asleep (optionally in one `stage`) in the nights ending in the day.
        case sleep
        /// The day's mean reading of a measurement `kind` (resting heart rate, weight).
        case measurement
        /// Millilitres drunk (hydration entries from any source).
        case hydration
        /// Vaping sessions (from any source).
        case vaping

        /// The unit of the daily values.
        public func unit(kind: MeasurementKind?) -> String {
            switch self {
            case .steps: "steps"
            case .activeMinutes, .heartRateAbove, .heartRateBelow, .sleep: "min"
            case .workouts: "workouts"
            case .measurement: kind?.unit ?? ""
            case .hydration: "ml"
            case .vaping: "sessions"
            }
        }
    }

    public var source: Source
    /// Workouts of this sport only (`running`), for active minutes and workouts.
    public var sport: String?
    /// Workouts at least this many minutes long only, for active minutes and workouts.
    public var minMinutes: Double?
    /// The heart-rate threshold in bpm, for the heart-rate sources (required there).
    public var bpm: Int?
    /// One sleep stage only (`deep`), for sleep.
    public var stage: SleepStage?
    /// The measurement kind, for measurement (required there).
    public var kind: MeasurementKind?

    public init(source: Source, sport: String? = nil, minMinutes: Double? = nil, bpm: Int? = nil, stage: SleepStage? = nil,
                kind: MeasurementKind? = nil) {
        self.source = source
        self.sport = sport
        self.minMinutes = minMinutes
        self.bpm = bpm
        self.stage = stage
        self.kind = kind
    }

    /// The unit of the daily values (`steps`, `min`, `bpm`).
    public var unit: String { source.unit(kind: kind) }

    /// Heart-rate thresholds a person can have.
    public static let bpmRange = 30...250

    /// What is wrong with these conditions, nil when nothing: a condition the source does not
    /// take, a missing threshold or kind, a value out of range.
    public var problem: String? {
        let takesWorkouts = source == .activeMinutes || source == .workouts
        if sport != nil, !takesWorkouts { return "a sport applies to active_minutes and workouts only" }
        if minMinutes != nil, !takesWorkouts { return "a minimum duration applies to active_minutes and workouts only" }
        if let sport, sport.isEmpty || sport.count > 64 { return "the sport must be 1 to 64 characters" }
        if let minMinutes, !(minMinutes > 0 && minMinutes <= 24 * 60) { return "the minimum duration must be more than 0 and at most 1440 minutes" }
        let heart = source == .heartRateAbove || source == .heartRateBelow
        if heart {
            guard let bpm else { return "\(source.rawValue) needs its threshold in bpm" }
            if !Self.bpmRange.contains(bpm) { return "the threshold \(bpm) bpm is outside \(Self.bpmRange.lowerBound)...\(Self.bpmRange.upperBound)" }
        } else if bpm != nil {
            return "a bpm threshold applies to heart_rate_above and heart_rate_below only"
        }
        if stage != nil, source != .sleep { return "a sleep stage applies to sleep only" }
        if stage == .awake { return "the stage awake is not sleep" }
        if source == .measurement {
            guard let kind else { return "measurement needs its kind, e.g. resting_heart_rate or weight" }
            if [.steps, .energy, .heartRate, .rrInterval].contains(kind) {
                return "the kind \(kind.rawValue) is not a daily reading (steps and heart rate have sources of their own)"
            }
        } else if kind != nil {
            return "a measurement kind applies to measurement only"
        }
        return nil
    }

    /// As people read it: `heart rate above 120 bpm`, `running workouts of at least 20 min`.
    public var text: String {
        let workouts = [sport, "workouts"].compactMap { $0 }.joined(separator: " ")
            + (minMinutes.map { " of at least \(NumberText.plain($0)) min" } ?? "")
        return switch source {
        case .steps: "steps"
        case .activeMinutes: "minutes in \(workouts)"
        case .workouts: workouts
        case .heartRateAbove: "minutes with heart rate above \(bpm ?? 0) bpm"
        case .heartRateBelow: "minutes with heart rate below \(bpm ?? 0) bpm"
        case .sleep: stage.map { "minutes of \($0.rawValue) sleep" } ?? "minutes asleep"
        case .measurement: "mean \((kind?.rawValue ?? "").replacingOccurrences(of: "_", with: " "))"
        case .hydration: "millilitres drunk"
        case .vaping: "vaping sessions"
        }
    }
}

/// What a derived habit's value on one day is made of: each workout, night, run of minutes or
/// slot of steps that counted, with what it added (`healthgate habit explain`).
public struct DerivedContribution: Hashable, Sendable {
    public var day: LocalDay
    public var start: Date
    public var end: Date
    /// What counted: `running workout 07:00-07:45`, `12 minutes above 120 bpm`.
    public var what: String
    /// The sources (`fit (watch)`) whose records counted.
    public var sources: [String]
    /// What it adds to the day's value (a measurement: one reading, averaged).
    public var amount: Double

    public init(day: LocalDay, start: Date, end: Date, what: String, sources: [String], amount: Double) {
        self.day = day
        self.start = start
        self.end = end
        self.what = what
        self.sources = sources
        self.amount = amount
    }
}

/// The records a derivation reads over some days, as the store gives them.
public struct DerivationInput: Sendable {
    public var workouts: [Workout]
    public var sleep: [SleepSession]
    public var measurements: [Measurement]
    public var habitEvents: [HabitEvent]

    public init(workouts: [Workout] = [], sleep: [SleepSession] = [], measurements: [Measurement] = [], habitEvents: [HabitEvent] = []) {
        self.workouts = workouts
        self.sleep = sleep
        self.measurements = measurements
        self.habitEvents = habitEvents
    }
}

extension DerivationInput {
    /// The id of readings a store reduced before giving them (the rules never read it).
    public static let reducedID = RecordID.derive("derived", "reduced")

    /// Heart-rate readings reduced by a store to one a minute (the highest, or the lowest, of
    /// every reading in that minute), with `workouts` whose samples count besides: the rules
    /// count the same minutes from them as from every reading, but cannot name the sources.
    public static func heartRate(minutes: [(minute: Int, bpm: Double)], workouts: [Workout] = []) -> DerivationInput {
        let source = Source(driver: "reduced")
        return DerivationInput(workouts: workouts, measurements: minutes.map { m in
            Measurement(id: reducedID, kind: .heartRate, time: Date(timeIntervalSince1970: Double(m.minute) * 60), value: m.bpm, source: source)
        })
    }

    /// Steps summed by a store per source and slot of ``DerivedHabit/stepSlotMinutes(_:)``
    /// (`slot`: its start in minutes since 1970).
    public static func steps(slots: [(source: Source, slot: Int, steps: Double)]) -> DerivationInput {
        DerivationInput(measurements: slots.map { s in
            Measurement(id: reducedID, kind: .steps, time: Date(timeIntervalSince1970: Double(s.slot) * 60), value: s.steps, source: s.source)
        })
    }
}

/// The one implementation of derived habits' values, shared by every view (and by any other
/// side holding the same records): pure, from records and the day rule to values per local day.
public enum DerivedHabit {
    /// The value of each day of `days` that has one (a day with nothing counted is absent;
    /// for a count or a duration it is 0).
    public static func values(_ derivation: HabitDerivation, _ input: DerivationInput, boundary: DayBoundary,
                              days: ClosedRange<LocalDay>) -> [LocalDay: Double] {
        let parts = contributions(derivation, input, boundary: boundary, days: days)
        var values: [LocalDay: Double] = [:]
        if derivation.source == .measurement {
            var readings: [LocalDay: [Double]] = [:]
            for c in parts { readings[c.day, default: []].append(c.amount) }
            for (day, list) in readings { values[day] = list.reduce(0, +) / Double(list.count) }
            return values
        }
        for c in parts { values[c.day, default: 0] += c.amount }
        return values
    }

    /// Everything that counted on `days`, oldest first.
    public static func contributions(_ d: HabitDerivation, _ input: DerivationInput, boundary: DayBoundary,
                                     days: ClosedRange<LocalDay>) -> [DerivedContribution] {
        let parts: [DerivedContribution] = switch d.source {
        case .steps: steps(input.measurements, boundary)
        case .activeMinutes: activeMinutes(workouts(input.workouts, d), boundary)
        case .workouts: workoutCount(workouts(input.workouts, d), boundary)
        case .heartRateAbove, .heartRateBelow: heartMinutes(input, above: d.source == .heartRateAbove, bpm: Double(d.bpm ?? 0), boundary)
        case .sleep: sleep(input.sleep, stage: d.stage, boundary)
        case .measurement: input.measurements.filter { $0.kind == d.kind }.map { m in
                DerivedContribution(day: boundary.day(of: m.time), start: m.time, end: m.time, what: "\(m.kind.rawValue) \(NumberText.plain(m.value)) \(m.unit)",
                                    sources: [sourceName(m.source)], amount: m.value)
            }
        case .hydration, .vaping: entries(input.habitEvents, habit: d.source == .hydration ? BuiltInHabit.hydration : BuiltInHabit.vaping,
                                          count: d.source == .vaping, boundary)
        }
        return parts.filter { days.contains($0.day) }.sorted { ($0.start, $0.what) < ($1.start, $1.what) }
    }

    /// The slot (minutes) in which a store may sum a source's steps before the rules see them:
    /// a slot never straddles a quarter hour or a day start (a day starts on a multiple of 15
    /// minutes in every zone, or of 5, 3 or 1).
    public static func stepSlotMinutes(_ boundary: DayBoundary) -> Int { [15, 5, 3, 1].first { boundary.startMinutes % $0 == 0 }! }

    /// `fit (watch)`, `manual`.
    public static func sourceName(_ s: Source) -> String { s.device.map { "\(s.driver) (\($0))" } ?? s.driver }

    // MARK: Sources

    /// Steps: per source and quarter hour of a day, summed; per quarter hour, the source that
    /// counted most (two devices worn at once count once, one worn alone counts alone).
    static func steps(_ measurements: [Measurement], _ boundary: DayBoundary) -> [DerivedContribution] {
        struct Slot: Hashable { var day: LocalDay, quarter: Int }
        var bySource: [Slot: [String: Double]] = [:]
        var days = DayBoundary.Cursor(boundary)
        for m in measurements where m.kind == .steps && m.value > 0 {
            let slot = Slot(day: days.day(of: m.time), quarter: Int((m.time.timeIntervalSince1970 / 900).rounded(.down)))
            bySource[slot, default: [:]][sourceName(m.source), default: 0] += m.value
        }
        return bySource.map { slot, sources in
            let best = sources.max { ($0.value, $1.key) < ($1.value, $0.key) }!
            let start = Date(timeIntervalSince1970: Double(slot.quarter) * 900)
            return DerivedContribution(day: slot.day, start: start, end: start.addingTimeInterval(900),
                                       what: "\(NumberText.plain(best.value)) steps" + (sources.count > 1 ? " (the most of \(sources.count) devices)" : ""),
                                       sources: [best.key], amount: best.value)
        }
    }

    static func workouts(_ list: [Workout], _ d: HabitDerivation) -> [Workout] {
        list.filter { w in
            (d.sport.map { Definition.key(w.sport) == Definition.key($0) } ?? true) && (d.minMinutes.map { w.end.timeIntervalSince(w.start) >= $0 * 60 } ?? true)
        }.sorted { ($0.start, $0.end) < ($1.start, $1.end) }
    }

    /// Minutes inside workouts, cut at the day's bounds; where workouts overlap, each minute once
    /// (a later workout adds only the time after those before it).
    static func activeMinutes(_ workouts: [Workout], _ boundary: DayBoundary) -> [DerivedContribution] {
        var covered = Date.distantPast
        var parts: [DerivedContribution] = []
        for w in workouts {
            var from = max(w.start, covered)
            covered = max(covered, w.end)
            while from < w.end {
                let bounds = boundary.bounds(ofDayHolding: from)
                let to = min(w.end, bounds.upperBound)
                parts.append(DerivedContribution(day: boundary.day(of: from), start: from, end: to, what: "\(w.sport) workout",
                                                 sources: [sourceName(w.source)], amount: to.timeIntervalSince(from) / 60))
                from = to
            }
        }
        return parts
    }

    /// Workouts; overlapping ones (one session recorded twice) count once, on the day the first starts.
    static func workoutCount(_ workouts: [Workout], _ boundary: DayBoundary) -> [DerivedContribution] {
        var groups: [[Workout]] = []
        var end = Date.distantPast
        for w in workouts {
            if w.start < end, !groups.isEmpty { groups[groups.count - 1].append(w) } else { groups.append([w]) }
            end = max(end, w.end)
        }
        return groups.map { g in
            DerivedContribution(day: boundary.day(of: g[0].start), start: g[0].start, end: g.map(\.end).max()!,
                                what: "\(g[0].sport) workout" + (g.count > 1 ? " (recorded \(g.count) times)" : ""),
                                sources: Array(Set(g.map { sourceName($0.source) })).sorted(), amount: 1)
        }
    }

    /// Minutes (clock minutes, in absolute time) in which the heart rate was above (below) the
    /// threshold: per minute, the highest (lowest) reading of any source decides, so a strap and a
    /// watch count a minute once. Readings: workout samples and heart-rate measurements.
    static func heartMinutes(_ input: DerivationInput, above: Bool, bpm: Double, _ boundary: DayBoundary) -> [DerivedContribution] {
        // Per minute the deciding reading and the sources that read it (a few; a Set per
        // minute costs more than the rules).
        var minutes: [Int: (value: Double, sources: [String])] = [:]
        func add(_ time: Date, _ value: Double, _ source: String) {
            let m = Int((time.timeIntervalSince1970 / 60).rounded(.down))
            guard var current = minutes[m] else { minutes[m] = (value, [source]); return }
            current.value = above ? max(current.value, value) : min(current.value, value)
            if !current.sources.contains(source) { current.sources.append(source) }
            minutes[m] = current
        }
        for w in input.workouts {
            let name = sourceName(w.source)
            for s in w.samples { if let hr = s.heartRate, hr > 0 { add(s.time, Double(hr), name) } }
        }
        for m in input.measurements where m.kind == .heartRate && m.value > 0 { add(m.time, m.value, sourceName(m.source)) }
        // Consecutive counted minutes of one day, from the same sources, are one contribution.
        var parts: [DerivedContribution] = []
        var days = DayBoundary.Cursor(boundary)
        for m in minutes.keys.sorted() {
            let reading = minutes[m]!
            guard above ? reading.value > bpm : reading.value < bpm else { continue }
            let start = Date(timeIntervalSince1970: Double(m) * 60), day = days.day(of: start)
            let sources = reading.sources.count > 1 ? reading.sources.sorted() : reading.sources
            if let last = parts.last, last.day == day, last.end == start, last.sources == sources {
                parts[parts.count - 1].end = start.addingTimeInterval(60)
                parts[parts.count - 1].amount += 1
            } else {
                parts.append(DerivedContribution(day: day, start: start, end: start.addingTimeInterval(60), what: "", sources: sources, amount: 1))
            }
        }
        let side = above ? "above" : "below"
        for i in parts.indices {
            let count = parts[i].amount
            parts[i].what = "\(NumberText.plain(count)) minute\(count == 1 ? "" : "s") \(side) \(NumberText.plain(bpm)) bpm"
        }
        return parts
    }

    /// Minutes asleep (or in `stage`) in the sessions ending in each day; where sessions of
    /// several devices overlap, the one with most sleep counts (``SleepSession/countedOnce(_:)``).
    static func sleep(_ sessions: [SleepSession], stage: SleepStage?, _ boundary: DayBoundary) -> [DerivedContribution] {
        var byDay: [LocalDay: [SleepSession]] = [:]
        for s in sessions { byDay[boundary.day(ofNightEnding: s.end), default: []].append(s) }
        return byDay.flatMap { day, list in
            SleepSession.countedOnce(list).map { s in
                let seconds = stage.map { stage in s.stages.filter { $0.stage == stage }.reduce(0) { $0 + $1.end.timeIntervalSince($1.start) } }
                    ?? s.totalSleepS
                let length = "\(Int((s.end.timeIntervalSince(s.start) / 60).rounded())) min"
                return DerivedContribution(day: day, start: s.start, end: s.end, what: "sleep session of \(length)", sources: [sourceName(s.source)],
                                           amount: seconds / 60)
            }
        }
    }

    /// Entries of a built-in habit from any source: their values summed, or counted.
    static func entries(_ events: [HabitEvent], habit: String, count: Bool, _ boundary: DayBoundary) -> [DerivedContribution] {
        events.filter { Definition.key($0.habit) == habit && !HabitEvent.Mark.all.contains($0.label ?? "") }.map { e in
            let amount = count ? 1 : e.value ?? 0
            return DerivedContribution(day: boundary.day(of: e.time), start: e.time, end: e.time,
                                       what: count ? "vaping session" : "\(NumberText.plain(amount)) ml \(e.category ?? "drink")",
                                       sources: [sourceName(e.source)], amount: amount)
        }
    }
}

extension SleepSession {
    /// The sessions of one night that count: most sleep first, each kept unless it overlaps one
    /// kept (two devices recording the same hours count once; a nap apart is added). Ties go to
    /// the earlier start, then the earlier end, then the lower id: the same sessions in any
    /// order keep the same ones.
    public static func countedOnce(_ sessions: [SleepSession]) -> [SleepSession] {
        var kept: [SleepSession] = []
        for s in sessions.sorted(by: { a, b in
            if a.totalSleepS != b.totalSleepS { return a.totalSleepS > b.totalSleepS }
            return (a.start, a.end, a.id.description) < (b.start, b.end, b.id.description)
        })
        where !kept.contains(where: { $0.start < s.end && s.start < $0.end }) {
            kept.append(s)
        }
        return kept
    }
}
