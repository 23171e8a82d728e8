public import DriverKit
import Foundation
import ForeignSQLite
import GRDB
import HealthModel
import ZipStream

/// Imports the database Gadgetbridge exports on Android (a SQLite file named `Gadgetbridge`, or
/// the app's export zip holding it as `database/Gadgetbridge`): minute samples of the Mi Band /
/// Amazfit (Huami, Zepp OS), Xiaomi and Colmi families as heart-rate readings, hourly steps and
/// sleep sessions, and every device's workouts. See Drivers/Gadgetbridge/README.md for the rules.
///
/// The file is opened read-only and immutable (nothing is ever written next to it, not even a
/// journal), checked (schema version, tables, columns, `PRAGMA quick_check`) before anything is
/// read, then read a page of rows at a time on GRDB's queue. A zip's database is first copied,
/// streamed, to a private temporary file (``GadgetbridgeArchive``), removed whatever happens.
public struct GadgetbridgeImporter: FileImporter {
    public static let id = "gadgetbridge"

    /// Rows read per query (at least 1): memory holds one page and the records it gives.
    public var pageSize = 10_000
    /// The largest database a zip may hold (bytes inflated): a bound against zip bombs, and on
    /// the temporary file. 8 GiB.
    public var maxDatabaseBytes = 8 << 30
    /// Where a zip's database is copied (a private folder made inside it); nil: `$TMPDIR`, else
    /// `/tmp`.
    public var temporaryDirectory: String?
    private let context: DriverContext

