import AsyncHTTPClient
import Foundation
import Gzip
import HealthModel
import NIOCore
import SyncProtocol
import TestSupport

/// The tracking server's sustained sync rate, SQLite next to PostgreSQL, next to pgbench running
/// the store's own upsert transaction in the same run (`healthgate-bench capacity`; not part of
/// `all`).
///
/// `devices` devices (one account each) sync at a fixed rate, open loop: sync k starts at
/// k / rate seconds whatever happened to the ones before, so a slow server meets the same
/// arrivals and shows it in its latency and errors instead of being given time to recover. A
/// sync is what the daemon does each minute: upload a small batch (20 heart-rate measurements,
/// gzip) and pull the history after its cursor. Each rate runs `seconds`; the sweep stops at the
/// first rate whose p99 passes 500 ms or whose errors pass 1 %. The CPU time of the server (and
/// of PostgreSQL's processes) per sync gives syncs per core-second, the figure that carries to
/// other machines; the load generator shares the same cores, so the rates are lower bounds.
func capacityBenchmarks(seconds: Int, devices: Int, rates: [Int], stores: [TestStore] = [.sqlite, .postgres]) async throws {
    print("\n== Tracking server capacity: syncs (upload 20 records + pull) at fixed rates, open loop ==")
    print("  \(devices) devices, \(seconds) s per rate; p99 goal under 500 ms; this machine: \(ProcessInfo.processInfo.activeProcessorCount) cores")
    var best: [String: (rate: Double, perCore: Double)] = [:]
    for store in stores {
        let cluster: PostgresCluster? = store == .postgres ? try await PostgresCluster.start() : nil
        let folder = NSTemporaryDirectory() + "healthgate-bench-capacity-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let server = try await ServerProcess.start(databasePath: folder + "/server.sqlite",
                                                   extraArguments: ["--registrations-per-hour", "1000000", "--log-level", "warning",
                                                                   // Every simulated device comes from 127.0.0.1.
                                                                   "--max-connections-per-address", "1000000"],
                                                   store: store, postgres: cluster)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        configuration.timeout = .init(connect: .seconds(30), read: .seconds(60))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var tokens: [String] = []
        for _ in 0..<devices { tokens.append(try await account(server)) }
        print("  \(store.rawValue): \(server.url)")
        for rate in rates {
            let result = try await openLoop(server: server, cluster: cluster, http: http, tokens: tokens, rate: rate, seconds: seconds)
            print(result.line(store.rawValue, rate: rate))
            if result.p99 < 0.5 && result.errorRate < 0.01 {
                if result.achieved > best[store.rawValue]?.rate ?? 0 { best[store.rawValue] = (result.achieved, result.perCore) }
            } else {
                break
            }
        }
        try await http.shutdown()
        // What the records take on disk, table and indexes (the extrapolation's database size).
        let rows = Double(try await server.sql("SELECT count(*) FROM records").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let bytes = store == .postgres
            ? Double(try await server.sql("SELECT pg_total_relation_size('records')").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            : Double(try await server.sql("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        print(String(format: "  %@: %.0f records stored in %.1f MB (%@): %.0f bytes per record (a heart-rate measurement)",
                     store.rawValue, rows, bytes / 1e6, store == .postgres ? "records table with its indexes" : "whole database file",
                     rows > 0 ? bytes / rows : 0))
        _ = await server.stopped()
        if let cluster {
            let tps = try await pgbenchUpsert(cluster, devices: devices, seconds: seconds)
            print(String(format: "  pgbench, the same upsert transaction (20 records, the user's counter locked), 8 clients: %.0f transactions/s",
                         tps))
            try await cluster.stop()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
    for (store, figure) in best.sorted(by: { $0.key < $1.key }) {
        print(String(format: "  %@: highest rate with p99 < 500 ms and < 1%% errors: %.0f syncs/s, %.0f syncs per core-second of server%@",
                     store, figure.rate, figure.perCore, store == "postgres" ? " + PostgreSQL" : ""))
    }
    if let sqlite = best["sqlite"], let postgres = best["postgres"] {
        print(String(format: "  PostgreSQL / SQLite: %.2f x the syncs/s, %.2f x the syncs per core-second (goal >= 2 per core)",
                     postgres.rate / sqlite.rate, postgres.perCore / sqlite.perCore))
    }
}

/// What one rate measured.
private struct RateResult {
    var latencies: [Double]
    var errors: Int
    /// Failed syncs by what went wrong (a status, a timeout, a refused connection).
    var failures: [String: Int]
    var achieved: Double
    var serverCPU: Double
    var databaseCPU: Double
    /// This process (the simulated devices), on the same cores.
    var clientCPU: Double
    var syncs: Int

    var cpuSeconds: Double { serverCPU + databaseCPU }

    var p99: Double { percentile(latencies, 0.99) }
    var errorRate: Double { syncs == 0 ? 1 : Double(errors) / Double(syncs) }
    var perCore: Double { cpuSeconds > 0 ? Double(syncs - errors) / cpuSeconds : 0 }

    func line(_ store: String, rate: Int) -> String {
        let failed = failures.sorted { $0.key < $1.key }.map { "\($0.value) x \($0.key)" }.joined(separator: ", ")
        return String(format: "  %@ at %5d/s: %6d syncs (%.0f/s done), %d errors%@, p50 %6.1f ms, p99 %7.1f ms, CPU server %.1f s%@, devices %.1f s (%.0f syncs per core-second of server%@)",
                      store, rate, syncs, achieved, errors, failed.isEmpty ? "" : " (\(failed))", percentile(latencies, 0.5) * 1000, p99 * 1000,
                      serverCPU, store == "postgres" ? String(format: " + PostgreSQL %.1f s", databaseCPU) : "", clientCPU, perCore,
                      store == "postgres" ? " + PostgreSQL" : "")
    }
}

/// Syncs at `rate` per second for `seconds`, open loop.
private func openLoop(server: ServerProcess, cluster: PostgresCluster?, http: HTTPClient, tokens: [String], rate: Int,
                      seconds: Int) async throws -> RateResult {
    let total = rate * seconds
    // Bodies first: every sync uploads new records.
    let bodies = try (0..<total).map { k -> ByteBuffer in
        let base = Date(timeIntervalSince1970: 1_760_000_000 + Double(k) * 60)
        let records = (0..<20).map { i in
            WireRecord(.measurement(HealthModel.Measurement(
                id: RecordID.derive("capacity", String(rate), String(k), String(i)), kind: .heartRate,
                time: base.addingTimeInterval(Double(i)), value: Double(60 + i), source: Source(driver: "ble", device: "strap"))))
        }
        let json = try SyncJSONEncoder().encode(UploadRequest(records: records))
        return ByteBuffer(bytes: json.withUnsafeBytes { Gzip.compress($0, level: 1) })
    }
    let url = server.url.absoluteString
    let cursors = Cursors(count: tokens.count)
    let serverPid = server.process.processIdentifier
    let databasePids = { cluster.map(postgresProcesses) ?? [] }
    let server0 = ProcessStats.cpuSeconds(serverPid), database0 = databasePids().map(ProcessStats.cpuSeconds).reduce(0, +)
    let client0 = ProcessStats.cpuSeconds(getpid())
    let started = now()
    let outcomes = await withTaskGroup(of: (seconds: Double, failure: String?).self) { group in
        for k in 0..<total {
            let due = started + Double(k) / Double(rate)
            let wait = due - now()
            if wait > 0 { try? await Task.sleep(for: .microseconds(Int(wait * 1_000_000))) }
            let device = k % tokens.count, token = tokens[device], body = bodies[k]
            group.addTask {
                let t0 = now()
                let request = uploadRequest(body, server: url, token: token)
                do {
                    let upload = try await http.execute(request, timeout: .seconds(60))
                    _ = try await upload.body.collect(upTo: 1 << 20)
                    guard upload.status == .ok else { return (now() - t0, "upload \(upload.status.code)") }
                    var pull = HTTPClientRequest(url: url + "/v1/records?after=\(cursors.get(device))&limit=1000")
                    pull.headers.add(name: "Authorization", value: "Bearer \(token)")
                    let history = try await http.execute(pull, timeout: .seconds(60))
                    let page = try await history.body.collect(upTo: 64 << 20)
                    guard history.status == .ok else { return (now() - t0, "pull \(history.status.code)") }
                    if let next = try? SyncAPI.decoder().decode(HistoryPage.self, from: Data(page.readableBytesView)).next { cursors.set(device, next) }
                    return (now() - t0, nil)
                } catch {
                    return (now() - t0, "\(type(of: error)): \(error)".prefix(60).description)
                }
            }
        }
        var outcomes: [(seconds: Double, failure: String?)] = []
        for await outcome in group { outcomes.append(outcome) }
        return outcomes
    }
    let elapsed = now() - started
    let serverCPU = ProcessStats.cpuSeconds(serverPid) - server0
    let clientCPU = ProcessStats.cpuSeconds(getpid()) - client0
    let databaseCPU = databasePids().map(ProcessStats.cpuSeconds).reduce(0, +) - database0
    let succeeded = outcomes.filter { $0.failure == nil }.count
    var failures: [String: Int] = [:]
    for case let failure? in outcomes.map(\.failure) { failures[failure, default: 0] += 1 }
    return RateResult(latencies: outcomes.map(\.seconds), errors: outcomes.count - succeeded, failures: failures,
                      achieved: Double(succeeded) / elapsed, serverCPU: serverCPU, databaseCPU: databaseCPU, clientCPU: clientCPU,
                      syncs: total)
}

/// Each device's history cursor (syncs of one device may overlap at high rates).
private final class Cursors: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64]
    init(count: Int) { values = Array(repeating: 0, count: count) }
    func get(_ device: Int) -> Int64 { lock.withLock { values[device] } }
    func set(_ device: Int, _ value: Int64) { lock.withLock { values[device] = max(values[device], value) } }
}

/// The postmaster of the cluster and every process it started (its backends, its writers).
private func postgresProcesses(_ cluster: PostgresCluster) -> [Int32] {
    guard let text = try? String(contentsOfFile: cluster.folder + "/data/postmaster.pid", encoding: .utf8),
          let master = Int32(text.split(separator: "\n").first ?? "") else { return [] }
    var pids = [master]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, Int32(fields[1]) == master { pids.append(pid) }
    }
    return pids
}

