import CSVStream
public import DriverKit
public import Foundation
import HealthModel

/// The files of Loop Habit Tracker's CSV export ("Loop Habits CSV YYYY-MM-DD.zip"), told apart by
/// their first line.
public enum LoopCSVKind: Sendable, Equatable {
    /// `Habits.csv`; `modern`: 2.3.1 and later (Type, Unit, Target Type, Target Value).
    case habits(modern: Bool)
    /// A habit's `NNN Name/Checkmarks.csv`: `Date,Value,Notes` (2.3.1 and later) or headerless `date,int`.
    case checkmarks(modern: Bool)
    /// The root `Checkmarks.csv`: `Date,<habit names>,`, one column per habit.
    case wideCheckmarks
    /// `Scores.csv` (per habit or wide): computed, not imported.
    case scores

    /// The kind of a file whose first lines are `lines`, or nil when it is not Loop's.
    public static func sniff(_ lines: [Substring]) -> LoopCSVKind? {
        guard let first = lines.first else { return nil }
        let header = first.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        if header.starts(with: ["Position", "Name", "Type"]) { return .habits(modern: true) }
        if header.starts(with: ["Position", "Name", "Question"]) { return .habits(modern: false) }
        if header == ["Date", "Value", "Notes"] { return .checkmarks(modern: true) }
        if header == ["Date", "Score"] { return .scores }
        if header.count >= 3, header[0] == "Date", header.last == "" {
            // The wide tables: checkmarks hold codes, scores hold fractions (%.4f).
            guard lines.count > 1 else { return .wideCheckmarks }
            let values = lines[1].split(separator: ",", omittingEmptySubsequences: true).dropFirst()
            return values.contains(where: { $0.contains(".") }) ? .scores : .wideCheckmarks
        }
        if header.count == 2, CalendarDay(header[0]) != nil {
            if Int(header[1]) != nil { return .checkmarks(modern: false) }
            if Double(header[1]) != nil { return .scores }
        }
        return nil
    }
}

/// Decodes the files of one Loop CSV export into habit definitions and habit events. Pure of file
/// access: it is handed each file's path (a path on disk, or a zip entry's name such as
/// `001 Reading/Checkmarks.csv`) and a way to read its bytes, so that a folder of extracted files
/// and the zip's entries go through the same code.
///
/// Each file is read twice (``decode(path:file:chunks:into:)`` calls `chunks` twice): once to check
/// every row (a bad date or value anywhere: an error naming the line, nothing emitted) and to tell
/// numerical habits from yes/no ones where the export does not say, once to emit.
public struct LoopCSVDecoder: Sendable {
    /// The export's `Habits.csv`, read first (``readHabits(_:file:)``); nil when absent.
    public var habits: [LoopHabit]?
    /// Whether the export has per-habit folders: the root `Checkmarks.csv` repeats them and is
    /// then not read.
    public var hasPerHabitFiles: Bool
    /// The zone whose noon a check-in day is stored at.
    public var zone: TimeZone
    public var driver: String

    public init(habits: [LoopHabit]?, hasPerHabitFiles: Bool, zone: TimeZone, driver: String = "loop") {
        self.habits = habits
        self.hasPerHabitFiles = hasPerHabitFiles
        self.zone = zone
        self.driver = driver
    }