    /// Takes no keys of its own (`[importers.gadgetbridge]` may hold `enabled` only).
    public init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("gadgetbridge")) {
        self.context = context
    }

    /// An SQLite database with Gadgetbridge's `DEVICE` table, whatever its name or schema
    /// version (one whose tables were not read: without a file extension, as Gadgetbridge names
    /// its export `Gadgetbridge`); or a zip whose first entry is one Gadgetbridge's export writes
    /// (`preferences/global.json`, `database/Gadgetbridge`, `gadgetbridge.json`). Whether it
    /// holds what is read is checked when it is read.
    public static func canImport(_ probe: FileProbe) -> Bool {
        if probe.head.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            guard let first = ZipEntry.firstName(head: probe.head) else { return false }
            return GadgetbridgeArchive.firstEntries.contains(first)
        }
        guard probe.head.count >= 100, probe.isSQLite else { return false }
        guard let tables = probe.sqliteTables else { return probe.fileExtension.isEmpty }
        return tables.contains("DEVICE")
    }

    public func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        guard file.probe.head.starts(with: [0x50, 0x4B, 0x03, 0x04]) else {
            try await importDatabase(at: file.path, named: file.path, into: sink)
            return
        }
        let archive = try await ZipArchive.open(file, limits: ZipLimits(maxEntryBytes: maxDatabaseBytes))
        let copy = try await GadgetbridgeArchive.copyDatabase(of: archive, into: temporaryDirectory, maxBytes: maxDatabaseBytes)
        defer { copy.remove() }
        try await importDatabase(at: copy.path, named: file.path + ":" + GadgetbridgeArchive.databaseEntry, into: sink)
    }

    /// Reads the database at `path`; errors and records name it `name`.
    func importDatabase(at path: String, named name: String, into sink: some RecordSink) async throws {
        let database = try await Self.open(path, named: name)
        defer { try? database.close() }
        let plan = try await Self.check(database, path: name)
        if plan.version > GadgetbridgeSchema.newestVersion {
            context.logger.warning(
                "\(name): Gadgetbridge schema version \(plan.version) is newer than the newest checked (\(GadgetbridgeSchema.newestVersion)); read by its tables and columns, which are all there")
        }
        var skipped = plan.skipped
        let pageSize = max(1, pageSize)
        for table in plan.sampleTables {
            let present = try await Self.devices(in: table.name, database, name: name)
            for (deviceID, device) in plan.devices where present.contains(deviceID) {
                var samples = DeviceSamples(device: device, table: table.name, file: name, sleep: table.sleep)
                var after: Int64 = -1
                while true {
                    let (from, limit) = (after, pageSize)
                    let rows = try await Self.reading(name) {
                        try await database.read { db in try Self.samples(db, table: table, deviceID: deviceID, after: from, limit: limit) }
                    }
                    var batch: [HealthRecord] = []
                    for row in rows { batch += samples.add(row.row) }
                    if rows.count < pageSize { batch += samples.finish() }
                    if !batch.isEmpty { try await sink.emit(batch) }
                    guard rows.count == pageSize, let last = rows.last else { break }
                    after = last.key
                }
            }
        }
        if plan.tables[GadgetbridgeSchema.colmiStages] != nil {
            let present = try await Self.devices(in: GadgetbridgeSchema.colmiStages, database, name: name)
            for (deviceID, device) in plan.devices where present.contains(deviceID) {
                skipped.add(try await colmiSleep(database, deviceID: deviceID, device: device, name: name, pageSize: pageSize, sink: sink),
                            "\(GadgetbridgeSchema.colmiStages) row(s) whose DURATION is not 1...\(StageMinutes.maxMinutes) minutes")
            }
        }
        if plan.tables[GadgetbridgeSchema.xiaomiNights] != nil, plan.tables[GadgetbridgeSchema.xiaomiStages] != nil {
            let present = try await Self.devices(in: GadgetbridgeSchema.xiaomiNights, database, name: name)
            for (deviceID, device) in plan.devices where present.contains(deviceID) {
                skipped.add(try await xiaomiSleep(database, deviceID: deviceID, device: device, name: name, pageSize: pageSize, sink: sink),
                            "\(GadgetbridgeSchema.xiaomiNights) row(s) whose WAKEUP_TIME is not within a day after TIMESTAMP")
            }
        }
        var afterID: Int64 = Int64.min
        let heartRateTables = plan.sampleTables.filter { $0.heartRate != nil }
        while plan.tables[GadgetbridgeSchema.summaries] != nil {
            // Fewer workouts a page: each brings its minutes of heart rate.
            let (from, limit) = (afterID, max(1, min(pageSize, 100)))
            let page = try await Self.reading(name) {
                try await database.read { db in try Self.summaries(db, after: from, limit: limit, heartRates: heartRateTables) }
            }
            var batch: [HealthRecord] = []
            for summary in page {
                if let workout = Self.workout(summary, devices: plan.devicesByID, file: name) {
                    batch.append(.workout(workout))
                } else {
                    skipped.add(1, "\(GadgetbridgeSchema.summaries) row(s) whose START_TIME or END_TIME is not a time")
                }
            }
            if !batch.isEmpty { try await sink.emit(batch) }
            guard page.count == limit, let last = page.last else { break }
            afterID = last.rowID
        }
        if let text = skipped.description {
            throw DecodeError(file: name, at: .file, text)
        }
    }

    /// The devices with rows in `table` (one pass over it): a device's pages are read through
    /// the primary key (TIMESTAMP, DEVICE_ID), so a device without rows would cost a whole pass.
    private static func devices(in table: String, _ database: DatabaseQueue, name: String) async throws -> Set<Int64> {
        try await reading(name) {
            try await database.read { db in
                Set(try Int64.fetchAll(db, sql: "SELECT DISTINCT DEVICE_ID FROM \(table) WHERE typeof(DEVICE_ID) = 'integer'"))
            }
        }
    }

    /// A device's Colmi nights: its stage rows, a page at a time, as minutes. Returns the rows
    /// skipped (a duration that is no stretch of sleep).
    private func colmiSleep(_ database: DatabaseQueue, deviceID: Int64, device: GadgetbridgeDevice, name: String, pageSize: Int,
                            sink: some RecordSink) async throws -> Int {
        var nights = DeviceSamples(device: device, table: GadgetbridgeSchema.colmiStages, file: name, sleep: .none)
        var after: Int64 = -1
        var bad = 0
        while true {
            let (from, limit) = (after, pageSize)
            let rows = try await Self.reading(name) {
                try await database.read { db in
                    try Row.fetchAll(db, sql: """
                        SELECT TIMESTAMP, DURATION, STAGE FROM \(GadgetbridgeSchema.colmiStages)
                        WHERE DEVICE_ID = ? AND TIMESTAMP > ? AND typeof(TIMESTAMP) = 'integer' AND TIMESTAMP <= \(Self.latestSeconds * 1000)
                        ORDER BY TIMESTAMP LIMIT ?
                        """, arguments: [deviceID, from, limit]).compactMap { row -> (Int64, Int?, Int?)? in
                        guard let time = Self.integer(row[0]) else { return nil }
                        return (time, Self.small(row[1]), Self.small(row[2]))
                    }
                }
            }
            var batch: [HealthRecord] = []
            for (time, duration, stage) in rows {
                guard let duration, let minutes = StageMinutes.colmi(timestampMs: time, durationMinutes: duration, stage: stage ?? -1) else {
                    bad += 1
                    continue
                }
                for minute in minutes { batch += nights.addSleep(time: minute.time, kind: minute.kind) }
            }
            if rows.count < pageSize { batch += nights.finish() }
            if !batch.isEmpty { try await sink.emit(batch) }
            guard rows.count == pageSize, let last = rows.last else { break }
            after = last.0
        }
        return bad
    }

    /// A device's Xiaomi nights, a page at a time, each with its stages, as minutes. Returns the
    /// nights skipped (no wake-up within a day after falling asleep).
    private func xiaomiSleep(_ database: DatabaseQueue, deviceID: Int64, device: GadgetbridgeDevice, name: String, pageSize: Int,
                             sink: some RecordSink) async throws -> Int {
        var nights = DeviceSamples(device: device, table: GadgetbridgeSchema.xiaomiNights, file: name, sleep: .none)
        var after: Int64 = -1
        var bad = 0
        // Fewer nights a page: each brings its stages.
        let limit = max(1, min(pageSize, 100))
        while true {
            let from = after
            let page = try await Self.reading(name) {
                try await database.read { db in try Self.xiaomiNights(db, deviceID: deviceID, after: from, limit: limit) }
            }
            var batch: [HealthRecord] = []
            for night in page {
                guard let minutes = night.minutes else {
                    bad += 1
                    continue
                }
                for minute in minutes { batch += nights.addSleep(time: minute.time, kind: minute.kind) }
            }
            if page.count < limit { batch += nights.finish() }
            if !batch.isEmpty { try await sink.emit(batch) }
            guard page.count == limit, let last = page.last else { break }
            after = last.startMs
        }
        return bad
    }
}

