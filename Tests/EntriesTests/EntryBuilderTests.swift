import Foundation
import HealthModel
import Entries
import Testing

/// The entry builder, pure: every kind of entry, units and conversions, times, and every bad
/// input refused with its message (and nothing built).
@Suite struct EntryBuilderTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    /// 2025-06-01 10:00 in Berlin (08:00 UTC, summer time).
    static let now = ISO8601.parse("2025-06-01T08:00:00Z")!
    static let source = Source(driver: "manual")

    static func definitions(_ extra: [DefinitionBody] = [], names: [String] = []) -> [Definition] {
        zip(names, extra).map { Definition(name: $0, time: now, body: $1, source: source) }
    }

    static let standard = definitions(
        [.habit(HabitDefinition(valueKind: .numeric, unit: "pages")),
         .habit(HabitDefinition(valueKind: .categorical, categories: ["calm", "anxious"])),
         .habit(HabitDefinition(valueKind: .yesNo)),
         .trigger,
         .meal(SavedMeal(kcal: 420)),
         .profile(BodyProfile(weightKg: 80))],
        names: ["Reading", "mood", "stretch", "after coffee", "Porridge", "profile"])

    func builder(_ definitions: [Definition] = standard, preferences: Preferences? = nil) -> EntryBuilder {
        var all = definitions
        if let preferences { all.append(Definition(name: "preferences", time: Self.now, body: .preferences(preferences), source: Self.source)) }
        return EntryBuilder(definitions: DefinitionsSnapshot(all), now: Self.now, timeZone: Self.berlin)
    }

    func habit(_ request: EntryRequest, _ b: EntryBuilder? = nil) throws -> HabitEvent {
        let built = try (b ?? builder()).build(request)
        #expect(built.records.count == 1)
        guard case .habit(let h) = built.records.first else { throw EntryError("not a habit event") }
        #expect(h.source.driver == "manual")
        return h
    }

    func refused(_ request: EntryRequest, _ b: EntryBuilder? = nil) -> String {
        do {
            let built = try (b ?? builder()).build(request)
            Issue.record("built \(built.records) for \(request)")
            return ""
        } catch { return error.description }
    }

    @Test func drinkSizes() throws {
        #expect(try habit(EntryRequest(kind: .drink)).value == 118.3)
        #expect(try habit(EntryRequest(kind: .glass)).value == 236.6)
        let bottle = try habit(EntryRequest(kind: .bottle))
        #expect(bottle.value == 473.2 && bottle.category == "bottle" && bottle.unit == "ml" && bottle.habit == "hydration")
        #expect(bottle.time == Self.now)
    }

    @Test func waterVolumes() throws {
        #expect(try habit(EntryRequest(kind: .water, value: "330ml")).value == 330)
        #expect(try habit(EntryRequest(kind: .water, value: "0.5l")).value == 500)
        #expect(try habit(EntryRequest(kind: .water, value: "33cl")).value == 330)
        // 12 US fl oz = 354.88 ml, stored to 0.1 ml.
        for text in ["12oz", "12floz", "12 fl oz", "12 FL OZ"] {
            #expect(try habit(EntryRequest(kind: .water, value: text)).value == 354.9, "\(text)")
        }
        #expect(try habit(EntryRequest(kind: .water, value: "250")).value == 250)
        // A bare number in the preferred unit: 8 fl oz = 236.59 ml.
        #expect(try habit(EntryRequest(kind: .water, value: "8"), builder(preferences: Preferences(volume: .flOz))).value == 236.6)
        #expect(try habit(EntryRequest(kind: .water, value: "250ml")).category == "custom")
    }

    @Test func badVolumes() {
        #expect(refused(EntryRequest(kind: .water, value: "50l")) == "50l is not a drink: 1 ml to 5 l (50000 ml)")
        #expect(refused(EntryRequest(kind: .water, value: "0ml")) == "'0ml': a volume must be more than zero")
        #expect(refused(EntryRequest(kind: .water, value: "-3ml")) == "'-3ml': a volume must be more than zero")
        #expect(refused(EntryRequest(kind: .water, value: "lots")) == "'lots' is not a volume (250ml, 0.5l, 12oz)")
        #expect(refused(EntryRequest(kind: .water, value: "3 gallons")) == "'3 gallons': unknown volume unit 'gallons' (ml, l, oz)")
        #expect(refused(EntryRequest(kind: .water)) == "water needs a volume: 250ml, 0.5l, 12oz")
    }

    @Test func vaping() throws {
        let h = try habit(EntryRequest(kind: .vape, trigger: "Stress", thoughts: "deadline", podFinished: true))
        #expect(h.habit == "vaping" && h.value == 1 && h.category == "stress" && h.note == "deadline" && h.label == "pod_finished")
        #expect(try habit(EntryRequest(kind: .vape, trigger: "after coffee")).category == "after coffee")
        let plain = try habit(EntryRequest(kind: .vape))
        #expect(plain.category == nil && plain.label == nil && plain.note == nil)
    }

    @Test func badTriggers() {
        let unknown = refused(EntryRequest(kind: .vape, trigger: "rain"))
        #expect(unknown.hasPrefix("unknown trigger 'rain'; known triggers: time of day, wake-up routine, boredom"))
        #expect(unknown.contains("after coffee") && unknown.contains("`healthgate define trigger NAME` adds one"))
        #expect(refused(EntryRequest(kind: .vape, trigger: "  ")).hasPrefix("the trigger is empty; known triggers: time of day"))
    }

    @Test func habits() throws {
        let reading = try habit(EntryRequest(kind: .habit, name: "reading", value: "30"))
        #expect(reading.habit == "Reading" && reading.value == 30 && reading.unit == "pages")
        let mood = try habit(EntryRequest(kind: .habit, name: "mood", value: "Calm"))
        #expect(mood.category == "calm" && mood.value == nil)
        let stretch = try habit(EntryRequest(kind: .habit, name: "stretch", done: true))
        #expect(stretch.value == 1 && stretch.habit == "stretch")
    }

    @Test func badHabits() {
        #expect(refused(EntryRequest(kind: .habit, name: "chess", value: "1")).hasPrefix(
            "unknown habit 'chess': define it first, e.g. `healthgate define habit chess --kind numeric"))
        #expect(refused(EntryRequest(kind: .habit, name: "stretch", value: "3")) == "'stretch' is a yes/no habit: log it with --done, not a value ('3')")
        #expect(refused(EntryRequest(kind: .habit, name: "stretch")) == "'stretch' is a yes/no habit: log it with --done")
        #expect(refused(EntryRequest(kind: .habit, name: "reading", value: "many")) == "'Reading' takes a number (pages): 'many' is not one")
        #expect(refused(EntryRequest(kind: .habit, name: "reading", done: true)) == "'Reading' takes a number (pages), not --done")
        #expect(refused(EntryRequest(kind: .habit, name: "mood", value: "angry")) == "'angry' is not a category of 'mood': one of calm, anxious")
        #expect(refused(EntryRequest(kind: .habit, name: "hydration", value: "3")) == "'hydration' is logged with `healthgate log water`")
    }

    @Test func meals() throws {
        let saved = try habit(EntryRequest(kind: .meal, name: "porridge"))
        #expect(saved.habit == "meal" && saved.value == 420 && saved.unit == "kcal" && saved.label == "Porridge")
        #expect(try habit(EntryRequest(kind: .meal, name: "porridge", kcal: 380)).value == 380)
        #expect(try habit(EntryRequest(kind: .meal, name: "kebab", kcal: 700)).label == "kebab")
        #expect(refused(EntryRequest(kind: .meal, name: "kebab")) ==
            "unknown meal 'kebab': give --kcal N, or save it with `healthgate define meal kebab --kcal N`")
        #expect(refused(EntryRequest(kind: .meal, name: "kebab", kcal: -5)) == "-5 kcal is not a meal: 0 to 10,000 kcal")
        #expect(refused(EntryRequest(kind: .meal, name: "kebab", kcal: 20_000)) == "20000 kcal is not a meal: 0 to 10,000 kcal")
    }

    @Test func workoutEstimatedFromTheProfile() throws {
        let built = try builder().build(EntryRequest(kind: .workout, name: "run", duration: "45m", distance: "8km"))
        guard case .workout(let w) = built.records.first else { Issue.record("no workout"); return }
        // Running: MET 9.8 (Compendium 12050) x 80 kg x 0.75 h = 588 kcal.
        #expect(w.energyKcal == 588 && w.energySource == .estimated)
        #expect(w.sport == "running" && w.distanceM == 8000 && w.elapsedS == 2700 && w.timerS == 2700)
        #expect(w.end == Self.now && w.start == Self.now.addingTimeInterval(-2700))
        #expect(built.notes.isEmpty)
    }

    @Test func workoutWithoutProfileAssumes70kg() throws {
        let built = try builder([]).build(EntryRequest(kind: .workout, name: "cycling", duration: "1h30m", distance: "3mi"))
        guard case .workout(let w) = built.records.first else { Issue.record("no workout"); return }
        // Cycling: MET 7.5 (01015) x 70 kg x 1.5 h = 787.5 kcal.
        #expect(w.energyKcal == 787.5 && w.energySource == .estimated)
        #expect(abs((w.distanceM ?? 0) - 4828.032) < 1e-6)
        #expect(built.notes == ["energy estimated with 70 kg (no body weight defined: `healthgate define profile --weight 71.5kg`)"])
    }

    @Test func workoutWithKcalAndStart() throws {
        let built = try builder().build(EntryRequest(kind: .workout, name: "swimming", kcal: 300, duration: "30m", distance: "800m", at: "07:00"))
        guard case .workout(let w) = built.records.first else { Issue.record("no workout"); return }
        #expect(w.energyKcal == 300 && w.energySource == .device && w.distanceM == 800)
        // 07:00 in Berlin (summer) is 05:00 UTC.
        #expect(w.start == ISO8601.parse("2025-06-01T05:00:00Z") && w.end == ISO8601.parse("2025-06-01T05:30:00Z"))
    }

    @Test func badWorkouts() {
        #expect(refused(EntryRequest(kind: .workout, name: "quidditch", duration: "1h")).hasPrefix("'quidditch' is not a sport HealthGate knows: running, cycling"))
        #expect(refused(EntryRequest(kind: .workout, name: "running")) == "workout needs --duration (e.g. 45m, 1h30m)")
        #expect(refused(EntryRequest(kind: .workout, name: "running", duration: "soon")) == "--duration 'soon' is not a duration (90, 45m, 1h30m)")
        #expect(refused(EntryRequest(kind: .workout, name: "running", kcal: -1, duration: "1h")) == "--kcal -1 is out of range: 0 to 20,000 kcal")
        #expect(refused(EntryRequest(kind: .workout, name: "running", duration: "1h", at: "09:30")) ==
            "the workout would end at 2025-06-01 10:30, which is in the future")
        #expect(refused(EntryRequest(kind: .workout, name: "running", duration: "1h", distance: "far")) == "'far' is not a distance (5km, 3mi, 800m)")
    }

    @Test func sleepIsTheNightEndingToday() throws {
        let built = try builder().build(EntryRequest(kind: .sleep, from: "23:10", to: "06:40"))
        guard case .sleep(let s) = built.records.first else { Issue.record("no sleep"); return }
        #expect(s.start == ISO8601.parse("2025-05-31T21:10:00Z") && s.end == ISO8601.parse("2025-06-01T04:40:00Z"))
        let nap = try builder().build(EntryRequest(kind: .sleep, from: "13:00", to: "14:00", at: "2025-05-20"))
        guard case .sleep(let n) = nap.records.first else { Issue.record("no sleep"); return }
        #expect(n.start == ISO8601.parse("2025-05-20T11:00:00Z") && n.end == ISO8601.parse("2025-05-20T12:00:00Z"))
        #expect(refused(EntryRequest(kind: .sleep, from: "23:10", to: "11:00")) == "the night ending 2025-06-01 11:00 is in the future")
        #expect(refused(EntryRequest(kind: .sleep, from: "25:10", to: "06:00")) == "--from '25:10' is not a time (HH:MM)")
        #expect(refused(EntryRequest(kind: .sleep, from: "23:10")) == "sleep needs --from HH:MM and --to HH:MM")
    }

    @Test func weights() throws {
        func kg(_ text: String, _ b: EntryBuilder? = nil) throws -> Double? {
            guard case .measurement(let m) = try (b ?? builder()).build(EntryRequest(kind: .weight, value: text)).records.first else { return nil }
            #expect(m.kind == .weight)
            return m.value
        }
        #expect(try kg("71.5kg") == 71.5)
        #expect(try kg("160lb") == 72.575)  // 160 x 0.45359237 = 72.5747792
        #expect(try kg("70") == 70)
        #expect(try kg("160", builder(preferences: Preferences(mass: .lb))) == 72.575)
        #expect(refused(EntryRequest(kind: .weight, value: "7000kg")) == "7000kg is not a body weight: 0.2 to 700 kg")
        #expect(refused(EntryRequest(kind: .weight, value: "70st")) == "'70st': unknown weight unit 'st' (kg, lb)")
    }

    @Test func times() throws {
        #expect(try habit(EntryRequest(kind: .glass, at: "-2h")).time == Self.now.addingTimeInterval(-7200))
        #expect(try habit(EntryRequest(kind: .glass, at: "-90m")).time == Self.now.addingTimeInterval(-5400))
        #expect(try habit(EntryRequest(kind: .glass, at: "08:15")).time == ISO8601.parse("2025-06-01T06:15:00Z"))
        #expect(try habit(EntryRequest(kind: .glass, at: "2025-05-31T22:00")).time == ISO8601.parse("2025-05-31T20:00:00Z"))
        #expect(try habit(EntryRequest(kind: .glass, at: "2025-05-31T22:00:00Z")).time == ISO8601.parse("2025-05-31T22:00:00Z"))
        #expect(try habit(EntryRequest(kind: .glass, at: "2025-01-10T12:00")).time == ISO8601.parse("2025-01-10T11:00:00Z"))  // winter: +01:00
        #expect(refused(EntryRequest(kind: .glass, at: "10:01")) == "2025-06-01 10:01 is in the future")
        #expect(refused(EntryRequest(kind: .glass, at: "2025-06-02T09:00")) == "2025-06-02 09:00 is in the future")
        #expect(refused(EntryRequest(kind: .glass, at: "yesterday")) == "'yesterday' is not a time: use 2025-06-01T08:30, HH:MM (today) or -2h (ago)")
    }

    @Test func everyEntryHasItsOwnRandomID() throws {
        let a = try habit(EntryRequest(kind: .glass)), b = try habit(EntryRequest(kind: .glass))
        #expect(a.id != b.id)
    }

    @Test func jsonRequest() throws {
        let json = #"{"kind":"vape","trigger":"boredom","pod_finished":true,"at":"-1h"}"#
        let request = try JSONDecoder().decode(EntryRequest.self, from: Data(json.utf8))
        #expect(request == EntryRequest(kind: .vape, trigger: "boredom", podFinished: true, at: "-1h"))
    }

    @Test func oneMETTableWithItsSource() {
        #expect(METTable.edition == "2011 Compendium of Physical Activities")
        for sport in Sport.allCases {
            let row = METTable.row(for: sport)
            #expect(sport.met == row.met)
            #expect(row.code?.count ?? 5 == 5, "\(sport)")
        }
        // Each row as the 2011 Compendium publishes it (code, MET), checked against its table.
        let published: [Sport: (String, Double)] = [
            .running: ("12050", 9.8), .cycling: ("01015", 7.5), .swimming: ("18310", 6.0), .walking: ("17190", 3.5),
            .hiking: ("17080", 6.0), .rowing: ("02072", 7.0), .paddling: ("18100", 5.0), .skiing: ("19075", 7.0),
            .strength: ("02054", 3.5), .fitnessEquipment: ("02048", 5.0),
        ]
        for (sport, (code, met)) in published {
            #expect(METTable.row(for: sport).code == code, "\(sport)")
            #expect(METTable.row(for: sport).met == met, "\(sport)")
        }
        // The import path's estimate uses the same table: walking 3.5 x 60 kg x 2 h = 420 kcal.
        #expect(EnergyEstimator(bodyWeightKg: 60).estimate(sport: "walking", activeSeconds: 7200) == 420)
        // Strength 3.5 (02054) x 70 kg x 1 h = 245 kcal.
        let t0 = Date(timeIntervalSince1970: 1_700_000_000)
        let w = Workout(id: RecordID.derive("s"), sport: "strength", start: t0, end: t0.addingTimeInterval(3600), source: Self.source)
        let out = Normalizer().normalize([.workout(w)], now: t0.addingTimeInterval(86_400))
        guard case .workout(let n) = out.accepted.first else { Issue.record("refused"); return }
        #expect(n.energyKcal == 245 && n.energySource == .estimated)
    }
}
