public import Foundation

/// A real `healthgate-server` process on a free loopback port with its own database file,
/// started from the built binary (next to the test bundle, or `.build/debug`).
public final class ServerProcess: @unchecked Sendable {
    public let databasePath: String
    public let extraArguments: [String]
    /// A program the server is started through, with its arguments (e.g. `prlimit --nofile=N:N`).
    public let launcher: [String]
    public private(set) var url: URL = URL(string: "http://127.0.0.1:1")!
    public private(set) var process = Process()
    private let stderrPath: String

    public static var executable: String {
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleFolder, bundleFolder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("healthgate-server").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return BLEPeer.packageRoot.path + "/.build/debug/healthgate-server"
    }

    /// Starts the server on `databasePath` (a new temporary file by default) and waits for the
    /// line that says where it listens. `port` 0 picks a free port.
    public init(databasePath: String? = nil, port: Int = 0, extraArguments: [String] = [], launcher: [String] = []) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hg-server-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        self.databasePath = databasePath ?? folder + "/server.sqlite"
        self.extraArguments = extraArguments
        self.launcher = launcher
        stderrPath = folder + "/stderr.log"
        try start(port: port)
    }

    /// Starts the server (see `init`), waiting for its first line off the shared concurrency pool.
    public static func start(databasePath: String? = nil, port: Int = 0, extraArguments: [String] = [],
                             launcher: [String] = []) async throws -> ServerProcess {
        try await onOwnThread {
            try ServerProcess(databasePath: databasePath, port: port, extraArguments: extraArguments, launcher: launcher)
        }
    }

    /// The server's log so far.
    public var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private func start(port: Int) throws {
        process = Process()
        let arguments = ["--db", databasePath, "--host", "127.0.0.1", "--port", String(port), "--bcrypt-cost", "4"]
            + extraArguments
        if let program = launcher.first {
            // The launcher runs the server in its place (exec), so the process id stays the server's.
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(launcher.dropFirst()) + [Self.executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = arguments
        }
        let out = Pipe()
        process.standardOutput = out
        // Kept across a restart (``crashAndRestart()``): the log holds both runs.
        if !FileManager.default.fileExists(atPath: stderrPath) { _ = FileManager.default.createFile(atPath: stderrPath, contents: nil) }
        let err = FileHandle(forWritingAtPath: stderrPath)!
        err.seekToEndOfFile()
        process.standardError = err
        try process.run()
        // The first stdout line: "healthgate-server listening on http://127.0.0.1:PORT".
        var line: [UInt8] = []
        let reader = out.fileHandleForReading
        while true {
            let byte = reader.readData(ofLength: 1)
            guard let b = byte.first else { throw PeerError("healthgate-server exited before listening: \(log.suffix(2000))") }
            if b == 0x0A { break }
            line.append(b)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://"), let parsed = URL(string: String(text[range.lowerBound...])
                .trimmingCharacters(in: .whitespaces)) else {
            throw PeerError("unexpected first line from healthgate-server: \(text)")
        }
        url = parsed
    }

    /// Kills the server at once (SIGKILL: no clean shutdown) and starts it again on the same
    /// port and database. Start such a server on ``unusedPort()``: a port the kernel chose (port
    /// 0) is in its ephemeral range, where a connection of another test can take it while the
    /// server is down, and the restart then fails with "Address already in use" (seen in a full run).
    public func crashAndRestart() throws {
        end(process, signal: SIGKILL)
        try start(port: url.port ?? 0)
    }

    /// Sends `signal`, waits for the exit (SIGKILL after 15 s) and answers the exit status.
    @discardableResult
    public func stopped(by signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        }
        return process.terminationStatus
    }

    /// Stops the server (SIGTERM, SIGKILL after 5 s) from synchronous code.
    public func stop() { end(process) }

    /// A server nobody holds any more is killed at once: nothing waits for its graceful shutdown,
    /// which may wait for a connection of this process (see ``end(_:signal:grace:)``).
    deinit { end(process, signal: SIGKILL) }
}
