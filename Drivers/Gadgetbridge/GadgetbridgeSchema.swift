/// The parts of Gadgetbridge's database (greenDAO schema, `PRAGMA user_version` = schema
/// version) this importer reads, and the check that a file has them. Pure.
public enum GadgetbridgeSchema {
    /// The newest schema version this importer was checked against (GBDaoGenerator's
    /// `new Schema(92, ...)`, December 2024). A newer file is refused: its tables may mean
    /// something else.
    public static let newestVersion = 92

    /// Activity samples of the Mi Band, Mi Band 2+ and Amazfit (Huami) bands.
    public static let samples = "MI_BAND_ACTIVITY_SAMPLE"
    /// Workouts of every device family.
    public static let summaries = "BASE_ACTIVITY_SUMMARY"

    /// The tables and columns read, by table.
    public static let required: [(table: String, columns: [String])] = [
        ("DEVICE", ["_id", "IDENTIFIER", "TYPE_NAME"]),
        (samples, ["TIMESTAMP", "DEVICE_ID", "STEPS", "RAW_KIND", "HEART_RATE"]),
        (summaries, ["_id", "START_TIME", "END_TIME", "ACTIVITY_KIND", "DEVICE_ID"]),
    ]

    /// Why a database with this `user_version` and these tables (upper-cased names to their
    /// upper-cased columns) cannot be read, or nil when it can.
    public static func problem(userVersion: Int, tables: [String: Set<String>]) -> String? {
        if tables["DEVICE"] == nil, tables[samples] == nil {
            let names = tables.keys.sorted()
            let shown = names.prefix(8).joined(separator: ", ") + (names.count > 8 ? ", ..." : "")
            return "not a Gadgetbridge database: no DEVICE or \(samples) table"
                + (names.isEmpty ? " (it has no tables)" : " (its tables: \(shown))")
        }
        if userVersion > newestVersion {
            return "Gadgetbridge schema version \(userVersion) is newer than this importer knows (\(newestVersion)); nothing read"
        }
        var missing: [String] = []
        for (table, columns) in required {
            guard let present = tables[table] else {
                missing.append("table \(table)")
                continue
            }
            let absent = columns.filter { !present.contains($0.uppercased()) }
            if !absent.isEmpty { missing.append("\(table) lacks \(absent.joined(separator: ", "))") }
        }
        guard missing.isEmpty else {
            return "Gadgetbridge schema version \(userVersion) not recognized: \(missing.joined(separator: "; "))"
        }
        return nil
    }
}