// MARK: - Opening and checking

extension GadgetbridgeImporter {
    /// The latest time read as one (9999-12-31T23:59:59Z); a sample later than that, or before
    /// 1970, is not a time and is skipped (counted in the error at the end).
    static let latestSeconds: Int64 = 253_402_300_799

    /// What the checks found: the schema version, the tables, the devices in `_id` order, and
    /// what will be skipped.
    struct Plan: Sendable {
        var version: Int
        var tables: [String: Set<String>]
        var sampleTables: [GadgetbridgeSchema.SampleTable]
        var devices: [(id: Int64, device: GadgetbridgeDevice)]
        var devicesByID: [Int64: GadgetbridgeDevice]
        var skipped: Skipped
    }

    /// Rows left out because no record can be made of them: what, how many, in the order found.
    struct Skipped: Sendable {
        private(set) var counts: [(what: String, count: Int)] = []

        mutating func add(_ count: Int, _ what: String) {
            guard count > 0 else { return }
            if let i = counts.firstIndex(where: { $0.what == what }) {
                counts[i].count += count
            } else {
                counts.append((what, count))
            }
        }

        var description: String? {
            counts.isEmpty ? nil : "skipped " + counts.map { "\($0.count) \($0.what)" }.joined(separator: ", ")
        }
    }

