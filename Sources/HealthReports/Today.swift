public import Foundation
public import HealthModel
public import HealthStore

/// What `healthgate today` is computed from: today's records, the definitions and the habits'
/// progress (streaks), read by the caller; nothing here reads the clock or the database.
public struct TodayInput: Sendable {
    public var now: Date
    /// Where days start (``DayBoundary``).
    public var days: DayBoundary
    public var definitions: [Definition]
    /// Habit events of today's local day up to `now` (drinks, vaping sessions, meals, habits).
    public var events: [HabitEvent]
    /// The latest vaping session at or before `now` (any day).
    public var lastVape: HabitEvent?
    /// Workouts starting today.
    public var workouts: [WorkoutSummary]
    /// Steps today, overlapping sources counted once (``HealthStore/measurementTotals(_:bounds:)``).
    public var steps: Double
    /// Energy burned today that measurements recorded (not workouts), overlaps counted once.
    public var measuredEnergyKcal: Double
    /// Sleep sessions ending today up to `now`.
    public var sleep: [SleepSession]
    /// Each counted habit's progress up to now, by habit name (case-folded).
    public var progress: [String: HabitProgress]
    /// Each derived habit's value today so far, by habit name (case-folded).
    public var derived: [String: Double]

    public init(now: Date, days: DayBoundary, definitions: [Definition] = [], events: [HabitEvent] = [], lastVape: HabitEvent? = nil,
                workouts: [WorkoutSummary] = [], steps: Double = 0, measuredEnergyKcal: Double = 0, sleep: [SleepSession] = [],
                progress: [String: HabitProgress] = [:], derived: [String: Double] = [:]) {
        self.now = now
        self.days = days
        self.definitions = definitions
        self.events = events
        self.lastVape = lastVape
        self.workouts = workouts
        self.steps = steps
        self.measuredEnergyKcal = measuredEnergyKcal
        self.sleep = sleep
        self.progress = progress
        self.derived = derived
    }
}

/// `healthgate today`: water against the goal, time since the last vaping session, habits done
/// today with their streaks, energy eaten and burned, last night's sleep, steps.
public struct TodayReport: Sendable, Equatable, Encodable {
    public struct Water: Sendable, Equatable, Encodable {
        public var drinks: Int
        public var ml: Double
        /// The daily goal in ml (the `hydration` habit's at-least target per day), nil without one.
        public var goalMl: Double?
        /// The preferred volume unit (`ml` or `fl_oz`) and the amounts in it.
        public var unit: String
        public var amount: Double
        public var goal: Double?
        /// `ml / goalMl` (may pass 1).
        public var progress: Double?
        public var met: Bool?

