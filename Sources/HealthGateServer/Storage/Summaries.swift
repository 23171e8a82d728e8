import Foundation
public import HealthModel
public import SyncProtocol

/// The day start of a user's synced preferences and the span of their records' times.
public struct SummaryScope: Sendable, Equatable {
    /// Minutes after midnight (``Preferences/dayStartMinutes``; 0 without preferences).
    public var dayStartMinutes: Int
    /// From the earliest start among the user's records to two days (the longest night) after
    /// the latest (Unix seconds); nil without records.
    public var span: ClosedRange<Double>?

    public init(dayStartMinutes: Int, span: ClosedRange<Double>?) {
        self.dayStartMinutes = dayStartMinutes
        self.span = span
    }

    /// The day start of a preferences record's stored body (`{"preferences":{"day_start":"04:00"}}`),
    /// 0 when it has none or it cannot be read.
    public static func dayStart(preferencesBody body: String?) -> Int {
        guard let body, let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let preferences = json["preferences"] as? [String: Any], let text = preferences["day_start"] as? String else { return 0 }
        return DayBoundary.minutes(text) ?? 0
    }
}

/// The periods a summary counts in, laid out by the one day rule (``DayBoundary``,
/// ``StatsPeriod``): each labelled by its first day and bounded by two instants, so that a store
/// only sums the records between two numbers, whatever the zone, the day start or the clocks do.
public struct SummaryPeriods: Sendable, Equatable {
    /// The first day of each period, `YYYY-MM-DD`, oldest first.
    public private(set) var labels: [String] = []
    /// Unix seconds: period `i` is `edges[i] ..< edges[i + 1]` (one more edge than labels).
    public private(set) var edges: [Double] = []

    /// At most this many periods in one answer (137 years of days): a request for more is refused
    /// rather than laid out.
    public static let limit = 50_000

    public struct TooMany: Error, Equatable {}

    /// The periods of `period` covering `span` (the records' times), cut to the days from `since`
    /// to `until` (both included) when given.
    public init(period: StatsPeriod, days: DayBoundary, span: ClosedRange<Double>, since: LocalDay?, until: LocalDay?) throws(TooMany) {
        let lower = since.map { days.start(of: $0).timeIntervalSince1970 } ?? -Double.infinity
        let upper = until.map { days.start(of: $0.adding(1)).timeIntervalSince1970 } ?? Double.infinity
        let from = max(span.lowerBound, lower), to = min(span.upperBound, upper.nextDown)
        guard from <= to else { return }
        var day = period.first(of: days.day(of: Date(timeIntervalSince1970: from)))
        let last = days.day(of: Date(timeIntervalSince1970: to))
        guard day.days(to: last) / (period == .day ? 1 : period == .week ? 7 : 28) < Self.limit else { throw TooMany() }
        while day <= last {
            labels.append(day.description)
            edges.append(max(days.start(of: day).timeIntervalSince1970, lower))
            day = period.next(after: day)
        }
        edges.append(min(days.start(of: day).timeIntervalSince1970, upper))
    }

    /// The index of the period holding `time`, if any.
    public func index(of time: Double) -> Int? {
        guard let first = edges.first, let last = edges.last, time >= first, time < last else { return nil }
        var low = 0, high = edges.count - 1  // edges[low] <= time < edges[high]
        while high - low > 1 {
            let mid = (low + high) / 2
            if edges[mid] <= time { low = mid } else { high = mid }
        }
        return low
    }

    /// `[[label, from, to], ...]` as JSON, for a store that reads the periods as one parameter.
    public var json: String {
        "[" + labels.indices.map { "[\"\(labels[$0])\",\(edges[$0]),\(edges[$0 + 1])]" }.joined(separator: ",") + "]"
    }
}

/// Puts a store's sums together into buckets, the same way for every store: habit names of one
/// key counted as one habit under its definition's spelling, categories sorted, sleep counted in
/// the period of its end.
public struct SummaryBuilder {
    public let periods: SummaryPeriods
    private var buckets: [String: SummaryResponse.Bucket] = [:]
    private var habits: [String: [String: SummaryResponse.HabitTotal]] = [:]
    private var spelling: [String: String] = [:]

    public init(periods: SummaryPeriods) { self.periods = periods }

    /// Habit marks (skipped, unknown, not done) are not entries: a store leaves out the habit
    /// events whose label is one of these.
    public static let marks = HabitEvent.Mark.all.sorted()

    /// A habit's name as its definition spells it.
    public mutating func define(habit name: String) { spelling[Definition.key(name)] = name }

    /// The totals of the records (not sleep) that start in the period `label`.
    public mutating func add(_ label: String, workouts: Int, activeS: Double, distanceM: Double, energyKcal: Double,
                             habitEvents: Int, measurements: Int) {
        var bucket = buckets[label] ?? SummaryResponse.Bucket(start: label)
        bucket.workouts += workouts
        bucket.activeS += activeS
        bucket.distanceM += distanceM
        bucket.energyKcal += energyKcal
        bucket.habitEvents += habitEvents
        bucket.measurements += measurements
        buckets[label] = bucket
    }

    /// A sleep session of `seconds` asleep ending at `end` (Unix seconds), if a period holds it.
    public mutating func addSleep(end: Double, seconds: Double) {
        guard let i = periods.index(of: end) else { return }
        let label = periods.labels[i]
        buckets[label, default: SummaryResponse.Bucket(start: label)].sleepS += seconds
    }

    /// Habit events of one habit spelling and category starting in the period `label`.
    public mutating func addHabit(_ label: String, habit stored: String?, category: String?, events: Int, value: Double, unit: String?) {
        let stored = stored ?? ""
        let key = Definition.key(stored)
        var total = habits[label]?[key] ?? SummaryResponse.HabitTotal(habit: spelling[key] ?? stored, events: 0, value: 0)
        total.events += events
        total.value += value
        total.unit = total.unit ?? unit
        if let category {
            if let i = total.categories.firstIndex(where: { $0.category == category }) {
                total.categories[i].events += events
            } else {
                total.categories.append(SummaryResponse.CategoryCount(category: category, events: events))
                total.categories.sort { $0.category < $1.category }
            }
        }
        habits[label, default: [:]][key] = total
    }

    /// The buckets, oldest first.
    public func result() -> [SummaryResponse.Bucket] {
        buckets.values.sorted { $0.start < $1.start }.map { bucket in
            var bucket = bucket
            bucket.habits = (habits[bucket.start] ?? [:]).values.sorted { $0.habit < $1.habit }
            return bucket
        }
    }
}
