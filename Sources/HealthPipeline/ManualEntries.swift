public import Foundation
public import HealthModel
public import HealthStore
public import Entries

/// Logs typed entries into the store: the one path of `healthgate log`, the daemon's status
/// socket (`{"request":"log",...}`) and the dashboard's forms. Reads the definitions, builds the
/// records with the pure ``EntryBuilder`` and takes them in through the ``Intake`` as every other
/// source's (normalized, names made canonical, written with their outbox rows in one transaction).
public enum ManualEntries {
    /// Builds `request` against the stored definitions and stores it; returns what was stored.
    /// Throws ``EntryError`` (nothing stored) for an entry that cannot be, or the store's error.
    public static func log(_ request: EntryRequest, into store: HealthStore, now: Date = Date(),
                           timeZone: TimeZone = .current) async throws -> [LoggedEntry] {
        let builder = try await builder(store: store, now: now, timeZone: timeZone)
        let entry = try builder.build(request)
        let records = try await take(entry.records, into: store, now: now)
        return records.map { LoggedEntry($0, notes: entry.notes, builder: builder) }
    }

    /// An ``EntryBuilder`` over the definitions stored now.
    public static func builder(store: HealthStore, now: Date = Date(), timeZone: TimeZone = .current) async throws -> EntryBuilder {
        EntryBuilder(definitions: DefinitionsSnapshot(try await store.definitions()), now: now, timeZone: timeZone)
    }

    /// Stores a new version of `definition` (version one more than the stored one, a tombstone's
    /// included: a definition deleted then defined again comes back), validated. The name keeps
    /// the stored spelling: one definition, one name (`Reading` defined again as `reading` stays `Reading`).
    @discardableResult
    public static func define(_ definition: Definition, into store: HealthStore, now: Date = Date()) async throws -> Definition {
        var definition = definition
        let stored = try await store.definition(definition.kind, name: definition.name)
        if let stored { definition.name = stored.name }
        var latest = stored?.version ?? 0
        if stored == nil, let versions = try? await store.history(id: definition.id.description) { latest = versions.first?.version ?? 0 }
        definition.version = latest + 1
        _ = try await take([.definition(definition)], into: store, now: now)
        return definition
    }

    /// Takes `records` in through the intake, all or none: a record it refuses is an
    /// ``EntryError`` naming why, and nothing is stored. Answers the records as stored.
    private static func take(_ records: [HealthRecord], into store: HealthStore, now: Date) async throws -> [HealthRecord] {
        let intake = Intake(store: store)
        let outcome = try await intake.prepare(records, with: try await intake.normalizer(), now: now)
        if let refused = outcome.rejected.first { throw EntryError("\(refused)") }
        try await store.write(outcome.accepted)
        return outcome.accepted
    }
}
