import AsyncHTTPClient
import Gzip
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
func syncBenchmarks(records: Int = 100_000, backlog: Int = 1_000_000, store: TestStore = .sqlite) async throws {
    print("\n== Forwarding to a local healthgate-server (release build, separate process, \(store.rawValue) store) ==")
    let folder = NSTemporaryDirectory() + "healthgate-bench-sync-\(getpid())"
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let server = try await ServerProcess.start(databasePath: folder + "/server.sqlite", store: store)
    defer { server.stop() }

    // 1. The forwarder, `records` measurements.
    let install = try await filledStore(folder + "/a.sqlite", count: records, tag: "a")
    try await codecBenchmark(install)
    try await forwarderSteps(try await filledStore(folder + "/steps.sqlite", count: min(records, 100_000), tag: "s"))
    // The baseline's bodies: the same records in the same batches, encoded and gzipped now
    // (untimed), before the forwarder empties the outbox.
    let bodies = try await encodedBatches(install, size: 1000)
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
    let url = server.url.absoluteString
    let t1 = now()
    // As many uploads in flight as the forwarder keeps.
    let posted = try await withThrowingTaskGroup(of: Int.self) { group in
        var total = 0
        for (index, body) in bodies.enumerated() {
            if index >= configuration.concurrentUploads { total += try await group.next() ?? 0 }
            group.addTask { try await post(body, to: url, token: second, with: http) }
        }
        for try await count in group { total += count }
        return total
    }
    let baselineSeconds = now() - t1
    try await http.shutdown()
    let baselineRate = Double(posted) / baselineSeconds
    print(String(format: "  forwarder:        %8.0f records/s  (%d measurements in %.2f s, %d uploads of <= 1,000, %d in flight)",
                 forwarderRate, report.accepted, forwarderSeconds, report.uploads, configuration.concurrentUploads))
    print(String(format: "  baseline (plain HTTP client, same batches pre-encoded, same uploads in flight): %8.0f records/s  -> forwarder at %.0f%%",
                 baselineRate, forwarderRate / baselineRate * 100))
    print(String(format: "  target: >= 20,000 records/s (%@)", forwarderRate >= 20_000 ? "met" : "NOT met"))

    // 3. A backlog.
    if backlog > 0 {
        let t2 = now()
        let big = try await filledStore(folder + "/backlog.sqlite", count: backlog, tag: "c")
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

/// Encoding and decoding one upload of 1,000 records: the sync protocol's own JSON codecs next to
/// Foundation's `JSONEncoder`/`JSONDecoder` with the same settings (`SyncAPI`), same bytes.
func codecBenchmark(_ store: HealthStore) async throws {
    let entries = try await store.outbox(limit: 1000)
    let upload = UploadRequest(records: try await store.records(for: entries).compactMap(\.record).map { WireRecord($0) })
    let rounds = 20
    func time(_ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let t0 = now()
            for _ in 0..<rounds { try body() }
            best = min(best, (now() - t0) / Double(rounds * upload.records.count) * 1e6)
        }
        return best
    }
    let bytes = try SyncJSONEncoder().encode(upload)
    let foundationEncoder = SyncAPI.encoder(), foundationDecoder = SyncAPI.decoder()
    let encodeFoundation = try time { _ = try foundationEncoder.encode(upload) }
    let encodeOwn = try time { _ = try SyncJSONEncoder().encode(upload) }
    let decodeFoundation = try time { _ = try foundationDecoder.decode(UploadRequest.self, from: Data(bytes)) }
    let decodeOwn = try time { _ = try SyncJSONDecoder().decode(UploadRequest.self, from: bytes) }
    print(String(format: "  JSON per record (1,000-record upload): encode %.1f us (JSONEncoder %.1f us), decode %.1f us (JSONDecoder %.1f us)",
                 encodeOwn, encodeFoundation, decodeOwn, decodeFoundation))
}

/// The forwarder's own work per record, step by step, without a server: what it takes from the
/// cores the server shares with it. Each step as the forwarder does it (a batch of 1,000).
func forwarderSteps(_ store: HealthStore) async throws {
    var times = [String: Double]()
    var count = 0
    let encoder = SyncJSONEncoder()
    func timed<T>(_ step: String, _ body: () async throws -> T) async rethrows -> T {
        let t0 = now()
        let value = try await body()
        times[step, default: 0] += now() - t0
        return value
    }
    while true {
        let entries = try await timed("read outbox") { try await store.outbox(limit: 1000) }
        guard !entries.isEmpty else { break }
        let contents = try await timed("read records") { try await store.records(for: entries) }
        let parts = try await timed("encode") {
            try contents.compactMap { content -> ByteBuffer? in
                guard case .record(let record) = content else { return nil }
                return ByteBuffer(bytes: try encoder.encode(WireRecord(record)))
            }
        }
        let zipped = await timed("gzip") {
            var body = ByteBuffer(string: "{\"records\":[")
            for (index, part) in parts.enumerated() {
                if index > 0 { body.writeString(",") }
                body.writeImmutableBuffer(part)
            }
            body.writeString("]}")
            return body.withUnsafeReadableBytes { Gzip.compress($0, level: 1) }
        }
        precondition(!zipped.isEmpty)
        let answer = try encoder.encode(UploadResponse(results: entries.map { UploadResult(id: $0.id, version: $0.version, status: .accepted) }))
        _ = try await timed("decode answer") { try SyncJSONDecoder().decode(UploadResponse.self, from: answer) }
        try await timed("settle") { try await store.settle(acknowledged: entries.map(\.seq), refused: []) }
        count += entries.count
    }
    let order = ["read outbox", "read records", "encode", "gzip", "decode answer", "settle"]
    let total = times.values.reduce(0, +)
    print(String(format: "  forwarder's own work: %.1f us a record (%@)", total / Double(count) * 1e6,
                 order.map { String(format: "%@ %.1f", $0, times[$0, default: 0] / Double(count) * 1e6) }.joined(separator: ", ")))
}

/// A fresh store with `count` measurements (heart rate, one per second), all in the outbox.
func filledStore(_ path: String, count: Int, tag: String) async throws -> HealthStore {
    let store = try await HealthStore(path: path)
    let t0 = Date(timeIntervalSince1970: 1_760_000_000)
    var done = 0
    while done < count {
        let n = min(10_000, count - done)
        try await store.write((done..<done + n).map { i in
            .measurement(HealthModel.Measurement(
                id: RecordID.derive("bench", tag, String(i)), kind: .heartRate, time: t0.addingTimeInterval(Double(i)),
                value: Double(60 + i % 90), source: Source(driver: "bench", device: "strap")))
        })
        done += n
    }
    return store
}

/// Posts one pre-encoded gzip upload body; returns its record count.
func post(_ body: (bytes: ByteBuffer, count: Int), to server: String, token: String, with http: HTTPClient) async throws -> Int {
    let request = uploadRequest(body.bytes, server: server, token: token)
    let response = try await http.execute(request, timeout: .seconds(120))
    _ = try await response.body.collect(upTo: 64 << 20)
    guard response.status == .ok else { throw PeerError("baseline upload answered \(response.status)") }
    return body.count
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
func encodedBatches(_ store: HealthStore, size: Int) async throws -> [(bytes: ByteBuffer, count: Int)] {
    let encoder = SyncJSONEncoder()
    var out: [(ByteBuffer, Int)] = []
    var after: Int64 = 0
    while true {
        let entries = try await store.outbox(after: after, limit: size)
        guard let last = entries.last else { break }
        after = last.seq
        let records = try await store.records(for: entries).compactMap(\.record).map { WireRecord($0) }
        let buffer = ByteBuffer(bytes: try encoder.encode(UploadRequest(records: records)))
        out.append((ByteBuffer(bytes: buffer.withUnsafeReadableBytes { Gzip.compress($0, level: 1) }), records.count))
    }
    return out
}
