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
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
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
            let cpu0 = ProcessStats.cpuSeconds(process.processIdentifier), w0 = now()
            let runs0 = ProcessStats.scheduledRuns(process.processIdentifier)
            for _ in 0..<seconds {
                try await Task.sleep(for: .seconds(1))
                rssKB.append(ProcessStats.statusKB(process.processIdentifier))
            }
            cpuShare = (ProcessStats.cpuSeconds(process.processIdentifier) - cpu0) / (now() - w0)
            wakeUps = ProcessStats.scheduledRuns(process.processIdentifier) - runs0
            anonymousKB = ProcessStats.statusKB(process.processIdentifier, field: "RssAnon:")
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

