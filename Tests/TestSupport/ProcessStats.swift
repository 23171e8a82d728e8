import Foundation

/// What the kernel says of a process (`/proc/PID/...`), for tests and benchmarks that measure a
/// server or daemon they started: CPU time, resident memory, wake-ups.
public enum ProcessStats {
    /// User + system CPU time of `pid` so far, threads that ended included, in clock ticks
    /// (fields 14 and 15 of /proc/PID/stat).
    public static func cpuTicks(_ pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // After the command name in parentheses: state is field 3, utime 14 and stime 15.
        guard let close = stat.lastIndex(of: ")") else { throw PeerError("unreadable /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
            throw PeerError("unreadable /proc/\(pid)/stat")
        }
        return user + system
    }

    /// ``cpuTicks(_:)`` in seconds; 0 when unreadable.
    public static func cpuSeconds(_ pid: Int32) -> Double {
        Double((try? cpuTicks(pid)) ?? 0) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A memory field of /proc/PID/status (`VmRSS:`, `VmHWM:` for the peak, `RssAnon:`) in KiB;
    /// 0 when unreadable.
    public static func statusKB(_ pid: Int32, field: String = "VmRSS:") -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    /// How many times the threads of `pid` were put on a CPU (the third field of each thread's
    /// /proc/PID/task/TID/schedstat): each is a wake-up of an otherwise sleeping process. Threads
    /// that ended meanwhile are not counted.
    public static func scheduledRuns(_ pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { runs, task in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { return runs }
            let fields = text.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return runs + (fields.count == 3 ? fields[2] : 0)
        }
    }
}
