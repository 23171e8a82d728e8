import Foundation
import TestSupport

/// The idle daemon (release build, its own process): time from start to READY (the notify
/// protocol, as systemd sees it), then RSS and CPU over `seconds` with a watch folder, the
/// forwarder (against a local server) and the status socket configured. Baseline in the same run: the start of the same
/// executable to its exit doing nothing (`--version`).
func daemonBenchmarks(seconds: Int = 60) async throws {
    print("\n== Idle daemon (release build, separate process) ==")
    let folder = NSTemporaryDirectory() + "healthgate-bench-daemon-\(getpid())"
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let executable = Tool.path("healthgate")

    // Baseline: process start and exit.
    var baselines: [Double] = []
    for _ in 0..<5 {
        let t0 = now()
        _ = try await Tool.run(executable, ["--version"])
        baselines.append(now() - t0)
    }

    let server = try await ServerProcess.start(databasePath: folder + "/server.sqlite")
    defer { server.stop() }
    let config = folder + "/healthgate.toml"
    try """
        [api]
        socket = "\(folder)/healthgate.sock"
        [forwarder]
        server = "\(server.url.absoluteString)"
        interval_s = 60
        [drivers.inbox]
        type = "watch_folder"
        path = "\(folder)/inbox"
        """.write(toFile: config, atomically: true, encoding: .utf8)

    var readyTimes: [Double] = []
    var rssKB: [Int] = []
    var anonymousKB = 0
    var cpuShare = 0.0
    var wakeUps = 0
    var trimLine = ""
    for round in 0..<3 {
        let notify = try NotifySocket()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["daemon", "--config", config, "--state-dir", folder + "/state"]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        process.environment = environment
        let logPath = folder + "/daemon-\(round).log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        let t0 = now()
        try process.run()
        guard await notify.waitFor("READY=1", timeout: 10) != nil else { throw PeerError("no READY from the daemon") }
        readyTimes.append(now() - t0)
        if round == 0 {
            // Idle: CPU time over the window, RSS sampled every second, from after the daemon
            // released its start-up pages (3 s after READY; it logs the RSS before and after).
            try await Task.sleep(for: .seconds(5))
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            guard let trim = log.split(separator: "\n").first(where: { $0.contains("released start-up pages") }) else {
                throw PeerError("the daemon did not log its start-up trim: \(log)")
            }
            trimLine = String(trim)
            let cpu0 = processCPUSeconds(process.processIdentifier), w0 = now()
            let runs0 = scheduledRuns(process.processIdentifier)
            for _ in 0..<seconds {
                try await Task.sleep(for: .seconds(1))
                rssKB.append(residentKB(process.processIdentifier))
            }
            cpuShare = (processCPUSeconds(process.processIdentifier) - cpu0) / (now() - w0)
            wakeUps = scheduledRuns(process.processIdentifier) - runs0
            anonymousKB = residentKB(process.processIdentifier, field: "RssAnon:")
        }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
    print(String(format: "  start to READY: median %.0f ms (3 starts; target < 300 ms); baseline: start and exit of the same executable (--version) median %.0f ms",
                 median(readyTimes) * 1000, median(baselines) * 1000))
    print(String(format: "  idle over %d s: RSS max %.1f MB, last %.1f MB, of which %.1f MB private (RssAnon; the rest is code mapped from files) (target < 30 MB); CPU %.3f%% of a core (in clock ticks: one is %.3f%%) (target < 0.5%%), %d wake-ups (threads put on a CPU)",
                 seconds, Double(rssKB.max() ?? 0) / 1024, Double(rssKB.last ?? 0) / 1024, Double(anonymousKB) / 1024, cpuShare * 100,
                 100 / Double(sysconf(Int32(_SC_CLK_TCK))) / Double(seconds), max(0, wakeUps)))
    // Without the trim the resident set would stay where start-up left it.
    let field = { (key: String) in trimLine.split(separator: " ").first(where: { $0.hasPrefix(key + "=") })?.dropFirst(key.count + 1) ?? "?" }
    print("  start-up trim: RSS \(field("rss_before_mb")) MB before it, \(field("rss_after_mb")) MB after (the daemon's own log)")
}

/// A resident-memory field of /proc/PID/status (`VmRSS:`, `RssAnon:`) in kB (0 if unreadable).
func residentKB(_ pid: Int32, field: String = "VmRSS:") -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

/// How many times the threads of `pid` were put on a CPU (the third field of each thread's
/// /proc/PID/task/TID/schedstat): each is a wake-up of an otherwise sleeping daemon. Threads
/// that ended meanwhile are not counted.
func scheduledRuns(_ pid: Int32) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.reduce(0) { runs, task in
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { return runs }
        let fields = text.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        return runs + (fields.count == 3 ? fields[2] : 0)
    }
}

/// User + system CPU seconds of `pid`, threads that ended included (from /proc/PID/stat, in
/// clock ticks).
func processCPUSeconds(_ pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
