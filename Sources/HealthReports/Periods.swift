public import Foundation
public import HealthModel
public import HealthStore

/// Consecutive periods of one kind (local days, ISO weeks, months, years) as the instants that
/// bound them: period `i` runs from `bounds[i]` (inclusive) to `bounds[i + 1]`. Days are
/// ``DayBoundary``'s (a day start in a time zone: a DST day is 23 or 25 hours long); a week,
/// month or year starts at the start of its first day.
public struct Periods: Sendable {
    public let unit: StatsPeriod
    public let boundary: DayBoundary
    public let bounds: [Date]

    /// The Gregorian calendar in the days' time zone.
    public var calendar: Calendar { boundary.calendar }

    /// The periods from the one holding `from` through the one holding `through`.
    public init(_ unit: StatsPeriod, boundary: DayBoundary, from: Date, through: Date) {
        self.unit = unit
        self.boundary = boundary
        var first = unit.first(of: boundary.day(of: from))
        var bounds = [boundary.start(of: first)]
        let zone = boundary.timeZone
        while bounds[bounds.count - 1] <= through {
            first = unit.next(after: first)
            let previous = bounds[bounds.count - 1]
            // A day 24 hours on when the clocks did not change in between (nearly always): the
            // same wall time, without the calendar's slower arithmetic.
            let plain = previous.addingTimeInterval(86_400)
            if unit == .day, zone.secondsFromGMT(for: previous) == zone.secondsFromGMT(for: plain) {
                bounds.append(plain)
            } else {
                bounds.append(boundary.start(of: first))
            }
        }
        self.bounds = bounds
    }

    /// Periods of days that start at midnight in `calendar`'s time zone.
    public init(_ unit: StatsPeriod, calendar: Calendar, from: Date, through: Date) {
        self.init(unit, boundary: .midnight(in: calendar.timeZone), from: from, through: through)
    }

    public var count: Int { bounds.count - 1 }

    /// The period holding `date`, or nil outside them.
    public func index(of date: Date) -> Int? {
        guard let first = bounds.first, let last = bounds.last, date >= first, date < last else { return nil }
        var low = 0, high = bounds.count - 1
        while high - low > 1 {
            let mid = (low + high) / 2
            if bounds[mid] <= date { low = mid } else { high = mid }
        }
        return low
    }

    /// The period's label (`2026-03-29`, `2026-W13`, `2026-03`, `2026`).
    public func label(_ i: Int) -> String { unit.label(boundary.day(of: bounds[i])) }

    /// The period's length in local days (a month 28-31, a DST day still 1).
    public func days(_ i: Int) -> Int {
        switch unit {
        case .day: return 1
        case .week: return 7
        case .month, .year: return boundary.day(of: bounds[i]).days(to: boundary.day(of: bounds[i + 1]))
        }
    }

    /// Totals of `events` per period, as the store's ``HealthStore/habitTotals(_:bounds:byCategory:)``
    /// computes them in SQL (for tests and callers that hold records).
    public func totals(of events: [HabitEvent], byCategory: Bool = false) -> [BucketTotal] {
        var totals: [String: BucketTotal] = [:]
        for event in events {
            guard let i = index(of: event.time) else { continue }
            let key = byCategory ? event.category : nil
            let slot = "\(i)\u{0}\(key ?? "")"
            var total = totals[slot] ?? BucketTotal(bucket: i, key: key, count: 0, sum: 0)
            total.count += 1
            total.sum += event.value ?? 0
            totals[slot] = total
        }
        return totals.values.sorted { ($0.bucket, $0.key ?? "") < ($1.bucket, $1.key ?? "") }
    }

    /// `daily` (totals per bucket of `days`, local days of the same calendar) summed into these
    /// periods, each day into the one that holds its start: weeks, months and years are whole
    /// local days. Days outside these periods are left out.
    public func regroup(_ daily: [BucketTotal], from days: Periods) -> [BucketTotal] {
        var totals: [Int: BucketTotal] = [:]
        for t in daily {
            guard let i = index(of: days.bounds[t.bucket]) else { continue }
            totals[i, default: BucketTotal(bucket: i, count: 0, sum: 0)].count += t.count
            totals[i]!.sum += t.sum
        }
        return totals.values.sorted { $0.bucket < $1.bucket }
    }
}

extension Calendar {
    /// The Gregorian calendar in `zone` (what every report uses).
    public static func gregorian(in zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
}
