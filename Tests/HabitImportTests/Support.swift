import Crypto
import DriverKit
import Foundation
import HealthModel
import HealthStore
import TestSupport

let habits = PackagePaths.fixtures + "/habits"
let loopBackup = habits + "/Loop Habits Backup 2024-03-07 101500.db"

/// The `healthgate` binary.
enum CLI {
    static func run(_ arguments: [String]) async throws -> Tool.Result { try await Tool.run(Tool.path("healthgate"), arguments) }

    static func json(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await run(arguments)
        guard let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw CLIError(text: "not JSON (status \(result.status)): \(result.stdout) \(result.stderr)")
        }
        return object
    }

    struct CLIError: Error { var text: String }
}

/// A habit event as the tests compare them: habit, day (the local noon's date), value, label, note.
struct Event: Hashable, CustomStringConvertible {
    var habit: String
    var day: String
    var value: Double?
    var label: String?
    var note: String?
    var unit: String?

    init(_ habit: String, _ day: String, _ value: Double?, label: String? = nil, note: String? = nil, unit: String? = nil) {
        self.habit = habit
        self.day = day
        self.value = value
        self.label = label
        self.note = note
        self.unit = unit
    }

    /// `event`, checking it is stored at noon of its day in the system's zone.
    init(_ event: HabitEvent) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: event.time)
        let day = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
        self.init(event.habit, parts.hour == 12 && parts.minute == 0 ? day : day + " not at noon", event.value, label: event.label,
                  note: event.note, unit: event.unit)
    }

    var description: String { "\(habit) \(day) \(value.map { "\($0)" } ?? "-") \(label ?? "") \(note ?? "") \(unit ?? "")" }
}

/// A habit definition as the tests compare them.
struct Habit: Hashable, CustomStringConvertible {
    var name: String
    var kind: HabitDefinition.ValueKind
    var unit: String?
    var target: String?

    init(_ name: String, _ kind: HabitDefinition.ValueKind, unit: String? = nil, target: String? = nil) {
        self.name = name
        self.kind = kind
        self.unit = unit
        self.target = target
    }

    init?(_ definition: Definition) {
        guard case .habit(let habit) = definition.body else { return nil }
        self.init(definition.name, habit.valueKind, unit: habit.unit,
                  target: habit.target.map { "\($0.direction.rawValue) \(NumberText.plain($0.amount))/\($0.period.rawValue)" })
    }

    var description: String { "\(name) \(kind.rawValue) \(unit ?? "") \(target ?? "")" }
}

func sha256(_ path: String) throws -> String {
    Hex.lowercase(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))))
}

/// The stored habit events and definitions.
func stored(_ store: HealthStore) async throws -> (events: Set<Event>, habits: Set<Habit>) {
    let events = try await store.habitEvents().map(Event.init)
    return (Set(events), Set(try await store.definitions(.habit).compactMap(Habit.init)))
}
