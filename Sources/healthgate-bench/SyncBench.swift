import AsyncHTTPClient
import CompressNIO
import Foundation
import HealthModel
import HealthStore
import HealthSync
import NIOCore
import SyncProtocol
import TestSupport

/// Forwarding to a local `healthgate-server` (release build, its own process): the forwarder's
/// records/s next to the rate at which the same server takes the same batches from a plain HTTP
/// client that only posts pre-encoded bodies (same run), and the time to drain a large backlog.
func syncBenchmarks(records: Int = 100_000, backlog: Int = 1_000_000) async throws {
    print("\n== Forwarding to a local healthgate-server (release build, separate process) ==")
    let folder = NSTemporaryDirectory() + "healthgate-bench-sync-\(getpid())"
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let server = try ServerProcess(databasePath: folder + "/server.sqlite")
    defer { server.stop() }

    // 1. The forwarder, `records` measurements.
    let install = try filledStore(folder + "/a.sqlite", count: records, tag: "a")
    // The baseline's bodies: the same records in the same batches, encoded and gzipped now
    // (untimed), before the forwarder empties the outbox.
    let bodies = try encodedBatches(install, size: 1000)
    let first = try await account(server)
    let client = try SyncClient(configuration: .init(server: server.url))
    var configuration = Forwarder.Configuration()
    configuration.maxRecords = 1000
    let t0 = now()
    let report = try await Forwarder(store: install, client: client, token: first, configuration: configuration).drain()
    let forwarderSeconds = now() - t0
    let forwarderRate = Double(report.accepted) / forwarderSeconds

    // 2. Baseline: those bodies posted by a bare HTTP client to a second account (records are
    // keyed per account, so the server stores them as new again).
    let second = try await account(server)
    let http = HTTPClient(eventLoopGroupProvider: .singleton)
    let t1 = now()
    var posted = 0
    for body in bodies {
        var request = HTTPClientRequest(url: server.url.absoluteString + "/v1/records")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(second)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Content-Encoding", value: "gzip")
        request.body = .bytes(body.bytes)
        let response = try await http.execute(request, timeout: .seconds(120))
        _ = try await response.body.collect(upTo: 64 << 20)
        guard response.status == .ok else { throw PeerError("baseline upload answered \(response.status)") }
        posted += body.count
    }
    let baselineSeconds = now() - t1
    try await http.shutdown()
    let baselineRate = Double(posted) / baselineSeconds
    print(String(format: "  forwarder:        %8.0f records/s  (%d measurements in %.2f s, %d uploads of <= 1,000)",
                 forwarderRate, report.accepted, forwarderSeconds, report.uploads))
    print(String(format: "  baseline (plain HTTP client, same batches pre-encoded): %8.0f records/s  -> forwarder at %.0f%%",
                 baselineRate, forwarderRate / baselineRate * 100))
    print(String(format: "  target: >= 20,000 records/s (%@)", forwarderRate >= 20_000 ? "met" : "NOT met"))

    // 3. A backlog.
    if backlog > 0 {
        let t2 = now()
        let big = try filledStore(folder + "/backlog.sqlite", count: backlog, tag: "c")
        let fill = now() - t2
        let third = try await account(server)
        let t3 = now()
        let drained = try await Forwarder(store: big, client: client, token: third, configuration: configuration).drain()
        let drainSeconds = now() - t3
        print(String(format: "  backlog of %d records (stored in %.1f s): drained in %.1f s, %.0f records/s; target < 60 s (%@)",
                     backlog, fill, drainSeconds, Double(drained.accepted) / drainSeconds, drainSeconds < 60 ? "met" : "NOT met"))
    }
    await client.shutdown()
}

/// A fresh store with `count` measurements (heart rate, one per second), all in the outbox.
func filledStore(_ path: String, count: Int, tag: String) throws -> HealthStore {
    let store = try HealthStore(path: path)
    let t0 = Date(timeIntervalSince1970: 1_760_000_000)
    var done = 0
    while done < count {
        let n = min(10_000, count - done)
        try store.write((done..<done + n).map { i in
            .measurement(HealthModel.Measurement(
                id: RecordID.derive("bench", tag, String(i)), kind: .heartRate, time: t0.addingTimeInterval(Double(i)),
                value: Double(60 + i % 90), source: Source(driver: "bench", device: "strap")))
        })
        done += n
    }
    return store
}

/// Registers a fresh account and logs in; returns the token.
func account(_ server: ServerProcess) async throws -> String {
    let client = try SyncClient(configuration: .init(server: server.url))
    defer { Task { await client.shutdown() } }
    let email = "bench-\(UUID().uuidString.prefix(8))@example.org"
    _ = try await client.register(email: email, password: "benchmark passphrase")
    return try await client.login(email: email, password: "benchmark passphrase", deviceName: "bench").token
}

/// The outbox's records as gzipped upload bodies of `size` records.
func encodedBatches(_ store: HealthStore, size: Int) throws -> [(bytes: ByteBuffer, count: Int)] {
    let encoder = SyncAPI.encoder()
    var out: [(ByteBuffer, Int)] = []
    var after: Int64 = 0
    while true {
        let entries = try store.outbox(after: after, limit: size)
        guard let last = entries.last else { break }
        after = last.seq
        let records = try store.records(for: entries).compactMap { $0 }.map { WireRecord($0) }
        var buffer = ByteBuffer(bytes: try encoder.encode(UploadRequest(records: records)))
        out.append((try buffer.compress(with: .gzip()), records.count))
    }
    return out
}
