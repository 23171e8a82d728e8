public import Foundation

/// `Tests/peers/hostile_proxy.py` in front of a real server: it forwards requests, except that
/// uploads (or the requests `match` names) take the next fault of `faults`, one each, in order.
/// Its log says what it did to every request, so a test can check the faults were all played.
public final class HostileProxy: @unchecked Sendable {
    public let process = ChildProcess()
    private let stdin = Pipe()
    private let folder: String
    public let logPath: String
    /// Where clients connect: `http://127.0.0.1:PORT`.
    public private(set) var url = URL(string: "http://127.0.0.1:1")!

    /// Starts the proxy and waits (on a thread of its own) for its listening line.
    public static func start(upstream: URL, faults: [String] = [], match: String? = nil,
                             extraArguments: [String] = []) async throws -> HostileProxy {
        try await onOwnThread { try HostileProxy(upstream: upstream, faults: faults, match: match, extraArguments: extraArguments) }
    }

    private init(upstream: URL, faults: [String], match: String?, extraArguments: [String]) throws {
        folder = NSTemporaryDirectory() + "hg-proxy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        logPath = folder + "/requests.jsonl"
        let out = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", PackagePaths.root + "/Tests/peers/hostile_proxy.py",
                             "--upstream", upstream.absoluteString, "--faults", faults.joined(separator: ","), "--log", logPath]
            + (match.map { ["--match", $0] } ?? []) + extraArguments
        process.standardInput = stdin
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var line: [UInt8] = []
        while true {
            guard let byte = out.fileHandleForReading.readData(ofLength: 1).first else {
                throw PeerError("hostile_proxy.py exited before listening (arguments: \(process.arguments ?? []))")
            }
            if byte == 0x0A { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://"), let parsed = URL(string: String(text[range.lowerBound...])) else {
            throw PeerError("unexpected first line from hostile_proxy.py: \(text)")
        }
        url = parsed
    }

    /// What the proxy did, one entry per request: `method`, `path`, `fault`.
    public func requests() -> [[String: String]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
    }

    /// The faults played so far, in order (requests passed through are left out).
    public func playedFaults() -> [String] {
        requests().compactMap { $0["fault"] }.filter { $0 != "pass" }
    }

    public func stop() {
        try? stdin.fileHandleForWriting.close()
        end(process)
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { stop() }
}