/// pgbench with 8 clients running the store's upsert of 20 new records for a random user of
/// `devices`, with the user's counter locked and advanced, for `seconds`: transactions per second.
private func pgbenchUpsert(_ cluster: PostgresCluster, devices: Int, seconds: Int) async throws -> Double {
    let database = try await cluster.createDatabase()
    let migrated = try await Tool.run(ServerProcess.executable, ["migrate", "--database", cluster.url(database)])
    guard migrated.status == 0 else { throw PeerError("migrate: \(migrated.stderr)") }
    try await cluster.psql(database, """
        INSERT INTO users (id, email, password_hash, created_at) SELECT 'u' || n, 'u' || n || '@bench', 'x', now() FROM generate_series(1, \(devices)) n;
        INSERT INTO devices (id, user_id, name, token_hash, created_at) SELECT 'd' || n, 'u' || n, 'bench', 't' || n, now() FROM generate_series(1, \(devices)) n;
        """)
    let script = cluster.folder + "/upsert.sql"
    // One command a line (pgbench reads a script line by line).
    try """
        \\set u random(1, \(devices))
        BEGIN;
        SELECT change_seq FROM users WHERE id = 'u' || :u FOR UPDATE;
        SELECT record_id, version, body IS NULL FROM records WHERE user_id = 'u' || :u AND record_id = ANY(ARRAY['a', 'b']);
        INSERT INTO records (user_id, record_id, seq, version, type, start_time, end_time, body, device_id, received_at) \
        SELECT 'u' || :u, md5(random()::text), (SELECT change_seq FROM users WHERE id = 'u' || :u) + n, 1, 'measurement', \
        1760000000 + n, 1760000000 + n, '{"kind":"heart_rate","value":60}', 'd' || :u, now() FROM generate_series(1, 20) n \
        ON CONFLICT (user_id, record_id) DO UPDATE SET seq = excluded.seq;
        UPDATE users SET change_seq = change_seq + 20 WHERE id = 'u' || :u;
        COMMIT;
        """.write(toFile: script, atomically: true, encoding: .utf8)
    chmod(script, 0o644)
    // Not through Tool.run: pgbench would inherit this process's blocked signals and never end
    // at -T (seen); the cluster's runner starts it with an empty mask.
    let output = try await cluster.runAsServerUser("/usr/bin/pgbench", ["-n", "-h", cluster.folder, "-p", String(cluster.port), "-U", cluster.superuser,
                                                                       "-c", "8", "-j", "2", "-T", String(seconds), "-f", script, database])
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
          let tps = Double(line.dropFirst("tps = ".count).split(separator: " ").first ?? "") else {
        throw PeerError("pgbench said no tps: \(output)")
    }
    return tps
}
