import CSVStream
public import DriverKit
public import Foundation
public import HealthModel

/// Imports any CSV file with a header row, by a mapping (the `[importers.csv]` table, or the file
/// `healthgate import --mapping FILE` reads): which column is the time, the value, the unit, the
/// habit or measurement kind, the date format and the time zone. Rows become habit events or
/// measurements. Without a mapping it refuses files, saying how to give one. See
/// Drivers/CSV/README.md.
public struct CSVImporter: FileImporter {
    public static let id = "csv"

    /// What the rows become.
    public enum RecordKind: String, ConfigChoice { case habit, measurement }

    /// The mapping. Every key is optional in the table (an importer without a mapping refuses
    /// files), but a mapping needs `record` and `time_column`.
    public struct Settings: Decodable, Sendable {
        public struct Mapping: Sendable {
            public var record: RecordKind
            public var timeColumn: String
            /// `iso8601`, `unix`, `unix_ms`, or a date pattern (`dd.MM.yyyy HH:mm`, Unicode TR35).
            public var dateFormat: String
            public var zone: TimeZone
            public var valueColumn: String?
            public var unitColumn: String?
            public var unit: String?
            public var nameColumn: String?
            public var name: String?
            public var noteColumn: String?
            public var delimiter: UInt8
        }

        public var mapping: Mapping?

        public init(mapping: Mapping? = nil) { self.mapping = mapping }

        enum CodingKeys: String, CodingKey {
            case record, timeColumn = "time_column", dateFormat = "date_format", zone = "time_zone", valueColumn = "value_column"
            case unitColumn = "unit_column", unit, nameColumn = "name_column", name, noteColumn = "note_column", delimiter
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let zone = try c.decodeTimeZone(forKey: .zone)
            let record = try c.decodeIfPresent(RecordKind.self, forKey: .record)
            let timeColumn = try c.decodeIfPresent(String.self, forKey: .timeColumn)
            let rest = try [CodingKeys.dateFormat, .valueColumn, .unitColumn, .unit, .nameColumn, .name, .noteColumn, .delimiter]
                .filter { try c.decodeIfPresent(String.self, forKey: $0) != nil }
            guard let record else {
                if timeColumn != nil || !rest.isEmpty { throw c.configError(.record, "is required (habit or measurement)") }
                return
            }
            guard let timeColumn, !timeColumn.isEmpty else { throw c.configError(.timeColumn, "is required (the column of the time)") }
            let name = try c.decodeIfPresent(String.self, forKey: .name), nameColumn = try c.decodeIfPresent(String.self, forKey: .nameColumn)
            guard (name == nil) != (nameColumn == nil) else {
                throw c.configError(.name, "give either name (every row's \(record == .habit ? "habit" : "measurement kind")) or name_column")
            }
            if record == .measurement, let name, MeasurementKind(rawValue: name) == nil {
                throw c.configError(.name, "'\(name)' is not a measurement kind: one of \(MeasurementKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let valueColumn = try c.decodeIfPresent(String.self, forKey: .valueColumn)
            if record == .measurement, valueColumn == nil { throw c.configError(.valueColumn, "is required for measurements") }
            let unit = try c.decodeIfPresent(String.self, forKey: .unit), unitColumn = try c.decodeIfPresent(String.self, forKey: .unitColumn)
            if unit != nil, unitColumn != nil { throw c.configError(.unit, "give either unit or unit_column") }
            let delimiterText = try c.decodeIfPresent(String.self, forKey: .delimiter) ?? ","
            let allowed: [String: UInt8] = [",": 0x2C, ";": 0x3B, "\t": 0x09, "|": 0x7C]
            guard let delimiter = allowed[delimiterText] else {
                throw c.configError(.delimiter, "'\(delimiterText)' is not one of ',', ';', '|' or a tab (\"\\t\")")
            }
            let dateFormat = try c.decodeIfPresent(String.self, forKey: .dateFormat) ?? "iso8601"
            guard !dateFormat.isEmpty else { throw c.configError(.dateFormat, "is empty") }
            mapping = Mapping(record: record, timeColumn: timeColumn, dateFormat: dateFormat, zone: zone, valueColumn: valueColumn,
                              unitColumn: unitColumn, unit: unit, nameColumn: nameColumn, name: name,
                              noteColumn: try c.decodeIfPresent(String.self, forKey: .noteColumn), delimiter: delimiter)
        }
    }

