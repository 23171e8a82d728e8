import Dispatch
public import DriverKit
import Foundation
import GRDB
import HealthModel

/// Imports the database Gadgetbridge exports on Android (a SQLite file named `Gadgetbridge`):
/// Mi Band / Amazfit (Huami) minute samples as heart-rate readings, hourly steps and sleep
/// sessions, and every device's workouts. See Drivers/Gadgetbridge/README.md for the rules.
///
/// The file is opened read-only and immutable (nothing is ever written next to it, not even a
/// journal), checked (schema version, tables, columns, `PRAGMA quick_check`) before anything is
/// read, then read a page of rows at a time on GRDB's queue.
public struct GadgetbridgeImporter: FileImporter {
    public static let id = "gadgetbridge"

    /// Rows read per query (at least 1): memory holds one page and the records it gives.
    public var pageSize = 10_000

    /// Takes no keys of its own (`[importers.gadgetbridge]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("gadgetbridge")) {}

    /// An SQLite database without a file extension (Gadgetbridge names its export
    /// `Gadgetbridge`), or one of any name whose header's user version (the greenDAO schema
    /// version) is above 25, the last of Loop Habit Tracker's `.db` backups. Whether it really is
    /// Gadgetbridge's is decided by its tables, when it is read.
    public static func canImport(_ probe: FileProbe) -> Bool {
        guard probe.head.count >= 100, probe.head.starts(with: Array("SQLite format 3\0".utf8)) else { return false }
        let userVersion = probe.head[60..<64].reduce(0) { $0 << 8 | Int($1) }
        return probe.fileExtension.isEmpty || userVersion > 25
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        let path = file.path
        let database = try await Self.open(path)
        let plan = try await Self.check(database, path: path)
        var skipped = plan.skipped
        let pageSize = max(1, pageSize)
        for (deviceID, device) in plan.devices {
            var samples = DeviceSamples(device: device, table: GadgetbridgeSchema.samples, file: path)
            var after: Int64 = -1
            while true {
                let (from, limit) = (after, pageSize)
                let rows = try await Self.reading(path) {
                    try await database.read { db in try Self.samples(db, deviceID: deviceID, after: from, limit: limit) }
                }
                var batch: [HealthRecord] = []
                for row in rows { batch += samples.add(row) }
                if rows.count < pageSize { batch += samples.finish() }
                if !batch.isEmpty { try await sink.emit(batch) }
                guard rows.count == pageSize, let last = rows.last else { break }
                after = last.timestamp
            }
        }
        var afterID: Int64 = Int64.min
        while true {
            // Fewer workouts a page: each brings its minutes of heart rate.
            let (from, limit) = (afterID, max(1, min(pageSize, 100)))
            let page = try await Self.reading(path) {
                try await database.read { db in try Self.summaries(db, after: from, limit: limit) }
            }
            var batch: [HealthRecord] = []
            for summary in page {
                if let workout = Self.workout(summary, devices: plan.devicesByID, file: path) {
                    batch.append(.workout(workout))
                } else {
                    skipped.badWorkoutTimes += 1
                }
            }
            if !batch.isEmpty { try await sink.emit(batch) }
            guard page.count == limit, let last = page.last else { break }
            afterID = last.rowID
        }
        try? database.close()
        if let text = skipped.description {
            throw DecodeError(file: path, at: .file, text)
        }
    }
}

// MARK: - Opening and checking

extension GadgetbridgeImporter {
    /// The latest time read as one (9999-12-31T23:59:59Z); a sample later than that, or before
    /// 1970, is not a time and is skipped (counted in the error at the end).
    static let latestSeconds: Int64 = 253_402_300_799

    /// What the checks found: the devices, in `_id` order, and what will be skipped.
    struct Plan: Sendable {
        var devices: [(id: Int64, device: GadgetbridgeDevice)]
        var devicesByID: [Int64: GadgetbridgeDevice]
        var skipped: Skipped
    }

    /// Rows left out because no record can be made of them.
    struct Skipped: Sendable {
        var badSampleTimes = 0
        var samplesWithoutDevice = 0
        var badWorkoutTimes = 0

        var description: String? {
            var parts: [String] = []
            if badSampleTimes > 0 { parts.append("\(badSampleTimes) \(GadgetbridgeSchema.samples) row(s) whose TIMESTAMP is not a time") }
            if samplesWithoutDevice > 0 { parts.append("\(samplesWithoutDevice) \(GadgetbridgeSchema.samples) row(s) of no DEVICE row") }
            if badWorkoutTimes > 0 {
                parts.append("\(badWorkoutTimes) \(GadgetbridgeSchema.summaries) row(s) whose START_TIME or END_TIME is not a time")
            }
            return parts.isEmpty ? nil : "skipped " + parts.joined(separator: ", ")
        }
    }

