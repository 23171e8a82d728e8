#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import BLEHost
@testable import BLERuntime

struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// The emulated BLE world (`Tests/peers/ble_peer.py`, Bumble) as a subprocess: stdin is a pipe
/// (the peer exits on EOF, so it also dies with the test process), the ready line is read with a
/// timeout, and `stop()` closes stdin, terminates and reaps it.
final class BLEPeer: @unchecked Sendable {
    struct Peripheral {
        var id: String
        var name: String
        var address: DeviceAddress
        var services: [String]
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let process = Process()
    let stdin = Pipe()
    let stdout = Pipe()
    let directory: URL
    let sentLogPath: String
    let stderrPath: String
    /// Where the peer's H4 endpoint listens, from the ready line.
    private(set) var h4: TransportAddress = .tcp(host: "127.0.0.1", port: 1)
    private(set) var controlPort: UInt16 = 0
    private(set) var peripherals: [String: Peripheral] = [:]
    private var controlFD: Int32 = -1
    private let lock = NSLock()

    /// Fails with a message naming `pip install -r requirements-test.txt` when Bumble is missing.
    static let bumbleCheck: Result<Void, PeerError> = {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import bumble"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return .failure(PeerError("cannot run python3: \(error)")) }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            return .failure(PeerError("the BLE test peer needs Bumble: python3 cannot import 'bumble'; run `pip install -r requirements-test.txt`"))
        }
        return .success(())
    }()

    init(peripherals kinds: [String] = ["hr", "csc"], rate: String = "10", unixSocket: Bool = false) throws {
        try Self.bumbleCheck.get()
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("hg-ble-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        directory = tmp
        sentLogPath = tmp.appendingPathComponent("sent.jsonl").path
        stderrPath = tmp.appendingPathComponent("peer.stderr").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.packageRoot.appendingPathComponent("Tests/peers/ble_peer.py").path,
                             "--listen", unixSocket ? "unix:" + tmp.appendingPathComponent("h4.sock").path : "tcp:127.0.0.1:0",
                             "--control", "tcp:127.0.0.1:0", "--sent-log", sentLogPath,
                             "--rate", rate] + kinds.flatMap { ["--peripheral", $0] }
        process.currentDirectoryURL = Self.packageRoot
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        do {
            try readReadyLine(timeout: 20)
            try openControl()
        } catch {
            stop()
            throw error
        }
    }

    private func readReadyLine(timeout: Double) throws {
        let handle = stdout.fileHandleForReading
        let box = Mutex<Data?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var data = Data()
            while !data.contains(0x0A) {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                data.append(chunk)
            }
            box.withLock { $0 = data }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let data = box.withLock({ $0 }), let nl = data.firstIndex(of: 0x0A) else {
            throw PeerError("BLE peer gave no ready line within \(timeout) s; stderr: \(stderrTail())")
        }
        guard let json = try JSONSerialization.jsonObject(with: data[..<nl]) as? [String: Any], json["ready"] as? Bool == true,
              let h4 = json["h4"] as? [String: Any],
              let control = json["control"] as? [String: Any], let cp = control["port"] as? Int,
              let list = json["peripherals"] as? [[String: Any]] else {
            throw PeerError("unexpected ready line: \(String(decoding: data, as: UTF8.self))")
        }
        if let port = h4["port"] as? Int, let host = h4["host"] as? String {
            self.h4 = .tcp(host: host, port: UInt16(port))
        } else if let path = h4["path"] as? String {
            self.h4 = .unix(path: path)
        } else {
            throw PeerError("unexpected h4 endpoint in the ready line: \(h4)")
        }
        controlPort = UInt16(cp)
        for p in list {
            guard let id = p["id"] as? String, let a = p["address"] as? String, let address = DeviceAddress(a, kind: .random) else { continue }
            peripherals[id] = Peripheral(id: id, name: p["name"] as? String ?? "", address: address, services: p["services"] as? [String] ?? [])
        }
    }

