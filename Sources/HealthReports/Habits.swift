public import Foundation
public import HealthModel
public import HealthStore

/// How a habit's entries count toward its goal.
public struct HabitGoal: Sendable, Equatable {
    public var name: String
    public var valueKind: HabitDefinition.ValueKind
    public var target: HabitTarget?

    public init(name: String, valueKind: HabitDefinition.ValueKind, target: HabitTarget?) {
        self.name = name
        self.valueKind = valueKind
        self.target = target
    }

    /// The goal of a habit definition; nil when the habit has none to count (a numeric or
    /// categorical habit without a target). A yes/no habit without a target counts a day
    /// with an entry.
    public init?(_ definition: Definition) {
        guard case .habit(let habit) = definition.body, habit.target != nil || habit.valueKind == .yesNo else { return nil }
        self.init(name: definition.name, valueKind: habit.valueKind, target: habit.target)
    }

    /// The unit of a streak: a local day, or an ISO week for a weekly target.
    public var period: StatsPeriod { target?.period == .week ? .week : .day }

    /// What a period's entries amount to: the sum of the values for a numeric habit, else the
    /// number of entries.
    public func amount(_ total: BucketTotal?) -> Double {
        guard let total else { return 0 }
        return valueKind == .numeric ? total.sum : Double(total.count)
    }

    /// Whether a period with these entries meets the goal.
    public func isMet(_ total: BucketTotal?) -> Bool {
        guard let target else { return (total?.count ?? 0) > 0 }
        return target.isMet(by: amount(total))
    }

    /// An at-most goal can be broken during the current period; an at-least one can still be met.
    var currentCanStillBeMet: Bool { target?.direction != .atMost }
}

/// A habit's streaks and completion rate up to now.
public struct HabitProgress: Sendable, Equatable, Encodable {
    public var habit: String
    /// `day` or `week`.
    public var unit: String
    /// Met periods in a row up to now. The current period counts once it is met; an unmet one
    /// that can still be met (an at-least goal, a day not over) does not break the streak; an
    /// at-most goal already exceeded does.
    public var currentStreak: Int
    public var longestStreak: Int
    /// Periods met, and periods counted (from the first entry or the definition, whichever is
    /// earlier, to now; the current period only once it is met or can no longer be).
    public var met: Int
    public var counted: Int
    /// `met / counted`, nil when nothing was counted.
    public var completionRate: Double?
    /// The first period counted (its label).
    public var since: String?
    /// The label of the period each streak length was first reached, by length: index `n - 1`
    /// holds the first period ending a run of `n` (for achievements).
    var firstReached: [Int]

    enum CodingKeys: String, CodingKey {
        case habit, unit, currentStreak = "current_streak", longestStreak = "longest_streak", met, counted
        case completionRate = "completion_rate", since
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(habit, forKey: .habit)
        try c.encode(unit, forKey: .unit)
        try c.encode(currentStreak, forKey: .currentStreak)
        try c.encode(longestStreak, forKey: .longestStreak)
        try c.encode(met, forKey: .met)
        try c.encode(counted, forKey: .counted)
        try c.encode(completionRate, forKey: .completionRate)
        try c.encode(since, forKey: .since)
    }

    /// The progress of `goal` over `periods` (which end with the current one, the one holding
    /// `now`), given the habit's totals per period. Periods before `start` are not counted.
    /// `skipped`: the periods the habit was skipped on purpose (a `skipped` mark, daily goals
    /// only): one not met is passed over, neither met nor missed; it neither breaks a streak nor
    /// extends it, and the completion leaves it out (docs/days.md).
    public static func compute(_ goal: HabitGoal, periods: Periods, totals: [BucketTotal], start: Date, now: Date,
                               skipped: Set<Int> = []) -> HabitProgress {
        var byBucket: [Int: BucketTotal] = [:]
        for t in totals {
            var merged = byBucket[t.bucket] ?? BucketTotal(bucket: t.bucket, count: 0, sum: 0)
            merged.count += t.count
            merged.sum += t.sum
            byBucket[t.bucket] = merged
        }
        let first = periods.index(of: max(start, periods.bounds[0])) ?? 0
        let current = periods.index(of: now) ?? periods.count - 1
        var progress = HabitProgress(habit: goal.name, unit: goal.period.rawValue, currentStreak: 0, longestStreak: 0, met: 0,
                                     counted: 0, completionRate: nil, since: nil, firstReached: [])
        guard first <= current else { return progress }
        progress.since = periods.label(first)
        var run = 0
        var lastCounted: Int?
        for i in first...current {
            let met = goal.isMet(byBucket[i])
            if !met && skipped.contains(i) { continue }
            if i == current && !met && goal.currentCanStillBeMet { break }
            lastCounted = i
            progress.counted += 1
            if met {
                progress.met += 1
                run += 1
                if run > progress.firstReached.count { progress.firstReached.append(i) }
                progress.longestStreak = max(progress.longestStreak, run)
            } else {
                run = 0
            }
        }
        // The run that reaches the current period, or the one before it when that is in progress;
        // skipped periods between them pass over.
        if let lastCounted, (lastCounted + 1..<max(lastCounted + 1, current)).allSatisfy({ skipped.contains($0) }) {
            progress.currentStreak = run
        }
        if progress.counted > 0 { progress.completionRate = Double(progress.met) / Double(progress.counted) }
        return progress
    }

    /// The period that completed the first run of `length` periods, if any.
    public func firstRun(of length: Int) -> Int? {
        length >= 1 && length <= firstReached.count ? firstReached[length - 1] : nil
    }
}
