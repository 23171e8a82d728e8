public import Foundation
import Synchronization

/// Which store the servers of the tests use: SQLite (the default) or, with
/// `HEALTHGATE_TEST_STORE=postgres`, PostgreSQL (`make test` runs the server and sync suites
/// both ways).
public enum TestStore: String, Sendable {
    case sqlite, postgres

    public static var current: TestStore {
        ProcessInfo.processInfo.environment["HEALTHGATE_TEST_STORE"] == "postgres" ? .postgres : .sqlite
    }
}

/// A real `healthgate-server` process on a free loopback port with its own database file,
/// started from the built binary (next to the test bundle, or `.build/debug`).
///
/// On PostgreSQL (``TestStore``) each database path stands for a database of its own in the
/// shared test server (``PostgresCluster/shared()``), created on first use: a server restarted
/// on the same path finds the same data.
public final class ServerProcess: @unchecked Sendable {
    public let databasePath: String
    public let store: TestStore
    /// The `--database` URL on PostgreSQL.
    public let databaseURL: String?
    /// The PostgreSQL server holding the database.
    public let cluster: PostgresCluster?

    /// The PostgreSQL database's name.
    public var databaseName: String {
        String(databaseURL?.split(separator: "/").last?.split(separator: "?").first ?? "")
    }
    public let extraArguments: [String]
    /// A program the server is started through, with its arguments (e.g. `prlimit --nofile=N:N`).
    public let launcher: [String]
    public private(set) var url: URL = URL(string: "http://127.0.0.1:1")!
    public private(set) var process = ChildProcess()
    private let stderrPath: String

    public static var executable: String {
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleFolder, bundleFolder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("healthgate-server").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return PackagePaths.root + "/.build/debug/healthgate-server"
    }

    /// Starts the server on `databasePath` (a new temporary file by default) and waits for the
    /// line that says where it listens. `port` 0 picks a free port.
    public init(databasePath: String? = nil, port: Int = 0, extraArguments: [String] = [], launcher: [String] = [],
                store: TestStore = .current, postgres: PostgresCluster? = nil, postgresOptions: String = "",
                databaseURL explicitURL: String? = nil) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hg-server-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        self.databasePath = databasePath ?? folder + "/server.sqlite"
        self.store = postgres == nil && explicitURL == nil ? store : .postgres
        databaseURL = try explicitURL ?? (self.store == .postgres
            ? try Self.postgresDatabase(for: self.databasePath, on: postgres) + (postgresOptions.isEmpty ? "" : "&" + postgresOptions) : nil)
        cluster = self.store == .postgres ? try postgres ?? PostgresCluster.shared() : nil
        self.extraArguments = extraArguments
        self.launcher = launcher
        stderrPath = folder + "/stderr.log"
        try start(port: port)
    }

    /// Starts the server (see `init`), waiting for its first line off the shared concurrency pool.
    public static func start(databasePath: String? = nil, port: Int = 0, extraArguments: [String] = [],
                             launcher: [String] = [], store: TestStore = .current, postgres: PostgresCluster? = nil,
                             postgresOptions: String = "", databaseURL: String? = nil) async throws -> ServerProcess {
        try await onOwnThread {
            try ServerProcess(databasePath: databasePath, port: port, extraArguments: extraArguments, launcher: launcher,
                              store: store, postgres: postgres, postgresOptions: postgresOptions, databaseURL: databaseURL)
        }
    }

    /// The PostgreSQL databases standing for database paths in this process.
    private static let databases = Mutex<[String: String]>([:])

    /// The URL of the PostgreSQL database standing for `path` on `cluster` (the shared one by
    /// default), created on first use.
    public static func postgresDatabase(for path: String, on cluster: PostgresCluster? = nil) throws -> String {
        let cluster = try cluster ?? PostgresCluster.shared()
        let key = cluster.folder + "\u{0}" + path
        return try databases.withLock { map in
            if let name = map[key] { return cluster.url(name) }
            let name = try cluster.createDatabase()
            map[key] = name
            return cluster.url(name)
        }
    }

    /// Every byte the database holds: the SQLite files (main, write-ahead log, shared memory), or
    /// PostgreSQL's dump of the database (pg_dump, every table's rows).
    public func databaseBytes() async throws -> Data {
        switch store {
        case .sqlite:
            var all = Data()
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
                all.append(try Data(contentsOf: URL(fileURLWithPath: databasePath + suffix)))
            }
            return all
        case .postgres:
            let (name, cluster) = (databaseName, self.cluster)
            return Data(try await onOwnThread { try cluster!.dump(name) }.utf8)
        }
    }

    /// Runs SQL on the server's database (sqlite3 or psql) and answers the rows, columns
    /// separated by `|`, one row a line. For the few checks of what is stored that the API does
    /// not show; the statements must read alike in both dialects.
    @discardableResult
    public func sql(_ statement: String) async throws -> String {
        switch store {
        case .sqlite:
            let result = try await Tool.run("/usr/bin/sqlite3", ["-batch", "-bail", databasePath, statement])
            guard result.status == 0 else { throw PeerError("sqlite3 failed: \(result.stderr)\nSQL: \(statement)") }
            return result.stdout.trimmingCharacters(in: .newlines)
        case .postgres:
            let (name, cluster) = (databaseName, self.cluster)
            return try await onOwnThread { try cluster!.psql(name, statement) }
        }
    }

    /// The server's log so far.
    public var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private func start(port: Int) throws {
        process = ChildProcess()
        let database = databaseURL.map { ["--database", $0] } ?? ["--db", databasePath]
        let arguments = database + ["--host", "127.0.0.1", "--port", String(port), "--bcrypt-cost", "4"] + extraArguments
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
        // The first stdout line: "healthgate-server listening on http://127.0.0.1:PORT" (https:// with TLS).
        var line: [UInt8] = []
        let reader = out.fileHandleForReading
        while true {
            let byte = reader.readData(ofLength: 1)
            guard let b = byte.first else { throw PeerError("healthgate-server exited before listening: \(log.suffix(2000))") }
            if b == 0x0A { break }
            line.append(b)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "https://") ?? text.range(of: "http://"), let parsed = URL(string: String(text[range.lowerBound...])
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