    public let settings: Settings

    public init(settings: Settings = Settings(), context: DriverContext = .standalone("csv")) {
        self.settings = settings
    }

    /// Any `.csv` or `.tsv` file the importers before it (Loop, HabitBull) did not take.
    public static func canImport(_ probe: FileProbe) -> Bool { probe.fileExtension == "csv" || probe.fileExtension == "tsv" }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        guard let mapping = settings.mapping else {
            throw UnrecognizedFile(
                "a CSV no importer recognizes: give a mapping (`healthgate import --mapping FILE`, or [importers.csv] in the daemon's configuration; see `healthgate drivers csv`)")
        }
        try await Self.decode(file: file.path, chunks: { file.chunks() }, mapping: mapping, into: sink)
    }

    /// Decodes a CSV read from `chunks` by `mapping` (`chunks` is called twice: every row is
    /// checked before any is emitted, so a bad row anywhere stores nothing). A row with the same
    /// record id (kind or habit, and time) as one of the `window` rows before it is an error;
    /// one further back is not looked for (memory stays bounded whatever the file's length), and
    /// the store, which keeps the first record of an id and version, stores it once. Returns what
    /// the check saw (for tests).
    @discardableResult
    public static func decode<Chunks: AsyncSequence>(file: String, chunks: () -> Chunks, mapping: Settings.Mapping, driver: String = id,
                                                     window: Int = RecentIDs.defaultCapacity,
                                                     into sink: some RecordSink) async throws -> CheckStats where Chunks.Element == [UInt8] {
        let times = TimeReader(format: mapping.dateFormat, zone: mapping.zone)
        var columns: Columns?
        var recent = RecentIDs(capacity: window)
        var stats = CheckStats()
        try await CSVRows.read(chunks(), file: file, delimiter: mapping.delimiter) { row in
            guard let found = columns else {
                columns = try Columns(header: row, mapping: mapping, file: file)
                return
            }
            if row.isBlank { return }
            let record = try found.record(row, mapping: mapping, times: times, file: file, source: Source(driver: driver, file: file))
            guard recent.insert(record.id, line: row.line) else {
                throw DecodeError(file: file, at: .line(row.line, column: 1),
                                  "the same \(mapping.record.rawValue) and time as line \(recent.line(of: record.id) ?? 0)")
            }
            stats.rows += 1
            stats.mostIDsHeld = max(stats.mostIDsHeld, recent.count)
        }
        guard let columns else { throw DecodeError(file: file, at: .file, "empty file (a header row is needed)") }
        var batch: [HealthRecord] = []
        var header = true
        try await CSVRows.read(chunks(), file: file, delimiter: mapping.delimiter) { row in
            if header {
                header = false
                return
            }
            if row.isBlank { return }
            batch.append(try columns.record(row, mapping: mapping, times: times, file: file, source: Source(driver: driver, file: file)))
            if batch.count >= 1000 {
                try await sink.emit(batch)
                batch = []
            }
        }
        if !batch.isEmpty { try await sink.emit(batch) }
        return stats
    }

    /// What the checking pass saw: the rows checked and the most record ids it held at once.
    public struct CheckStats: Sendable, Equatable {
        public var rows = 0
        public var mostIDsHeld = 0
    }

    /// The record ids of the last `capacity` rows and their lines, to find a row repeated nearby
    /// in bounded memory: a ring of ids and a dictionary of the same ids. Pure.
    public struct RecentIDs: Sendable {
        /// 65,536 ids (a few MB).
        public static let defaultCapacity = 65_536
        public let capacity: Int
        private var ring: [RecordID] = []
        private var next = 0
        private var lines: [RecordID: Int] = [:]

