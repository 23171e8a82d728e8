public import Foundation
import GRDB
public import HealthModel

/// The cache of derived habits' daily values (``Schema``'s `derived_days`): the views compute a
/// day once, and again only after a record near it changed. What a value is stays the pure
/// ``DerivedHabit``'s; this only keeps it.
extension HealthStore {
    /// Readies `habit`'s cached days before they are read: drops them all when `signature` (the
    /// definition's version and the day rule) differs from theirs, and drops every habit's days
    /// near the UTC days records were written on since the last call (two local days either
    /// side: any zone, any day start), forgetting those changes.
    public func prepareDerivedDays(habit: String, signature: String) async throws {
        try await writing { db in
            let stored = try String.fetchOne(db, sql: "SELECT signature FROM derived_signatures WHERE habit = ?", arguments: [habit])
            if stored != signature {
                try db.execute(sql: "DELETE FROM derived_days WHERE habit = ?", arguments: [habit])
                try db.execute(sql: "INSERT OR REPLACE INTO derived_signatures (habit, signature) VALUES (?, ?)", arguments: [habit, signature])
            }
            let touched = try String.fetchAll(db, sql: "SELECT utc_day FROM derived_changes")
            guard !touched.isEmpty else { return }
            var days = Set<String>()
            for text in touched {
                guard let day = LocalDay(text) else { continue }
                for offset in -2...2 { days.insert(day.adding(offset).description) }
            }
            let statement = try db.cachedStatement(sql: "DELETE FROM derived_days WHERE day = ?")
            for day in days { try statement.execute(arguments: [day]) }
            try db.execute(sql: "DELETE FROM derived_changes")
        }
    }

    /// `habit`'s cached days from `first` through `last`: each computed day's value (nil:
    /// computed, nothing counted); days not computed are absent.
    public func derivedDays(habit: String, from first: LocalDay, through last: LocalDay) async throws -> [LocalDay: Double?] {
        try await reading { db in
            var days: [LocalDay: Double?] = [:]
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
