import Foundation
import HealthModel
import Testing
@testable import HealthStore

/// The edits added for what could not be changed before: a habit definition's goal and
/// categories, a saved meal's ingredients, a workout's and a sleep session's duration. Each is a
/// new version of the same record (its id, its history), and what cannot change says so.
@Suite struct EditFieldsTests {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000)

    func habit(_ name: String, _ body: HabitDefinition) -> Definition {
        Definition(name: name, time: t0, body: .habit(body), source: Source(driver: "manual"))
    }

    func body(_ record: HealthRecord) -> DefinitionBody? {
        if case .definition(let d) = record { return d.body }
        return nil
    }

    @Test func aHabitDefinitionsGoalChangesPartByPart() async throws {
        let store = try await HealthStore.inMemory()
        let reading = habit("Reading", HabitDefinition(valueKind: .numeric, unit: "pages", target: HabitTarget(amount: 20)))
        try await store.write([.definition(reading)])
        let id = reading.id.description

        // The amount alone: the period and the direction stay.
        let v2 = try await store.edit(id: id, changes: RecordChanges(targetAmount: 30), now: t0 + 60)
        #expect(body(v2) == .habit(HabitDefinition(valueKind: .numeric, unit: "pages", target: HabitTarget(amount: 30))))
        // Per week, at most: the amount stays.
        let v3 = try await store.edit(id: id, changes: RecordChanges(targetPeriod: .week, targetDirection: .atMost), now: t0 + 60)
        #expect(body(v3) == .habit(HabitDefinition(valueKind: .numeric, unit: "pages",
                                                   target: HabitTarget(amount: 30, period: .week, direction: .atMost))))
        let v4 = try await store.edit(id: id, changes: RecordChanges(removeTarget: true), now: t0 + 60)
        #expect(body(v4) == .habit(HabitDefinition(valueKind: .numeric, unit: "pages")))
        await #expect(throws: EditError("'Reading' has no goal yet: give --target N")) {
            try await store.edit(id: id, changes: RecordChanges(targetPeriod: .day), now: t0 + 60)
        }
        await #expect(throws: EditError("'Reading' is a numeric habit: only a categorical habit has categories")) {
            try await store.edit(id: id, changes: RecordChanges(categories: ["a"]), now: t0 + 60)
        }
        // One definition, four versions, the name as defined.
        let stored = try await store.definitions(.habit)
        #expect(stored.count == 1 && stored.first?.version == 4 && stored.first?.name == "Reading")
        #expect(try await store.history(id: id).map(\.version) == [4, 3, 2, 1])
        #expect(try await store.outbox(limit: 10).map(\.version) == [1, 2, 3, 4])
    }

    @Test func aCategoricalHabitsCategoriesAreReplaced() async throws {
        let store = try await HealthStore.inMemory()
        let mood = habit("mood", HabitDefinition(valueKind: .categorical, categories: ["good", "bad"]))
        try await store.write([.definition(mood)])
        let edited = try await store.edit(id: mood.id.description, changes: RecordChanges(categories: ["good", "bad", "meh"]), now: t0)
        #expect(body(edited) == .habit(HabitDefinition(valueKind: .categorical, categories: ["good", "bad", "meh"])))
        await #expect(throws: EditError("the categories repeat a name")) {
            try await store.edit(id: mood.id.description, changes: RecordChanges(categories: ["good", "Good"]), now: t0)
        }
        await #expect(throws: EditError("a category cannot be blank")) {
            try await store.edit(id: mood.id.description, changes: RecordChanges(categories: [" "]), now: t0)
        }
    }

    @Test func aSavedMealsIngredientsAndTheKcalThatFollowsThem() async throws {
        let store = try await HealthStore.inMemory()
        // Derived: the kcal is the ingredients' sum, and follows them.
        let porridge = Definition(name: "porridge", time: t0, body: .meal(SavedMeal(kcal: 250, ingredients: [
            .init(name: "oats", kcal: 150), .init(name: "milk", kcal: 100),
        ])), source: Source(driver: "manual"))
        // Set on its own: 500 kcal, one ingredient named; the kcal stays.
        let curry = Definition(name: "curry", time: t0, body: .meal(SavedMeal(kcal: 500, ingredients: [.init(name: "rice", kcal: 200)])),
                               source: Source(driver: "manual"))
        try await store.write([.definition(porridge), .definition(curry)])

        let added = try await store.edit(id: porridge.id.description, changes: RecordChanges(ingredients: [
            .init(name: "Milk", kcal: 120), .init(name: "honey", kcal: 60),
        ]), now: t0)
        #expect(body(added) == .meal(SavedMeal(kcal: 330, ingredients: [
            .init(name: "oats", kcal: 150), .init(name: "milk", kcal: 120), .init(name: "honey", kcal: 60),
        ])))
        let removed = try await store.edit(id: porridge.id.description, changes: RecordChanges(removeIngredients: ["HONEY"]), now: t0)
        #expect(body(removed) == .meal(SavedMeal(kcal: 270, ingredients: [.init(name: "oats", kcal: 150), .init(name: "milk", kcal: 120)])))
        // --kcal with the ingredients wins over the sum.
        let given = try await store.edit(id: porridge.id.description,
                                         changes: RecordChanges(energyKcal: 300, ingredients: [.init(name: "oats", kcal: 180)]), now: t0)
        #expect(body(given) == .meal(SavedMeal(kcal: 300, ingredients: [.init(name: "oats", kcal: 180), .init(name: "milk", kcal: 120)])))

        let curried = try await store.edit(id: curry.id.description, changes: RecordChanges(ingredients: [.init(name: "chicken", kcal: 250)]),
                                           now: t0)
        #expect(body(curried) == .meal(SavedMeal(kcal: 500, ingredients: [.init(name: "rice", kcal: 200), .init(name: "chicken", kcal: 250)])))
        await #expect(throws: EditError("the meal has no ingredient 'tofu': it has rice, chicken")) {
            try await store.edit(id: curry.id.description, changes: RecordChanges(removeIngredients: ["tofu"]), now: t0)
        }
        let negative = await #expect(throws: EditError.self) {
            try await store.edit(id: curry.id.description, changes: RecordChanges(ingredients: [.init(name: "oil", kcal: -5)]), now: t0)
        }
        #expect(negative?.description.contains("ingredients[2].kcal -5 kcal is outside") == true, "\(String(describing: negative))")
        #expect(try await store.definition(.meal, name: "curry")?.version == 2, "a refused edit writes nothing")
    }

    @Test func aWorkoutsDurationMovesItsEndNeverBeforeItsSeries() async throws {
        let store = try await HealthStore.inMemory()
        // A manual workout: no series, an estimated energy.
        let manual = Workout(id: RecordID(UUID()), sport: "running", start: t0, end: t0 + 2700, elapsedS: 2700, timerS: 2700,
                             energyKcal: 450, energySource: .estimated, source: Source(driver: "manual"))
        // An imported one with samples for its first 10 minutes.
        let recorded = Workout(id: RecordID(UUID()), sport: "cycling", start: t0, end: t0 + 1200, elapsedS: 1200, timerS: 1100,
                               energyKcal: 200, energySource: .device, laps: [Lap(start: t0, end: t0 + 600, elapsedS: 600)],
                               samples: (0...10).map { Sample(time: t0 + Double($0) * 60, heartRate: 120) }, source: Source(driver: "fit"))
        try await store.write([.workout(manual), .workout(recorded)])

        guard case .workout(let longer) = try await store.edit(id: manual.id.description, changes: RecordChanges(durationS: 3600),
                                                                now: t0 + 86_400) else { Issue.record("not a workout"); return }
        #expect(longer.start == t0 && longer.end == t0 + 3600 && longer.elapsedS == 3600 && longer.timerS == 3600)
        #expect(longer.energyKcal == 600 && longer.energySource == .estimated, "an estimate follows the active time")
        guard case .workout(let given) = try await store.edit(id: manual.id.description, changes: RecordChanges(energyKcal: 500, durationS: 1800),
                                                               now: t0 + 86_400) else { Issue.record("not a workout"); return }
        #expect(given.end == t0 + 1800 && given.energyKcal == 500 && given.energySource == .device)

        // Shorter, down to its last sample: fine; the timer (pauses excluded) is cut to the span.
        guard case .workout(let cut) = try await store.edit(id: recorded.id.description, changes: RecordChanges(durationS: 600),
                                                             now: t0 + 86_400) else { Issue.record("not a workout"); return }
        #expect(cut.end == t0 + 600 && cut.elapsedS == 600 && cut.timerS == 600 && cut.energyKcal == 200)
        #expect(cut.samples.count == 11 && cut.laps.count == 1, "the series stay")
        await #expect(throws: EditError("workout \(recorded.id) has laps or samples until \(ISO8601.string(t0 + 600)): it cannot end before them (at least 10 minutes)")) {
            try await store.edit(id: recorded.id.description, changes: RecordChanges(durationS: 300), now: t0 + 86_400)
        }
        // Into the future: the model's rule.
        await #expect(throws: EditError.self) {
            try await store.edit(id: manual.id.description, changes: RecordChanges(durationS: 7200), now: t0 + 3600)
        }
        #expect(try await store.history(id: recorded.id.description).map(\.version) == [2, 1])
    }

    @Test func aSleepSessionsDuration() async throws {
        let store = try await HealthStore.inMemory()
        let night = SleepSession(id: RecordID(UUID()), start: t0, end: t0 + 7 * 3600, source: Source(driver: "manual"))
        let staged = SleepSession(id: RecordID(UUID()), start: t0, end: t0 + 3600,
                                  stages: [SleepStageSpan(start: t0, end: t0 + 3600, stage: .light)], source: Source(driver: "fit"))
        try await store.write([.sleep(night), .sleep(staged)])
        let edited = try await store.edit(id: night.id.description, changes: RecordChanges(durationS: 8 * 3600), now: t0 + 86_400)
        #expect(edited.end == t0 + 8 * 3600 && edited.start == t0 && edited.version == 2)
        await #expect(throws: EditError("sleep session \(staged.id) has stages until \(ISO8601.string(t0 + 3600)): it cannot end before them")) {
            try await store.edit(id: staged.id.description, changes: RecordChanges(durationS: 1800), now: t0 + 86_400)
        }
        await #expect(throws: EditError("a sleep session has no --value: it takes --duration")) {
            try await store.edit(id: night.id.description, changes: RecordChanges(value: 1), now: t0 + 86_400)
        }
    }
}
