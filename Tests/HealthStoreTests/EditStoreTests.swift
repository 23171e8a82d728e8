import Foundation
import HealthModel
import Testing
@testable import HealthStore

/// Edits and deletions: new versions with their outbox rows, the date and type fixed, the old
/// versions kept for `history`, tombstones sent, and imports that do not undo them.
@Suite struct EditStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000)

    func drink(_ ml: Double = 250) -> HabitEvent {
        HabitEvent(id: RecordID(UUID()), habit: "hydration", time: t0, value: ml, unit: "ml", source: Source(driver: "manual"))
    }

    func workout() -> Workout {
        Workout(id: RecordID(UUID()), sport: "running", start: t0, end: t0 + 1800, elapsedS: 1800, distanceM: 4800, energyKcal: 300,
                energySource: .device, laps: [Lap(start: t0, end: t0 + 1800, elapsedS: 1800)],
                samples: (0..<10).map { Sample(time: t0 + Double($0) * 60, heartRate: 120 + $0) }, source: Source(driver: "gpx", file: "run.gpx"))
    }

    func importFile(_ records: [HealthRecord], status: ImportStatus = .imported) -> FileImport {
        FileImport(contentHash: String(repeating: "ab", count: 32), path: "run.gpx", sizeBytes: 100, driver: "gpx", records: records,
                   status: status)
    }

    @Test func anEditIsANewVersionWithItsOutboxRow() async throws {
        let store = try await HealthStore.inMemory()
        let event = drink()
        try await store.write([.habit(event)])
        let edited = try await store.edit(id: event.id.description, changes: RecordChanges(value: 500, note: "big glass"), now: t0 + 60)
        guard case .habit(let h) = edited else { Issue.record("not a habit event"); return }
        #expect(h.version == 2 && h.value == 500 && h.note == "big glass" && h.time == event.time && h.habit == "hydration")
        #expect(try await store.habitEvents() == [h])
        let outbox = try await store.outbox(limit: 10)
        #expect(outbox.map(\.version) == [1, 2])
        #expect(try await store.records(for: [outbox[1]]) == [.record(.habit(h))])
        // A prefix finds it; an empty text clears a field.
        let cleared = try await store.edit(id: String(event.id.description.prefix(8)), changes: RecordChanges(note: ""), now: t0 + 60)
        #expect(cleared.version == 3)
        #expect(try await store.habitEvents().first?.note == nil)
    }

    @Test func theDateAndFieldsATypeDoesNotHaveAreRefused() async throws {
        let store = try await HealthStore.inMemory()
        let event = drink()
        let w = workout()
        try await store.write([.habit(event), .workout(w)])
        await #expect(throws: EditError("the date of a record cannot change: delete it and log a new one")) {
            try await store.edit(id: event.id.description, changes: RecordChanges(value: 1, time: t0 + 3600))
        }
        await #expect(throws: EditError("a workout has no --value, --note: it takes --kcal, --distance, --sport, --duration")) {
            try await store.edit(id: w.id.description, changes: RecordChanges(value: 1, note: "x"))
        }
        await #expect(throws: EditError("a habit event has no --kcal: it takes --value, --note, --category, --label, --unit")) {
            try await store.edit(id: event.id.description, changes: RecordChanges(energyKcal: 1))
        }
        await #expect(throws: EditError("no record 0123abcd")) { try await store.edit(id: "0123abcd", changes: RecordChanges(value: 1)) }
        await #expect(throws: EditError("nothing to change: give at least one field")) {
            try await store.edit(id: event.id.description, changes: RecordChanges())
        }
        // The model's rules hold for the new version: a 50-litre drink is refused.
        await #expect(throws: EditError.self) {
            try await store.edit(id: event.id.description, changes: RecordChanges(value: 50_000), now: t0 + 60)
        }
        #expect(try await store.habitEvents() == [event], "nothing was written")
        #expect(try await store.outboxDepth() == 2)
    }

    @Test func aDeletionIsATombstoneThatSyncs() async throws {
        let store = try await HealthStore.inMemory()
        let event = drink()
        try await store.write([.habit(event)])
        let deleted = try await store.delete(id: event.id.description)
        #expect(deleted.version == 2 && deleted.type == .habit)
        #expect(try await store.habitEvents().isEmpty)
        let outbox = try await store.outbox(limit: 10)
        #expect(outbox.map(\.version) == [1, 2])
        // Both outbox rows now send the tombstone (the record's current state).
        #expect(try await store.records(for: outbox) == Array(repeating: .tombstone(type: .habit, id: event.id.description, version: 2), count: 2))
        await #expect(throws: EditError("record \(event.id) is already deleted (version 2)")) { try await store.delete(id: event.id.description) }
        await #expect(throws: EditError("record \(event.id) is deleted (version 2): it cannot be edited")) {
            try await store.edit(id: event.id.description, changes: RecordChanges(value: 1))
        }
    }

    @Test func historyListsEveryVersionNewestFirst() async throws {
        let store = try await HealthStore.inMemory()
        let event = drink()
        try await store.write([.habit(event)])
        try await store.edit(id: event.id.description, changes: RecordChanges(value: 330, category: "tea"), now: t0 + 60)
        try await store.delete(id: event.id.description)
        let versions = try await store.history(id: event.id.description)
        #expect(versions.map(\.version) == [3, 2, 1])
        #expect(versions.map(\.deleted) == [true, false, false])
        #expect(versions.map(\.changed) == [[], ["category", "value"], []])
        #expect(versions[2].record == .habit(event))
        #expect(versions[0].json.contains(#""deleted":true"#) && versions[0].record == nil)
        // A workout's versions are kept without its series; the stored one keeps them.
        let w = workout()
        try await store.write([.workout(w)])
        try await store.edit(id: w.id.description, changes: RecordChanges(energyKcal: 420, distanceM: 5000), now: t0 + 3600)
        let runs = try await store.history(id: w.id.description)
        #expect(runs.map(\.version) == [2, 1])
        #expect(runs[0].changed == ["distance_m", "energy_kcal"])
        #expect(try await store.workout(id: w.id.description)?.samples.count == 10)
        #expect(try await store.workout(id: w.id.description)?.laps.count == 1)
    }

    @Test func aPulledTombstoneWinsAtItsVersionAndKeepsTheOldOne() async throws {
        let store = try await HealthStore.inMemory()
        var event = drink()
        try await store.write([.habit(event)])
        try await store.edit(id: event.id.description, changes: RecordChanges(value: 400), now: t0 + 60)
        // Another install deleted version 1 (its tombstone is version 2): equal versions, the tombstone wins.
        try await store.writePulled([], deletions: [PulledDeletion(type: .habit, id: event.id.description, version: 2)], cursor: 1)
        #expect(try await store.habitEvents().isEmpty)
        #expect(try await store.history(id: event.id.description).map(\.deleted) == [true, false, false])
        // Data of the tombstone's version does not bring it back; a newer version does.
        event.version = 2
        #expect(try await store.writePulled([.habit(event)], cursor: 2).unchanged == 1)
        #expect(try await store.habitEvents().isEmpty)
        event.version = 3
        #expect(try await store.writePulled([.habit(event)], cursor: 3).updated == 1)
        #expect(try await store.habitEvents() == [event])
    }

    @Test func importingTheFileAgainDoesNotUndoAnEditOrADeletion() async throws {
        let store = try await HealthStore.inMemory()
        let kept = workout(), gone = workout()
        // A resumed import: the first part committed in progress, then the whole file again.
        _ = try await store.commit(importFile([.workout(kept), .workout(gone)], status: .inProgress))
        try await store.edit(id: kept.id.description, changes: RecordChanges(energyKcal: 512), now: t0 + 3600)
        try await store.delete(id: gone.id.description)
        let again = try await store.commit(importFile([.workout(kept), .workout(gone)]))
        #expect(again == .committed(WriteResult(unchanged: 2)))
        let listed = try await store.workouts()
        #expect(listed.map(\.id) == [kept.id.description])
        #expect(listed.first?.energyKcal == 512 && listed.first?.version == 2)
        // The ledger knows the file now: a third time is skipped altogether.
        guard case .alreadyImported = try await store.commit(importFile([.workout(kept), .workout(gone)])) else {
            Issue.record("the file was imported again")
            return
        }
    }
}
