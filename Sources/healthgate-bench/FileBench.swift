import DriverKit
import FITDriver
import Foundation
import GRDBSQLite
import HealthPipeline
import HealthStore

/// FIT decode throughput next to fitdecode, and end-to-end import next to raw SQLite inserts of
/// the same rows.
func fileBenchmarks(fixtures: String, rounds: Int) async throws {
    // The largest FIT fixtures.
    let fitFolder = fixtures + "/fit"
    let largest = try FileManager.default.contentsOfDirectory(atPath: fitFolder)
        .filter { $0.hasSuffix(".fit") }
        .map { fitFolder + "/" + $0 }
        .map { ($0, (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) }
        .sorted { $0.1 > $1.1 }
        .prefix(3)
        .map(\.0)

    print("\nFiles (\(rounds) rounds, medians)")
    print("files: " + largest.map { "\(($0 as NSString).lastPathComponent) (\(String(format: "%.0f", Double((try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) / 1024)) KiB)" }.joined(separator: ", "))

    // MARK: 1. FIT decode throughput, all fields decoded.

    print("\n== FIT decode (one core, every field of every message decoded) ==")
    var totalBytes = 0
    var totalSeconds = 0.0
    for path in largest {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try? FITDecoder.decodeAll(data)  // warm-up
        var times: [Double] = []
        var fields = 0
        for _ in 0..<rounds {
            // Repeat within a round until it lasts long enough to time well.
            var repeats = 0
            let t0 = now()
            repeat {
                let summary = try FITDecoder.decodeAll(data)
                fields = summary.values
                repeats += 1
            } while now() - t0 < 0.2
            times.append((now() - t0) / Double(repeats))
        }
        let t = median(times)
        totalBytes += data.count
        totalSeconds += t
        print(String(format: "  %-44@ %8.1f MB/s  (%d field values, %.2f ms per pass)",
                     (path as NSString).lastPathComponent as NSString, Double(data.count) / t / 1e6, fields, t * 1000))
    }
    let healthgateDecode = Double(totalBytes) / totalSeconds / 1e6
    print(String(format: "  HealthGate overall: %.1f MB/s", healthgateDecode))

    // Baseline: fitdecode (PyPI), the independent reference decoder, on the same files.
    let fitdecodeScript = """
    import sys, time, fitdecode
    total = 0; elapsed = 0.0
    for path in sys.argv[1:]:
        data = open(path, 'rb').read()
        t0 = time.perf_counter()
        with fitdecode.FitReader(path, check_crc=fitdecode.CrcCheck.DISABLED) as reader:
            for frame in reader:
                if frame.frame_type == fitdecode.FIT_FRAME_DATA:
                    for field in frame.fields: field.value
        elapsed += time.perf_counter() - t0; total += len(data)
    print(total / elapsed / 1e6)
    """
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    python.arguments = ["python3", "-c", fitdecodeScript] + largest
    let pipe = Pipe()
    python.standardOutput = pipe
    python.standardError = FileHandle.nullDevice
    var fitdecodeRate: Double?
    do {
        try python.run()
        python.waitUntilExit()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        fitdecodeRate = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
    } catch {}
    if let fitdecodeRate {
        print(String(format: "  baseline fitdecode:  %.2f MB/s   -> HealthGate is %.0fx faster (target: >= 100 MB/s)",
                     fitdecodeRate, healthgateDecode / fitdecodeRate))
    } else {
        print("  baseline fitdecode: not available (pip install fitdecode)")
    }

    // MARK: 2. End-to-end import vs raw SQLite inserts of the same number of rows.

    print("\n== Import into a fresh database (decode + normalize + one committed transaction) ==")

    /// Rows the import wrote, over every table.
    func rowCount(_ store: HealthStore) async throws -> Int {
        try await store.tableCounts().values.reduce(0, +)
    }

    /// The sample rows the import writes, as column values, so the baseline inserts the same data
    /// (same NULL pattern) instead of invented rows.
    func sampleRows(_ path: String) throws -> [[Double?]] {
        var rows: [[Double?]] = []
        let (records, _) = FITImporter.decode(try Data(contentsOf: URL(fileURLWithPath: path)), path: path)
        for case .workout(let w) in records {
            for s in w.samples {
                rows.append([s.time.timeIntervalSince1970, s.heartRate.map(Double.init), s.cadence, s.powerW, s.speedMps,
                             s.distanceM, s.latitude, s.longitude, s.altitudeM, s.temperatureC])
            }
        }
        return rows
    }

    /// Raw SQLite C API: `rows` inserts of one file's own sample values (repeated cyclically to match
    /// the rows its import wrote) into a fresh database with a table shaped like `samples`, one
    /// transaction, one prepared statement, same pragmas as the store (WAL, synchronous=NORMAL),
    /// committed: the same work the store does for that file, minus everything but the inserts.
    func rawInsertSeconds(rows: Int, from baselineSource: [[Double?]]) -> Double {
        let path = tempPath("raw")
        removeDatabase(path)
        defer { removeDatabase(path) }
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", nil, nil, nil)
        sqlite3_exec(db, """
            CREATE TABLE samples (workout_id TEXT NOT NULL, seq INTEGER NOT NULL, time REAL NOT NULL, heart_rate INTEGER,
                cadence REAL, power_w REAL, speed_mps REAL, distance_m REAL, latitude REAL, longitude REAL, altitude_m REAL,
                temperature_c REAL, PRIMARY KEY (workout_id, seq)) STRICT, WITHOUT ROWID;
            """, nil, nil, nil)
        let t0 = now()
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &statement, nil)
        let id = "6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93"
        id.withCString { idPointer in
            for i in 0..<rows {
                let row = baselineSource[i % baselineSource.count]
                sqlite3_reset(statement)
                sqlite3_bind_text(statement, 1, idPointer, -1, nil)
                sqlite3_bind_int64(statement, 2, Int64(i))
                sqlite3_bind_double(statement, 3, row[0]!)
                if let hr = row[1] { sqlite3_bind_int64(statement, 4, Int64(hr)) } else { sqlite3_bind_null(statement, 4) }
                for column in 2..<row.count {
                    if let v = row[column] { sqlite3_bind_double(statement, Int32(column + 3), v) }
                    else { sqlite3_bind_null(statement, Int32(column + 3)) }
                }
                sqlite3_step(statement)
            }
        }
        sqlite3_finalize(statement)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        let t = now() - t0
        sqlite3_close(db)
        return t
    }

    var importRows = 0
    var importTimes: [Double] = []
    var rawTimes: [Double] = []
    let baselineSources = try largest.map(sampleRows)
    for _ in 0..<rounds {
        var rows = 0
        var seconds = 0.0
        var rawSeconds = 0.0
        for (index, path) in largest.enumerated() {
            let dbPath = tempPath("import")
            removeDatabase(dbPath)
            let store = try await HealthStore(path: dbPath)
            let pipeline = ImportPipeline(store: store, importers: [FITImporter()])
            let t0 = now()
            let report = await pipeline.importFile(path)
            seconds += now() - t0
            guard report.status == .imported || report.status == .partial else {
                print("  import failed: \(report.error ?? "?")"); exit(1)
            }
            let fileRows = try await rowCount(store)
            rows += fileRows
            removeDatabase(dbPath)
            rawSeconds += rawInsertSeconds(rows: fileRows, from: baselineSources[index])
        }
        importRows = rows
        importTimes.append(seconds)
        rawTimes.append(rawSeconds)
    }
    let importRate = Double(importRows) / median(importTimes)
    let rawRate = Double(importRows) / median(rawTimes)
    print(String(format: "  HealthGate import:    %9.0f rows/s  (%d rows from %d files, %.1f ms)",
                 importRate, importRows, largest.count, median(importTimes) * 1000))
    print(String(format: "  baseline raw SQLite:  %9.0f rows/s  (same rows and values per file, C API, one transaction each)", rawRate))
    print(String(format: "  ratio: %.0f%% of the raw insert rate (target: >= 50%%)", importRate / rawRate * 100))
}