        public init(capacity: Int) { self.capacity = max(1, capacity) }

        /// The ids held (at most ``capacity``).
        public var count: Int { lines.count }

        /// The line of `id`, when it is among the recent ones.
        public func line(of id: RecordID) -> Int? { lines[id] }

        /// Adds `id` (seen on `line`), forgetting the oldest beyond ``capacity``; false, adding
        /// nothing, when it is already among the recent ones.
        public mutating func insert(_ id: RecordID, line: Int) -> Bool {
            guard lines[id] == nil else { return false }
            if ring.count < capacity {
                ring.append(id)
            } else {
                lines[ring[next]] = nil
                ring[next] = id
                next = (next + 1) % capacity
            }
            lines[id] = line
            return true
        }
    }

    /// The mapped columns' indices in the header.
    struct Columns {
        var count: Int
        var time: Int
        var value: Int?
        var unit: Int?
        var name: Int?
        var note: Int?

        init(header: CSVRow, mapping: Settings.Mapping, file: String) throws {
            let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces) }
            func index(_ column: String?, _ key: String) throws -> Int? {
                guard let column else { return nil }
                guard let found = names.firstIndex(of: column) else {
                    throw DecodeError(file: file, at: .line(header.line, column: 1),
                                      "the mapping's \(key) '\(DisplayText.safe(column))' is not a column of the header (\(DisplayText.safe(names.joined(separator: ", "))))")
                }
                return found
            }
            count = names.count
            time = try index(mapping.timeColumn, "time_column")!
            value = try index(mapping.valueColumn, "value_column")
            unit = try index(mapping.unitColumn, "unit_column")
            name = try index(mapping.nameColumn, "name_column")
            note = try index(mapping.noteColumn, "note_column")
        }

