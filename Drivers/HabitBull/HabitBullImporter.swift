import CSVStream
public import DriverKit
public import Foundation
import HealthModel

/// Imports HabitBull's CSV export (`HabitName,HabitDescription,HabitCategory,CalendarDate,Value,
/// CommentText`, one row per habit and day): habits become definitions, rows habit events. See
/// Drivers/HabitBull/README.md.
public struct HabitBullImporter: FileImporter {
    public static let id = "habitbull"
    public static let header = ["HabitName", "HabitDescription", "HabitCategory", "CalendarDate", "Value", "CommentText"]

    public struct Settings: Decodable, Sendable {
        /// The zone whose noon a day is stored at (HabitBull keeps days, not times).
        public var zone: TimeZone = .current

        public init() {}

        enum CodingKeys: String, CodingKey { case zone = "time_zone" }

        public init(from decoder: any Decoder) throws {
            zone = try decoder.container(keyedBy: CodingKeys.self).decodeTimeZone(forKey: .zone)
        }
    }

    public let settings: Settings

    public init(settings: Settings = Settings(), context: DriverContext = .standalone("habitbull")) {
        self.settings = settings
    }

    /// A file whose first line starts `HabitName,HabitDescription,HabitCategory` (as Loop sniffs it).
    public static func canImport(_ probe: FileProbe) -> Bool {
        CSVRows.headerFields(probe).prefix(3).map { $0.trimmingCharacters(in: .whitespaces) } == Array(header.prefix(3))
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        try await Self.decode(file: file.path, chunks: { file.chunks() }, zone: settings.zone, into: sink)
    }

    /// Decodes a HabitBull export read from `chunks` (called twice: once to check every row and
    /// tell numerical habits from yes/no ones, once to emit). Any bad row: a ``DecodeError`` naming
    /// the line, nothing emitted.
    public static func decode<Chunks: AsyncSequence>(file: String, chunks: () -> Chunks, zone: TimeZone, driver: String = id,
                                                     into sink: some RecordSink) async throws where Chunks.Element == [UInt8] {
        var habits: [String: (name: String, numeric: Bool)] = [:]
        var order: [String] = []
        var seen: Set<RecordID> = []
        var sawHeader = false
        // Pass 1.
        try await CSVRows.read(chunks(), file: file) { row in
            if !sawHeader {
                sawHeader = true
                guard row.fields.map({ $0.trimmingCharacters(in: .whitespaces) }) == header else {
                    throw DecodeError(file: file, at: .line(row.line, column: 1), "not a HabitBull export: the header is not \(header.joined(separator: ","))")
                }
                return
            }
            if row.isBlank { return }
            let entry = try parse(row, file: file)
            let key = Definition.key(entry.name)
            guard seen.insert(eventID(key, entry.day)).inserted else {
                throw DecodeError(file: file, at: .line(row.line, column: 4), "'\(DisplayText.safe(entry.name))' on \(entry.day) appears twice")
            }
            if habits[key] == nil {
                habits[key] = (entry.name, false)
                order.append(key)
            }
            if entry.value != 0 && entry.value != 1 { habits[key]!.numeric = true }
        }
        guard sawHeader else { throw DecodeError(file: file, at: .file, "empty file") }
        let source = Source(driver: driver, file: file)
        try await sink.emit(order.map { key in
            let habit = habits[key]!
            return HealthRecord.definition(Definition(name: habit.name, time: definitionTime,
                                          body: .habit(HabitDefinition(valueKind: habit.numeric ? .numeric : .yesNo)), source: source))
        })
        // Pass 2.
        var batch: [HealthRecord] = []
        sawHeader = false
        try await CSVRows.read(chunks(), file: file) { row in
            if !sawHeader {
                sawHeader = true
                return
            }
            if row.isBlank { return }
            let entry = try parse(row, file: file)
            let key = Definition.key(entry.name)
            let name = habits[key]!.name
            let note = entry.note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : entry.note
            let id = eventID(key, entry.day), time = entry.day.noon(in: zone)
            if habits[key]!.numeric {
                batch.append(.habit(HabitEvent(id: id, habit: name, time: time, value: entry.value, note: note, source: source)))
            } else if entry.value == 1 {
                batch.append(.habit(HabitEvent(id: id, habit: name, time: time, value: 1, note: note, source: source)))
            } else if note != nil {
                // Not done: absence says it, unless the day carries a comment.
                batch.append(.habit(HabitEvent(id: id, habit: name, time: time, value: 0, label: "not_done", note: note, source: source)))
            }
            if batch.count >= 1000 {
                try await sink.emit(batch)
                batch = []
            }
        }
        if !batch.isEmpty { try await sink.emit(batch) }
    }

    /// When imported definitions were made (2000-01-01 00:00 UTC): fixed, so the same export gives
    /// the same definitions and their goals apply to the whole history.
    public static let definitionTime = Date(timeIntervalSince1970: 946_684_800)

    static func eventID(_ key: String, _ day: CalendarDay) -> RecordID { RecordID.derive("habitbull", key, day.description) }

    private static func parse(_ row: CSVRow, file: String) throws -> (name: String, day: CalendarDay, value: Double, note: String) {
        guard row.fields.count == header.count else {
            throw DecodeError(file: file, at: .line(row.line, column: 1), "\(row.fields.count) columns where the header has \(header.count)")
        }
        let name = row.fields[0].trimmingCharacters(in: .whitespacesAndNewlines)
        guard PhysicalLimits.habitNameCharacters.contains(name.count) else {
            throw DecodeError(file: file, at: .line(row.line, column: 1), "a habit name empty or longer than \(PhysicalLimits.habitNameCharacters.upperBound) characters")
        }
        guard let day = CalendarDay(row.fields[3]) else {
            throw DecodeError(file: file, at: .line(row.line, column: 4), "'\(DisplayText.safe(row.fields[3]))' is not a date (yyyy-MM-dd or M/d/yyyy)")
        }
        let text = row.fields[4].trimmingCharacters(in: .whitespaces)
        guard let value = Double(text), value.isFinite, (0...1e9).contains(value) else {
            throw DecodeError(file: file, at: .line(row.line, column: 5), "'\(DisplayText.safe(text))' is not a value (a number from 0)")
        }
        return (name, day, value, row.fields[5])
    }

    public static let descriptor = DriverDescriptor.importer(
        HabitBullImporter.self, summary: "HabitBull's CSV export: habits and their daily values", sample: PackageResources.sample_toml)
}
