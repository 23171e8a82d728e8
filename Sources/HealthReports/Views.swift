public import Foundation
import HealthModel
public import HealthStore

/// The views' reads: what ``TodayReport``, ``HabitProgress`` and ``Achievements`` are computed
/// from, read from the store with totals per local day summed in SQL.
extension Reports {
    /// Every counted habit's progress up to `now` (streaks by day or by ISO week), and the local
    /// days from the earliest one's start (nil when no habit is counted and nothing was vaped).
    public static func progress(_ store: HealthStore, calendar: Calendar, now: Date)
        async throws -> (days: Periods?, progress: [HabitProgress], vaping: [BucketTotal])
    {
        var starts: [(HabitGoal, Date)] = []
        for d in try await store.definitions(.habit) {
            guard let goal = HabitGoal(d) else { continue }
            let first = try await store.habitSpan(d.name)?.first
            starts.append((goal, min(d.time, first ?? d.time)))
        }
        let vapeStart = try await store.habitSpan(BuiltInHabit.vaping)?.first
        guard let earliest = (starts.map(\.1) + [vapeStart].compactMap { $0 }).min(), earliest <= now else { return (nil, [], []) }
        let days = Periods(.day, calendar: calendar, from: earliest, through: now)
        var weeks: Periods?
        var progress: [HabitProgress] = []
        for (goal, start) in starts {
            let periods: Periods
            if goal.period == .week {
                if weeks == nil { weeks = Periods(.week, calendar: calendar, from: earliest, through: now) }
                periods = weeks!
            } else {
                periods = days
            }
            let totals = try await store.habitTotals(goal.name, bounds: periods.bounds)
            progress.append(HabitProgress.compute(goal, periods: periods, totals: totals, start: start, now: now))
        }
        let vaping = vapeStart == nil ? [] : try await store.habitTotals(BuiltInHabit.vaping, bounds: days.bounds)
        return (days, progress.sorted { $0.habit.lowercased() < $1.habit.lowercased() }, vaping)
    }

    /// Today's report at `now` in `calendar`'s time zone.
    public static func today(_ store: HealthStore, calendar: Calendar, now: Date) async throws -> TodayReport {
        let dayStart = calendar.startOfDay(for: now)
        let today = DateRange(since: dayStart, until: now.addingTimeInterval(0.001))
        let todayBounds = [dayStart, now.addingTimeInterval(0.001)]
        let (_, progress, _) = try await Self.progress(store, calendar: calendar, now: now)
        var byName: [String: HabitProgress] = [:]
        for p in progress { byName[Definition.key(p.habit)] = p }
        let input = TodayInput(
            now: now, calendar: calendar, definitions: try await store.definitions(),
            events: try await store.habitEvents(in: today),
            lastVape: try await store.lastHabitEvent(BuiltInHabit.vaping, atOrBefore: now),
            workouts: try await store.workouts(in: today),
            steps: try await store.measurementTotals(.steps, bounds: todayBounds).first?.sum ?? 0,
            measuredEnergyKcal: try await store.measurementTotals(.energy, bounds: todayBounds).first?.sum ?? 0,
            sleep: try await store.sleepSessions(endingIn: today), progress: byName)
        return TodayReport.compute(input)
    }

    /// The achievements reached by `now`.
    public static func achievements(_ store: HealthStore, calendar: Calendar, now: Date) async throws -> [Achievement] {
        let (days, progress, vaping) = try await Self.progress(store, calendar: calendar, now: now)
        guard let days else { return [] }
        return Achievements.compute(days: days, now: now, vaping: vaping, progress: progress)
    }
}
