public import Foundation
import GRDB
public import HealthModel
import SyncProtocol

/// What an edit changes in a record: each field given (non-nil) replaces the stored one. Which
/// fields a record has depends on its type (see ``HealthStore/edit(id:changes:now:)``); its time
/// and its type never change.
public struct RecordChanges: Sendable, Equatable {
    /// Habit event: its value; measurement: its value (in the kind's unit); body profile: the weight in kg.
    public var value: Double?
    public var note: String?
    /// Habit event: its category.
    public var category: String?
    public var label: String?
    /// Habit event, or a habit definition: its unit.
    public var unit: String?
    /// Workout: its energy; saved meal: its kcal.
    public var energyKcal: Double?
    public var distanceM: Double?
    public var sport: String?
    /// Workout or sleep session: the new duration in seconds; the start stays, the end moves.
    public var durationS: Double?
    /// Habit definition: the goal's amount, period and direction; a part not given keeps the
    /// stored goal's (a habit without a goal needs the amount).
    public var targetAmount: Double?
    public var targetPeriod: HabitTarget.Period?
    public var targetDirection: HabitTarget.Direction?
    /// Habit definition: drop the goal.
    public var removeTarget: Bool
    /// Categorical habit definition: the new list of categories (replaces the stored one).
    public var categories: [String]?
    /// Saved meal: ingredients to add, or to replace the one of the same name (case-insensitive).
    public var ingredients: [SavedMeal.Ingredient]
    /// Saved meal: the names of ingredients to remove (case-insensitive).
    public var removeIngredients: [String]
    /// A new time: always refused (a record's date cannot change); here so that callers say so.
    public var time: Date?

    public init(value: Double? = nil, note: String? = nil, category: String? = nil, label: String? = nil, unit: String? = nil,
                energyKcal: Double? = nil, distanceM: Double? = nil, sport: String? = nil, durationS: Double? = nil,
                targetAmount: Double? = nil, targetPeriod: HabitTarget.Period? = nil, targetDirection: HabitTarget.Direction? = nil,
                removeTarget: Bool = false, categories: [String]? = nil, ingredients: [SavedMeal.Ingredient] = [],
                removeIngredients: [String] = [], time: Date? = nil) {
        self.value = value
        self.note = note
        self.category = category
        self.label = label
        self.unit = unit
        self.energyKcal = energyKcal
        self.distanceM = distanceM
        self.sport = sport
        self.durationS = durationS
        self.targetAmount = targetAmount
        self.targetPeriod = targetPeriod
        self.targetDirection = targetDirection
        self.removeTarget = removeTarget
        self.categories = categories
        self.ingredients = ingredients
        self.removeIngredients = removeIngredients
        self.time = time
    }

    /// The fields given, by the names the CLI's options use.
    var given: [String] {
        var names: [String] = []
        if value != nil { names.append("value") }
        if note != nil { names.append("note") }
        if category != nil || categories != nil { names.append("category") }
        if label != nil { names.append("label") }
        if unit != nil { names.append("unit") }
        if energyKcal != nil { names.append("kcal") }
        if distanceM != nil { names.append("distance") }
        if sport != nil { names.append("sport") }
        if durationS != nil { names.append("duration") }
        if targetAmount != nil { names.append("target") }
        if targetPeriod != nil { names.append("per") }
        if targetDirection != nil { names.append(targetDirection == .atMost ? "at-most" : "at-least") }
        if removeTarget { names.append("no-target") }
        if !ingredients.isEmpty { names.append("ingredient") }
        if !removeIngredients.isEmpty { names.append("remove-ingredient") }
        return names
    }
}

/// Why an edit or a deletion was refused (nothing was written).
public struct EditError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One version of a record, as ``HealthStore/history(id:)`` lists it.
public struct RecordVersion: Sendable, Equatable {
    public var id: String
    public var type: RecordType
    public var version: Int
    /// A tombstone: the record was deleted at this version.
    public var deleted: Bool
    /// The record at this version (nil for a tombstone, or a version this install cannot read).
    /// Workouts are kept without their series (laps, samples, lengths): an edit never changes them.
    public var record: HealthRecord?
    /// The version as the sync protocol's record JSON (`{"data":...,"id","type","version"}`, or
    /// `{"deleted":true,...}` for a tombstone).
    public var json: String
    /// The fields (the protocol's keys of `data`) that differ from the version before; empty for
    /// the first version and for tombstones.
    public var changed: [String]
}

