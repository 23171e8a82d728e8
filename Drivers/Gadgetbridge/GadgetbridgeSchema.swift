/// The parts of Gadgetbridge's database (greenDAO schema, `PRAGMA user_version` = schema
/// version) this importer reads, and the check that a file has them. Pure.
///
/// Versions: the tables and columns read were checked in GBDaoGenerator at schema 92 (December
/// 2024) and 151 (the newest seen, 2026); between the two, the columns read did not change
/// (`BASE_ACTIVITY_SUMMARY` gained `OVERRIDE_ACTIVITY_KIND` and `HEADER_PHOTO`,
/// `XIAOMI_ACTIVITY_SAMPLE` gained `DISTANCE_CM`, `ACTIVE_CALORIES` and `ENERGY`, none of them
/// read). Gadgetbridge upgrades a database by adding tables and columns, so an older file lacks
/// the tables of families added after it; a newer file than 151 is read by its tables and
/// columns when every one read is there, and refused, naming what is missing, when not.
public enum GadgetbridgeSchema {
    /// The newest schema version the tables read were checked against (GBDaoGenerator's
    /// `new Schema(151, ...)`).
    public static let newestVersion = 151

    /// Activity samples of the Mi Band, Mi Band 2+ and Amazfit (Huami) bands.
    public static let samples = "MI_BAND_ACTIVITY_SAMPLE"
    /// Workouts of every device family.
    public static let summaries = "BASE_ACTIVITY_SUMMARY"

    /// A table of samples read as minutes (``ActivityRow``): heart rate, steps and, by
    /// ``sleep``, sleep.
    public struct SampleTable: Sendable, Equatable {
        public var name: String
        /// `TIMESTAMP` in milliseconds (greenDAO "time samples") rather than seconds.
        public var millis: Bool
        public var steps: String?
        public var heartRate: String?
        public var rawKind: String?
        public var deepSleep: String?
        public var remSleep: String?
        public var sleep: SleepSource

        /// Every column read, `TIMESTAMP` and `DEVICE_ID` first.
        public var columns: [String] { ["TIMESTAMP", "DEVICE_ID"] + [steps, rawKind, heartRate, deepSleep, remSleep].compactMap { $0 } }
    }

    /// The minute tables read, in the order read.
    public static let sampleTables: [SampleTable] = [
        SampleTable(name: samples, millis: false, steps: "STEPS", heartRate: "HEART_RATE", rawKind: "RAW_KIND", sleep: .rawKinds),
        SampleTable(name: "HUAMI_EXTENDED_ACTIVITY_SAMPLE", millis: false, steps: "STEPS", heartRate: "HEART_RATE", rawKind: "RAW_KIND",
                    deepSleep: "DEEP_SLEEP", remSleep: "REM_SLEEP", sleep: .huamiExtended),
        SampleTable(name: "XIAOMI_ACTIVITY_SAMPLE", millis: false, steps: "STEPS", heartRate: "HEART_RATE", sleep: .none),
        // Colmi rings keep heart rate in a table of its own; the activity rows' HEART_RATE is not read.
        SampleTable(name: "COLMI_ACTIVITY_SAMPLE", millis: false, steps: "STEPS", sleep: .none),
        SampleTable(name: "COLMI_HEART_RATE_SAMPLE", millis: true, heartRate: "HEART_RATE", sleep: .none),
    ]

    /// Colmi's sleep stages: `TIMESTAMP` (ms), `DURATION` (minutes), `STAGE`.
    public static let colmiStages = "COLMI_SLEEP_STAGE_SAMPLE"
    /// Xiaomi's nights: `TIMESTAMP` (ms, falling asleep) to `WAKEUP_TIME` (ms).
    public static let xiaomiNights = "XIAOMI_SLEEP_TIME_SAMPLE"
    /// Xiaomi's sleep stages: `TIMESTAMP` (ms), `STAGE`.
    public static let xiaomiStages = "XIAOMI_SLEEP_STAGE_SAMPLE"

    /// The tables and columns read, by table. `DEVICE` is needed in every file (with
    /// `TYPE_NAME`, or before schema 62 the integer `TYPE`, ``deviceTypeColumn(_:)``); the others
    /// when present, or, in a file newer than ``newestVersion``, always.
    public static let required: [(table: String, columns: [String])] = [
        ("DEVICE", ["_id", "IDENTIFIER"]),
        (summaries, ["_id", "START_TIME", "END_TIME", "ACTIVITY_KIND", "DEVICE_ID"]),
    ] + sampleTables.map { ($0.name, $0.columns) } + [
        (colmiStages, ["TIMESTAMP", "DEVICE_ID", "DURATION", "STAGE"]),
        (xiaomiNights, ["TIMESTAMP", "DEVICE_ID", "WAKEUP_TIME"]),
        (xiaomiStages, ["TIMESTAMP", "DEVICE_ID", "STAGE"]),
    ]

