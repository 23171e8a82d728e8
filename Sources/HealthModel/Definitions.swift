public import Foundation

/// What the user defined once and every entry refers to: a habit with its goal, a vaping trigger
/// of their own, a saved meal, their body profile, their preferred units. Definitions are records
/// like any other: stored, versioned (an edit is a new version), deleted as tombstones, synced.
///
/// A definition's id derives from its kind and its key (the name, case-folded; `profile` and
/// `preferences` have one each), so that the same habit defined on two installs is one record
/// whose versions compete, not two habits.
public struct Definition: Hashable, Sendable {
    public var id: RecordID
    public var version: Int
    /// The name entries use (`reading`, `stress`, `porridge`); `profile` and `preferences` for those.
    public var name: String
    /// When it was defined or last changed.
    public var time: Date
    public var body: DefinitionBody
    public var source: Source

    public init(id: RecordID? = nil, version: Int = 1, name: String, time: Date, body: DefinitionBody, source: Source) {
        self.id = id ?? Definition.id(body.kind, name: name)
        self.version = version
        self.name = name
        self.time = time
        self.body = body
        self.source = source
    }

    public var kind: DefinitionKind { body.kind }

    /// The id of the definition of `kind` named `name` (names compare case-insensitively).
    public static func id(_ kind: DefinitionKind, name: String) -> RecordID {
        RecordID.derive("definition", kind.rawValue, key(name))
    }

    /// A name as definitions are keyed: trimmed, case-folded.
    public static func key(_ name: String) -> String {
        name.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }
}

/// The kinds of definition, spelled as stored and sent.
public enum DefinitionKind: String, Codable, Sendable, CaseIterable {
    case habit, trigger, meal, profile, preferences
}

/// What a definition holds, by kind.
public enum DefinitionBody: Hashable, Sendable {
    /// A habit (a built-in one, `hydration`, `vaping`, `meal`, given a goal; or the user's own).
    case habit(HabitDefinition)
    /// A vaping trigger added to the default list (``VapingTriggers/defaults``).
    case trigger
    /// A saved meal.
    case meal(SavedMeal)
    /// The body profile energy estimates use.
    case profile(BodyProfile)
    /// Units the user reads and types.
    case preferences(Preferences)

    public var kind: DefinitionKind {
        switch self {
        case .habit: .habit
        case .trigger: .trigger
        case .meal: .meal
        case .profile: .profile
        case .preferences: .preferences
        }
    }
}

/// A habit: what its entries hold and the goal they count toward.
public struct HabitDefinition: Hashable, Sendable {
    /// What one entry holds.
    public enum ValueKind: String, Codable, Sendable, CaseIterable {
        /// A number in `unit` (pages read, glasses, minutes).
        case numeric
        /// One of `categories` (a mood, a place).
        case categorical
        /// Done or not (`--done`): an entry means done.
        case yesNo = "yes_no"
    }

    public var valueKind: ValueKind
    /// The unit of numeric values (`pages`, `ml`, `min`).
    public var unit: String?
    /// The allowed values of a categorical habit, in the user's order.
    public var categories: [String]
    public var target: HabitTarget?
    /// Where a derived habit's values come from (a numeric habit whose values are computed from
    /// what was recorded, never typed); nil for a habit people log.
    public var derivation: HabitDerivation?

    public init(valueKind: ValueKind, unit: String? = nil, categories: [String] = [], target: HabitTarget? = nil,
                derivation: HabitDerivation? = nil) {
        self.valueKind = valueKind
        self.unit = unit
        self.categories = categories
        self.target = target
        self.derivation = derivation
    }
}

/// A habit's goal: at least (or at most) `amount` per day or week, counted as the entries'
/// values summed (numeric: the sum; yes/no and categorical: the number of entries).
public struct HabitTarget: Hashable, Sendable {
    public enum Period: String, Codable, Sendable, CaseIterable { case day, week }
    public enum Direction: String, Codable, Sendable, CaseIterable {
        case atLeast = "at_least"
        case atMost = "at_most"
    }

    public var amount: Double
    public var period: Period
    public var direction: Direction

    public init(amount: Double, period: Period = .day, direction: Direction = .atLeast) {
        self.amount = amount
        self.period = period
        self.direction = direction
    }

    /// Whether a period's total meets the goal.
    public func isMet(by total: Double) -> Bool {
        switch direction {
        case .atLeast: total >= amount
        case .atMost: total <= amount
        }
    }

