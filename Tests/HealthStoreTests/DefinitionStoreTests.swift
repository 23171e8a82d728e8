import Foundation
import HealthModel
import Testing
@testable import HealthStore

/// Definitions stored, read back whole, replaced by newer versions and queued for the server.
@Suite struct DefinitionStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000)

    func all() -> [Definition] {
        let s = Source(driver: "manual")
        return [
            Definition(name: "Reading", time: t0, body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages",
                                                                                target: HabitTarget(amount: 20, period: .week))), source: s),
            Definition(name: "mood", time: t0, body: .habit(HabitDefinition(valueKind: .categorical, categories: ["good", "meh"])), source: s),
            Definition(name: "stretch", time: t0, body: .habit(HabitDefinition(valueKind: .yesNo)), source: s),
            Definition(name: "doomscrolling", time: t0, body: .trigger, source: s),
            Definition(name: "porridge", time: t0, body: .meal(SavedMeal(kcal: 350, ingredients: [.init(name: "oats \"rolled\"", kcal: 300),
                                                                                                   .init(name: "milk", kcal: 50.5)])), source: s),
            Definition(name: "toast", time: t0, body: .meal(SavedMeal(kcal: 120)), source: s),
            Definition(name: "profile", time: t0, body: .profile(BodyProfile(weightKg: 71.5, goalWeightKg: 68.25)), source: s),
            Definition(name: "preferences", time: t0, body: .preferences(Preferences(volume: .flOz, mass: .lb)), source: s),
        ]
    }

    @Test func everyKindRoundTrips() async throws {
        let store = try await HealthStore.inMemory()
        let definitions = all()
        #expect(try await store.write(definitions.map { .definition($0) }) == WriteResult(inserted: definitions.count))
        let back = try await store.definitions()
        #expect(Set(back) == Set(definitions))
        #expect(try await store.definitions(.meal).map(\.name) == ["porridge", "toast"])
        #expect(try await store.definition(.habit, name: "READING") == definitions[0])
        #expect(try await store.definition(.habit, name: "writing") == nil)
        #expect(try await store.outboxDepth() == definitions.count)
        // The outbox reads each back as the record to send.
        let contents = try await store.records(for: try await store.outbox(limit: 100))
        #expect(Set(contents.compactMap { $0.record.flatMap(definitionIn) }) == Set(definitions))
    }

    @Test func aNewerVersionReplacesTheGoal() async throws {
        let store = try await HealthStore.inMemory()
        var goal = Definition(name: "hydration", time: t0, body: .habit(HabitDefinition(valueKind: .numeric, unit: "ml",
                                                                                        target: HabitTarget(amount: 2000))), source: Source(driver: "manual"))
        try await store.write([.definition(goal)])
        goal.version = 2
        goal.body = .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 2500)))
        #expect(try await store.write([.definition(goal)]) == WriteResult(updated: 1))
        #expect(try await store.definitions() == [goal])
        #expect(try await store.tableCounts()["definitions"] == 1)
    }
}

/// The definition in a record, or nil.
private func definitionIn(_ record: HealthRecord) -> Definition? {
    if case .definition(let d) = record { return d }
    return nil
}
