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
    public var category: String?
    public var label: String?
    /// Habit event, or a habit definition: its unit.
    public var unit: String?
    /// Workout: its energy; saved meal: its kcal.
    public var energyKcal: Double?
    public var distanceM: Double?
    public var sport: String?
    /// A new time: always refused (a record's date cannot change); here so that callers say so.
    public var time: Date?

    public init(value: Double? = nil, note: String? = nil, category: String? = nil, label: String? = nil, unit: String? = nil,
                energyKcal: Double? = nil, distanceM: Double? = nil, sport: String? = nil, time: Date? = nil) {
        self.value = value
        self.note = note
        self.category = category
        self.label = label
        self.unit = unit
        self.energyKcal = energyKcal
        self.distanceM = distanceM
        self.sport = sport
        self.time = time
    }

    /// The fields given, by the names the CLI's options use.
    var given: [String] {
        var names: [String] = []
        if value != nil { names.append("value") }
        if note != nil { names.append("note") }
        if category != nil { names.append("category") }
        if label != nil { names.append("label") }
        if unit != nil { names.append("unit") }
        if energyKcal != nil { names.append("kcal") }
        if distanceM != nil { names.append("distance") }
        if sport != nil { names.append("sport") }
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
    /// a workout energy (kcal; its source no longer `estimated`), distance and sport; a
    /// measurement its value; a definition its kind's own fields (a meal's kcal, the profile's
    /// weight as value, a habit's unit). Throws ``EditError`` for an unknown or deleted record, a
    /// change of time, a field the type does not have, or a result that breaks the model's rules.
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
            try RecordWriter(db: db).write([edited], importHash: row["import_hash"])
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
            if let v = changes.value { h.value = v }
            if let v = changes.note { h.note = v.isEmpty ? nil : v }
            if let v = changes.category { h.category = v.isEmpty ? nil : v }
            if let v = changes.label { h.label = v.isEmpty ? nil : v }
            if let v = changes.unit { h.unit = v.isEmpty ? nil : v }
            return .habit(h)
        case .workout(var w):
            try refuse(["kcal", "distance", "sport"], "a workout")
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
        case .sleep:
            try refuse([], "a sleep session")
            return record
        case .definition(var d):
            switch d.body {
            case .meal(var meal):
                try refuse(["kcal"], "a saved meal")
                if let v = changes.energyKcal { meal.kcal = v }
                d.body = .meal(meal)
            case .profile(var profile):
                try refuse(["value"], "the body profile")
                if let v = changes.value { profile.weightKg = v }
                d.body = .profile(profile)
            case .habit(var habit):
                try refuse(["unit"], "a habit definition")
                if let v = changes.unit { habit.unit = v.isEmpty ? nil : v }
                d.body = .habit(habit)
            case .trigger, .preferences:
                try refuse([], "a \(d.kind.rawValue) definition")
            }
            return .definition(d)
        }
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
