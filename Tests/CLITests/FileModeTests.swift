import Foundation
import HealthStore
import LinuxAdapters
import Testing
import TestSupport

/// The mode bits of `path` (permissions only).
func mode(_ path: String) throws -> Int {
    try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
}

/// Databases, state folders and exports hold someone's health: another account on the same box
/// must not read them, whatever the umask (before: 0644 files and 0755 folders).
@Suite(.serialized) struct FileModeTests {
    @Test func importMakesAPrivateDatabaseAndFolders() async throws {
        let base = try temporaryFolder("modes")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let db = base + "/new/deeper/health.sqlite"
        let run = try await CLI.run(["import", "--db", db, PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try mode(base + "/new") == 0o700 && mode(base + "/new/deeper") == 0o700)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: db + suffix) {
            #expect(try mode(db + suffix) == 0o600, "\(db + suffix)")
        }
        // A folder that was there keeps its mode.
        #expect(try mode(base) == 0o755 || mode(base) == 0o775)

        let csv = base + "/new/export.csv"
        let export = try await CLI.run(["export", "--format", "csv", "--db", db, "-o", csv])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(try mode(csv) == 0o600)
        #expect(try String(contentsOfFile: csv, encoding: .utf8).hasPrefix("type,"))
    }

    @Test func theDaemonsStateDirectoryIsPrivate() async throws {
        let base = try temporaryFolder("modes-daemon")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let state = base + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let daemon = try DaemonProcess(folder: state, arguments: [])
        #expect(await daemon.waitForLog("started"), "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0)
        #expect(try mode(state + "/healthgate.sqlite") == 0o600)
        #expect(try mode(state + "/inbox") == 0o700)
    }

    /// A configuration that names every path leaves no ./healthgate-state behind.
    @Test func aConfigurationNamingEveryPathMakesNoStateDirectory() async throws {
        let base = try temporaryFolder("modes-config")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let work = base + "/cwd"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let config = base + "/healthgate.toml"
        try """
            database = "\(base)/data/health.sqlite"
            [api]
            socket = "\(base)/run/healthgate.sock"
            [drivers.inbox]
            type = "watch_folder"
            path = "\(base)/inbox"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: CLI.executable)
        process.arguments = ["daemon", "--config", config]
        process.currentDirectoryURL = URL(fileURLWithPath: work)
        var environment = ProcessInfo.processInfo.environment
        environment["STATE_DIRECTORY"] = nil
        process.environment = environment
        let log = base + "/daemon.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = process.standardError
        try process.run()
        func logText() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        #expect(await cameTrue(every: .milliseconds(100)) { logText().contains("started") }, "\(logText())")
        kill(process.processIdentifier, SIGTERM)
        try await eventually("the daemon exits on SIGTERM", every: .milliseconds(100), detail: logText()) { !process.isRunning }
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).isEmpty)
        #expect(try mode(base + "/data") == 0o700 && mode(base + "/data/health.sqlite") == 0o600)
        #expect(try mode(base + "/inbox") == 0o700)
    }

    @Test func privateWritesReplaceAtomically() throws {
        let base = try temporaryFolder("modes-write")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let path = base + "/a/b.json"
        try PrivateFiles.write(Data("one".utf8), to: path)
        try PrivateFiles.write(Data("two".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "two")
        #expect(try mode(path) == 0o600 && mode(base + "/a") == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/a") == ["b.json"])
    }
}
