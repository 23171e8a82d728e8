import Foundation
public import HealthModel

/// What a stored entry is, for people (`line`) and scripts (JSON): `healthgate log` prints it,
/// the daemon's status socket answers a `log` request with it.
public struct LoggedEntry: Codable, Hashable, Sendable {
    public var id: String
    /// The record type as stored: `habit`, `workout`, `sleep`, `measurement`.
    public var type: String
    /// What was logged: `water`, `vape`, `meal`, the habit's name, the sport, `sleep`, `weight`.
    public var what: String
    /// When (the start of a workout or night), ISO 8601 UTC.
    public var time: String
    /// The same time on the local clock, `YYYY-MM-DD HH:MM`.
    public var localTime: String
    public var end: String?
    public var value: Double?
    public var unit: String?
    /// A drink's size, a trigger, a habit's category.
    public var category: String?
    /// A meal's name, `pod_finished`.
    public var label: String?
    /// Workouts: where the energy figure came from (`estimated`, `device`).
    public var energySource: String?
    /// What the user should know (an assumption made).
    public var notes: [String]

    enum CodingKeys: String, CodingKey {
        case id, type, what, time, end, value, unit, category, label, notes
        case localTime = "local_time"
        case energySource = "energy_source"
    }

    public init(_ record: HealthRecord, notes: [String] = [], builder: EntryBuilder) {
        id = record.id.description
        type = record.type.rawValue
        time = ISO8601.string(record.start)
        localTime = builder.local(record.start)
        self.notes = notes
        switch record {
        case .habit(let h):
            what = h.habit == BuiltInHabit.hydration ? "water" : h.habit == BuiltInHabit.vaping ? "vape" : h.habit
            value = h.value
            unit = h.unit
            category = h.category
            label = h.label
        case .workout(let w):
            what = w.sport
            end = ISO8601.string(w.end)
            value = w.energyKcal
            unit = "kcal"
            energySource = w.energySource?.rawValue
        case .sleep(let s):
            what = "sleep"
            end = ISO8601.string(s.end)
            value = (s.end.timeIntervalSince(s.start) / 36).rounded() / 100
            unit = "h"
        case .measurement(let m):
            what = m.kind.rawValue
            value = m.value
            unit = m.unit
        case .definition(let d):
            what = d.name
        }
    }

    /// One line: `stored 2f1c... water 250 ml (custom) at 2025-06-01 08:30`, volumes and masses in ml and kg.
    public var line: String { line(in: Preferences()) }

    /// One line with volumes and masses in the preferred units (`stored 2f1c... water 8 fl oz [glass] at ...`).
    public func line(in preferences: Preferences) -> String {
        var parts = ["stored", id, what]
        if let value { parts.append(Quantities.text(value, unit: unit, preferences: preferences)) }
        if let energySource { parts.append("(\(energySource))") }
        if let category { parts.append("[\(category)]") }
        if let label { parts.append("\"\(label)\"") }
        parts.append("at \(localTime)")
        return parts.joined(separator: " ")
    }

}
