import Foundation
import GRDB
public import HealthModel

/// One habit, one name: a habit's id derives from its case-folded name (``Definition/key(_:)``),
/// but its events carry the name as written (`Reading` by one app, `reading` by an older
/// version). Totals match every spelling; drivers' events take the definition's.
extension HealthStore {
    /// The spellings of the habit `name` its events are stored under (`Reading`, `reading`): the
    /// distinct names whose ``Definition/key(_:)`` is the name's, `name` itself always among them.
    /// One index seek per distinct name (a skip scan), not a pass over every event.
    static func spellings(_ db: Database, of name: String) throws -> [String] {
        let key = Definition.key(name)
        let stored = try String.fetchAll(db, sql: "WITH RECURSIVE \(storedNamesCTE) SELECT name FROM n")
        return [name] + stored.filter { $0 != name && Definition.key($0) == key }
    }

    /// A CTE `n(name)`: every name habit events are stored under, deleted ones included, by one
    /// index seek per distinct name (a skip scan), not a pass over every event.
    static let storedNamesCTE = """
        n0(name) AS (
            SELECT min(habit) FROM habit_events
            UNION ALL
            SELECT (SELECT min(habit) FROM habit_events WHERE habit > n0.name) FROM n0 WHERE n0.name IS NOT NULL),
        n(name) AS MATERIALIZED (SELECT name FROM n0 WHERE name IS NOT NULL)
        """

    /// `records` with each habit event's name spelled as its habit's definition (`reading` becomes
    /// `Reading` when `Reading` is defined): one name per habit for what drivers emit. Events of a
    /// habit not defined keep their name. Reads the definitions only when there are habit events.
    public func canonicalHabitNames(_ records: [HealthRecord]) async throws -> [HealthRecord] {
        guard records.contains(where: { if case .habit = $0 { true } else { false } }) else { return records }
        var names: [String: String] = [:]
        for d in try await definitions(.habit) { names[Definition.key(d.name)] = d.name }
        return records.map { record in
            guard case .habit(var h) = record, let name = names[Definition.key(h.habit)], name != h.habit else { return record }
            h.habit = name
            return .habit(h)
        }
    }

    /// `(?, ?, ?)` for `count` values.
    static func placeholders(_ count: Int) -> String {
        "(" + Array(repeating: "?", count: max(count, 1)).joined(separator: ", ") + ")"
    }
}