    /// Opens `path` read-only and immutable (``ForeignSQLite``): the user's file and its folder
    /// are never touched.
    static func open(_ path: String, named name: String) async throws -> DatabaseQueue {
        try await reading(name) { try await ForeignSQLite.open(path, label: "gadgetbridge") }
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
        let tables = found.1
        let sampleTables = GadgetbridgeSchema.presentSampleTables(tables)
        // The tables whose rows are read one by one, each with its time unit.
        let counted = sampleTables.map { ($0.name, $0.millis) }
            + [(GadgetbridgeSchema.colmiStages, true), (GadgetbridgeSchema.xiaomiNights, true)].filter { tables[$0.0] != nil }
        return try await reading(path) {
            try await database.read { db -> Plan in
                var devices: [(id: Int64, device: GadgetbridgeDevice)] = []
                // The type by name (schema 62 on), or by the integer key of older files.
                let typeColumn = GadgetbridgeSchema.deviceTypeColumn(tables["DEVICE"] ?? []) ?? "TYPE_NAME"
                for row in try Row.fetchAll(db, sql: "SELECT _id, IDENTIFIER, \(typeColumn) FROM DEVICE ORDER BY _id") {
                    guard let id = integer(row[0]), let address = (row[1] as DatabaseValue).text, !address.isEmpty else { continue }
                    let type = row[2] as DatabaseValue
                    let typeName = typeColumn == "TYPE" ? integer(type).map(GadgetbridgeSchema.typeName(key:)) ?? "UNKNOWN" : type.text ?? "UNKNOWN"
                    devices.append((id, GadgetbridgeDevice(address: address, typeName: typeName)))
                }
                let ids = devices.map { String($0.id) }.joined(separator: ",")
                var skipped = Skipped()
                for (table, millis) in counted {
                    let latest = latestSeconds * (millis ? 1000 : 1)
                    skipped.add(try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM \(table)
                        WHERE typeof(TIMESTAMP) != 'integer' OR TIMESTAMP < 0 OR TIMESTAMP > \(latest)
                        """) ?? 0, "\(table) row(s) whose TIMESTAMP is not a time")
                    skipped.add(try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM \(table)
                        WHERE typeof(TIMESTAMP) = 'integer' AND TIMESTAMP BETWEEN 0 AND \(latest)
                          AND (typeof(DEVICE_ID) != 'integer' OR DEVICE_ID NOT IN (\(ids)))
                        """) ?? 0, "\(table) row(s) of no DEVICE row")
                }
                let byID = Dictionary(devices.map { ($0.id, $0.device) }, uniquingKeysWith: { first, _ in first })
                return Plan(version: found.0, tables: tables, sampleTables: sampleTables, devices: devices, devicesByID: byID, skipped: skipped)
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
    /// The next page of one device's rows of `table` after `after` (its `TIMESTAMP`, the key the
    /// page goes on from), in time order, through the table's primary key (TIMESTAMP, DEVICE_ID);
    /// rows of millisecond tables come with their time in seconds.
    static func samples(_ db: Database, table: GadgetbridgeSchema.SampleTable, deviceID: Int64, after: Int64,
                        limit: Int) throws -> [(key: Int64, row: ActivityRow)] {
        let columns = [table.steps, table.rawKind, table.heartRate, table.deepSleep, table.remSleep].map { $0 ?? "NULL" }
        let latest = latestSeconds * (table.millis ? 1000 : 1)
        return try Row.fetchAll(db, sql: """
            SELECT TIMESTAMP, \(columns.joined(separator: ", ")) FROM \(table.name)
            WHERE DEVICE_ID = ? AND TIMESTAMP > ? AND typeof(TIMESTAMP) = 'integer' AND TIMESTAMP <= \(latest)
            ORDER BY TIMESTAMP LIMIT ?
            """, arguments: [deviceID, after, limit]).compactMap { row in
            guard let key = integer(row[0]) else { return nil }
            let time = table.millis ? key / 1000 : key
            return (key, ActivityRow(timestamp: time, steps: small(row[1]), rawKind: small(row[2]), heartRate: small(row[3]),
                                     deepSleep: small(row[4]), remSleep: small(row[5])))
        }
    }

    static func small(_ value: DatabaseValue) -> Int? {
        integer(value).flatMap { Int32(exactly: $0) }.map(Int.init)
    }

    /// A `XIAOMI_SLEEP_TIME_SAMPLE` night as read: its start (ms) and its minutes, nil when it
    /// is no night (``StageMinutes/xiaomi(startMs:wakeupMs:stages:)``).
    struct XiaomiNight: Sendable {
        var startMs: Int64
        var minutes: [StageMinutes.Minute]?
    }

    /// The next page of one device's Xiaomi nights after `after` (ms), each with the stages
    /// recorded from its start to its wake-up.
    static func xiaomiNights(_ db: Database, deviceID: Int64, after: Int64, limit: Int) throws -> [XiaomiNight] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT TIMESTAMP, WAKEUP_TIME FROM \(GadgetbridgeSchema.xiaomiNights)
            WHERE DEVICE_ID = ? AND TIMESTAMP > ? AND typeof(TIMESTAMP) = 'integer' AND TIMESTAMP <= \(latestSeconds * 1000)
            ORDER BY TIMESTAMP LIMIT ?
            """, arguments: [deviceID, after, limit])
        return try rows.compactMap { row -> XiaomiNight? in
            guard let start = integer(row[0]) else { return nil }
            guard let wakeup = integer(row[1]), wakeup > start, wakeup - start <= Int64(StageMinutes.maxMinutes) * 60_000 else {
                return XiaomiNight(startMs: start, minutes: nil)
            }
            let stages = try Row.fetchAll(db, sql: """
                SELECT TIMESTAMP, STAGE FROM \(GadgetbridgeSchema.xiaomiStages)
                WHERE DEVICE_ID = ? AND TIMESTAMP >= ? AND TIMESTAMP < ? AND typeof(TIMESTAMP) = 'integer' ORDER BY TIMESTAMP
                """, arguments: [deviceID, start, wakeup]).compactMap { stage -> (timeMs: Int64, stage: Int)? in
                guard let time = integer(stage[0]) else { return nil }
                return (time, small(stage[1]) ?? -1)
            }
            return XiaomiNight(startMs: start, minutes: StageMinutes.xiaomi(startMs: start, wakeupMs: wakeup, stages: stages))
        }
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
    /// samples hold during it in `heartRates` tables (a workout of two weeks at most: validation
    /// refuses longer ones), in time order.
    static func summaries(_ db: Database, after: Int64, limit: Int, heartRates: [GadgetbridgeSchema.SampleTable]) throws -> [Summary] {
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
            var readings: [Summary.Reading] = []
            for table in heartRates {
                guard let column = table.heartRate else { continue }
                // Samples from the first whole second (or millisecond) at or after the start, before the end.
                let (from, to) = table.millis ? (span.startMs, span.endMs) : ((span.startMs + 999) / 1000, (span.endMs + 999) / 1000)
                readings += try Row.fetchAll(db, sql: """
                    SELECT TIMESTAMP, \(column) FROM \(table.name)
                    WHERE DEVICE_ID = ? AND TIMESTAMP >= ? AND TIMESTAMP < ? AND typeof(TIMESTAMP) = 'integer' ORDER BY TIMESTAMP
                    """, arguments: [deviceID, from, to]).compactMap { row in
                    guard let time = integer(row[0]), let bpm = small(row[1]), DeviceSamples.validHeartRate.contains(bpm) else { return nil }
                    return Summary.Reading(time: table.millis ? time / 1000 : time, bpm: bpm)
                }
            }
            page[i].heartRates = heartRates.count > 1 ? readings.sorted { $0.time < $1.time } : readings
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
        GadgetbridgeImporter.self, summary: "Gadgetbridge's exported database or export zip: Mi Band, Amazfit, Zepp OS, Xiaomi and Colmi heart rate, steps and sleep; workouts",
        sample: PackageResources.sample_toml)
}