    private static let openQueue = DispatchQueue(label: "healthgate.gadgetbridge.open")

    /// Opens `path` read-only and immutable (`file:...?immutable=1`): SQLite then takes no locks
    /// and writes no journal, WAL or shared-memory file, so the user's file and its folder are
    /// never touched. Opening blocks, so it happens on a queue of its own.
    static func open(_ path: String) async throws -> DatabaseQueue {
        let uri = uri(path)
        return try await reading(path) {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DatabaseQueue, any Error>) in
                openQueue.async {
                    var configuration = Configuration()
                    configuration.readonly = true
                    configuration.label = "gadgetbridge"
                    continuation.resume(with: Result { try DatabaseQueue(path: uri, configuration: configuration) })
                }
            }
        }
    }

    /// The URI of a file path, percent-encoded so that `?`, `#` and `%` in names stay names.
    static func uri(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
    }

    /// The schema version, tables and columns, the integrity check, the devices and the rows that
    /// will be skipped. Throws a ``DecodeError`` naming what is missing or damaged.
    static func check(_ database: DatabaseQueue, path: String) async throws -> Plan {
        let found = try await reading(path) {
            try await database.read { db -> (Int, [String: Set<String>], [String]) in
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                var tables: [String: Set<String>] = [:]
                for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
                    let columns = try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [name])
                        .compactMap { ($0[0] as DatabaseValue).text?.uppercased() }
                    tables[name.uppercased()] = Set(columns)
                }
                let integrity = try String.fetchAll(db, sql: "PRAGMA quick_check(3)")
                return (version, tables, integrity)
            }
        }
        if let problem = GadgetbridgeSchema.problem(userVersion: found.0, tables: found.1) {
            throw DecodeError(file: path, at: .file, problem)
        }
        guard found.2 == ["ok"] else {
            throw DecodeError(file: path, at: .file, "the database is damaged (SQLite's quick_check: \(found.2.joined(separator: "; ")))")
        }
        return try await reading(path) {
            try await database.read { db -> Plan in
                var devices: [(id: Int64, device: GadgetbridgeDevice)] = []
                for row in try Row.fetchAll(db, sql: "SELECT _id, IDENTIFIER, TYPE_NAME FROM DEVICE ORDER BY _id") {
                    guard let id = integer(row[0]), let address = (row[1] as DatabaseValue).text, !address.isEmpty else { continue }
                    devices.append((id, GadgetbridgeDevice(address: address, typeName: (row[2] as DatabaseValue).text ?? "UNKNOWN")))
                }
                let ids = devices.map { String($0.id) }.joined(separator: ",")
                var skipped = Skipped()
                skipped.badSampleTimes = try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM \(GadgetbridgeSchema.samples)
                    WHERE typeof(TIMESTAMP) != 'integer' OR TIMESTAMP < 0 OR TIMESTAMP > \(latestSeconds)
                    """) ?? 0
                skipped.samplesWithoutDevice = try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM \(GadgetbridgeSchema.samples)
                    WHERE typeof(TIMESTAMP) = 'integer' AND TIMESTAMP BETWEEN 0 AND \(latestSeconds)
                      AND (typeof(DEVICE_ID) != 'integer' OR DEVICE_ID NOT IN (\(ids)))
                    """) ?? 0
                let byID = Dictionary(devices.map { ($0.id, $0.device) }, uniquingKeysWith: { first, _ in first })
                return Plan(devices: devices, devicesByID: byID, skipped: skipped)
            }
        }
    }

    /// Runs `work`, turning a database error into a ``DecodeError`` naming the file.
    static func reading<T>(_ path: String, _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as DatabaseError {
            let message = error.message ?? "\(error.resultCode)"
            throw DecodeError(file: path, at: .file, "not a readable SQLite database: \(message)")
        }
    }

    /// An integer column's value; nil for NULL, text, blobs and non-integral reals.
    static func integer(_ value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let v): return v
        case .double(let d): return d.isFinite && d.rounded() == d && abs(d) < 9e15 ? Int64(d) : nil
        default: return nil
        }
    }
}

extension DatabaseValue {
    /// A text column's value; nil for anything else.
    var text: String? {
        if case .string(let s) = storage { return s }
        return nil
    }
}

// MARK: - Reading rows

extension GadgetbridgeImporter {
    /// The next page of one device's samples after `after` (Unix seconds), in time order,
    /// through the table's primary key (TIMESTAMP, DEVICE_ID).
    static func samples(_ db: Database, deviceID: Int64, after: Int64, limit: Int) throws -> [ActivityRow] {
        try Row.fetchAll(db, sql: """
            SELECT TIMESTAMP, STEPS, RAW_KIND, HEART_RATE FROM \(GadgetbridgeSchema.samples)
            WHERE DEVICE_ID = ? AND TIMESTAMP > ? AND typeof(TIMESTAMP) = 'integer' AND TIMESTAMP <= \(latestSeconds)
            ORDER BY TIMESTAMP LIMIT ?
            """, arguments: [deviceID, after, limit]).compactMap { row in
            guard let time = integer(row[0]) else { return nil }
            return ActivityRow(timestamp: time, steps: small(row[1]), rawKind: small(row[2]), heartRate: small(row[3]))
        }
    }

