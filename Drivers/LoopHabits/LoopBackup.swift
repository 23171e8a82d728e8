import CSVStream
public import DriverKit
public import Foundation
import ForeignSQLite
import GRDB
import HealthModel

/// Loop Habit Tracker's SQLite backup ("Loop Habits Backup yyyy-MM-dd HHmmss.db"), schema versions
/// 21 to 25 (`PRAGMA user_version`). Opened read-only and immutable (``ForeignSQLite``): the
/// user's file is never written.
public enum LoopBackup {
    public static let versions = 21...25

    /// Reads the backup at `path` into `sink`: the habits' definitions, then their check-ins in
    /// batches. An SQLite file that is not Loop's, or of another schema version: a ``DecodeError``
    /// before anything is emitted.
    public static func decode(path: String, zone: TimeZone, driver: String = "loop", into sink: some RecordSink) async throws {
        let queue: DatabaseQueue
        do {
            queue = try await ForeignSQLite.open(path, label: "loop-backup")
        } catch {
            throw DecodeError(file: path, at: .file, "cannot open as SQLite: \(error)")
        }
        defer { try? queue.close() }
        let source = Source(driver: driver, file: path)
        let habits: [(id: Int64, habit: LoopHabit)]
        do {
            habits = try await queue.read { db in try Self.habits(db, path: path) }
        } catch let error as DecodeError {
            throw error
        } catch {
            throw DecodeError(file: path, at: .file, "not a readable Loop Habit Tracker backup: \(error)")
        }
        try await sink.emit(habits.map { HealthRecord.definition($0.habit.definition(numeric: $0.habit.isNumeric ?? false, source: source)) })
        // Check-ins, a batch at a time by row id (bounded memory whatever the backup's size).
        let byID = Dictionary(uniqueKeysWithValues: habits.map { ($0.id, $0.habit) })
        let hasNotes = try await queue.read { db in try db.columns(in: "Repetitions").contains { $0.name.lowercased() == "notes" } }
        var after: Int64 = Int64.min
        while true {
            let from = after
            let rows: [Repetition] = try await queue.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT id, habit, timestamp, value, \(hasNotes ? "notes" : "NULL AS notes") FROM Repetitions
                    WHERE id > ? ORDER BY id LIMIT 2000
                    """, arguments: [from]).map { row in
                    Repetition(id: row["id"], habit: row["habit"], timestamp: row["timestamp"], value: row["value"], notes: row["notes"])
                }
            }
            guard let last = rows.last else { break }
            after = last.id
            var batch: [HealthRecord] = []
            for row in rows {
                guard let habitID = row.habit, let habit = byID[habitID] else { continue }  // an orphan Loop itself drops
                guard let timestamp = row.timestamp, let code = row.value else {
                    throw DecodeError(file: path, at: .file, "Repetitions row \(row.id): no timestamp or value")
                }
                let day = CalendarDay(utcDayOf: Date(timeIntervalSince1970: Double(timestamp) / 1000))
                if let event = LoopEntries.event(habit: habit.name, numeric: habit.isNumeric ?? false, unit: habit.unit, day: day, code: code,
                                                 note: row.notes, origin: .backup, zone: zone, source: source) {
                    batch.append(.habit(event))
                }
            }
            if !batch.isEmpty { try await sink.emit(batch) }
        }
    }

    /// One row of `Repetitions`, as read.
    private struct Repetition: Sendable {
        var id: Int64
        var habit: Int64?
        var timestamp: Int64?
        var value: Int?
        var notes: String?
    }

    private static func habits(_ db: Database, path: String) throws -> [(id: Int64, habit: LoopHabit)] {
        let tables = Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM sqlite_master WHERE type = 'table'"))
        guard tables.contains("habits"), tables.contains("repetitions") else {
            throw DecodeError(file: path, at: .file, "an SQLite file, but not a Loop Habit Tracker backup (no Habits and Repetitions tables)")
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard versions.contains(version) else {
            throw DecodeError(file: path, at: .file, version < versions.lowerBound
                ? "Loop backup schema version \(version) is older than \(versions.lowerBound): restore it in Loop, which upgrades it, and back up again"
                : "Loop backup schema version \(version) is newer than this importer reads (\(versions.lowerBound)-\(versions.upperBound))")
        }
        var out: [(Int64, LoopHabit)] = []
        for row in try Row.fetchAll(db, sql: """
            SELECT id, name, type, freq_num, freq_den, target_type, target_value, unit, position FROM Habits ORDER BY position, id
            """) {
            let id: Int64 = row["id"]
            let name: String = row["name"] ?? ""
            guard !LoopEntries.cleanName(name).isEmpty, LoopEntries.cleanName(name).count <= PhysicalLimits.habitNameCharacters.upperBound else {
                throw DecodeError(file: path, at: .file, "Habits row \(id): a name empty or longer than \(PhysicalLimits.habitNameCharacters.upperBound) characters")
            }
            let type: Int = row["type"] ?? 0
            let numerator: Int = row["freq_num"] ?? 1, denominator: Int = row["freq_den"] ?? 1
            let target: Double? = row["target_value"]
            let targetType: Int = row["target_type"] ?? 0
            out.append((id, LoopHabit(name: name, isNumeric: type == 1, unit: row["unit"], frequency: (numerator, max(1, denominator)),
                                      atMost: targetType == 1, targetValue: target.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil },
                                      position: row["position"])))
        }
        return out
    }
}
