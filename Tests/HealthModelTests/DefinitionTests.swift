import Foundation
import HealthModel
import Testing

/// Definitions (habits and goals, triggers, meals, profile, preferences) and the rules the
/// validator holds the apps' own entries to.
@Suite struct DefinitionTests {
    let now = Date(timeIntervalSince1970: 1_763_800_000)
    let manual = Source(driver: "manual")

    func definition(_ name: String, _ body: DefinitionBody) -> Definition {
        Definition(name: name, time: now, body: body, source: manual)
    }

    func problem(_ record: HealthRecord) -> String? {
        do {
            try RecordValidator().validate(record, now: now)
            return nil
        } catch let error as ValidationError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }

    @Test func idsDeriveFromKindAndName() {
        #expect(Definition.id(.habit, name: "Reading") == Definition.id(.habit, name: "  reading "))
        #expect(Definition.id(.habit, name: "reading") != Definition.id(.meal, name: "reading"))
        #expect(definition("Reading", .trigger).id == Definition.id(.trigger, name: "reading"))
    }

    @Test func goodDefinitionsPass() {
        let goals = [
            definition("hydration", .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 2000)))),
            definition("vaping", .habit(HabitDefinition(valueKind: .yesNo, target: HabitTarget(amount: 3, direction: .atMost)))),
            definition("mood", .habit(HabitDefinition(valueKind: .categorical, categories: ["good", "meh"]))),
            definition("doomscrolling", .trigger),
            definition("porridge", .meal(SavedMeal(kcal: 350, ingredients: [.init(name: "oats", kcal: 300), .init(name: "milk", kcal: 50)]))),
            definition("profile", .profile(BodyProfile(weightKg: 71.5))),
            definition("preferences", .preferences(Preferences(volume: .flOz, mass: .lb))),
        ]
        for d in goals { #expect(problem(.definition(d)) == nil, "\(d.name)") }
    }

    @Test func badDefinitionsAreRefusedWithTheReason() {
        var stolen = definition("reading", .trigger)
        stolen.id = RecordID.derive("other")
        let cases: [(Definition, String)] = [
            (definition(" ", .trigger), "name is empty"),
            (stolen, "is not the one of the trigger 'reading'"),
            (definition("mood", .habit(HabitDefinition(valueKind: .categorical))), "a categorical habit needs its categories"),
            (definition("mood", .habit(HabitDefinition(valueKind: .categorical, categories: [""]))), "categories[0] is empty"),
            (definition("pages", .habit(HabitDefinition(valueKind: .numeric, target: HabitTarget(amount: -5)))), "target -5"),
            (definition("feast", .meal(SavedMeal(kcal: -10))), "kcal -10 kcal is outside 0...10000 kcal"),
            (definition("feast", .meal(SavedMeal(kcal: 10, ingredients: [.init(name: "x", kcal: .nan)]))), "ingredients[0].kcal is not a number"),
            (definition("profile", .profile(BodyProfile(weightKg: 7000))), "weight 7000 kg is outside"),
            (definition("profile", .profile(BodyProfile(weightKg: 70, goalWeightKg: -1))), "goal weight -1 kg is outside"),
        ]
        for (d, reason) in cases {
            let text = problem(.definition(d))
            #expect(text?.contains(reason) == true, "\(d.name): \(text ?? "accepted")")
        }
    }

    @Test func theAppsEntriesHaveTheirLimits() {
        func habit(_ name: String, value: Double?, category: String? = nil) -> HealthRecord {
            .habit(HabitEvent(id: RecordID.derive(name, "\(value ?? -1)"), habit: name, time: now, value: value, category: category, source: manual))
        }
        #expect(problem(habit(BuiltInHabit.hydration, value: 50_000))?.contains("drink 50000 ml is outside 1...5000 ml") == true)
        #expect(problem(habit(BuiltInHabit.hydration, value: nil))?.contains("needs its volume") == true)
        #expect(problem(habit(BuiltInHabit.meal, value: -200))?.contains("meal -200 kcal") == true)
        #expect(problem(habit(BuiltInHabit.vaping, value: 1, category: "  "))?.contains("trigger is empty") == true)
        #expect(problem(habit(BuiltInHabit.hydration, value: DrinkSize.glass.millilitres)) == nil)
        #expect(problem(habit("reading", value: -3)) == nil)  // the user's own habits: any number
        #expect(abs(DrinkSize.bottle.millilitres - 473.176473) < 1e-6)
    }

    @Test func targetsAreMetByDirection() {
        #expect(HabitTarget(amount: 2000).isMet(by: 2000) && !HabitTarget(amount: 2000).isMet(by: 1999))
        #expect(HabitTarget(amount: 3, direction: .atMost).isMet(by: 3) && !HabitTarget(amount: 3, direction: .atMost).isMet(by: 4))
    }
}
