#if canImport(Glibc)
import Glibc
#endif
public import BluetoothCentral
public import Foundation
import Synchronization

/// Errors of the BLE test peer harness.
public struct PeerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// The emulated BLE world (`Tests/peers/ble_peer.py`, Bumble) as a subprocess: stdin is a pipe
/// (the peer exits on EOF, so it also dies with the test process), the ready line is read with a
/// timeout, and `stop()` closes stdin, terminates and reaps it.
public final class BLEPeer: @unchecked Sendable {
    public struct Peripheral {
        public var id: String
        public var name: String
        public var address: DeviceAddress
        public var services: [String]
    }

    public let process = ChildProcess()
    let stdin = Pipe()
    let stdout = Pipe()
    public let directory: URL
    public let sentLogPath: String
    let stderrPath: String
    /// Where the peer's H4 endpoint listens, from the ready line.
    public private(set) var h4: TransportAddress = .tcp(host: "127.0.0.1", port: 1)
    public private(set) var controlPort: UInt16 = 0
    public private(set) var peripherals: [String: Peripheral] = [:]
    private var controlFD: Int32 = -1
    private let lock = NSLock()

    /// Fails with a message naming `pip install -r requirements-test.txt` when Bumble is missing.
    static let bumbleCheck: Result<Void, PeerError> = {
        let p = ChildProcess()
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

    /// Starts a peer (see `init`), waiting for its ready line off the shared concurrency pool.
    public static func start(peripherals kinds: [String] = ["hr", "csc"], rate: String = "10", unixSocket: Bool = false,
                             h4Path: String? = nil, extraArguments: [String] = []) async throws -> BLEPeer {
        try await onOwnThread {
            try BLEPeer(peripherals: kinds, rate: rate, unixSocket: unixSocket, h4Path: h4Path, extraArguments: extraArguments)
        }
    }

    /// `extraArguments` go to `ble_peer.py` as they are (e.g. `--snoop FILE`). Blocks until the
    /// peer is ready (at most ``Patience/limit``): async tests use ``start(peripherals:rate:unixSocket:extraArguments:)``.
    /// `h4Path`: listen on this Unix socket (else one in the peer's own directory with
    /// `unixSocket`, else TCP on a free port).
    public init(peripherals kinds: [String] = ["hr", "csc"], rate: String = "10", unixSocket: Bool = false,
                h4Path: String? = nil, extraArguments: [String] = []) throws {
        try Self.bumbleCheck.get()
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("hg-ble-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        directory = tmp
        sentLogPath = tmp.appendingPathComponent("sent.jsonl").path
        stderrPath = tmp.appendingPathComponent("peer.stderr").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", PackagePaths.root + "/Tests/peers/ble_peer.py",
                             "--listen", h4Path.map { "unix:" + $0 }
                                 ?? (unixSocket ? "unix:" + tmp.appendingPathComponent("h4.sock").path : "tcp:127.0.0.1:0"),
                             "--control", "tcp:127.0.0.1:0", "--sent-log", sentLogPath,
                             "--rate", rate] + kinds.flatMap { ["--peripheral", $0] } + extraArguments
        process.currentDirectoryURL = URL(fileURLWithPath: PackagePaths.root)
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        do {
            try readReadyLine(timeout: Patience.seconds)
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
        var tv = timeval(tv_sec: Int(Patience.seconds), tv_usec: 0)
        setsockopt(controlFD, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one control request and returns its JSON reply, waiting for it on a thread of its
    /// own (a reply can take long on a loaded machine: the peer may first end links), at most
    /// ``Patience/limit``.
    @discardableResult
    public func control(_ line: String) async throws -> [String: Any] {
        let reply = try await onOwnThread { try JSONReply(self.exchange(line)) }
        return reply.object
    }

    /// A control reply, handed from the thread that read it.
    private struct JSONReply: @unchecked Sendable {
        let object: [String: Any]
        init(_ object: [String: Any]) { self.object = object }
    }

    private func exchange(_ line: String) throws -> [String: Any] {
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
    public func sentLog() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: sentLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The well-formed samples sent by `peripheral`, by seq (one subscribed link).
    public func sentSamples(_ peripheral: String) -> [Int: [String: Any]] {
        var out: [Int: [String: Any]] = [:]
        for e in sentLog() where e["peripheral"] as? String == peripheral && e["malformed"] is NSNull {
            if let seq = e["seq"] as? Int { out[seq] = e }
        }
        return out
    }

    public func stop() {
        if controlFD >= 0 { close(controlFD); controlFD = -1 }
        try? stdin.fileHandleForWriting.close()
        end(process)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}


/// Bytes as lower-case hexadecimal digits without separators, as the peer's logs write them.
public func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
