public import Foundation
import HealthModel
public import HealthStore

/// An achievement derived from the data (never stored): what was reached and the local day
/// (or ISO week) it was reached on.
public struct Achievement: Sendable, Equatable, Encodable {
    /// `first_vape_free_day`, `water_streak_7`, `habit_streak_30`.
    public var kind: String
    /// The habit it is about.
    public var habit: String
    public var title: String
    /// The local day it was earned (`2026-03-29`).
    public var earned: String

    public init(kind: String, habit: String, title: String, earned: String) {
        self.kind = kind
        self.habit = habit
        self.title = title
        self.earned = earned
    }
}

public enum Achievements {
    /// The achievements reached (pure): `days` are local days from the first record to the one
    /// holding `now`; `vaping` the vaping sessions' totals per day; `progress` each counted
    /// habit's progress over `days` (daily goals; see ``HabitProgress``).
    ///
    /// - first vape-free day: the first full local day (over before `now`) without a vaping
    ///   session after a day with one;
    /// - 7-day water streak: the `hydration` goal met 7 days running;
    /// - 30-day streak: any habit's daily goal met 30 days running.
    public static func compute(days: Periods, now: Date, vaping: [BucketTotal], progress: [HabitProgress]) -> [Achievement] {
        var found: [(Int, Achievement)] = []
        let vapeDays = Set(vaping.filter { $0.count > 0 }.map(\.bucket))
        if let firstVape = vapeDays.min() {
            var i = firstVape + 1
            while i < days.count, days.bounds[i + 1] <= now {
                if !vapeDays.contains(i) {
                    found.append((i, Achievement(kind: "first_vape_free_day", habit: BuiltInHabit.vaping, title: "First vape-free day",
                                                 earned: days.label(i))))
                    break
                }
                i += 1
            }
        }
        for p in progress where p.unit == StatsPeriod.day.rawValue {
            if Definition.key(p.habit) == BuiltInHabit.hydration, let i = p.firstRun(of: 7) {
                found.append((i, Achievement(kind: "water_streak_7", habit: p.habit, title: "7-day water streak", earned: days.label(i))))
            }
            if let i = p.firstRun(of: 30) {
                found.append((i, Achievement(kind: "habit_streak_30", habit: p.habit, title: "30-day streak: \(p.habit)",
                                             earned: days.label(i))))
            }
        }
        return found.sorted { ($0.0, $0.1.kind, $0.1.habit) < ($1.0, $1.1.kind, $1.1.habit) }.map(\.1)
    }
}
