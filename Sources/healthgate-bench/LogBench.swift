import Foundation
import TestSupport

/// `healthgate log water 250ml` from process start to its exit (the row and its outbox row
/// committed), `runs` times into one database, next to the baseline of the same run: the
/// `sqlite3` shell inserting one row into a WAL database in a fresh process. Runs alternate, so
/// that both see the same load. Target: the median and p99 within 2x the baseline's.
func logBenchmarks(runs: Int = 200) async throws {
    print("\n== healthgate log (release build, one process per entry) ==")
    let executable = Tool.path("healthgate")
    let database = tempPath("log"), baseline = tempPath("log-sqlite3")
    defer { removeDatabase(database); removeDatabase(baseline) }
    let setup = try await Tool.run("/usr/bin/sqlite3", [baseline,
        "PRAGMA journal_mode=WAL; CREATE TABLE entries (id TEXT PRIMARY KEY, habit TEXT, time TEXT, value REAL);"])
    guard setup.status == 0 else { throw PeerError("sqlite3: \(setup.stderr)") }
    // The database exists before the first timed run, as it does for a user.
    _ = try await Tool.run(executable, ["definitions", "--db", database])

    var healthgate: [Double] = [], sqlite: [Double] = []
    for i in 0..<runs {
        var t0 = now()
        let logged = try await Tool.run(executable, ["log", "water", "250ml", "--db", database])
        healthgate.append(now() - t0)
        guard logged.status == 0 else { throw PeerError("healthgate log: \(logged.stderr)") }
        t0 = now()
        let inserted = try await Tool.run("/usr/bin/sqlite3", [baseline,
            "INSERT INTO entries VALUES (lower(hex(randomblob(16))), 'hydration', '2025-06-01T06:30:00Z', \(250 + i));"])
        sqlite.append(now() - t0)
        guard inserted.status == 0 else { throw PeerError("sqlite3: \(inserted.stderr)") }
    }
    let (hMedian, hP99) = (median(healthgate), percentile(healthgate, 0.99))
    let (sMedian, sP99) = (median(sqlite), percentile(sqlite, 0.99))
    print(String(format: "  healthgate log water 250ml: median %.1f ms, p99 %.1f ms (%d runs)", hMedian * 1000, hP99 * 1000, runs))
    print(String(format: "  sqlite3 one INSERT (fresh process): median %.1f ms, p99 %.1f ms", sMedian * 1000, sP99 * 1000))
    print(String(format: "  ratio: median %.2fx, p99 %.2fx (target within 2x: %@)", hMedian / sMedian, hP99 / sP99,
                 hMedian <= 2 * sMedian && hP99 <= 2 * sP99 ? "met" : "NOT met"))
}
