import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthStore
import SyncProtocol

/// `healthgate edit ID --value ... --note ...`: a new version of any record.
struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change fields of a record: a new version of it, synced like any record.",
        discussion: """
            ID is the record's id or its first characters (at least 4), as `--json` listings print it. \
            A habit event takes --value, --note, --category, --label and --unit; a workout --kcal, --distance, \
            --sport and --duration (the end moves, never before its laps or samples; an estimated energy follows the \
            active time); a sleep session --duration; a measurement --value; a saved meal --kcal, --ingredient and \
            --remove-ingredient (a kcal that was the ingredients' sum follows them unless --kcal is given); the body \
            profile --value (kg); a habit definition --unit, --category (a categorical habit's whole list), --target, \
            --per, --at-most/--at-least and --no-target (parts not given keep the stored goal's). \
            An empty text (--note "") clears the field. The date and the type of a record cannot change (nor a \
            habit's kind): delete it and log a new one. Imported records can be edited too; importing the file again \
            does not undo the edit.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "The record's id or a unique prefix of it (at least 4 characters).")
    var id: String

    @Option(help: "A habit event's or a measurement's value; the body profile's weight in kg.")
    var value: Double?

    @Option(help: "A habit event's note (\"\" clears it).")
    var note: String?

    @Option(help: "A habit event's category (\"\" clears it); a categorical habit definition's categories (repeat for each: the whole new list).")
    var category: [String] = []

    @Option(help: "A habit event's label (\"\" clears it).")
    var label: String?

    @Option(help: "A habit event's or habit definition's unit (\"\" clears it).")
    var unit: String?

    @Option(help: "A workout's energy or a saved meal's energy, in kcal.")
    var kcal: Double?

    @Option(help: ArgumentHelp("A workout's distance with its unit: 5km, 800m, 3.1mi.", valueName: "DISTANCE"))
    var distance: String?

    @Option(help: "A workout's sport (running, cycling ...).")
    var sport: String?

    @Option(help: ArgumentHelp("A workout's or sleep session's duration (45m, 1h30m): the start stays, the end moves.", valueName: "DURATION"))
    var duration: String?

    @Option(help: "A habit definition's goal per period, in the habit's unit (more than zero; water in ml: `define goal water 64oz` takes units).")
    var target: Double?

    @Option(help: "A habit definition's goal period: day or week.")
    var per: String?

    @Flag(help: "A habit definition's goal is a most (at most N per period).")
    var atMost = false

    @Flag(help: "A habit definition's goal is a least (at least N per period).")
    var atLeast = false

    @Flag(help: "Drop a habit definition's goal.")
    var noTarget = false

    @Option(name: .customLong("ingredient"),
            help: ArgumentHelp("A saved meal's ingredient to add, or to change when it has one of that name (repeat for each).", valueName: "NAME=KCAL"))
    var ingredients: [String] = []

    @Option(name: .customLong("remove-ingredient"), help: ArgumentHelp("A saved meal's ingredient to remove (repeat for each).", valueName: "NAME"))
    var removeIngredients: [String] = []

    @Option(help: ArgumentHelp("Refused: a record's date cannot change (delete it and log a new one).", valueName: "TIME"))
    var at: String?

    func validate() throws {
        if let distance, Self.metres(distance) == nil {
            throw ValidationError("--distance '\(distance)' is not a distance (a number with m, km or mi: 5km, 800m, 3.1mi)")
        }
        for (name, number) in [("--value", value), ("--kcal", kcal), ("--target", target)] {
            if let number, !number.isFinite { throw ValidationError("\(name) must be a number") }
        }
        if let duration, Self.seconds(duration) == nil {
            throw ValidationError("--duration '\(duration)' is not a duration (more than zero: 45m, 1h30m, 90s)")
        }
        if let per, HabitTarget.Period(rawValue: per) == nil { throw ValidationError("--per must be day or week (not '\(per)')") }
        if atMost && atLeast { throw ValidationError("--at-most and --at-least exclude each other") }
        for text in ingredients { _ = try DefineMeal.ingredient(text) }
    }

    /// A duration of more than zero in seconds; nil otherwise.
    static func seconds(_ text: String) -> Double? { Durations.seconds(text).flatMap { $0 > 0 ? $0 : nil } }

    func run() async throws {
        if at != nil { throw RuntimeFailure("the date of a record cannot change: delete it and log a new one") }
        let changes = RecordChanges(
            value: value, note: note, category: category.count == 1 ? category[0] : nil, label: label, unit: unit, energyKcal: kcal,
            distanceM: distance.flatMap(Self.metres), sport: sport, durationS: duration.flatMap(Self.seconds), targetAmount: target,
            targetPeriod: per.flatMap(HabitTarget.Period.init(rawValue:)),
            targetDirection: atMost ? .atMost : atLeast ? .atLeast : nil, removeTarget: noTarget,
            categories: category.isEmpty ? nil : category, ingredients: try ingredients.map(DefineMeal.ingredient),
            removeIngredients: removeIngredients)
        let store = try await database.open()
        let record: HealthRecord
        do {
            record = try await store.edit(id: id, changes: changes)
        } catch let error as EditError {
            throw RuntimeFailure(error.description)
        }
        let versions = try await store.history(id: record.id.description)
        guard let newest = versions.first else { throw RuntimeFailure("record \(record.id) was not stored") }
        if output.json { return try Output.printJSON(VersionJSON(newest)) }
        print("Edited \(record.type.rawValue) \(record.id): version \(record.version)"
            + (newest.changed.isEmpty ? "" : " (changed \(newest.changed.joined(separator: ", ")))"))
    }

    /// A distance with its unit in metres (HealthModel's ``Quantities``); nil otherwise.
    static func metres(_ text: String) -> Double? { try? Quantities.metres(text) }
}

/// `healthgate delete ID`: a tombstone, synced.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a record: a tombstone (a new version), synced to your other installs.",
        discussion: """
            ID is the record's id or its first characters (at least 4). The record leaves every listing and total; \
            `healthgate history ID` still shows its versions. Imported records can be deleted too; importing the \
            file again does not bring them back.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "The record's id or a unique prefix of it (at least 4 characters).")
    var id: String

    func run() async throws {
        let store = try await database.open()
        let deleted: (type: RecordType, id: String, version: Int)
        do {
            deleted = try await store.delete(id: id)
        } catch let error as EditError {
            throw RuntimeFailure(error.description)
        }
        if output.json {
            return try Output.printJSON(DeletedJSON(id: deleted.id, type: deleted.type.rawValue, version: deleted.version))
        }
        print("Deleted \(deleted.type.rawValue) \(deleted.id): version \(deleted.version) is its tombstone")
    }

    struct DeletedJSON: Encodable {
        var id: String
        var type: String
        var version: Int
        var deleted = true
    }
}

