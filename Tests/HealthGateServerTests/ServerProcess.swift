import Foundation
import Testing

/// The package root, found from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// A temporary folder, removed at the end of the test.
final class Scratch: Sendable {
    let folder: String
    var dbPath: String { folder + "/server.sqlite" }

    init() throws {
        folder = NSTemporaryDirectory() + "healthgate-server-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// The bytes of every file of the database (main file, WAL and shared memory).
    func databaseBytes() throws -> Data {
        var all = Data()
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: dbPath + suffix) {
            all.append(try Data(contentsOf: URL(fileURLWithPath: dbPath + suffix)))
        }
        return all
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}

/// The built `healthgate-server` executable, run as a real process on loopback (port 0) with a
/// database in a scratch folder; its standard error goes to a log file there.
final class ServerProcess: @unchecked Sendable {
    static var executable: String {
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleFolder, bundleFolder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("healthgate-server").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return packageRoot + "/.build/debug/healthgate-server"
    }

    let process = Process()
    let logPath: String
    /// `http://127.0.0.1:PORT`.
    private(set) var baseURL = ""

    /// Starts the server on `scratch`'s database and waits (at most 20 s) for its listening line.
    init(_ scratch: Scratch, arguments: [String] = [], logName: String = "server.log") async throws {
        logPath = scratch.folder + "/" + logName
        FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["--db", scratch.dbPath, "--port", "0", "--bcrypt-cost", "4"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()

        // The first line of standard output, read off the test's threads with a deadline.
        let line = LineBox()
        let reader = Thread {
            var bytes = Data()
            while let chunk = try? out.fileHandleForReading.read(upToCount: 1), let byte = chunk.first, byte != 10 {
                bytes.append(byte)
            }
            line.set(String(decoding: bytes, as: UTF8.self))
        }
        reader.start()
        let deadline = Date().addingTimeInterval(20)
        while line.get() == nil && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        guard let text = line.get(), let range = text.range(of: "healthgate-server listening on ") else {
            process.terminate()
            throw ServerFailure("no listening line (got \(line.get() ?? "nothing")); log: \(log())")
        }
        baseURL = String(text[range.upperBound...])
    }

    /// The server's standard error so far.
    func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Sends `signal` (SIGTERM by default) and waits for the exit; answers the exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { process.terminate(); process.waitUntilExit() }
        }
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}

struct ServerFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A line handed from the reader thread.
private final class LineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ line: String) { lock.withLock { value = line } }
    func get() -> String? { lock.withLock { value } }
}

/// Runs the built executable to completion (for --help and bad options).
func runServerCommand(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}