    /// Reads a `Habits.csv`.
    public static func readHabits<Chunks: AsyncSequence>(_ chunks: Chunks, file: String) async throws -> [LoopHabit]
    where Chunks.Element == [UInt8] {
        var habits: [LoopHabit] = []
        var columns: [String: Int] = [:]
        try await CSVRows.read(chunks, file: file) { row in
            if columns.isEmpty {
                for (index, name) in row.fields.enumerated() { columns[name.trimmingCharacters(in: .whitespaces)] = index }
                guard columns["Name"] != nil else { throw DecodeError(file: file, at: .line(row.line, column: 1), "not a Loop Habits.csv: no Name column") }
                return
            }
            if row.isBlank { return }
            func field(_ name: String) -> String? { columns[name].flatMap { row[safe: $0] }?.trimmingCharacters(in: .whitespaces) }
            func fail(_ column: String, _ reason: String) -> DecodeError {
                DecodeError(file: file, at: .line(row.line, column: (columns[column] ?? 0) + 1), reason)
            }
            guard let name = field("Name"), !LoopEntries.cleanName(name).isEmpty else { throw fail("Name", "a habit without a name") }
            guard LoopEntries.cleanName(name).count <= PhysicalLimits.habitNameCharacters.upperBound else {
                throw fail("Name", "a habit name longer than \(PhysicalLimits.habitNameCharacters.upperBound) characters")
            }
            var habit = LoopHabit(name: name, position: field("Position").flatMap { Int($0) })
            if let type = field("Type") {
                guard type == "YES_NO" || type == "NUMERICAL" else { throw fail("Type", "type '\(type)' is neither YES_NO nor NUMERICAL") }
                habit.isNumeric = type == "NUMERICAL"
            }
            let numerator = field("FrequencyNumerator") ?? field("NumRepetitions")
            let denominator = field("FrequencyDenominator") ?? field("Interval")
            if let numerator, let denominator {
                guard let n = Int(numerator), let d = Int(denominator), n >= 0, d > 0 else {
                    throw fail(columns["FrequencyNumerator"] != nil ? "FrequencyNumerator" : "NumRepetitions", "frequency '\(numerator)/\(denominator)' is not whole numbers")
                }
                habit.frequency = (n, d)
            }
            if habit.isNumeric == true {
                habit.unit = field("Unit")
                habit.atMost = field("Target Type") == "AT_MOST"
                if let text = field("Target Value"), !text.isEmpty {
                    guard let value = Double(text), value.isFinite, value >= 0 else { throw fail("Target Value", "target '\(text)' is not a number") }
                    habit.targetValue = value
                }
            }
            habits.append(habit)
        }
        return habits
    }

    /// The habit a per-habit file's folder (`NNN Name`) belongs to.
    public func habit(forFolder folder: String) -> LoopHabit {
        let digits = folder.prefix { $0.isNumber }
        let namePart = digits.isEmpty ? folder : String(folder.dropFirst(digits.count).drop { $0 == " " })
        if let habits {
            if let match = habits.first(where: { $0.folderName == namePart }) { return match }
            if let index = Int(digits), let match = habits.first(where: { $0.position == index }) { return match }
        }
        return LoopHabit(name: namePart)
    }

    /// Decodes one file of the export into `sink`. `path` is its path (on disk or in the zip):
    /// a per-habit file's habit is its folder's. `file` names it in errors and provenance.
    /// `chunks` is called twice and must give the same bytes both times.
    public func decode<Chunks: AsyncSequence>(path: String, file: String, chunks: () -> Chunks,
                                              into sink: some RecordSink) async throws where Chunks.Element == [UInt8] {
        var head: [Substring] = []
        var headBytes: [UInt8] = []
        for try await chunk in chunks() {
            headBytes += chunk.prefix(512 - headBytes.count)
            if headBytes.count >= 512 { break }
        }
        head = CSVRows.headLines(FileProbe(fileExtension: "csv", head: headBytes))
        guard let kind = LoopCSVKind.sniff(head) else {
            throw DecodeError(file: file, at: .file, "not a file of Loop Habit Tracker's CSV export")
        }
        let source = Source(driver: driver, file: file)
        switch kind {
        case .scores:
            return
        case .habits(let modern):
            // Before 2.3.1 the habits' types are unknown here: their checkmarks define them.
            let habits = try await Self.readHabits(chunks(), file: file)
            guard modern, !habits.isEmpty else { return }
            try await sink.emit(habits.map { HealthRecord.definition($0.definition(numeric: $0.isNumeric ?? false, source: source)) })
        case .checkmarks(let modern):
            let folder = ((path as NSString).deletingLastPathComponent as NSString).lastPathComponent
            let habit = habit(forFolder: folder)
            try await decodeColumns(chunks: chunks, file: file, header: modern, habits: [habit], source: source, into: sink)
        case .wideCheckmarks:
            guard !hasPerHabitFiles else { return }
            try await decodeColumns(chunks: chunks, file: file, header: true, habits: nil, source: source, into: sink)
        }
    }

