public import Foundation
public import HealthModel

/// One entry as a person or a script asks for it (`healthgate log water 250ml`, the daemon's
/// status socket): what, and the texts as typed. ``EntryBuilder`` turns it into records.
///
/// As JSON (the status socket's `log` request): `{"kind": "water", "value": "250ml", "at": "-2h"}`;
/// keys are these properties' names in snake case (`pod_finished`), values as typed (strings),
/// `done` and `pod_finished` true or false, `kcal` a number.
public struct EntryRequest: Codable, Hashable, Sendable {
    /// What is logged.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case drink, glass, bottle, water, vape, habit, meal, workout, sleep, weight
    }

    public var kind: Kind
    /// The habit's, meal's name or the workout's sport.
    public var name: String?
    /// Water's volume (`330ml`, `0.5l`, `12oz`), a habit's value (a number or a category), the weight (`71.5kg`).
    public var value: String?
    /// A yes/no habit done.
    public var done: Bool?
    /// A habit skipped on purpose (a day off, ill, travelling): a `skipped` mark, which a daily
    /// streak passes over (docs/days.md).
    public var skip: Bool?
    /// A vaping session's trigger.
    public var trigger: String?
    /// A vaping session's thoughts.
    public var thoughts: String?
    /// The pod ran out in this session.
    public var podFinished: Bool?
    /// A meal's or a workout's energy, overriding the saved meal or the estimate.
    public var kcal: Double?
    /// A workout's duration (``Durations/seconds(_:)``).
    public var duration: String?
    /// A workout's distance (`5km`, `3mi`, `800m`).
    public var distance: String?
    /// Sleep: bedtime and wake-up time, `HH:MM`.
    public var from: String?
    public var to: String?
    /// When: ISO 8601, `HH:MM` today, or `-2h` (ago); now when nil. A workout's start.
    public var at: String?

    public init(kind: Kind, name: String? = nil, value: String? = nil, done: Bool? = nil, skip: Bool? = nil, trigger: String? = nil,
                thoughts: String? = nil, podFinished: Bool? = nil, kcal: Double? = nil, duration: String? = nil,
                distance: String? = nil, from: String? = nil, to: String? = nil, at: String? = nil) {
        self.kind = kind
        self.name = name
        self.value = value
        self.done = done
        self.skip = skip
        self.trigger = trigger
        self.thoughts = thoughts
        self.podFinished = podFinished
        self.kcal = kcal
        self.duration = duration
        self.distance = distance
        self.from = from
        self.to = to
        self.at = at
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, name, value, done, skip, trigger, thoughts, kcal, duration, distance, from, to, at
        case podFinished = "pod_finished"
    }

    /// The JSON form's keys (a request naming another is refused, not silently ignored).
    public static var jsonKeys: [String] { CodingKeys.allCases.map(\.rawValue) }
}

/// The user's definitions as an entry needs them: habits, triggers (the defaults and their
/// own), saved meals, the body profile and preferred units.
public struct DefinitionsSnapshot: Sendable {
    /// Habits by ``Definition/key(_:)``, with the name as defined.
    public var habits: [String: (name: String, habit: HabitDefinition)]
    /// The triggers a vaping session may name: ``VapingTriggers/defaults`` then the user's.
    public var triggers: [String]
    /// Saved meals by ``Definition/key(_:)``.
    public var meals: [String: (name: String, meal: SavedMeal)]
    public var profile: BodyProfile?
    public var preferences: Preferences

    public init(_ definitions: [Definition]) {
        habits = [:]
        triggers = VapingTriggers.defaults
        meals = [:]
        profile = nil
        preferences = Preferences()
        for definition in definitions {
            switch definition.body {
            case .habit(let habit): habits[Definition.key(definition.name)] = (definition.name, habit)
            case .trigger:
                if !triggers.contains(where: { Definition.key($0) == Definition.key(definition.name) }) {
                    triggers.append(definition.name)
                }
            case .meal(let meal): meals[Definition.key(definition.name)] = (definition.name, meal)
            case .profile(let profile): self.profile = profile
            case .preferences(let preferences): self.preferences = preferences
            }
        }
    }
}

/// Why an entry was not built: one sentence for the person who typed it.
public struct EntryError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What an entry became: the records to store and what the user should know (an assumption made).
public struct BuiltEntry: Sendable, Equatable {
    public var records: [HealthRecord]
    public var notes: [String]
}