    private func stderrTail() -> String {
        String((try? String(contentsOfFile: stderrPath, encoding: .utf8))?.suffix(2000) ?? "")
    }

    private func openControl() throws {
        controlFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = controlPort.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(controlFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw PeerError("cannot connect to the control channel: errno \(errno)") }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(controlFD, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one control request and returns its JSON reply (10 s receive timeout).
    @discardableResult
    func control(_ line: String) throws -> [String: Any] {
        lock.lock()
        defer { lock.unlock() }
        let bytes = Array((line + "\n").utf8)
        guard bytes.withUnsafeBytes({ send(controlFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw PeerError("control write failed")
        }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = recv(controlFD, &byte, 1, 0)
            guard n == 1 else { throw PeerError("no control reply to '\(line)'") }
            if byte == 0x0A { break }
            reply.append(byte)
        }
        guard let json = try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any] else {
            throw PeerError("bad control reply \(String(decoding: reply, as: UTF8.self))")
        }
        guard json["ok"] as? Bool == true else { throw PeerError("control '\(line)' failed: \(json)") }
        return json
    }

    /// The sent log's lines.
    func sentLog() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: sentLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The well-formed samples sent by `peripheral`, by seq (one subscribed link).
    func sentSamples(_ peripheral: String) -> [Int: [String: Any]] {
        var out: [Int: [String: Any]] = [:]
        for e in sentLog() where e["peripheral"] as? String == peripheral && e["malformed"] is NSNull {
            if let seq = e["seq"] as? Int { out[seq] = e }
        }
        return out
    }

    func stop() {
        if controlFD >= 0 { close(controlFD); controlFD = -1 }
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

/// Collects an async stream in the background so tests can wait for conditions with a timeout.
final class Collector<T: Sendable>: Sendable {
    private final class Storage: Sendable {
        let items = Mutex<[T]>([])
    }
    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<T>) {
        let storage = storage
        task = Task { for await x in stream { storage.items.withLock { $0.append(x) } } }
    }

    var values: [T] { storage.items.withLock { $0 } }

    /// Polls (every 20 ms) until `condition` holds on the collected values, for `timeout` worth
    /// of polls: counted in polls rather than wall-clock time, so that a test process whose task
    /// pool is busy with other tests does not fail early (it only waits longer).
    @discardableResult
    func wait(_ what: String, timeout: Duration = .seconds(5), until condition: ([T]) -> Bool) async throws -> [T] {
        let polls = max(1, Int(timeout / .milliseconds(20)))
        for _ in 0..<polls {
            let v = values
            if condition(v) { return v }
            try await Task.sleep(for: .milliseconds(20))
        }
        let v = values
        if condition(v) { return v }
        throw TestTimeout(what: "\(what) (have \(v.count))")
    }

    deinit { task.cancel() }

    /// A thread-safe list to append to from a closure.
    final class Sink: Sendable {
        private let items = Mutex<[T]>([])
        func append(_ x: T) { items.withLock { $0.append(x) } }
        var values: [T] { items.withLock { $0 } }
    }
}

/// Hex string of bytes (lower case, as the sent log writes them).
func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// A host runtime connected to `peer`, started; closed by `body`'s end whatever happens.
func withHost(_ peer: BLEPeer, timeout: Duration = .seconds(120), snoopPath: String? = nil,
              _ body: @escaping @Sendable (HostRuntime) async throws -> Void) async throws {
    var configuration = HostRuntime.Configuration()
    configuration.commandTimeout = .seconds(2)
    configuration.snoopPath = snoopPath
    if ProcessInfo.processInfo.environment["HG_BLE_LOG"] != nil {
        configuration.log = { print("[ble] \($0)") }
    }
    let runtime = try HostRuntime.open(peer.h4, configuration: configuration)
    do {
        try await withTimeout(timeout, "test body") {
            try await runtime.start()
            try await body(runtime)
        }
    } catch {
        await runtime.close()
        throw error
    }
    await runtime.close()
}
