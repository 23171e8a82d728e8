public import Foundation
public import HealthModel
public import HealthStore

/// Every counted habit's progress up to a time, with the daily totals it was computed from.
public struct HabitHistory: Sendable {
    /// The local days from the earliest counted habit's start (its definition or first entry)
    /// through now; nil when no habit is counted and nothing was vaped.
    public var days: Periods?
    /// Streaks and completion by day or by ISO week, sorted by habit name.
    public var progress: [HabitProgress]
    /// Vaping sessions per day of `days`.
    public var vaping: [BucketTotal]
    /// Every habit's entries per day of `days`, by case-folded name (``Definition/key(_:)``).
    public var daily: [String: [BucketTotal]]
    /// The days of `days` each habit was skipped on, by case-folded name.
    public var skipped: [String: Set<Int>] = [:]

    static let empty = HabitHistory(days: nil, progress: [], vaping: [], daily: [:])
}

/// A habit's entries on one local day.
public struct DailyTotal: Sendable, Equatable {
    /// `2026-03-29`.
    public var day: String
    public var entries: Int
    public var sum: Double
}

/// The views' reads: what ``TodayReport``, ``HabitProgress`` and ``Achievements`` are computed
/// from, read from the store with totals per local day summed in SQL.
extension Reports {
    /// Every counted habit's progress up to `now`: one read of every habit's daily totals,
    /// whatever the number of habits (weekly goals regroup them).
    public static func habitHistory(_ store: HealthStore, days boundary: DayBoundary, now: Date) async throws -> HabitHistory {
        var starts: [(HabitGoal, Date)] = []
        var derived: [String: (Definition, HabitDerivation)] = [:]
        let spans = try await store.everyHabitSpan()
        for d in try await store.definitions(.habit) {
            guard let goal = HabitGoal(d) else { continue }
            // A derived habit counts from its definition or its source's first record, whichever
            // is earlier (as a logged one from its first entry): its history fills itself.
            var first = spans[Definition.key(d.name)]?.first
            if case .habit(let habit) = d.body, let derivation = habit.derivation {
                derived[Definition.key(d.name)] = (d, derivation)
                first = try await derivationStart(store, derivation)
            }
            starts.append((goal, min(d.time, first ?? d.time)))
        }
        let vapeStart = spans[Definition.key(BuiltInHabit.vaping)]?.first
        guard let earliest = (starts.map(\.1) + [vapeStart].compactMap { $0 }).min(), earliest <= now else { return .empty }
        let days = Periods(.day, boundary: boundary, from: earliest, through: now)
        var daily = try await store.everyHabitTotals(bounds: days.bounds)
        // A derived habit's days are its values, never entries typed under its name.
        let derivedDaily = try await derivedTotals(store, Array(derived.values), days: days)
        for (key, (definition, _)) in derived { daily[key] = derivedDaily[definition.id] ?? [] }
        let weeks = starts.contains { $0.0.period == .week } ? Periods(.week, boundary: boundary, from: earliest, through: now) : nil
        // A week is seven local days: weekly totals are the daily ones regrouped.
        let weekly = weeks.map { weeks in daily.mapValues { weeks.regroup($0, from: days) } } ?? [:]
        let skips = try await skippedDays(store, days: days)
        var progress: [HabitProgress] = []
        for (goal, start) in starts {
            let key = Definition.key(goal.name)
            let (periods, totals) = goal.period == .week ? (weeks!, weekly[key]) : (days, daily[key])
            progress.append(HabitProgress.compute(goal, periods: periods, totals: totals ?? [], start: start, now: now,
                                                  skipped: goal.period == .day ? skips[key] ?? [] : []))
        }
        let vaping = daily[Definition.key(BuiltInHabit.vaping)] ?? []
        return HabitHistory(days: days, progress: progress.sorted { $0.habit.lowercased() < $1.habit.lowercased() }, vaping: vaping,
                            daily: daily, skipped: skips)
    }

