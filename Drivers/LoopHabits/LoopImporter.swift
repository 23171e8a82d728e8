import CSVStream
public import DriverKit
import Dispatch
public import Foundation
import HealthModel

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

    /// An SQLite file named `.db`, or a CSV whose first lines are one of Loop's (``LoopCSVKind``).
    public static func canImport(_ probe: FileProbe) -> Bool {
        if probe.fileExtension == "db" { return probe.head.starts(with: Array("SQLite format 3\0".utf8)) }
        return probe.fileExtension == "csv" && LoopCSVKind.sniff(CSVRows.headLines(probe)) != nil
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        if file.probe.fileExtension == "db" {
            try await LoopBackup.decode(path: file.path, zone: settings.zone, into: sink)
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
        await withCheckedContinuation { continuation in DispatchQueue.global(qos: .utility).async { continuation.resume(returning: work()) } }
    }

    public static let descriptor = DriverDescriptor.importer(
        LoopImporter.self, summary: "Loop Habit Tracker: its SQLite backup (.db) and CSV export (both layouts): habits and check-ins",
        sample: PackageResources.sample_toml)
}