    private static func small(_ value: DatabaseValue) -> Int? {
        integer(value).flatMap { Int32(exactly: $0) }.map(Int.init)
    }

    /// A `BASE_ACTIVITY_SUMMARY` row as read.
    struct Summary: Sendable {
        var rowID: Int64
        var startMs: Int64?
        var endMs: Int64?
        var kind: Int
        var deviceID: Int64?
        /// The device's heart-rate readings from start (inclusive) to end (exclusive): Unix seconds, bpm.
        var heartRates: [Reading] = []

        struct Reading: Sendable, Equatable {
            var time: Int64
            var bpm: Int
        }

        /// Start and end, when both are times.
        var span: (startMs: Int64, endMs: Int64)? {
            let range = 0...(latestSeconds * 1000)
            guard let startMs, let endMs, range.contains(startMs), range.contains(endMs) else { return nil }
            return (startMs, endMs)
        }
    }

    /// The next page of workouts after row `after`, each with the heart rates its device's
    /// samples hold during it (a workout of two weeks at most: validation refuses longer ones).
    static func summaries(_ db: Database, after: Int64, limit: Int) throws -> [Summary] {
        var page = try Row.fetchAll(db, sql: """
            SELECT _id, START_TIME, END_TIME, ACTIVITY_KIND, DEVICE_ID FROM \(GadgetbridgeSchema.summaries)
            WHERE _id > ? ORDER BY _id LIMIT ?
            """, arguments: [after, limit]).compactMap { row -> Summary? in
            guard let id = integer(row[0]) else { return nil }
            return Summary(rowID: id, startMs: integer(row[1]), endMs: integer(row[2]),
                           kind: integer(row[3]).flatMap { Int32(exactly: $0) }.map(Int.init) ?? 0, deviceID: integer(row[4]))
        }
        for i in page.indices {
            guard let deviceID = page[i].deviceID, let span = page[i].span, span.endMs > span.startMs,
                  span.endMs - span.startMs <= Int64(PhysicalLimits.workoutSpanS) * 1000 else { continue }
            // Samples from the first whole second at or after the start, before the end.
            let from = (span.startMs + 999) / 1000, to = (span.endMs + 999) / 1000
            page[i].heartRates = try Row.fetchAll(db, sql: """
                SELECT TIMESTAMP, HEART_RATE FROM \(GadgetbridgeSchema.samples)
                WHERE DEVICE_ID = ? AND TIMESTAMP >= ? AND TIMESTAMP < ? AND typeof(TIMESTAMP) = 'integer' ORDER BY TIMESTAMP
                """, arguments: [deviceID, from, to]).compactMap { row in
                guard let time = integer(row[0]), let bpm = small(row[1]), DeviceSamples.validHeartRate.contains(bpm) else { return nil }
                return Summary.Reading(time: time, bpm: bpm)
            }
        }
        return page
    }

    /// The workout of a summary row, with its heart rates as samples, average and maximum; nil
    /// when its start or end is not a time.
    static func workout(_ summary: Summary, devices: [Int64: GadgetbridgeDevice], file: String) -> Workout? {
        guard let (startMs, endMs) = summary.span else { return nil }
        let device = summary.deviceID.flatMap { devices[$0] }
        let deviceKey = device?.key ?? "unknown"
        let (sport, subSport) = GadgetbridgeActivityKind.sport(summary.kind)
        let id = RecordID.derive("workout", Self.id, deviceKey, GadgetbridgeSchema.summaries, String(startMs))
        let bpms = summary.heartRates.map(\.bpm)
        let average = bpms.isEmpty ? nil : Int((Double(bpms.reduce(0, +)) / Double(bpms.count)).rounded())
        let samples = summary.heartRates.map { Sample(time: Date(timeIntervalSince1970: TimeInterval($0.time)), heartRate: $0.bpm) }
        return Workout(id: id, sport: sport, subSport: subSport, start: Date(timeIntervalSince1970: Double(startMs) / 1000),
                       end: Date(timeIntervalSince1970: Double(endMs) / 1000), avgHeartRate: average, maxHeartRate: bpms.max(),
                       samples: samples, source: Source(driver: Self.id, device: device?.key, file: file))
    }
}

extension GadgetbridgeImporter {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.importer(
        GadgetbridgeImporter.self, summary: "Gadgetbridge's exported database: Mi Band and Amazfit heart rate, steps and sleep; workouts",
        sample: PackageResources.sample_toml)
}