        func record(_ row: CSVRow, mapping: Settings.Mapping, times: TimeReader, file: String, source: Source) throws -> HealthRecord {
            func fail(_ column: Int, _ reason: String) -> DecodeError { DecodeError(file: file, at: .line(row.line, column: column + 1), reason) }
            guard row.fields.count == count else {
                throw DecodeError(file: file, at: .line(row.line, column: 1), "\(row.fields.count) columns where the header has \(count)")
            }
            let timeText = row.fields[time]
            guard let date = times.date(timeText) else {
                throw fail(time, "'\(DisplayText.safe(timeText))' is not a time in the format \(mapping.dateFormat)")
            }
            let name = (self.name.map { row.fields[$0] } ?? mapping.name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let unitText = (unit.map { row.fields[$0] } ?? mapping.unit)?.trimmingCharacters(in: .whitespaces)
            let valueText = value.map { row.fields[$0].trimmingCharacters(in: .whitespaces) } ?? ""
            var number: Double?
            if !valueText.isEmpty {
                guard let parsed = Double(valueText), parsed.isFinite else { throw fail(value!, "'\(DisplayText.safe(valueText))' is not a number") }
                number = parsed
            }
            let note = note.map { row.fields[$0] }.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
            let stamp = ISO8601.string(date)
            switch mapping.record {
            case .habit:
                guard PhysicalLimits.habitNameCharacters.contains(name.count) else {
                    throw fail(self.name ?? time, "a habit name empty or longer than \(PhysicalLimits.habitNameCharacters.upperBound) characters")
                }
                return .habit(HabitEvent(id: RecordID.derive("csv", "habit", Definition.key(name), stamp), habit: name, time: date, value: number,
                                         unit: unitText.flatMap { $0.isEmpty ? nil : $0 }, note: note, source: source))
            case .measurement:
                guard let kind = MeasurementKind(rawValue: name) else {
                    throw fail(self.name ?? time, "'\(DisplayText.safe(name))' is not a measurement kind: one of \(MeasurementKind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                guard let number else { throw fail(value!, "a measurement without a value") }
                if let unitText, !unitText.isEmpty, unitText.lowercased() != kind.unit.lowercased() {
                    throw fail(unit ?? time, "'\(DisplayText.safe(unitText))' is not the unit of \(kind.rawValue) (\(kind.unit))")
                }
                return .measurement(Measurement(id: RecordID.derive("csv", "measurement", kind.rawValue, stamp), kind: kind, time: date,
                                                value: number, source: source))
            }
        }
    }
}

/// Reads times in one mapping's format.
final class TimeReader: @unchecked Sendable {
    // A DateFormatter is used by one import at a time (each import makes its own reader).
    private let format: String
    private let zone: TimeZone
    private let formatter: DateFormatter?

    init(format: String, zone: TimeZone) {
        self.format = format
        self.zone = zone
        if ["iso8601", "unix", "unix_ms"].contains(format) {
            formatter = nil
        } else {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = zone
            formatter.dateFormat = format
            formatter.isLenient = false
            self.formatter = formatter
        }
    }

    /// The time `text` says, or nil. A date without a time of day is its noon.
    func date(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        switch format {
        case "unix": return Double(text).flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0) : nil }
        case "unix_ms": return Double(text).flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0 / 1000) : nil }
        case "iso8601": return Self.iso8601(text, zone: zone)
        default: return formatter!.date(from: text)
        }
    }

    /// `yyyy-MM-dd`, `yyyy-MM-dd[T ]HH:mm[:ss[.fff]]`, with `Z` or `±HH:MM`/`±HHMM` (else in `zone`).
    static func iso8601(_ text: String, zone: TimeZone) -> Date? {
        if text.count == 10 { return CalendarDay(text)?.noon(in: zone) }
        let bytes = Array(text.utf8)
        guard bytes.count >= 16, bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "),
              let day = CalendarDay(String(decoding: bytes[0..<10], as: UTF8.self)) else { return nil }
        var rest = bytes[11...]
        func number(_ count: Int) -> Int? {
            guard rest.count >= count, rest.prefix(count).allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            defer { rest = rest.dropFirst(count) }
            return Int(String(decoding: rest.prefix(count), as: UTF8.self))
        }
        guard let hour = number(2), rest.first == UInt8(ascii: ":") else { return nil }
        rest = rest.dropFirst()
        guard let minute = number(2) else { return nil }
        var second = 0.0
        if rest.first == UInt8(ascii: ":") {
            rest = rest.dropFirst()
            guard let whole = number(2) else { return nil }
            second = Double(whole)
            if rest.first == UInt8(ascii: ".") {
                rest = rest.dropFirst()
                let digits = rest.prefix { (0x30...0x39).contains($0) }
                guard !digits.isEmpty, let fraction = Double("0." + String(decoding: digits, as: UTF8.self)) else { return nil }
                second += fraction
                rest = rest.dropFirst(digits.count)
            }
        }
        guard hour < 24, minute < 60, second < 61 else { return nil }
        var offset: Int?
        if rest.first == UInt8(ascii: "Z") {
            rest = rest.dropFirst()
            offset = 0
        } else if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            rest = rest.dropFirst()
            guard let h = number(2) else { return nil }
            if rest.first == UInt8(ascii: ":") { rest = rest.dropFirst() }
            guard let m = number(2), h <= 14, m < 60 else { return nil }
            offset = (sign == UInt8(ascii: "-") ? -1 : 1) * (h * 3600 + m * 60)
        }
        guard rest.isEmpty else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = offset.flatMap { TimeZone(secondsFromGMT: $0) } ?? zone
        guard let base = calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: hour, minute: minute)) else { return nil }
        return base.addingTimeInterval(second)
    }
}

extension CSVImporter {
    public static let descriptor = DriverDescriptor.importer(
        CSVImporter.self, summary: "Any CSV with a header, by a mapping (--mapping FILE or [importers.csv]): habit events or measurements",
        sample: PackageResources.sample_toml)
}