extension HealthStore {
    /// Writes a new version (version + 1) of the record `id` with `changes` applied, with its
    /// outbox row and the previous version kept for ``history(id:)``, in one transaction; answers
    /// the new version. Fields by type: a habit event takes value, note, category, label and unit;
    /// a workout energy (kcal; its source no longer `estimated`), distance, sport and duration (the
    /// end moves; never before its laps or samples); a sleep session its duration; a measurement
    /// its value; a definition its kind's own fields (a meal's kcal and ingredients, the profile's
    /// weight as value, a habit's unit, categories and goal). Throws ``EditError`` for an unknown
    /// or deleted record, a change of time, a field the type does not have, or a result that
    /// breaks the model's rules.
    @discardableResult
    public func edit(id: String, changes: RecordChanges, now: Date = Date()) async throws -> HealthRecord {
        try await writing { db in
            let (type, row) = try Self.locate(db, id)
            guard (row["deleted"] as Int) == 0 else {
                throw EditError("record \(row["id"] as String) is deleted (version \(row["version"] as Int)): it cannot be edited")
            }
            if type == .workout, (row["in_progress"] as Int? ?? 0) != 0 {
                throw EditError("workout \(row["id"] as String) is still being recorded: edit it once it is complete")
            }
            guard let current = try RowDecoder.record(db, type: type, id: row["id"]) else {
                throw EditError("record \(row["id"] as String) cannot be read by this version of HealthGate")
            }
            if let time = changes.time, time != current.start {
                throw EditError("the date of a record cannot change: delete it and log a new one")
            }
            guard !changes.given.isEmpty else { throw EditError("nothing to change: give at least one field") }
            var edited = try Self.apply(changes, to: current)
            edited = edited.withVersion(current.version + 1)
            do {
                try RecordValidator().validate(edited, now: now)
            } catch let error as ValidationError {
                throw EditError(error.reason)
            }
            _ = try RecordWriter(db: db).write([edited], importHash: row["import_hash"])
            return edited
        }
    }

    /// Deletes the record `id`: a tombstone (deleted, version + 1) with its outbox row (the
    /// deletion syncs), the previous version kept for ``history(id:)``, in one transaction;
    /// answers the tombstone's version. Throws ``EditError`` for an unknown or already deleted record.
    @discardableResult
    public func delete(id: String) async throws -> (type: RecordType, id: String, version: Int) {
        try await writing { db in
            let (type, row) = try Self.locate(db, id)
            let recordID: String = row["id"]
            let version: Int = row["version"]
            guard (row["deleted"] as Int) == 0 else {
                throw EditError("record \(recordID) is already deleted (version \(version))")
            }
            let writer = RecordWriter(db: db)
            try writer.keepVersion(type: type, id: recordID)
            try db.execute(sql: "UPDATE \(RecordWriter.table(of: type)) SET deleted = 1, version = ?, updated_at = ? WHERE id = ?",
                           arguments: [version + 1, writer.now, recordID])
            try writer.enqueue(type, id: recordID, version: version + 1)
            return (type, recordID, version + 1)
        }
    }

    /// Every version of the record `id` this install has seen, newest first: the stored one
    /// (a tombstone when deleted) and the ones it replaced. Throws ``EditError`` for an unknown id.
    public func history(id: String) async throws -> [RecordVersion] {
        try await reading { db in
            let (type, row) = try Self.locate(db, id)
            let recordID: String = row["id"]
            var versions: [(version: Int, deleted: Bool, json: String)] = []
            if let current = try RecordWriter(db: db).versionJSON(type: type, id: recordID) { versions.append(current) }
            let kept = try Row.fetchAll(db, sql: """
                SELECT version, deleted, body FROM record_versions WHERE record_id = ? ORDER BY version DESC
                """, arguments: [recordID])
            for old in kept {
                let deleted = (old["deleted"] as Int) != 0
                guard !versions.contains(where: { $0.version == old["version"] && $0.deleted == deleted }) else { continue }
                versions.append((old["version"], deleted, old["body"]))
            }
            // Newest first; at one version a tombstone before the data it won over (a deletion racing an edit).
            versions.sort { $0.version != $1.version ? $0.version > $1.version : $0.deleted && !$1.deleted }
            let decoder = SyncJSONDecoder()
            let decoded = versions.map { v -> (RecordVersion, [String: Any]?) in
                let wire = try? decoder.decode(WireRecord.self, from: Array(v.json.utf8))
                let data = v.deleted ? nil : Self.dataObject(v.json)
                return (RecordVersion(id: recordID, type: type, version: v.version, deleted: v.deleted,
                                      record: v.deleted ? nil : wire?.data, json: v.json, changed: []), data)
            }
            var result: [RecordVersion] = []
            for (index, (version, data)) in decoded.enumerated() {
                var version = version
                if let data, let older = decoded.dropFirst(index + 1).first(where: { $0.1 != nil })?.1 {
                    version.changed = Self.changedKeys(data, older)
                }
                result.append(version)
            }
            return result
        }
    }

