// `make bench`: throughput, latency and CPU figures, each next to a baseline measured in the
// same run on the same machine (these machines are noisy, so only the ratios mean much). Not a
// test: it asserts nothing and never runs in CI.
//
//     healthgate-bench [all|files|ble|sync|daemon|server-load|log|views|derived|apple|capacity] [--records N] [--backlog N] [--idle S]
//                      [--seconds S] [--accounts N] [--size MB] [--export FILE] [--baseline-mb MB] [FIXTURES]
import Foundation
import TestSupport

var arguments = Array(CommandLine.arguments.dropFirst())
// The Apple Health benchmark's children (see AppleBench.swift).
if arguments.first == "apple-stage", arguments.count == 3 {
    do {
        try await appleStage(arguments[1], arguments[2])
    } catch {
        FileHandle.standardError.write(Data("healthgate-bench apple-stage: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if arguments.contains(where: { ["-h", "--help", "help"].contains($0) }) {
    print("""
        USAGE: healthgate-bench [all|files|ble|sync|daemon|server-load|log|views|derived|apple|capacity] [--records N] [--backlog N] [--idle S]
                                [--seconds S] [--accounts N] [--size MB] [--export FILE] [--baseline-mb MB] [FIXTURES]

        Speed and footprint figures of the release build, each next to a baseline measured in the same run.
          files    import the sample files (FIXTURES, default ./Fixtures) vs reading them
          ble      live heart-rate straps through the emulated peer (needs Bumble)
          sync     forward --records N (default 100000) and drain a --backlog N (default 1000000), to a
                   server on each store of --store (default sqlite,postgres)
          daemon   the idle daemon: start to READY, then RSS and CPU over --idle S seconds (default 60)
          server-load  --accounts N (default 4) normal accounts uploading 100-record batches for --seconds S
                   (default 20), then as long again with one account sending hostile bodies: the p99 latencies
                   of the normal uploads and their ratio, each hostile body's memory alone on a fresh server, and
                   the server's peak memory (the server next to this executable); on each store of --store
                   (default sqlite,postgres)
          log      `healthgate log water 250ml` start to committed row, 200 runs, vs sqlite3 inserting one row
          views    `today` and `stats --period week` over five years of daily entries (20,000 habit events,
                   2,000 workouts with a million samples, 1,800 nights, a weight a day), each next to sqlite3
                   running a plain SQL query of the same totals; then every dashboard page served over loopback
                   (p50/p99, size plain and gzip) next to the SQL behind it, and its first contentful paint in
                   Chromium from the DevTools protocol (Tests/browser/paint.py)
          derived  ten derived habits over five years of minute-level heart rate and steps (2.6 million readings):
                   `today` and `stats --period year` first and cached, next to sqlite3 running the plain SQL of the
                   same numbers per day; a 30-day backlog's write with and without the change triggers, and the
                   recomputation it causes against the import's time. Not part of `all` (it takes minutes).
          apple    Apple Health: a synthetic export.xml of --size MB (default 1024; Drivers/AppleHealth/tools/make-export.py),
                   or the --export FILE given, imported end to end into a fresh database, next to XMLStream reading the
                   same bytes (the floor) and healthkit-to-sqlite (PyPI) importing them: records/s, MB/s, peak RSS, and
                   the split between XML, mapping, normalizing and writing. Not part of `all` (it takes minutes).
                   --baseline-mb MB: healthkit-to-sqlite reads only the first MB of the same file (it reads about
                   0.5 MB/s; 1 GB would take most of an hour); its rate is over what it read.
          capacity the tracking server's sustained rate, SQLite and PostgreSQL: --devices N (default 200) devices
                   syncing (upload 20 records, pull) at rising fixed rates, open loop, --seconds S (default 20) each,
                   until p99 passes 500 ms: p50/p99, errors, syncs per core-second; next to pgbench running the same
                   upsert transaction. --rates R,R,... the rates; --store sqlite|postgres one store. Then idle
                   connections held by one server, plain and TLS, up to --connections N (default 20000) or its
                   open-file limit (0: none): the memory each costs. Not part of `all`.
          all      everything but apple and capacity (the default)
        """)
    exit(0)
}
/// The number after `name` (and both removed from the arguments), or `fallback`.
func option(_ name: String, _ fallback: Int, in arguments: inout [String]) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count,
          let value = Int(arguments[index + 1]) else { return fallback }
    arguments.removeSubrange(index...index + 1)
    return value
}
let syncRecords = option("--records", 100_000, in: &arguments)
let syncBacklog = option("--backlog", 1_000_000, in: &arguments)
let idleSeconds = option("--idle", 60, in: &arguments)
let loadSeconds = option("--seconds", 20, in: &arguments)
let loadAccounts = option("--accounts", 4, in: &arguments)
let appleSizeMB = option("--size", 1024, in: &arguments)
let capacityDevices = option("--devices", 200, in: &arguments)
let capacityConnections = option("--connections", 20_000, in: &arguments)
var capacityRates = [100, 200, 300, 400, 500, 600, 800, 1000, 1200, 1500, 2000]
if let index = arguments.firstIndex(of: "--rates"), index + 1 < arguments.count {
    capacityRates = arguments[index + 1].split(separator: ",").compactMap { Int($0) }
    arguments.removeSubrange(index...index + 1)
}
var benchStores: [TestStore] = [.sqlite, .postgres]
if let index = arguments.firstIndex(of: "--store"), index + 1 < arguments.count {
    benchStores = arguments[index + 1].split(separator: ",").compactMap { TestStore(rawValue: String($0)) }
    arguments.removeSubrange(index...index + 1)
}
let appleBaselineMB = option("--baseline-mb", 0, in: &arguments)
var appleExport: String?
if let index = arguments.firstIndex(of: "--export"), index + 1 < arguments.count {
    appleExport = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
}
let modes = ["all", "files", "ble", "sync", "daemon", "server-load", "log", "views", "derived", "apple", "capacity"]
let mode = arguments.first.flatMap { modes.contains($0) ? $0 : nil } ?? "all"
let fixtures = arguments.first { !modes.contains($0) } ?? "Fixtures"
if let unknown = arguments.first(where: { $0.hasPrefix("-") }) {
    FileHandle.standardError.write(Data("healthgate-bench: unknown option \(unknown) (see --help)\n".utf8))
    exit(64)
}
guard appleSizeMB >= 1, appleBaselineMB >= 0, appleExport.map({ FileManager.default.fileExists(atPath: $0) }) ?? true else {
    FileHandle.standardError.write(Data("healthgate-bench: --size must be 1 (MB) or more and --export an existing file\n".utf8))
    exit(64)
}
guard loadSeconds >= 1, loadAccounts >= 1 else {
    FileHandle.standardError.write(Data("healthgate-bench: --seconds and --accounts must be 1 or more\n".utf8))
    exit(64)
}
guard mode != "all" && mode != "files" || FileManager.default.fileExists(atPath: fixtures) else {
    FileHandle.standardError.write(Data("healthgate-bench: no sample files at \(fixtures) (run it from the package folder, or name the folder)\n".utf8))
    exit(66)
}

print("HealthGate benchmark (release build)")
// A benchmark that cannot run (a tool missing, a peer that would not start) ends with what is
// missing and how to get it, never a stack trace.
do {
    if mode == "all" || mode == "files" {
        try await fileBenchmarks(fixtures: fixtures, rounds: 5)
    }
    if mode == "all" || mode == "ble" {
        try await bleBenchmarks()
    }
    if mode == "all" || mode == "sync" {
        for store in benchStores {
            try await syncBenchmarks(records: syncRecords, backlog: syncBacklog, store: store)
        }
    }
    if mode == "all" || mode == "daemon" {
        try await daemonBenchmarks(seconds: idleSeconds)
    }
    if mode == "all" || mode == "server-load" {
        for store in benchStores {
            try await serverLoadBenchmarks(seconds: loadSeconds, accounts: loadAccounts, store: store)
        }
    }
    if mode == "capacity" {
        try await capacityBenchmarks(seconds: loadSeconds, devices: capacityDevices, rates: capacityRates, stores: benchStores)
        if capacityConnections > 0 { try await heldConnectionsBenchmarks(count: capacityConnections) }
    }
    if mode == "all" || mode == "log" {
        try await logBenchmarks(runs: 200)
    }
    if mode == "all" || mode == "views" {
        try await viewsBenchmarks()
    }
    if mode == "derived" {
        try await derivedBenchmarks()
    }
    if mode == "apple" {
        try await appleBenchmarks(export: appleExport, sizeMB: appleSizeMB, baselineMB: appleBaselineMB > 0 ? appleBaselineMB : nil)
    }
} catch {
    FileHandle.standardError.write(Data("""
        healthgate-bench: \(mode): \(error)
        (`make bench` installs what the benchmarks need: the test tools of `make setup`)

        """.utf8))
    exit(1)
}

var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
print(String(format: "\npeak RSS: %.1f MB", Double(usage.ru_maxrss) / 1024))