        enum CodingKeys: String, CodingKey { case drinks, ml, goalMl = "goal_ml", unit, amount, goal, progress, met }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(drinks, forKey: .drinks)
            try c.encode(ml, forKey: .ml)
            try c.encode(goalMl, forKey: .goalMl)
            try c.encode(unit, forKey: .unit)
            try c.encode(amount, forKey: .amount)
            try c.encode(goal, forKey: .goal)
            try c.encode(progress, forKey: .progress)
            try c.encode(met, forKey: .met)
        }
    }

    public struct Vaping: Sendable, Equatable, Encodable {
        public var sessions: Int
        /// The at-most goal per day (the `vaping` habit's target), nil without one.
        public var goalAtMost: Double?
        public var withinGoal: Bool?
        public var lastSession: Date?
        public var sinceLastS: Double?

        enum CodingKeys: String, CodingKey {
            case sessions, goalAtMost = "goal_at_most", withinGoal = "within_goal", lastSession = "last_session"
            case sinceLastS = "since_last_s"
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(sessions, forKey: .sessions)
            try c.encode(goalAtMost, forKey: .goalAtMost)
            try c.encode(withinGoal, forKey: .withinGoal)
            try c.encode(lastSession.map(ISO8601.string), forKey: .lastSession)
            try c.encode(sinceLastS, forKey: .sinceLastS)
        }
    }

    public struct Habit: Sendable, Equatable, Encodable {
        public var name: String
        public var kind: String?
        public var unit: String?
        public var entries: Int
        /// The sum of the values (numeric) or the number of entries.
        public var amount: Double
        public var target: Double?
        public var targetPeriod: String?
        public var direction: String?
        /// Today meets the goal (a yes/no habit without a target: done today).
        public var met: Bool?
        public var currentStreak: Int?
        public var longestStreak: Int?
        public var streakUnit: String?

        enum CodingKeys: String, CodingKey {
            case name, kind, unit, entries, amount, target, targetPeriod = "target_period", direction, met
            case currentStreak = "current_streak", longestStreak = "longest_streak", streakUnit = "streak_unit"
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(kind, forKey: .kind)
            try c.encode(unit, forKey: .unit)
            try c.encode(entries, forKey: .entries)
            try c.encode(amount, forKey: .amount)
            try c.encode(target, forKey: .target)
            try c.encode(targetPeriod, forKey: .targetPeriod)
            try c.encode(direction, forKey: .direction)
            try c.encode(met, forKey: .met)
            try c.encode(currentStreak, forKey: .currentStreak)
            try c.encode(longestStreak, forKey: .longestStreak)
            try c.encode(streakUnit, forKey: .streakUnit)
        }
    }

    public struct Energy: Sendable, Equatable, Encodable {
        public var meals: Int
        public var eatenKcal: Double
        public var workouts: Int
        /// Workouts' energy plus `energy` measurements.
        public var burnedKcal: Double
        enum CodingKeys: String, CodingKey { case meals, eatenKcal = "eaten_kcal", workouts, burnedKcal = "burned_kcal" }
    }

    public struct Sleep: Sendable, Equatable, Encodable {
        public var start: Date
        public var end: Date
        public var asleepS: Double
        enum CodingKeys: String, CodingKey { case start, end, asleepS = "asleep_s" }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(ISO8601.string(start), forKey: .start)
            try c.encode(ISO8601.string(end), forKey: .end)
            try c.encode(asleepS, forKey: .asleepS)
        }
    }

    /// The local date (`2026-03-29`), the time zone and the instant the report is for.
    public var date: String
    public var timeZone: String
    public var now: Date
    public var water: Water
    public var vaping: Vaping
    public var habits: [Habit]
    public var energy: Energy
    public var sleep: Sleep?
    public var steps: Double

    enum CodingKeys: String, CodingKey { case date, timeZone = "time_zone", now, water, vaping, habits, energy, sleep, steps }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(date, forKey: .date)
        try c.encode(timeZone, forKey: .timeZone)
        try c.encode(ISO8601.string(now), forKey: .now)
        try c.encode(water, forKey: .water)
        try c.encode(vaping, forKey: .vaping)
        try c.encode(habits, forKey: .habits)
        try c.encode(energy, forKey: .energy)
        try c.encode(sleep, forKey: .sleep)
        try c.encode(steps, forKey: .steps)
    }

    /// Today's report from `input` (pure).
    public static func compute(_ input: TodayInput) -> TodayReport {
        let dayStart = input.days.start(ofDayHolding: input.now)
        let today = input.events.filter { $0.time >= dayStart && $0.time <= input.now && $0.isCheckIn }
        func habits(_ name: String) -> [HabitEvent] { today.filter { Definition.key($0.habit) == Definition.key(name) } }
        var definitions: [String: (Definition, HabitDefinition)] = [:]
        for d in input.definitions { if case .habit(let h) = d.body { definitions[Definition.key(d.name)] = (d, h) } }
        var preferences = Preferences()
        for d in input.definitions { if case .preferences(let p) = d.body { preferences = p } }

        // Water.
        let drinks = habits(BuiltInHabit.hydration)
        let ml = drinks.reduce(0) { $0 + ($1.value ?? 0) }
        let goalMl = definitions[BuiltInHabit.hydration]?.1.target?.daily(.atLeast)
        let scale = preferences.volume == .flOz ? 1 / Units.millilitresPerFluidOunce : 1
        let water = Water(drinks: drinks.count, ml: ml, goalMl: goalMl, unit: preferences.volume.rawValue, amount: ml * scale,
                          goal: goalMl.map { $0 * scale }, progress: goalMl.flatMap { $0 > 0 ? ml / $0 : nil },
                          met: goalMl.map { ml >= $0 })

        // Vaping.
        let vapes = habits(BuiltInHabit.vaping)
        let vapeGoal = definitions[BuiltInHabit.vaping]?.1.target?.daily(.atMost)
        let last = input.lastVape.flatMap { $0.time <= input.now ? $0.time : nil }
        let vaping = Vaping(sessions: vapes.count, goalAtMost: vapeGoal, withinGoal: vapeGoal.map { Double(vapes.count) <= $0 },
                            lastSession: last, sinceLastS: last.map { input.now.timeIntervalSince($0) })

        // Habits: every defined one, and any other with entries today.
        var names = definitions.values.map(\.0.name)
        for e in today where definitions[Definition.key(e.habit)] == nil && !names.contains(where: { Definition.key($0) == Definition.key(e.habit) }) {
            names.append(e.habit)
        }
        let rows = names.sorted { $0.lowercased() < $1.lowercased() }.map { name -> Habit in
            let key = Definition.key(name)
            let entries = habits(name)
            let definition = definitions[key]?.1
            let numeric = definition.map { $0.valueKind == .numeric } ?? entries.contains { $0.value != nil && $0.category == nil }
            var amount = numeric ? entries.reduce(0) { $0 + ($1.value ?? 0) } : Double(entries.count)
            if definition?.derivation != nil { amount = input.derived[key] ?? 0 }
            let target = definition?.target
            var met: Bool?
            if let target, target.period == .day { met = target.isMet(by: amount) }
            if target == nil, definition?.valueKind == .yesNo { met = !entries.isEmpty }
            let progress = input.progress[key]
            return Habit(name: name, kind: definition?.valueKind.rawValue, unit: definition?.unit ?? entries.first?.unit,
                         entries: entries.count, amount: amount, target: target?.amount, targetPeriod: target?.period.rawValue,
                         direction: target?.direction.rawValue, met: met, currentStreak: progress?.currentStreak,
                         longestStreak: progress?.longestStreak, streakUnit: progress?.unit)
        }

        // Energy.
        let meals = habits(BuiltInHabit.meal)
        let workouts = input.workouts.filter { w in ISO8601.parse(w.start).map { $0 >= dayStart && $0 <= input.now } ?? false }
        let energy = Energy(meals: meals.count, eatenKcal: meals.reduce(0) { $0 + ($1.value ?? 0) }, workouts: workouts.count,
                            burnedKcal: workouts.reduce(0) { $0 + ($1.energyKcal ?? 0) } + input.measuredEnergyKcal)

        // Last night: the longest session ending today (a nap is shorter).
        let night = input.sleep.filter { $0.end >= dayStart && $0.end <= input.now }
            .max { ($0.totalSleepS, $0.end) < ($1.totalSleepS, $1.end) }
        let steps = input.steps

        return TodayReport(date: input.days.day(of: input.now).description, timeZone: input.days.timeZone.identifier,
                           now: input.now, water: water, vaping: vaping, habits: rows, energy: energy,
                           sleep: night.map { Sleep(start: $0.start, end: $0.end, asleepS: $0.totalSleepS) }, steps: steps)
    }
}