    /// Checkmarks, one column per habit after the date: a per-habit file (`habits` given; a Notes
    /// column may follow) or the wide table (`habits` nil: the header names them).
    private func decodeColumns<Chunks: AsyncSequence>(chunks: () -> Chunks, file: String, header: Bool, habits given: [LoopHabit]?,
                                                      source: Source, into sink: some RecordSink) async throws where Chunks.Element == [UInt8] {
        let wide = given == nil
        var columns: [LoopHabit] = given ?? []
        var amounts = [Bool](repeating: false, count: columns.count)
        var days: Set<CalendarDay> = []
        // Pass 1: every row checked; which habits hold amounts.
        var seenHeader = !header
        var hasNotes = false
        try await CSVRows.read(chunks(), file: file) { row in
            if !seenHeader {
                seenHeader = true
                if wide {
                    let names = row.fields.dropFirst().map { LoopEntries.cleanName($0) }
                    let trimmed = names.last == "" ? Array(names.dropLast()) : names
                    guard !trimmed.isEmpty, !trimmed.contains("") else {
                        throw DecodeError(file: file, at: .line(row.line, column: 1), "a habit column without a name")
                    }
                    columns = trimmed.map { name in self.habits?.first { LoopEntries.cleanName($0.name) == name } ?? LoopHabit(name: name) }
                    amounts = [Bool](repeating: false, count: columns.count)
                } else {
                    hasNotes = row.fields.count >= 3
                }
                return
            }
            if row.isBlank { return }
            let expected = wide ? columns.count + 2 : (header ? (hasNotes ? 3 : 2) : 2)
            let count = row.fields.count
            // The wide table ends every line with a comma; tolerate its absence.
            guard count == expected || (wide && count == expected - 1) else {
                throw DecodeError(file: file, at: .line(row.line, column: 1), "\(count) columns where the header has \(expected)")
            }
            guard let day = CalendarDay(row.fields[0]) else {
                throw DecodeError(file: file, at: .line(row.line, column: 1), "'\(DisplayText.safe(row.fields[0]))' is not a date (yyyy-MM-dd)")
            }
            guard days.count < 200_000 else { throw DecodeError(file: file, at: .line(row.line, column: 1), "more than 200000 days") }
            guard days.insert(day).inserted else {
                throw DecodeError(file: file, at: .line(row.line, column: 1), "the day \(day) appears twice")
            }
            for index in columns.indices {
                let text = row.fields[index + 1]
                if wide && text.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                guard let code = LoopEntries.code(text) else {
                    throw DecodeError(file: file, at: .line(row.line, column: index + 2), "'\(DisplayText.safe(text))' is not a Loop value")
                }
                if LoopEntries.isAmount(code) {
                    guard code >= 0 else { throw DecodeError(file: file, at: .line(row.line, column: index + 2), "\(code) is not a Loop value") }
                    amounts[index] = true
                }
            }
        }
        let numeric = columns.indices.map { columns[$0].isNumeric ?? amounts[$0] }
        // Pass 2: the definitions, then the events in batches.
        try await sink.emit(columns.indices.map { HealthRecord.definition(columns[$0].definition(numeric: numeric[$0], source: source)) })
        var batch: [HealthRecord] = []
        seenHeader = !header
        try await CSVRows.read(chunks(), file: file) { row in
            if !seenHeader {
                seenHeader = true
                return
            }
            if row.isBlank { return }
            let day = CalendarDay(row.fields[0])!
            let note = !wide && hasNotes ? row[safe: 2] : nil
            for index in columns.indices {
                guard let code = LoopEntries.code(row.fields[index + 1]) else { continue }
                if let event = LoopEntries.event(habit: columns[index].name, numeric: numeric[index], unit: columns[index].unit, day: day,
                                                 code: code, note: note, origin: .csv, zone: zone, source: source) {
                    batch.append(.habit(event))
                }
            }
            if batch.count >= 1000 {
                try await sink.emit(batch)
                batch = []
            }
        }
        if !batch.isEmpty { try await sink.emit(batch) }
    }
}
