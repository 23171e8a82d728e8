import Crypto
import DriverKit
import Foundation
import HealthModel
import HealthStore
import TestSupport

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
let habits = packageRoot + "/Fixtures/habits"
let loopBackup = habits + "/Loop Habits Backup 2024-03-07 101500.db"

/// A temporary folder with a database path in it, removed at the end of the test.
final class Scratch {
    let folder: String
    var dbPath: String { folder + "/healthgate.sqlite" }
    var db: [String] { ["--db", dbPath] }

    init() throws {
        folder = NSTemporaryDirectory() + "healthgate-habits-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func store() async throws -> HealthStore { try await HealthStore(path: dbPath) }

    /// Copies `path` (a file or folder) into the scratch folder.
    func copy(_ path: String, as name: String? = nil) throws -> String {
        let target = folder + "/" + (name ?? (path as NSString).lastPathComponent)
        try FileManager.default.copyItem(atPath: path, toPath: target)
        return target
    }

    func file(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}

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