    /// The amount of a goal per day in `direction`, else nil: the water goal (at least), the
    /// vaping goal (at most); a weekly target or the other direction is no daily goal of that kind.
    public func daily(_ direction: Direction) -> Double? { period == .day && self.direction == direction ? amount : nil }
}

/// A meal saved once and logged by name: its energy, and optionally what it is made of.
public struct SavedMeal: Hashable, Sendable {
    public struct Ingredient: Hashable, Sendable {
        public var name: String
        public var kcal: Double

        public init(name: String, kcal: Double) {
            self.name = name
            self.kcal = kcal
        }
    }

    public var kcal: Double
    public var ingredients: [Ingredient]

    public init(kcal: Double, ingredients: [Ingredient] = []) {
        self.kcal = kcal
        self.ingredients = ingredients
    }
}

/// The body figures energy estimates use, and the weight the user is aiming for.
public struct BodyProfile: Hashable, Sendable {
    public var weightKg: Double
    /// The goal weight the body page draws and projects the trend to; nil when not set.
    public var goalWeightKg: Double?

    public init(weightKg: Double, goalWeightKg: Double? = nil) {
        self.weightKg = weightKg
        self.goalWeightKg = goalWeightKg
    }
}

/// The units the user reads and types (values are stored in SI units, ml and kg, whatever these
/// say) and where their day starts.
public struct Preferences: Hashable, Sendable {
    public enum VolumeUnit: String, Codable, Sendable, CaseIterable {
        case ml
        case flOz = "fl_oz"

        /// As people read it: `ml`, `fl oz`.
        public var symbol: String { self == .ml ? "ml" : "fl oz" }
    }
    public enum MassUnit: String, Codable, Sendable, CaseIterable {
        case kg, lb

        /// As people read it: `kg`, `lb`.
        public var symbol: String { rawValue }
    }

    public var volume: VolumeUnit
    public var mass: MassUnit
    /// Minutes after local midnight at which the user's day starts (``DayBoundary``): 0 for
    /// midnight, 240 for 04:00; within ``DayBoundary/allowedStart``.
    public var dayStartMinutes: Int

    public init(volume: VolumeUnit = .ml, mass: MassUnit = .kg, dayStartMinutes: Int = 0) {
        self.volume = volume
        self.mass = mass
        self.dayStartMinutes = dayStartMinutes
    }

    /// The user's days in `timeZone`.
    public func days(in timeZone: TimeZone) -> DayBoundary { DayBoundary(timeZone: timeZone, startMinutes: dayStartMinutes) }
}

/// The names of the habits the apps themselves fill, as stored in ``HabitEvent/habit``, and what
/// their events hold.
public enum BuiltInHabit {
    /// A drink (TapWater): `value` the volume in ml, `unit` `ml`, `category` `drink`, `glass`,
    /// `bottle` or `custom`.
    public static let hydration = "hydration"
    /// A vaping session (PuffAway): `value` 1, `category` the trigger, `note` the thoughts,
    /// `label` `pod_finished` when the pod ran out.
    public static let vaping = "vaping"
    /// A meal (Zot "Eat"): `value` the energy in kcal, `unit` `kcal`, `label` the meal's name.
    public static let meal = "meal"

    public static let all = [hydration, vaping, meal]
}

/// Vaping triggers (PuffAway): the default list; the user adds their own as ``Definition``s of
/// kind `trigger`.
public enum VapingTriggers {
    public static let defaults = [
        "time of day", "wake-up routine", "boredom", "vape smell", "stress", "seeing someone vaping", "fatigue", "partying",
    ]
}

/// Drink sizes (TapWater): a drink is 4 fl oz, a glass 8, a bottle 16.
public enum DrinkSize: String, Sendable, CaseIterable {
    case drink, glass, bottle

    public var fluidOunces: Double {
        switch self {
        case .drink: 4
        case .glass: 8
        case .bottle: 16
        }
    }

    public var millilitres: Double { fluidOunces * Units.millilitresPerFluidOunce }
}

/// Unit conversions used for entries and display (US customary fluid ounce, avoirdupois pound).
public enum Units {
    public static let millilitresPerFluidOunce = 29.5735295625
    public static let kilogramsPerPound = 0.45359237
    public static let metresPerMile = 1609.344
}