    /// The record table and row of `id` (a full id, or a prefix of at least 4 characters that
    /// names one record).
    static func locate(_ db: Database, _ id: String) throws -> (RecordType, Row) {
        let key = id.lowercased()
        guard key.count >= 4, key.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
            throw EditError("'\(id)' is not a record id (a UUID, or its first characters)")
        }
        var found: [(RecordType, Row)] = []
        for type in RecordType.allCases {
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM \(RecordWriter.table(of: type)) WHERE id LIKE ? || '%' LIMIT 2",
                                        arguments: [key])
            found += rows.map { (type, $0) }
        }
        guard let first = found.first else { throw EditError("no record \(id)") }
        guard found.count == 1 else { throw EditError("'\(id)' names more than one record: give more of the id") }
        return first
    }

    /// `record` with `changes` applied, or why a field does not apply to it.
    static func apply(_ changes: RecordChanges, to record: HealthRecord) throws -> HealthRecord {
        func refuse(_ allowed: [String], _ what: String) throws {
            let extra = changes.given.filter { !allowed.contains($0) }
            guard extra.isEmpty else {
                let list = allowed.isEmpty ? "nothing can be edited (delete it instead)" : "it takes " + allowed.map { "--" + $0 }.joined(separator: ", ")
                throw EditError("\(what) has no \(extra.map { "--" + $0 }.joined(separator: ", ")): \(list)")
            }
        }
        switch record {
        case .habit(var h):
            try refuse(["value", "note", "category", "label", "unit"], "a habit event")
            if (changes.categories?.count ?? 0) > 1 { throw EditError("a habit event has one category: give --category once") }
            if let v = changes.value { h.value = v }
            if let v = changes.note { h.note = v.isEmpty ? nil : v }
            if let v = changes.category ?? changes.categories?.first { h.category = v.isEmpty ? nil : v }
            if let v = changes.label { h.label = v.isEmpty ? nil : v }
            if let v = changes.unit { h.unit = v.isEmpty ? nil : v }
            return .habit(h)
        case .workout(var w):
            try refuse(["kcal", "distance", "sport", "duration"], "a workout")
            if let d = changes.durationS {
                let end = w.start.addingTimeInterval(d)
                if d < w.elapsedS, let last = seriesEnd(w), last > end {
                    throw EditError("workout \(w.id) has laps or samples until \(ISO8601.string(last)): it cannot end before them "
                        + "(at least \(NumberText.plain((last.timeIntervalSince(w.start) / 60).rounded(.up))) minutes)")
                }
                let oldActive = w.timerS ?? w.elapsedS
                if let timer = w.timerS { w.timerS = timer == w.elapsedS ? d : min(timer, d) }
                w.elapsedS = d
                w.end = end
                // An estimate (MET x weight x active time) follows the active time.
                if changes.energyKcal == nil, w.energySource == .estimated, let kcal = w.energyKcal, oldActive > 0 {
                    w.energyKcal = (kcal * (w.timerS ?? w.elapsedS) / oldActive * 10).rounded() / 10
                }
            }
            if let v = changes.energyKcal {
                w.energyKcal = v
                w.energySource = .device  // given, not estimated (the model has no third source)
            }
            if let v = changes.distanceM { w.distanceM = v }
            if let v = changes.sport {
                guard !v.trimmingCharacters(in: .whitespaces).isEmpty else { throw EditError("the sport cannot be blank") }
                w.sport = v
            }
            return .workout(w)
        case .measurement(var m):
            try refuse(["value"], "a measurement")
            if let v = changes.value { m.value = v }
            return .measurement(m)
        case .sleep(var s):
            try refuse(["duration"], "a sleep session")
            if let d = changes.durationS {
                let end = s.start.addingTimeInterval(d)
                if let last = s.stages.map(\.end).max(), last > end, end < s.end {
                    throw EditError("sleep session \(s.id) has stages until \(ISO8601.string(last)): it cannot end before them")
                }
                s.end = end
            }
            return .sleep(s)
        case .definition(var d):
            switch d.body {
            case .meal(let meal):
                try refuse(["kcal", "ingredient", "remove-ingredient"], "a saved meal")
                d.body = .meal(try Self.apply(changes, to: meal))
            case .profile(var profile):
                try refuse(["value"], "the body profile")
                if let v = changes.value { profile.weightKg = v }
                d.body = .profile(profile)
            case .habit(let habit):
                try refuse(["unit", "category", "target", "per", "at-most", "at-least", "no-target"], "a habit definition")
                d.body = .habit(try Self.apply(changes, to: habit, name: d.name))
            case .trigger, .preferences:
                try refuse([], "a \(d.kind.rawValue) definition")
            }
            return .definition(d)
        }
    }

    /// A habit definition with its unit, categories or goal changed. Its kind never changes (its
    /// entries would change meaning); categories only for a categorical habit (entries keep the
    /// category they were logged with); a goal's parts not given keep the stored goal's.
    static func apply(_ changes: RecordChanges, to habit: HabitDefinition, name: String) throws -> HabitDefinition {
        var habit = habit
        if let v = changes.unit { habit.unit = v.isEmpty ? nil : v }
        if let list = changes.categories ?? changes.category.map({ [$0] }) {
            guard habit.valueKind == .categorical else {
                throw EditError("'\(name)' is a \(habit.valueKind.rawValue) habit: only a categorical habit has categories")
            }
            let trimmed = list.map { $0.trimmingCharacters(in: .whitespaces) }
            guard !trimmed.contains(where: \.isEmpty) else { throw EditError("a category cannot be blank") }
            guard Swift.Set(trimmed.map(Definition.key)).count == trimmed.count else { throw EditError("the categories repeat a name") }
            habit.categories = trimmed
        }
        let partsGiven = changes.targetAmount != nil || changes.targetPeriod != nil || changes.targetDirection != nil
        if changes.removeTarget {
            guard !partsGiven else { throw EditError("--no-target drops the goal: give it without --target, --per, --at-most or --at-least") }
            habit.target = nil
        } else if partsGiven {
            guard let amount = changes.targetAmount ?? habit.target?.amount else {
                throw EditError("'\(name)' has no goal yet: give --target N")
            }
            guard amount.isFinite, amount > 0 else { throw EditError("the target must be more than zero") }
            habit.target = HabitTarget(amount: amount, period: changes.targetPeriod ?? habit.target?.period ?? .day,
                                       direction: changes.targetDirection ?? habit.target?.direction ?? .atLeast)
        }
        return habit
    }

    /// A saved meal with ingredients added, replaced (by name, case-insensitive) or removed. Its
    /// kcal: the one given; else, when the ingredients changed and the kcal was their sum (derived
    /// from them), the new sum; else the kcal stays (it was set on its own).
    static func apply(_ changes: RecordChanges, to meal: SavedMeal) throws -> SavedMeal {
        var meal = meal
        let oldSum = meal.ingredients.reduce(0) { $0 + $1.kcal }
        let derived = !meal.ingredients.isEmpty && abs(oldSum - meal.kcal) < 0.05
        for name in changes.removeIngredients {
            guard let index = meal.ingredients.firstIndex(where: { Definition.key($0.name) == Definition.key(name) }) else {
                let known = meal.ingredients.map(\.name).joined(separator: ", ")
                throw EditError("the meal has no ingredient '\(name)'" + (known.isEmpty ? " (it has none)" : ": it has \(known)"))
            }
            meal.ingredients.remove(at: index)
        }
        for ingredient in changes.ingredients {
            if let index = meal.ingredients.firstIndex(where: { Definition.key($0.name) == Definition.key(ingredient.name) }) {
                meal.ingredients[index].kcal = ingredient.kcal
            } else {
                meal.ingredients.append(ingredient)
            }
        }
        if let kcal = changes.energyKcal {
            meal.kcal = kcal
        } else if derived, !changes.ingredients.isEmpty || !changes.removeIngredients.isEmpty, !meal.ingredients.isEmpty {
            meal.kcal = (meal.ingredients.reduce(0) { $0 + $1.kcal } * 10).rounded() / 10
        }
        return meal
    }

    /// The latest time a workout's series reach (laps' ends, samples, lengths' ends), or nil.
    private static func seriesEnd(_ w: Workout) -> Date? {
        (w.laps.map(\.end) + w.samples.map(\.time) + w.lengths.map { $0.start.addingTimeInterval($0.elapsedS) }).max()
    }

    /// The `data` object of a version's JSON.
    private static func dataObject(_ json: String) -> [String: Any]? {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return object?["data"] as? [String: Any]
    }

    /// The keys (but `version`) whose values differ between two `data` objects, sorted.
    private static func changedKeys(_ new: [String: Any], _ old: [String: Any]) -> [String] {
        func text(_ value: Any) -> Data? { try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys]) }
        return Swift.Set(new.keys).union(old.keys).filter { key in
            guard key != "version" else { return false }
            switch (new[key], old[key]) {
            case (nil, nil): return false
            case (let a?, let b?): return text(a) != text(b)
            default: return true
            }
        }.sorted()
    }
}

extension HealthRecord {
    /// The same record at another version.
    func withVersion(_ version: Int) -> HealthRecord {
        switch self {
        case .workout(var w): w.version = version; return .workout(w)
        case .sleep(var s): s.version = version; return .sleep(s)
        case .habit(var h): h.version = version; return .habit(h)
        case .measurement(var m): m.version = version; return .measurement(m)
        case .definition(var d): d.version = version; return .definition(d)
        }
    }
}
