public import Foundation
import Synchronization

/// A real PostgreSQL server (Debian's, from `/usr/lib/postgresql/VERSION/bin`) in a folder of its
/// own, on a free loopback port and a Unix socket in that folder, for the tests: `initdb` with
/// trust authentication for the superuser `postgres`, fsync off (a killed PostgreSQL still loses
/// nothing it acknowledged; only a crash of the machine could). PostgreSQL refuses to run as
/// root: under root the tools run as the system user `postgres` (Debian's package creates it)
/// and the folder is given to it.
///
/// ``shared()`` is one server for the whole test process, each test taking databases of its own;
/// a test that stops or restarts PostgreSQL starts one of its own with ``start()``. Every server
/// a process started is stopped when it exits, and one left by a process that died is stopped
/// by the next run. Missing PostgreSQL fails the test (`.ci/setup` installs it), never skips it.
public final class PostgresCluster: Sendable {
    public let folder: String
    public let port: Int
    public let superuser = "postgres"
    private let bin: String
    private let asUser: String?

    /// The test process's shared server, started on first use.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster.start()
            cluster = started
            return started
        }
    }

    private static let sharedCluster = Mutex<PostgresCluster?>(nil)
    private static let started = Mutex<[String]>([])

    /// A new server of its own (stopped at the latest when the process exits).
    public static func start() throws -> PostgresCluster {
        sweepOrphans()
        let cluster = try PostgresCluster()
        let first = started.withLock { list in
            list.append(cluster.folder)
            return list.count == 1
        }
        if first { atexit { PostgresCluster.stopAll() } }
        return cluster
    }

    private init() throws {
        bin = try Self.binaries()
        asUser = getuid() == 0 ? "postgres" : nil
        folder = NSTemporaryDirectory() + "hg-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Which test process owns it (see sweepOrphans).
        try String(getpid()).write(toFile: folder + "/owner.pid", atomically: true, encoding: .utf8)
        if let asUser {
            guard let user = getpwnam(asUser) else {
                throw PeerError("PostgreSQL cannot run as root and there is no user '\(asUser)' (install postgresql: .ci/setup)")
            }
            chown(folder, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        chmod(folder, 0o700)
        port = try unusedPort()
        try run("initdb", ["-D", folder + "/data", "-U", superuser, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        try start()
    }

    /// Starts the stopped server again (same data, port and socket).
    public func start() throws {
        try run("pg_ctl", ["-D", folder + "/data", "-l", folder + "/postgres.log", "-w", "-t", "60", "-o",
                           "-p \(port) -k \(folder) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
                               + " -c shared_buffers=64MB",
                           "start"])
    }

    /// Stops the server: `fast` (sessions are ended, as a service stop does) or `immediate` (as
    /// if killed: recovery on the next start).
    public func stop(mode: String = "fast") throws {
        try run("pg_ctl", ["-D", folder + "/data", "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// A new empty database; answers its name.
    @discardableResult
    public func createDatabase(_ name: String = "hg_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()) throws -> String {
        try psql("postgres", "CREATE DATABASE \(name)")
        return name
    }

    /// The URL the server takes for `database`, over TCP on loopback.
    public func url(_ database: String) -> String {
        "postgres://\(superuser)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Runs SQL with psql on `database`; answers its output (unaligned, tuples only, `|` between
    /// columns). Throws with psql's message when it fails.
    @discardableResult
    public func psql(_ database: String, _ sql: String) throws -> String {
        let result = try Self.runProcess(bin + "/psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", folder, "-p", String(port),
                                                          "-U", superuser, "-d", database, "-c", sql], asUser: nil)
        guard result.status == 0 else { throw PeerError("psql on \(database) failed: \(result.output)\nSQL: \(sql)") }
        return result.output.trimmingCharacters(in: .newlines)
    }

    /// `pg_dump` of a database (plain SQL, every row).
    public func dump(_ database: String) throws -> String {
        let result = try Self.runProcess(bin + "/pg_dump", ["-h", folder, "-p", String(port), "-U", superuser, database], asUser: nil)
        guard result.status == 0 else { throw PeerError("pg_dump of \(database) failed: \(result.output)") }
        return result.output
    }

    // The same, from async code: on a thread of their own, never blocking one of the few threads
    // of Swift's concurrency pool that every test shares (initdb and pg_ctl take seconds).

    public static func shared() async throws -> PostgresCluster { try await onOwnThread { try shared() } }

    public static func start() async throws -> PostgresCluster { try await onOwnThread { try start() } }

    public func start() async throws { try await onOwnThread { try self.start() } }

    public func stop(mode: String = "fast") async throws { try await onOwnThread { try self.stop(mode: mode) } }

    @discardableResult
    public func createDatabase() async throws -> String { try await onOwnThread { try self.createDatabase() } }

    @discardableResult
    public func psql(_ database: String, _ sql: String) async throws -> String {
        try await onOwnThread { try self.psql(database, sql) }
    }

    /// PostgreSQL's log so far.
    public var log: String { (try? String(contentsOfFile: folder + "/postgres.log", encoding: .utf8)) ?? "" }

    /// Gives a folder to the user PostgreSQL runs as (under root: `postgres`).
    public func giveToServerUser(_ path: String) throws {
        guard let asUser else { return }
        guard let user = getpwnam(asUser) else { throw PeerError("no user '\(asUser)'") }
        for entry in [path] + ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map({ path + "/" + $0 }) {
            chown(entry, user.pointee.pw_uid, user.pointee.pw_gid)
        }
    }

    /// Runs a program to its end as the user PostgreSQL runs as (pgbouncer, pgbench), with an
    /// empty signal mask; throws with its output when it fails, else returns it.
    @discardableResult
    public func runAsServerUser(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try Self.runProcess(executable, arguments, asUser: asUser)
        guard result.status == 0 else { throw PeerError("\(executable) failed (\(result.status)): \(result.output)") }
        return result.output
    }

    /// ``runAsServerUser(_:_:)`` on a thread of its own.
    @discardableResult
    public func runAsServerUser(_ executable: String, _ arguments: [String]) async throws -> String {
        try await onOwnThread { try self.runAsServerUser(executable, arguments) }
    }

    private func run(_ tool: String, _ arguments: [String]) throws {
        let result = try Self.runProcess(bin + "/" + tool, arguments, asUser: asUser)
        guard result.status == 0 else { throw PeerError("\(tool) failed (\(result.status)): \(result.output)\n\(log.suffix(2000))") }
    }

    /// Runs a program to its end, its output in a file, in the folder / (the postgres user may
    /// not be allowed in the test's own). A ``ChildProcess``: the child gets only standard input,
    /// output and error, so a server `pg_ctl start` leaves running holds nothing of this process.
    private static func runProcess(_ executable: String, _ arguments: [String], asUser: String?) throws -> (status: Int32, output: String) {
        let argv = asUser.map { ["/usr/sbin/runuser", "-u", $0, "--", executable] } ?? [executable]
        let outputPath = NSTemporaryDirectory() + "hg-pg-output-" + UUID().uuidString
        defer { unlink(outputPath) }
        // Writable by the postgres user too.
        let fd = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw PeerError("cannot create \(outputPath)") }
        fchmod(fd, 0o666)
        let output = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let process = ChildProcess(argv[0], Array(argv.dropFirst()) + arguments)
        process.standardInput = nil
        process.standardOutput = output
        process.standardError = output
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        try process.run()
        process.waitUntilExit()
        let data = (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data()
        let status = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// The newest installed PostgreSQL's programs.
    private static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let version = versions.last, FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") else {
            throw PeerError("PostgreSQL is not installed (no \(root)/VERSION/bin/initdb): run .ci/setup")
        }
        return "\(root)/\(version)/bin"
    }

    private static func stopAll() {
        for folder in started.withLock({ $0 }) { stop(folder: folder) }
    }

    private static func stop(folder: String) {
        if FileManager.default.fileExists(atPath: folder + "/data/postmaster.pid"), let bin = try? binaries() {
            _ = try? runProcess(bin + "/pg_ctl", ["-D", folder + "/data", "-m", "immediate", "-w", "stop"],
                                asUser: getuid() == 0 ? "postgres" : nil)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Servers left by test processes that died without stopping them.
    private static func sweepOrphans() {
        let temporary = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix("hg-pg-") {
            let folder = temporary + name
            guard let text = try? String(contentsOfFile: folder + "/owner.pid", encoding: .utf8),
                  let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { continue }
            if owner != getpid(), kill(owner, 0) != 0, errno == ESRCH { stop(folder: folder) }
        }
    }
}