    /// The days of `days` each habit was skipped on (a `skipped` mark), by case-folded name.
    public static func skippedDays(_ store: HealthStore, days: Periods) async throws -> [String: Set<Int>] {
        guard let first = days.bounds.first, let last = days.bounds.last else { return [:] }
        return try await store.everyHabitSkip(in: DateRange(since: first, until: last)).mapValues { Set($0.compactMap(days.index(of:))) }
    }

    /// Today's report at `now`: the day of `days` that holds it.
    public static func today(_ store: HealthStore, days: DayBoundary, now: Date) async throws -> TodayReport {
        let dayStart = days.start(ofDayHolding: now)
        let today = DateRange(since: dayStart, until: now.addingTimeInterval(0.001))
        let todayBounds = [dayStart, now.addingTimeInterval(0.001)]
        var byName: [String: HabitProgress] = [:]
        let history = try await Self.habitHistory(store, days: days, now: now)
        for p in history.progress { byName[Definition.key(p.habit)] = p }
        // Today's value of each derived habit: the history's last day, computed with the rest.
        let definitions = try await store.definitions()
        var derived: [String: Double] = [:]
        if let periods = history.days, let today = periods.index(of: now) {
            for d in definitions {
                guard case .habit(let habit) = d.body, habit.derivation != nil else { continue }
                let key = Definition.key(d.name)
                derived[key] = history.daily[key]?.first { $0.bucket == today }?.sum ?? 0
            }
        }
        let input = TodayInput(
            now: now, days: days, definitions: definitions,
            events: try await store.habitEvents(in: today),
            lastVape: try await store.lastHabitEvent(BuiltInHabit.vaping, atOrBefore: now),
            workouts: try await store.workouts(in: today),
            steps: try await store.measurementTotals(.steps, bounds: todayBounds).first?.sum ?? 0,
            measuredEnergyKcal: try await store.measurementTotals(.energy, bounds: todayBounds).first?.sum ?? 0,
            sleep: try await store.sleepSessions(endingIn: today), progress: byName, derived: derived)
        return TodayReport.compute(input)
    }

    /// The user's preferences (`define units`, `define day-start`), the defaults when none are
    /// defined.
    public static func preferences(_ store: HealthStore) async throws -> Preferences {
        guard case .preferences(let preferences)? = try await store.definition(.preferences, name: "preferences")?.body else {
            return Preferences()
        }
        return preferences
    }

    /// One habit's entries per day for the `count` days through the one holding `now`, oldest
    /// first: each day's label, number of entries and sum of values (as ``HealthStore/habitTotals(_:bounds:byCategory:)``
    /// counts them).
    public static func daily(_ store: HealthStore, habit: String, days: DayBoundary, count: Int, now: Date) async throws -> [DailyTotal] {
        let first = days.day(of: now).adding(1 - max(1, count))
        let periods = Periods(.day, boundary: days, from: days.start(of: first), through: now)
        var byBucket: [Int: BucketTotal] = [:]
        // A derived habit's days are its values (one "entry" a day with a value).
        if let definition = try await store.definition(.habit, name: habit), case .habit(let h) = definition.body, let derivation = h.derivation {
            for t in try await derivedTotals(store, definition, derivation, days: periods) { byBucket[t.bucket] = t }
        } else {
            for t in try await store.habitTotals(habit, bounds: periods.bounds) { byBucket[t.bucket] = t }
        }
        return (0..<periods.count).map { i in
            DailyTotal(day: periods.label(i), entries: byBucket[i]?.count ?? 0, sum: byBucket[i]?.sum ?? 0)
        }
    }

    /// The achievements reached by `now`.
    public static func achievements(_ store: HealthStore, days: DayBoundary, now: Date) async throws -> [Achievement] {
        let history = try await Self.habitHistory(store, days: days, now: now)
        guard let days = history.days else { return [] }
        return Achievements.compute(days: days, now: now, vaping: history.vaping, progress: history.progress)
    }
}