/// `healthgate history ID`: every version of a record.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Show the versions of a record, newest first, with what each changed.",
        discussion: """
            Lists the versions this install has seen (made here, imported or pulled from the server): each with the \
            fields it changed from the version before, or `deleted` for a tombstone. With --json, one object per \
            version: {"version", "deleted", "changed", "record"}, record in the sync protocol's shape (null for a tombstone).
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "The record's id or a unique prefix of it (at least 4 characters).")
    var id: String

    func run() async throws {
        let store = try await database.open()
        let versions: [RecordVersion]
        do {
            versions = try await store.history(id: id)
        } catch let error as EditError {
            throw RuntimeFailure(error.description)
        }
        if output.json { return try Output.printJSON(versions.map(VersionJSON.init)) }
        guard let first = versions.first else { return }
        print("\(first.type.rawValue) \(first.id)")
        Output.printTable(["VERSION", "STATE", "CHANGED"], versions.map { v in
            [String(v.version), v.deleted ? "deleted" : "stored",
             v.deleted ? "-" : (v.changed.isEmpty ? (v.version == versions.last?.version ? "(first seen)" : "-") : v.changed.joined(separator: ", "))]
        })
    }
}

/// One version as `history --json` and `edit --json` print it.
struct VersionJSON: Encodable {
    var id: String
    var type: String
    var version: Int
    var deleted: Bool
    var changed: [String]
    /// The version's `data` in the sync protocol's shape (nil for a tombstone).
    var record: RecordData?

    init(_ v: RecordVersion) {
        id = v.id
        type = v.type.rawValue
        version = v.version
        deleted = v.deleted
        changed = v.changed
        record = v.record.map(RecordData.init)
    }

    enum CodingKeys: String, CodingKey { case id, type, version, deleted, changed, record }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(type, forKey: .type)
        try c.encode(version, forKey: .version)
        try c.encode(deleted, forKey: .deleted)
        try c.encode(changed, forKey: .changed)
        try c.encode(record, forKey: .record)
    }
}

/// A record in the sync protocol's shape (its `data`), for JSON output.
struct RecordData: Encodable {
    var record: HealthRecord

    func encode(to encoder: any Encoder) throws {
        switch record {
        case .workout(let w): try w.encode(to: encoder)
        case .sleep(let s): try s.encode(to: encoder)
        case .habit(let h): try h.encode(to: encoder)
        case .measurement(let m): try m.encode(to: encoder)
        case .definition(let d): try d.encode(to: encoder)
        }
    }
}