    /// Tables needed in every file, whatever its version. (`BASE_ACTIVITY_SUMMARY`, the
    /// workouts, is read when present: files of schema 17 and 18, 2018, predate some of it.)
    static let always: Set<String> = ["DEVICE"]

    /// How `DEVICE` names a device's type: `TYPE_NAME` (schema 62 and later, 2023), else the
    /// integer `TYPE` of older files (nil: neither).
    public static func deviceTypeColumn(_ device: Set<String>) -> String? {
        device.contains("TYPE_NAME") ? "TYPE_NAME" : device.contains("TYPE") ? "TYPE" : nil
    }

    /// The `TYPE_NAME` of an integer `DEVICE.TYPE` (files before schema 62) for the bands whose
    /// samples this importer reads (the Mi Band and the Huami bands: Mi Band 2 to 7, Amazfit),
    /// the names Gadgetbridge's own migration to schema 62 gives them, so that a device keeps its
    /// identity (and its records their ids) from an old file to a newer export of the same phone.
    /// Any other type: `UNKNOWN` (as that migration names a type it does not know).
    public static func typeName(key: Int64) -> String {
        switch key {
        case 10: "MIBAND"
        case 11: "MIBAND2"
        case 1001: "MIBAND2_HRX"
        case 12: "AMAZFITBIP"
        case 13: "AMAZFITCOR"
        case 14: "MIBAND3"
        case 15: "AMAZFITCOR2"
        case 16: "MIBAND4"
        case 17: "AMAZFITBIP_LITE"
        case 18: "AMAZFITGTR"
        case 19: "AMAZFITGTS"
        case 20: "AMAZFITBIPS"
        case 21: "AMAZFITGTR_LITE"
        case 22: "AMAZFITTREX"
        case 23: "MIBAND5"
        case 24: "AMAZFITBAND5"
        case 25: "AMAZFITBIPS_LITE"
        case 26: "AMAZFITGTR2"
        case 27: "AMAZFITGTS2"
        case 28: "AMAZFITBIPU"
        case 29: "AMAZFITVERGEL"
        case 30: "AMAZFITBIPUPRO"
        case 31: "AMAZFITNEO"
        case 32: "AMAZFITGTS2_MINI"
        case 33: "ZEPP_E"
        case 34: "AMAZFITGTR2E"
        case 35: "AMAZFITGTS2E"
        case 36: "AMAZFITX"
        case 37: "MIBAND6"
        case 38: "AMAZFITTREXPRO"
        case 39: "AMAZFITPOP"
        case 10040: "AMAZFITPOPPRO"
        case 10041: "MIBAND7"
        default: "UNKNOWN"
        }
    }

    /// Why a database with this `user_version` and these tables (upper-cased names to their
    /// upper-cased columns) cannot be read, or nil when it can.
    public static func problem(userVersion: Int, tables: [String: Set<String>]) -> String? {
        if tables["DEVICE"] == nil {
            let names = tables.keys.sorted()
            let shown = names.prefix(8).joined(separator: ", ") + (names.count > 8 ? ", ..." : "")
            return "not a Gadgetbridge database: no DEVICE table"
                + (names.isEmpty ? " (it has no tables)" : " (its tables: \(shown))")
        }
        let newer = userVersion > newestVersion
        var missing: [String] = []
        for (table, columns) in required {
            guard let present = tables[table] else {
                if newer || always.contains(table) { missing.append("table \(table)") }
                continue
            }
            var absent = columns.filter { !present.contains($0.uppercased()) }
            if table == "DEVICE", deviceTypeColumn(present) == nil { absent.append("TYPE_NAME (or TYPE)") }
            if !absent.isEmpty { missing.append("\(table) lacks \(absent.joined(separator: ", "))") }
        }
        guard missing.isEmpty else {
            let detail = missing.joined(separator: "; ")
            return newer
                ? "Gadgetbridge schema version \(userVersion) is newer than the newest checked (\(newestVersion)) and lacks what is read: \(detail); nothing read"
                : "Gadgetbridge schema version \(userVersion) not recognized: \(detail); nothing read"
        }
        return nil
    }

    /// The tables of `tables` that are read (present), in reading order.
    public static func presentSampleTables(_ tables: [String: Set<String>]) -> [SampleTable] {
        sampleTables.filter { tables[$0.name] != nil }
    }
}
