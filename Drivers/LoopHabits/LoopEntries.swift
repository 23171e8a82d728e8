public import CSVStream
public import Foundation
public import HealthModel

/// A habit as Loop Habit Tracker describes it (Habits.csv, or the backup's `Habits` table).
public struct LoopHabit: Sendable, Equatable {
    public var name: String
    /// Nil when the file does not say (Habits.csv before 2.3.1): the values decide.
    public var isNumeric: Bool?
    public var unit: String?
    /// Loop's frequency: `numerator` times every `denominator` days.
    public var frequency: (numerator: Int, denominator: Int)?
    /// Numerical habits: at least (false) or at most (true) `targetValue` per frequency period.
    public var atMost = false
    public var targetValue: Double?
    /// Habits.csv's Position (the per-habit folders are numbered by it).
    public var position: Int?

    public init(name: String, isNumeric: Bool? = nil, unit: String? = nil, frequency: (numerator: Int, denominator: Int)? = nil,
                atMost: Bool = false, targetValue: Double? = nil, position: Int? = nil) {
        self.name = name
        self.isNumeric = isNumeric
        self.unit = unit
        self.frequency = frequency
        self.atMost = atMost
        self.targetValue = targetValue
        self.position = position
    }

    public static func == (a: LoopHabit, b: LoopHabit) -> Bool {
        a.name == b.name && a.isNumeric == b.isNumeric && a.unit == b.unit && a.frequency?.numerator == b.frequency?.numerator
            && a.frequency?.denominator == b.frequency?.denominator && a.atMost == b.atMost && a.targetValue == b.targetValue
            && a.position == b.position
    }

    /// The name Loop gives the habit's folder in the CSV export: only `[ a-zA-Z0-9._-]`, at most 100
    /// characters.
    public var folderName: String {
        String(name.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || " ._-".unicodeScalars.contains($0)) }
            .prefix(100).map(Character.init))
    }

    /// The habit's definition. Its time is fixed (``LoopEntries/definitionTime``): the same export
    /// gives the same definition, and a goal imported applies to the whole history.
    public func definition(numeric: Bool, source: Source) -> Definition {
        let target: HabitTarget? = frequency.flatMap { frequency in
            guard frequency.numerator > 0, frequency.denominator > 0 else { return nil }
            // Loop: numerator per denominator days; HealthGate: per day or per week.
            let perDay = frequency.denominator == 1
            let periods = perDay ? 1.0 : 7.0 / Double(frequency.denominator)
            if numeric {
                guard let targetValue, targetValue >= 0 else { return nil }
                return HabitTarget(amount: LoopEntries.round(targetValue * (perDay ? 1 : Double(frequency.numerator) * periods)),
                                   period: perDay ? .day : .week, direction: atMost ? .atMost : .atLeast)
            }
            return HabitTarget(amount: LoopEntries.round(Double(frequency.numerator) * periods), period: perDay ? .day : .week)
        }
        let body = HabitDefinition(valueKind: numeric ? .numeric : .yesNo, unit: numeric ? unit.flatMap { $0.isEmpty ? nil : $0 } : nil,
                                   target: target)
        return Definition(name: LoopEntries.cleanName(name), time: LoopEntries.definitionTime, body: .habit(body), source: source)
    }
}

/// Loop's entry codes and how a check-in becomes a habit event.
///
/// Loop keeps one value per habit and day: `2` done (YES_MANUAL), `1` done by the frequency rule
/// (YES_AUTO, computed, not the user's), `0` not done (NO), `3` skipped (SKIP), `-1` unknown
/// (UNKNOWN); a numerical habit's amount times 1000. CSV exports from 2.3.1 spell the codes by name.
public enum LoopEntries {
    public static let yesManual = 2, yesAuto = 1, no = 0, skip = 3, unknown = -1

    /// The labels of a skipped day, a day the user marked unknown, a day not done: the model's
    /// marks, which totals and streaks do not count as check-ins.
    public static let skippedLabel = HabitEvent.Mark.skipped, unknownLabel = HabitEvent.Mark.unknown,
        notDoneLabel = HabitEvent.Mark.notDone

    /// When imported definitions were made (2000-01-01 00:00 UTC): fixed, see ``LoopHabit/definition(numeric:source:)``.
    public static let definitionTime = Date(timeIntervalSince1970: 946_684_800)

    /// A value as the CSV writes it: an integer, or a code's name (2.3.1 and later). Nil when
    /// neither.
    public static func code(_ text: String) -> Int? {
        switch text.trimmingCharacters(in: .whitespaces) {
        case "YES_MANUAL": yesManual
        case "YES_AUTO": yesAuto
        case "NO": no
        case "SKIP": skip
        case "UNKNOWN": unknown
        case let other: Int(other)
        }
    }

    /// Whether a value can only be a numerical habit's (not one of the yes/no codes).
    public static func isAmount(_ code: Int) -> Bool { code > skip || code < unknown }

    /// Where a check-in was read: a backup holds only what the user entered; a CSV lists every
    /// day from the first entry to the export, the days without one computed.
    public enum Origin: Sendable { case backup, csv }

    /// The event of one habit's day, or nil when the day holds nothing the user entered.
    ///
    /// - done (`2`): a yes/no event of value 1; a numerical amount: its value / 1000, in the unit;
    /// - skipped (`3`): an event without value, labelled `skipped`;
    /// - unknown (`-1`): from a backup (the user set it), an event without value labelled
    ///   `unknown`; from a CSV, where it fills the days without entries, only when the day has a note;
    /// - not done (`0`) of a yes/no habit: no event (absence is "not done"), unless the day has a
    ///   note: then an event of value 0 labelled `not_done`; of a numerical habit, an amount of 0
    ///   from a backup, nothing from a CSV (it fills the days without entries) unless noted;
    /// - done by the frequency (`1`): never (Loop computed it).
    public static func event(habit name: String, numeric: Bool, unit: String?, day: CalendarDay, code: Int, note: String?,
                             origin: Origin, zone: TimeZone, source: Source) -> HabitEvent? {
        let note = note.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        let name = cleanName(name)
        let id = RecordID.derive("loop", Definition.key(name), day.description)
        let time = day.noon(in: zone)
        func make(value: Double?, label: String?, unit: String? = nil) -> HabitEvent {
            HabitEvent(id: id, habit: name, time: time, value: value, unit: unit, label: label, note: note, source: source)
        }
        switch code {
        case skip:
            return make(value: nil, label: skippedLabel)
        case unknown:
            return origin == .backup || note != nil ? make(value: nil, label: unknownLabel) : nil
        case yesAuto where !numeric:
            return nil
        case no where !numeric:
            return note != nil ? make(value: 0, label: notDoneLabel) : nil
        case no where origin == .csv && note == nil:
            return nil
        default:
            guard numeric else { return make(value: 1, label: nil) }
            return make(value: Double(code) / 1000, label: nil, unit: unit.flatMap { $0.isEmpty ? nil : $0 })
        }
    }

    /// A name as HealthGate keeps it: trimmed.
    public static func cleanName(_ name: String) -> String { name.trimmingCharacters(in: .whitespacesAndNewlines) }

    static func round(_ value: Double) -> Double { (value * 100).rounded() / 100 }
}