/// The pure step from an ``EntryRequest`` to the records to store: parses the texts (units,
/// times), checks them against the definitions, and refuses what cannot be (a 50-litre drink, a
/// future time, an unknown habit) with an ``EntryError`` saying how to fix it. No I/O: the
/// caller reads the definitions and writes the records. Every entry gets a random id.
public struct EntryBuilder: Sendable {
    public var definitions: DefinitionsSnapshot
    public var now: Date
    public var timeZone: TimeZone
    /// The driver id records carry.
    public static let driverID = "manual"

    public init(definitions: DefinitionsSnapshot, now: Date, timeZone: TimeZone) {
        self.definitions = definitions
        self.now = now
        self.timeZone = timeZone
    }

    /// Default body weight for energy estimates when no profile is defined.
    public static let defaultWeightKg = 70.0

    public func build(_ request: EntryRequest) throws(EntryError) -> BuiltEntry {
        let source = Source(driver: Self.driverID)
        let id = RecordID(UUID())
        var notes: [String] = []
        let records: [HealthRecord]
        switch request.kind {
        case .drink, .glass, .bottle:
            let size = DrinkSize(rawValue: request.kind.rawValue)!
            let time = try time(request.at)
            records = [.habit(HabitEvent(id: id, habit: BuiltInHabit.hydration, time: time, value: (size.millilitres * 10).rounded() / 10,
                                         category: size.rawValue, unit: "ml", source: source))]
        case .water:
            guard let text = request.value else { throw EntryError("water needs a volume: 250ml, 0.5l, 12oz") }
            let ml = try volumeMl(text)
            guard PhysicalLimits.drinkMl.contains(ml) else {
                throw EntryError("\(text) is not a drink: 1 ml to 5 l (\(Self.show(ml)) ml)")
            }
            let time = try time(request.at)
            records = [.habit(HabitEvent(id: id, habit: BuiltInHabit.hydration, time: time, value: (ml * 10).rounded() / 10,
                                         category: "custom", unit: "ml", source: source))]
        case .vape:
            var trigger: String?
            if let text = request.trigger {
                let key = Definition.key(text)
                guard !key.isEmpty else { throw EntryError("the trigger is empty; known triggers: \(knownTriggers)") }
                guard let known = definitions.triggers.first(where: { Definition.key($0) == key }) else {
                    throw EntryError("unknown trigger '\(text)'; known triggers: \(knownTriggers) (`healthgate define trigger NAME` adds one)")
                }
                trigger = known
            }
            let thoughts = request.thoughts.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
            let time = try time(request.at)
            records = [.habit(HabitEvent(id: id, habit: BuiltInHabit.vaping, time: time, value: 1, category: trigger,
                                         label: request.podFinished == true ? "pod_finished" : nil, note: thoughts, source: source))]
        case .habit:
            records = [.habit(try habit(request, id: id, source: source))]
        case .meal:
            guard let name = request.name, !Definition.key(name).isEmpty else { throw EntryError("meal needs a name") }
            let kcal: Double
            if let given = request.kcal {
                kcal = given
            } else if let saved = definitions.meals[Definition.key(name)] {
                kcal = saved.meal.kcal
            } else {
                throw EntryError("unknown meal '\(name)': give --kcal N, or save it with `healthgate define meal \(name) --kcal N`")
            }
            guard PhysicalLimits.mealKcal.contains(kcal) else {
                throw EntryError("\(Self.show(kcal)) kcal is not a meal: 0 to 10,000 kcal")
            }
            let label = definitions.meals[Definition.key(name)]?.name ?? name
            let time = try time(request.at)
            records = [.habit(HabitEvent(id: id, habit: BuiltInHabit.meal, time: time, value: kcal, unit: "kcal", label: label, source: source))]
        case .workout:
            let (workout, note) = try workout(request, id: id, source: source)
            records = [.workout(workout)]
            notes += note.map { [$0] } ?? []
        case .sleep:
            records = [.sleep(try sleep(request, id: id, source: source))]
        case .weight:
            guard let text = request.value else { throw EntryError("weight needs a value: 71.5kg, 160lb") }
            let kg = try massKg(text)
            guard PhysicalLimits.range(of: .weight).contains(kg) else {
                throw EntryError("\(text) is not a body weight: 0.2 to 700 kg")
            }
            let time = try time(request.at)
            records = [.measurement(Measurement(id: id, kind: .weight, time: time, value: (kg * 1000).rounded() / 1000, source: source))]
        }
        // The same rules every record meets (the store's and the server's): a backstop.
        for record in records {
            do { try RecordValidator().validate(record, now: now) } catch { throw EntryError("\(error)") }
        }
        return BuiltEntry(records: records, notes: notes)
    }

    private var knownTriggers: String { definitions.triggers.joined(separator: ", ") }

    // MARK: Habits, workouts, sleep

