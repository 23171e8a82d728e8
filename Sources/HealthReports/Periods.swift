public import Foundation
public import HealthModel
public import HealthStore

/// Consecutive periods of one kind (local days, ISO weeks, months, years) of a calendar, as the
/// instants that bound them: period `i` runs from `bounds[i]` (inclusive) to `bounds[i + 1]`.
/// Local days follow the calendar's time zone: a DST day is 23 or 25 hours long.
public struct Periods: Sendable {
    public let unit: StatsPeriod
    public let calendar: Calendar
    public let bounds: [Date]

    /// The periods from the one holding `from` through the one holding `through`.
    public init(_ unit: StatsPeriod, calendar: Calendar, from: Date, through: Date) {
        self.unit = unit
        self.calendar = calendar
        var bounds = [unit.bucket(from, calendar: calendar).start]
        while bounds[bounds.count - 1] <= through {
            bounds.append(Self.next(after: bounds[bounds.count - 1], unit: unit, calendar: calendar))
        }
        self.bounds = bounds
    }

    /// The start of the period after the one starting at `start`.
    static func next(after start: Date, unit: StatsPeriod, calendar: Calendar) -> Date {
        switch unit {
        case .day:
            // A day is 23 to 25 hours long: 36 hours on is always inside the next day.
            let plain = start.addingTimeInterval(86_400)
            let zone = calendar.timeZone
            if zone.secondsFromGMT(for: start) == zone.secondsFromGMT(for: plain) { return plain }
            return calendar.startOfDay(for: start.addingTimeInterval(36 * 3600))
        case .week:
            return unit.bucket(start.addingTimeInterval(8 * 86_400 - 12 * 3600), calendar: calendar).start
        case .month:
            return unit.bucket(start.addingTimeInterval(32 * 86_400), calendar: calendar).start
        case .year:
            return unit.bucket(start.addingTimeInterval(367 * 86_400), calendar: calendar).start
        }
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
    public func label(_ i: Int) -> String {
        unit.bucket(bounds[i].addingTimeInterval(1), calendar: calendar).label
    }

    /// The period's length in local days (a month 28-31, a DST day still 1).
    public func days(_ i: Int) -> Int {
        switch unit {
        case .day: return 1
        case .week: return 7
        case .month, .year:
            let from = calendar.dateComponents([.year, .month, .day], from: bounds[i])
            let to = calendar.dateComponents([.year, .month, .day], from: bounds[i + 1])
            return calendar.dateComponents([.day], from: from, to: to).day ?? 0
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
