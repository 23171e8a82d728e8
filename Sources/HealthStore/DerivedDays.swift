public import Foundation
import GRDB
public import HealthModel

/// The cache of derived habits' daily values (``Schema``'s `derived_days`): the views compute a
/// day once, and again only after a record near it changed. What a value is stays the pure
/// ``DerivedHabit``'s; this only keeps it.
extension HealthStore {
    /// Readies `habit`'s cached days before they are read: drops them all when `signature` (the
    /// definition's version and the day rule) differs from theirs, and drops every habit's days
    /// within the UTC days records written since the last call spanned, and two local days
    /// either side (any zone, any day start), forgetting those changes. A span longer than
    /// ``longestNotedSpan`` (only a record written behind the store's back can be) drops every
    /// cached day.
    public func prepareDerivedDays(habit: String, signature: String) async throws {
        try await writing { db in
            let stored = try String.fetchOne(db, sql: "SELECT signature FROM derived_signatures WHERE habit = ?", arguments: [habit])
            if stored != signature {
                try db.execute(sql: "DELETE FROM derived_days WHERE habit = ?", arguments: [habit])
                try db.execute(sql: "INSERT OR REPLACE INTO derived_signatures (habit, signature) VALUES (?, ?)", arguments: [habit, signature])
            }
            let spans = try Row.fetchAll(db, sql: "SELECT first_day, last_day FROM derived_changes")
            guard !spans.isEmpty else { return }
            var days = Set<String>(), everything = false
            for span in spans {
                guard let first = LocalDay(span[0] as String), let last = LocalDay(span[1] as String),
                      first <= last, first.days(to: last) <= Self.longestNotedSpan else {
                    everything = true
                    break
                }
                var day = first.adding(-2)
                while day <= last.adding(2) {
                    days.insert(day.description)
                    day = day.adding(1)
                }
            }
            if everything {
                try db.execute(sql: "DELETE FROM derived_days")
            } else {
                let statement = try db.cachedStatement(sql: "DELETE FROM derived_days WHERE day = ?")
                for day in days { try statement.execute(arguments: [day]) }
            }
            try db.execute(sql: "DELETE FROM derived_changes")
        }
    }

    /// The longest span of days a record may touch (a workout of ``PhysicalLimits/workoutSpanS``),
    /// with room to spare.
    static let longestNotedSpan = 31

    /// `habit`'s cached days from `first` through `last`: each computed day's value (nil:
    /// computed, nothing counted); days not computed are absent.
    public func derivedDays(habit: String, from first: LocalDay, through last: LocalDay) async throws -> [LocalDay: Double?] {
        try await reading { db in
            var days: [LocalDay: Double?] = [:]
            days.reserveCapacity(max(0, first.days(to: last) + 1))
            let rows = try Row.fetchCursor(db, sql: "SELECT day, value FROM derived_days WHERE habit = ? AND day BETWEEN ? AND ?",
                                           arguments: [habit, first.description, last.description])
            while let row = try rows.next() {
                if let day = LocalDay(row[0] as String) { days[day] = .some(row[1] as Double?) }
            }
            return days
        }
    }

    /// Keeps computed days of `habit` (nil: nothing counted).
    public func keepDerivedDays(habit: String, _ values: [(day: LocalDay, value: Double?)]) async throws {
        guard !values.isEmpty else { return }
        try await writing { db in
            let statement = try db.cachedStatement(sql: "INSERT OR REPLACE INTO derived_days (habit, day, value) VALUES (?, ?, ?)")
            for (day, value) in values { try statement.execute(arguments: [habit, day.description, value]) }
        }
    }
}

/// Readings reduced in SQL for the derived habits that read the most (heart rate each minute,
/// steps each minute): what ``DerivedHabit`` would reduce them to anyway, without a record in
/// memory per reading.
extension HealthStore {
    /// Per clock minute (minutes since 1970) within `range`, the highest and the lowest heart
    /// rate of any source (one read for the habits counting minutes above a rate and below one):
    /// heart-rate measurements and the samples of workouts that started up to `lookBack` seconds
    /// before `range`.
    public func heartRateByMinute(in range: DateRange, lookBack: TimeInterval) async throws
        -> [(minute: Int, highest: Double, lowest: Double)] {
        let (condition, arguments) = range.condition("time")
        let workouts = DateRange(since: range.since.map { $0.addingTimeInterval(-lookBack) }, until: range.until).condition("w.start_time")
        let from = range.since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude
        let to = range.until?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude
        return try await reading { db in
            var minutes: [Int: (highest: Double, lowest: Double)] = [:]
            // Grouped by the stored time's minute text (`YYYY-MM-DDTHH:MM`, UTC): no date
            // arithmetic per reading in SQL; each minute's text is read once here.
            let readings = try Row.fetchCursor(db, sql: """
                SELECT substr(time, 1, 16) AS m, max(value), min(value) FROM measurements
                WHERE kind = 'heart_rate' AND deleted = 0 AND value > 0 AND \(condition) GROUP BY m
                """, arguments: arguments)
            while let row = try readings.next() {
                guard let minute = Self.minute(row[0]) else { continue }
                minutes[minute] = (row[1], row[2])
            }
            let samples = try Row.fetchCursor(db, sql: """
                SELECT CAST(s.time / 60 AS INTEGER) AS m, max(s.heart_rate), min(s.heart_rate) FROM workouts w
                JOIN samples s ON s.workout_id = w.id
                WHERE w.deleted = 0 AND \(workouts.sql) AND s.heart_rate > 0 AND s.time >= ? AND s.time < ? GROUP BY m
                """, arguments: workouts.arguments + [from, to])
            while let row = try samples.next() {
                let m: Int = row[0], highest: Double = row[1], lowest: Double = row[2]
                minutes[m] = minutes[m].map { (max($0.highest, highest), min($0.lowest, lowest)) } ?? (highest, lowest)
            }
            return minutes.map { ($0.key, $0.value.highest, $0.value.lowest) }
        }
    }

    /// Steps within `range` summed per source and slot of `slotMinutes` (a divisor of 15; slots
    /// start at multiples of it since 1970): `slot` is the slot's start in minutes since 1970.
    public func stepsBySlot(in range: DateRange, slotMinutes: Int) async throws -> [(source: Source, slot: Int, steps: Double)] {
        let (condition, arguments) = range.condition("time")
        return try await reading { db in
            // Summed per source and minute text in SQL (no date arithmetic per reading), then
            // per slot here.
            struct Key: Hashable { var driver: String, device: String?, slot: Int }
            var slots: [Key: Double] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT source_driver, source_device, substr(time, 1, 16) AS m, total(value)
                FROM measurements WHERE kind = 'steps' AND deleted = 0 AND value > 0 AND \(condition)
                GROUP BY source_driver, source_device, m
                """, arguments: arguments)
            while let row = try rows.next() {
                guard let minute = Self.minute(row[2]) else { continue }
                let slot = (minute >= 0 ? minute : minute - slotMinutes + 1) / slotMinutes * slotMinutes
                slots[Key(driver: row[0], device: row[1], slot: slot), default: 0] += row[3] as Double
            }
            return slots.map { (Source(driver: $0.key.driver, device: $0.key.device), $0.key.slot, $0.value) }
        }
    }

    /// Minutes since 1970 of a stored time's minute text (`2026-03-29T07:05`).
    static func minute(_ text: String) -> Int? {
        ISO8601.parse(text).map { Int(($0.timeIntervalSince1970 / 60).rounded(.down)) }
    }
}