    private func habit(_ request: EntryRequest, id: RecordID, source: Source) throws(EntryError) -> HabitEvent {
        guard let name = request.name, !Definition.key(name).isEmpty else { throw EntryError("habit needs a name") }
        let key = Definition.key(name)
        if key == BuiltInHabit.hydration || key == BuiltInHabit.vaping || key == BuiltInHabit.meal {
            throw EntryError("'\(key)' is logged with `healthgate log \(key == BuiltInHabit.hydration ? "water" : key == BuiltInHabit.vaping ? "vape" : "meal")`")
        }
        guard let (definedName, habit) = definitions.habits[key] else {
            throw EntryError("unknown habit '\(name)': define it first, e.g. `healthgate define habit \(name) --kind numeric --unit pages` (or --kind yes-no, --kind categorical --category C ...)")
        }
        let time = try time(request.at)
        if request.skip == true {
            guard request.value == nil, request.done != true else {
                throw EntryError("a skipped day of '\(definedName)' takes no value and no --done: it was not done, on purpose")
            }
            return HabitEvent(id: id, habit: definedName, time: time, label: HabitEvent.Mark.skipped, source: source)
        }
        switch habit.valueKind {
        case .yesNo:
            guard request.value == nil else {
                throw EntryError("'\(definedName)' is a yes/no habit: log it with --done, not a value ('\(request.value!)')")
            }
            guard request.done == true else { throw EntryError("'\(definedName)' is a yes/no habit: log it with --done") }
            return HabitEvent(id: id, habit: definedName, time: time, value: 1, source: source)
        case .numeric:
            guard request.done != true else { throw EntryError("'\(definedName)' takes a number\(habit.unit.map { " (\($0))" } ?? ""), not --done") }
            guard let text = request.value, let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
                throw EntryError("'\(definedName)' takes a number\(habit.unit.map { " (\($0))" } ?? ""): '\(request.value ?? "")' is not one")
            }
            guard value >= 0, value <= 1e9 else { throw EntryError("\(text) is out of range for '\(definedName)' (0 to 1e9)") }
            return HabitEvent(id: id, habit: definedName, time: time, value: value, unit: habit.unit, source: source)
        case .categorical:
            guard request.done != true, let text = request.value else {
                throw EntryError("'\(definedName)' takes one of: \(habit.categories.joined(separator: ", "))")
            }
            guard let category = habit.categories.first(where: { Definition.key($0) == Definition.key(text) }) else {
                throw EntryError("'\(text)' is not a category of '\(definedName)': one of \(habit.categories.joined(separator: ", "))")
            }
            return HabitEvent(id: id, habit: definedName, time: time, category: category, source: source)
        }
    }

    private func workout(_ request: EntryRequest, id: RecordID, source: Source) throws(EntryError) -> (Workout, String?) {
        guard let name = request.name else { throw EntryError("workout needs a sport") }
        let sport = Sport.normalize(name)
        guard sport != .other || Definition.key(name) == "other" else {
            let known = Sport.allCases.filter { $0 != .transition }.map(\.rawValue).joined(separator: ", ")
            throw EntryError("'\(name)' is not a sport HealthGate knows: \(known)")
        }
        guard let text = request.duration else { throw EntryError("workout needs --duration (e.g. 45m, 1h30m)") }
        guard let seconds = Durations.seconds(text), seconds > 0 else {
            throw EntryError("--duration '\(text)' is not a duration (90, 45m, 1h30m)")
        }
        guard seconds <= 86_400 else { throw EntryError("--duration \(text) is longer than a day") }
        let distance = try request.distance.map { text throws(EntryError) in try distanceM(text) }
        if let distance, !(0...1_000_000).contains(distance) { throw EntryError("--distance is out of range (0 to 1,000 km)") }
        if let kcal = request.kcal, !(0...20_000).contains(kcal) {
            throw EntryError("--kcal \(Self.show(kcal)) is out of range: 0 to 20,000 kcal")
        }
        // `--at` is when the workout started; without it, it ends now.
        let start = try request.at == nil ? now.addingTimeInterval(-seconds) : time(request.at)
        let end = start.addingTimeInterval(seconds)
        guard end <= now else { throw EntryError("the workout would end at \(local(end)), which is in the future") }
        var workout = Workout(id: id, sport: sport.rawValue, start: start, end: end, elapsedS: seconds, timerS: seconds,
                              distanceM: distance, energyKcal: request.kcal, source: source)
        var note: String?
        if request.kcal == nil {
            let weight = definitions.profile?.weightKg ?? Self.defaultWeightKg
            if definitions.profile == nil {
                note = "energy estimated with 70 kg (no body weight defined: `healthgate define profile --weight 71.5kg`)"
            }
            workout = EnergyEstimator(bodyWeightKg: weight).fillEnergy(workout)
        }
        return (workout, note)
    }

    private func sleep(_ request: EntryRequest, id: RecordID, source: Source) throws(EntryError) -> SleepSession {
        guard let fromText = request.from, let toText = request.to else { throw EntryError("sleep needs --from HH:MM and --to HH:MM") }
        guard let from = Self.clock(fromText) else { throw EntryError("--from '\(fromText)' is not a time (HH:MM)") }
        guard let to = Self.clock(toText) else { throw EntryError("--to '\(toText)' is not a time (HH:MM)") }
        // The night that ends on --at's day (today without it).
        let day = try request.at.map { text throws(EntryError) in try time(text, allowFuture: true) } ?? now
        let end = at(to, onDayOf: day)
        var start = at(from, onDayOf: day)
        if start >= end { start = calendar.date(byAdding: .day, value: -1, to: start)! }
        guard end <= now else { throw EntryError("the night ending \(local(end)) is in the future") }
        return SleepSession(id: id, start: start, end: end, source: source)
    }

    // MARK: Times

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    /// `text` as a time: nil is now; ISO 8601 (wall-clock in the time zone unless it has an
    /// offset), `HH:MM` today, `-2h` / `-90m` ago. Future times are refused.
    public func time(_ text: String?, allowFuture: Bool = false) throws(EntryError) -> Date {
        guard let text = text?.trimmingCharacters(in: .whitespaces) else { return now }
        let date: Date
        if text.hasPrefix("-"), let seconds = Durations.seconds(String(text.dropFirst())) {
            date = now.addingTimeInterval(-seconds)
        } else if let clock = Self.clock(text) {
            date = at(clock, onDayOf: now)
        } else if let parsed = Self.localDate(text, timeZone: timeZone) {
            date = parsed
        } else {
            throw EntryError("'\(text)' is not a time: use 2025-06-01T08:30, HH:MM (today) or -2h (ago)")
        }
        guard allowFuture || date <= now else { throw EntryError("\(local(date)) is in the future") }
        return date
    }

    /// `text` as ISO 8601; without `Z` or an offset it is a wall-clock time in `timeZone`.
    public static func localDate(_ text: String, timeZone: TimeZone) -> Date? {
        guard let asUTC = ISO8601.parse(text) else { return nil }
        let time = text.dropFirst(10)
        guard !(time.hasSuffix("Z") || time.hasSuffix("z") || time.contains("+") || time.contains("-")) else { return asUTC }
        // The offset in force at that wall-clock time (checked once more across a DST change).
        let guess = asUTC.addingTimeInterval(-Double(timeZone.secondsFromGMT(for: asUTC)))
        return asUTC.addingTimeInterval(-Double(timeZone.secondsFromGMT(for: guess)))
    }

    /// `HH:MM` as (hour, minute).
    static func clock(_ text: String) -> (hour: Int, minute: Int)? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 2, (1...2).contains(parts[0].count),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute) else { return nil }
        return (hour, minute)
    }

    private func at(_ clock: (hour: Int, minute: Int), onDayOf day: Date) -> Date {
        let calendar = self.calendar
        var parts = calendar.dateComponents([.year, .month, .day], from: day)
        parts.hour = clock.hour
        parts.minute = clock.minute
        return calendar.date(from: parts) ?? day
    }

    /// `2025-06-01 08:30` in the time zone.
    public func local(_ date: Date) -> String {
        let offset = timeZone.secondsFromGMT(for: date)
        return String(ISO8601.string(date.addingTimeInterval(Double(offset))).prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    // MARK: Units

    /// A volume in ml (HealthModel's ``Quantities``); a bare number in the preferred unit.
    public func volumeMl(_ text: String) throws(EntryError) -> Double {
        do { return try Quantities.millilitres(text, bare: definitions.preferences.volume) } catch { throw EntryError(error.description) }
    }

    /// A mass in kg; a bare number in the preferred unit.
    public func massKg(_ text: String) throws(EntryError) -> Double {
        do { return try Quantities.kilograms(text, bare: definitions.preferences.mass) } catch { throw EntryError(error.description) }
    }

    /// A distance in metres; a bare number is km.
    public func distanceM(_ text: String) throws(EntryError) -> Double {
        do { return try Quantities.metres(text) } catch { throw EntryError(error.description) }
    }

    /// A number for a message.
    static func show(_ value: Double) -> String { NumberText.plain(value) }
}
