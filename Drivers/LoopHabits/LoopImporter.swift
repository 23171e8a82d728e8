import CSVStream
public import DriverKit
import Dispatch
public import Foundation
import HealthModel
import ZipStream
import Timing

/// Imports Loop Habit Tracker's exports: its SQLite backup (`.db`) and the files of its CSV export
/// (`Habits.csv`, each habit's `Checkmarks.csv`, the root `Checkmarks.csv`), both layouts (before
/// and from 2.3.1). Habits become habit definitions, check-ins habit events. See
/// Drivers/LoopHabits/README.md for the rules.
public struct LoopImporter: FileImporter {
    public static let id = "loop"

    public struct Settings: Decodable, Sendable {
        /// The zone whose noon a check-in's day is stored at (Loop keeps days, not times).
        public var zone: TimeZone = .current

        public init() {}

        enum CodingKeys: String, CodingKey { case zone = "time_zone" }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            zone = try c.decodeTimeZone(forKey: .zone)
        }
    }

    public let settings: Settings

    public init(settings: Settings = Settings(), context: DriverContext = .standalone("loop")) {
        self.settings = settings
    }

    /// An SQLite file with Loop's `Habits` and `Repetitions` tables, whatever its name (one whose
    /// tables were not read: named `.db`); a CSV whose first lines are one of Loop's
    /// (``LoopCSVKind``); or the export's zip as Loop writes it ("Loop Habits CSV 2024-03-07.zip":
    /// its first entry is `Habits.csv`, `Checkmarks.csv`, `Scores.csv` or a habit's `NNN Name/` folder).
    public static func canImport(_ probe: FileProbe) -> Bool {
        if probe.isSQLite {
            guard let tables = probe.sqliteTables else { return probe.fileExtension == "db" }
            return isBackup(tables)
        }
        if let first = ZipEntry.firstName(head: probe.head) { return isExportEntry(first) }
        return probe.fileExtension == "csv" && LoopCSVKind.sniff(CSVRows.headLines(probe)) != nil
    }

    /// Whether an SQLite file with these tables (upper-cased) is Loop's backup.
    public static func isBackup(_ tables: Set<String>) -> Bool { tables.isSuperset(of: ["HABITS", "REPETITIONS"]) }

    /// Whether `name` is a file or folder of Loop's CSV export, at the top of its zip.
    static func isExportEntry(_ name: String) -> Bool {
        if ["Habits.csv", "Checkmarks.csv", "Scores.csv"].contains(name) { return true }
        return perHabitFolder(name) != nil
    }

    /// `NNN Name` when `name` is in a habit's folder of the export (`001 Reading/Checkmarks.csv`).
    static func perHabitFolder(_ name: String) -> Substring? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count > 3, parts[0].prefix(3).allSatisfy(\.isNumber) else { return nil }
        return parts[0]
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        if file.probe.fileExtension == "db" {
            try await LoopBackup.decode(path: file.path, zone: settings.zone, into: sink)
            return
        }
        if ZipEntry.firstName(head: file.probe.head) != nil {
            try await importZip(file, into: sink)
            return
        }
        // A folder of the extracted export: the habits' types and targets are in ../Habits.csv (a
        // per-habit file) or ./Habits.csv (the root table).
        let folder = (file.path as NSString).deletingLastPathComponent
        let kind = LoopCSVKind.sniff(CSVRows.headLines(file.probe))
        var habitsFile: String?
        var hasPerHabitFiles = false
        switch kind {
        case .checkmarks: habitsFile = ((folder as NSString).deletingLastPathComponent as NSString).appendingPathComponent("Habits.csv")
        case .wideCheckmarks:
            habitsFile = (folder as NSString).appendingPathComponent("Habits.csv")
            hasPerHabitFiles = await Self.offPool { Self.hasPerHabitFolders(folder) }
        default: break
        }
        var habits: [LoopHabit]?
        if let habitsFile, let source = try? await ImportSource.open(habitsFile),
           case .habits = LoopCSVKind.sniff(CSVRows.headLines(source.probe)) {
            habits = try await LoopCSVDecoder.readHabits(source.chunks(), file: habitsFile)
        }
        let decoder = LoopCSVDecoder(habits: habits, hasPerHabitFiles: hasPerHabitFiles, zone: settings.zone)
        try await decoder.decode(path: file.path, file: file.path, chunks: { file.chunks() }, into: sink)
    }

    /// The export's zip, read in place: `Habits.csv` first (the habits' types, units and targets),
    /// then every other CSV of the export in name order, each as the same file on disk would be.
    /// Entries elsewhere in the zip, or with a name that escapes it, are not read.
    func importZip(_ file: ImportSource, into sink: some RecordSink) async throws {
        let archive = try await ZipArchive.open(file)
        let entries = archive.entries.filter { entry in
            !entry.isDirectory && entry.safePath == entry.name && entry.name.hasSuffix(".csv") && Self.isExportEntry(entry.name)
        }
        guard let habitsEntry = entries.first(where: { $0.name == "Habits.csv" }) else {
            throw DecodeError(file: file.path, at: .file, "not Loop Habit Tracker's CSV export: the zip has no Habits.csv at its top")
        }
        let habits = try await LoopCSVDecoder.readHabits(archive.contents(of: habitsEntry), file: file.path + ":Habits.csv")
        let hasPerHabitFiles = entries.contains { Self.perHabitFolder($0.name) != nil && $0.name.hasSuffix("/Checkmarks.csv") }
        let decoder = LoopCSVDecoder(habits: habits, hasPerHabitFiles: hasPerHabitFiles, zone: settings.zone)
        for entry in entries.sorted(by: { $0.name < $1.name }) where entry.name != "Habits.csv" {
            try await decoder.decode(path: entry.name, file: file.path + ":" + entry.name, chunks: { archive.contents(of: entry) },
                                     into: sink)
        }
    }

    /// Whether `folder` holds Loop's per-habit folders (`NNN Name/Checkmarks.csv`).
    static func hasPerHabitFolders(_ folder: String) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.contains { name in
            name.prefix(3).allSatisfy(\.isNumber) && name.count > 3
                && FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent(name + "/Checkmarks.csv"))
        }
    }

    /// Blocking file-system work, off Swift's cooperative pool.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await OffPool.run(on: .global(qos: .utility), work)
    }

    public static let descriptor = DriverDescriptor.importer(
        LoopImporter.self, summary: "Loop Habit Tracker: its SQLite backup (.db) and CSV export (both layouts): habits and check-ins",
        sample: PackageResources.sample_toml)
}
