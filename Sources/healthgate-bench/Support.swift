import AsyncHTTPClient
import Foundation
import NIOCore

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

func tempPath(_ name: String) -> String {
    NSTemporaryDirectory() + "healthgate-bench-\(getpid())-\(name).sqlite"
}

func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

/// CPU time (user + system) of this process so far, in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// The value below which `fraction` of `values` lie (nearest rank).
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
}

/// This benchmark's `print`: each line is written when printed, even into a pipe or a file (the
/// standard library's buffers it there), so a run cut short keeps what it measured.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let line = items.map { "\($0)" }.joined(separator: separator) + terminator
    FileHandle.standardOutput.write(Data(line.utf8))
}

/// `POST /v1/records` of a pre-encoded gzip upload body on the server at `server` (its base URL).
func uploadRequest(_ body: ByteBuffer, server: String, token: String) -> HTTPClientRequest {
    var request = HTTPClientRequest(url: server + "/v1/records")
    request.method = .POST
    request.headers.add(name: "Authorization", value: "Bearer \(token)")
    request.headers.add(name: "Content-Type", value: "application/json")
    request.headers.add(name: "Content-Encoding", value: "gzip")
    request.body = .bytes(body)
    return request
}
