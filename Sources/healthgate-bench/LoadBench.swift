import AsyncHTTPClient
import Foundation
import Gzip
import HealthModel
import NIOCore
import SyncProtocol
import TestSupport

/// The server under load, with and without one hostile account (release build, its own
/// process): `accounts` normal accounts each upload a realistic 100-record batch every
/// `interval` seconds for `seconds`, and the latency of every upload is kept; then the same
/// again while one attacker account sends the worst bodies it can, several at once, without
/// pause. The figure: the p99 of the normal uploads with the attacker over the p99 without
/// (goal: at most 2). A /v1/health probe every 100 ms says the same of requests that need no
/// upload work.
///
/// The server is the `healthgate-server` next to this executable: to measure another build,
/// copy `healthgate-bench` next to that build's server and run it from there.
func serverLoadBenchmarks(seconds: Int = 20, accounts: Int = 4, interval: Double = 0.25, attackers: Int = 4,
                          store: TestStore = .sqlite) async throws {
    print("\n== Server under hostile uploads (release build, separate process, \(store.rawValue) store) ==")
    let folder = NSTemporaryDirectory() + "healthgate-bench-load-\(getpid())"
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("  server: \(ServerProcess.executable)")
    let server = try await ServerProcess.start(databasePath: folder + "/server.sqlite", store: store)
    defer { server.stop() }
    let pid = server.process.processIdentifier
    // A connection per request in flight (the pool's default of 8 would make requests wait
    // for each other in the client).
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
    configuration.timeout = .init(connect: .seconds(30), read: .seconds(300))
    let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let url = server.url.absoluteString

    // Bodies, encoded and gzipped before anything is timed.
    let batchesPerAccount = Int((Double(seconds) / interval).rounded(.up)) * 2 + 8
    var tokens: [String] = []
    for _ in 0..<accounts { tokens.append(try await account(server)) }
    let attackerToken = try await account(server)
    let normal = try (0..<accounts).map { a in
        try (0..<batchesPerAccount).map { b in try gzipped(realisticBatch(account: a, batch: b)) }
    }
    let rawSize = try SyncJSONEncoder().encode(realisticBatch(account: 0, batch: 0)).count
    print(String(format: "  %d normal accounts, each uploading one batch every %.2f s: 100 records (90 measurements, 10 workouts of 300 samples), %.0f KB, %.0f KB gzip",
                 accounts, interval, Double(rawSize) / 1024, Double(normal[0][0].readableBytes) / 1024))
    let hostile = try hostileBodies()
    for body in hostile {
        print(String(format: "  attacker body: %@: %.1f MB sent (gzip), %.1f MB of JSON", body.name,
                     Double(body.bytes.readableBytes) / 1e6, Double(body.jsonBytes) / 1e6))
    }

    try await singleUploadFootprints(hostile, token: attackerToken, store: store)

    // Warm up: one batch per account.
    for a in 0..<accounts { _ = await timedUpload(normal[a][0], url: url, token: tokens[a], http: http) }

    var next = Array(repeating: 1, count: accounts)
    func phase(attacked: Bool) async throws -> PhaseResult {
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let stop = now() + Double(seconds)
        let result = PhaseResult()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for a in 0..<accounts {
                let bodies = normal[a], first = next[a], token = tokens[a]
                group.addTask {
                    var index = first
                    var due = now() + interval * Double(a) / Double(accounts)
                    while due < stop, index < bodies.count {
                        let wait = due - now()
                        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                        let (status, seconds) = await timedUpload(bodies[index], url: url, token: token, http: http)
                        result.add(normal: seconds, status: status)
                        index += 1
                        due = max(due + interval, now())
                    }
                    result.setNext(a, index)
                }
            }
            group.addTask {
                while now() < stop {
                    let t0 = now()
                    let response = try? await http.execute(HTTPClientRequest(url: url + "/v1/health"), timeout: .seconds(300))
                    _ = try? await response?.body.collect(upTo: 1 << 20)
                    result.add(health: now() - t0)
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            if attacked {
                for lane in 0..<attackers {
                    group.addTask {
                        var turn = lane
                        while now() < stop {
                            let body = hostile[turn % hostile.count]
                            let (status, seconds) = await timedUpload(body.bytes, url: url, token: attackerToken, http: http)
                            result.add(attack: body.name, status: status, seconds: seconds)
                            turn += 1
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for a in 0..<accounts { next[a] = result.next[a] ?? next[a] }
        result.cpuSeconds = ProcessStats.cpuSeconds(pid) - cpu0
        return result
    }

    let quiet = try await phase(attacked: false)
    print(quiet.line("without attacker"))
    print(String(format: "  server peak RSS (VmHWM) so far: %.0f MB", Double(ProcessStats.statusKB(pid, field: "VmHWM:")) / 1024))
    let attacked = try await phase(attacked: true)
    print(attacked.line("with attacker   "))
    for name in hostile.map(\.name) {
        let sent = attacked.attacks[name] ?? []
        let statuses = Dictionary(grouping: sent, by: \.status).map { "\($0.value.count) x \($0.key)" }.sorted().joined(separator: ", ")
        print(String(format: "    attacker %@: %d sent (%@), median answer %.0f ms", name, sent.count, statuses,
                     sent.isEmpty ? 0 : median(sent.map(\.seconds)) * 1000))
    }
    let ratio = percentile(attacked.normal, 0.99) / percentile(quiet.normal, 0.99)
    print(String(format: "  p99 of the normal uploads with the attacker / without: %.2f (goal <= 2: %@); /v1/health p99 %.1f ms -> %.1f ms",
                 ratio, ratio <= 2 ? "met" : "NOT met", percentile(quiet.health, 0.99) * 1000, percentile(attacked.health, 0.99) * 1000))
    print(String(format: "  server peak RSS (VmHWM): %.0f MB", Double(ProcessStats.statusKB(pid, field: "VmHWM:")) / 1024))
    try await http.shutdown()
}

/// What one upload of each hostile body costs the server in memory, alone: each sent to a fresh
/// server (of the same store) once, its peak resident memory (VmHWM) over its resident memory
/// before. The per-request figure behind the whole-server one.
private func singleUploadFootprints(_ bodies: [(name: String, bytes: ByteBuffer, jsonBytes: Int)], token _: String,
                                    store: TestStore) async throws {
    let http = HTTPClient(eventLoopGroupProvider: .singleton)
    defer { _ = http.shutdown() }
    for body in bodies {
        let server = try await ServerProcess.start(store: store)
        let token = try await account(server)
        let pid = server.process.processIdentifier
        let before = ProcessStats.statusKB(pid)
        let (status, seconds) = await timedUpload(body.bytes, url: server.url.absoluteString, token: token, http: http)
        let peak = ProcessStats.statusKB(pid, field: "VmHWM:")
        print(String(format: "  alone on a fresh server: %@ (%.1f MB of JSON): %d in %.1f s, server RSS %.0f MB before, peak %.0f MB: +%.0f MB (%.1f x its JSON)",
                     body.name, Double(body.jsonBytes) / 1e6, status, seconds, Double(before) / 1024, Double(peak) / 1024,
                     Double(peak - before) / 1024, Double(peak - before) * 1024 / Double(body.jsonBytes)))
        _ = await server.stopped()
    }
}

/// What one phase measured (filled from several tasks).
private final class PhaseResult: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var normal: [Double] = []
    private(set) var failures: [Int: Int] = [:]
    private(set) var health: [Double] = []
    private(set) var attacks: [String: [(status: Int, seconds: Double)]] = [:]
    private(set) var next: [Int: Int] = [:]
    var cpuSeconds = 0.0

    /// One normal upload: its time until the answer (or the failure, status 0) counts whatever the answer.
    func add(normal seconds: Double, status: Int) {
        lock.withLock {
            normal.append(seconds)
            if status != 200 { failures[status, default: 0] += 1 }
        }
    }

    func add(health seconds: Double) { lock.withLock { health.append(seconds) } }

    func add(attack name: String, status: Int, seconds: Double) {
        lock.withLock { attacks[name, default: []].append((status, seconds)) }
    }

    func setNext(_ account: Int, _ index: Int) { lock.withLock { next[account] = index } }

    func line(_ title: String) -> String {
        let failed = failures.isEmpty ? "" : " (not 200: " + failures.map { "\($0.value) x \($0.key == 0 ? "no answer" : String($0.key))" }
            .joined(separator: ", ") + ")"
        return String(format: "  %@: %4d uploads%@, p50 %6.1f ms, p99 %6.1f ms, max %6.1f ms; server CPU %.1f s",
                      title, normal.count, failed, percentile(normal, 0.5) * 1000, percentile(normal, 0.99) * 1000,
                      (normal.max() ?? .nan) * 1000, cpuSeconds)
    }
}

/// Posts one gzip upload body; answers the status (0: no answer) and the seconds until the whole
/// answer (or the failure).
private func timedUpload(_ body: ByteBuffer, url: String, token: String, http: HTTPClient) async -> (Int, Double) {
    let request = uploadRequest(body, server: url, token: token)
    let t0 = now()
    do {
        let response = try await http.execute(request, timeout: .seconds(300))
        _ = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), now() - t0)
    } catch {
        return (0, now() - t0)
    }
}

private func gzipped(_ upload: UploadRequest) throws -> ByteBuffer {
    let json = try SyncJSONEncoder().encode(upload)
    return ByteBuffer(bytes: json.withUnsafeBytes { Gzip.compress($0, level: 1) })
}

/// 90 measurements (heart rate, weight, blood pressure with its extra values) and 10 workouts
/// of 300 one-second samples: new records each time, as a forwarder sends them.
private func realisticBatch(account: Int, batch: Int) -> UploadRequest {
    let base = Date(timeIntervalSince1970: 1_760_000_000 + Double(batch) * 3600)
    var records: [HealthRecord] = []
    for i in 0..<90 {
        let id = RecordID.derive("load", String(account), String(batch), "m", String(i))
        let time = base.addingTimeInterval(Double(i) * 10)
        let source = Source(driver: "ble", device: "sensor-\(account)")
        switch i % 3 {
        case 0: records.append(.measurement(HealthModel.Measurement(id: id, kind: .heartRate, time: time, value: Double(60 + i % 40), source: source)))
        case 1: records.append(.measurement(HealthModel.Measurement(id: id, kind: .weight, time: time, value: 70 + Double(i) / 100, source: source)))
        default:
            records.append(.measurement(HealthModel.Measurement(id: id, kind: .bloodPressure, time: time, value: 120,
                                                                extra: ["diastolic": 80, "mean_arterial": 93.3], source: source)))
        }
    }
    for w in 0..<10 {
        let start = base.addingTimeInterval(Double(w) * 360)
        records.append(.workout(workout(id: RecordID.derive("load", String(account), String(batch), "w", String(w)), start: start,
                                        samples: 300)))
    }
    return UploadRequest(records: records.map { WireRecord($0) })
}

/// A ride of `samples` one-second samples with every channel.
private func workout(id: RecordID, start: Date, samples count: Int) -> Workout {
    var samples: [Sample] = []
    samples.reserveCapacity(count)
    for s in 0..<count {
        let t = Double(s)
        samples.append(Sample(time: start.addingTimeInterval(t), heartRate: 120 + s % 50, cadence: 85 + Double(s % 10),
                              powerW: 200 + Double(s % 60), speedMps: 8 + Double(s % 7) / 4, distanceM: t * 8,
                              latitude: 48.1 + t * 1e-5, longitude: 11.5 + t * 1e-5, altitudeM: 520 + Double(s % 30)))
    }
    let seconds = Double(count)
    return Workout(id: id, sport: "cycling", start: start, end: start.addingTimeInterval(seconds), timerS: seconds,
                   distanceM: seconds * 8, energyKcal: seconds / 6, avgHeartRate: 140, maxHeartRate: 171, samples: samples,
                   source: Source(driver: "fit", device: "bike-computer"))
}

/// The attacker's bodies, all gzip, all at most 32 MiB of JSON.
private func hostileBodies() throws -> [(name: String, bytes: ByteBuffer, jsonBytes: Int)] {
    func zip(_ json: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: json.withUnsafeBytes { Gzip.compress($0, level: 9) }) }
    var bodies: [(String, ByteBuffer, Int)] = []

    // One measurement whose extra has 40,000 keys.
    let extra = Dictionary(uniqueKeysWithValues: (0..<40_000).map { ("key\($0)", Double($0)) })
    let m = HealthModel.Measurement(id: RecordID.derive("attack", "extra"), kind: .weight, time: Date(timeIntervalSince1970: 1_760_000_000),
                                    value: 70, extra: extra, source: Source(driver: "ble"))
    let extraJSON = try SyncJSONEncoder().encode(UploadRequest(records: [WireRecord(.measurement(m))]))
    bodies.append(("40,000-key extra", zip(extraJSON), extraJSON.count))

    // {"records":[0,0,0,...]}: 32 MiB of numbers; and the same numbers inside one record, whose
    // text the server must then hold and index (refused when the index outgrows the text).
    func numbers(head: String, tail: String) -> [UInt8] {
        let head = Array(head.utf8), tail = Array(tail.utf8)
        var numbers = head
        numbers.reserveCapacity(SyncAPI.maxBodyBytes)
        for _ in 0..<(SyncAPI.maxBodyBytes - head.count - tail.count) / 2 { numbers += [UInt8(ascii: "0"), UInt8(ascii: ",")] }
        return numbers + tail
    }
    let bare = numbers(head: #"{"records":["#, tail: "0]}")
    bodies.append(("32 MiB of numbers", zip(bare), bare.count))
    let inOne = numbers(head: #"{"records":[{"id":"x","type":"habit","version":1,"data":["#, tail: "0]}]}")
    bodies.append(("32 MiB of numbers in one record", zip(inOne), inOne.count))

    // A million nested arrays.
    let nested = Array(#"{"records":["#.utf8) + [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
    bodies.append(("1,000,000 nested arrays", zip(nested), nested.count))

    // The largest upload that looks legitimate: 5000 workouts with samples, just under 32 MiB
    // (the same records every time: after the first they are duplicates, checked but not stored).
    let perWorkout = try SyncJSONEncoder().encode(WireRecord(.workout(workout(id: RecordID.derive("attack", "size"), start: Date(timeIntervalSince1970: 1_760_000_000), samples: 10)))).count
    let perSample = (try SyncJSONEncoder().encode(WireRecord(.workout(workout(id: RecordID.derive("attack", "size"), start: Date(timeIntervalSince1970: 1_760_000_000), samples: 20)))).count - perWorkout) / 10
    let samples = 10 + ((SyncAPI.maxBodyBytes - 64 * 1024) / SyncAPI.maxRecordsPerUpload - perWorkout) / perSample
    let big = UploadRequest(records: (0..<SyncAPI.maxRecordsPerUpload).map { i in
        WireRecord(.workout(workout(id: RecordID.derive("attack", "big", String(i)),
                                    start: Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 3600), samples: samples)))
    })
    let bigJSON = try SyncJSONEncoder().encode(big)
    precondition(bigJSON.count <= SyncAPI.maxBodyBytes, "the largest upload is \(bigJSON.count) bytes")
    bodies.append(("5000 workouts (largest upload)", zip(bigJSON), bigJSON.count))
    return bodies
}
