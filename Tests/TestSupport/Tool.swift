import Foundation

/// The package's built executables, run as a user runs them.
public enum Tool {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// The path of the built executable `name` (next to the test bundle, else in .build/debug).
    public static func path(_ name: String) -> String {
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleFolder, bundleFolder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return PackagePaths.root + "/.build/debug/" + name
    }

    /// Runs `executable` to its end; `stdin` (plus a newline) is its standard input; `environment`
    /// is added to this process's. The wait happens on a thread of its own, not on one of the few
    /// threads all tests share.
    public static func run(_ executable: String, _ arguments: [String], stdin: String? = nil,
                           environment: [String: String] = [:]) async throws -> Result {
        try await onOwnThread { try runBlocking(executable, arguments, stdin: stdin, environment: environment) }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], stdin: String?,
                                    environment: [String: String]) throws -> Result {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data((stdin + "\n").utf8)) }
        try input.fileHandleForWriting.close()
        // Both pipes are read at once, so that a full one cannot stall the process.
        let stderrData = Captured()
        let reading = DispatchGroup()
        DispatchQueue.global().async(group: reading) { stderrData.data = err.fileHandleForReading.readDataToEndOfFile() }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        reading.wait()
        let stderr = stderrData.data
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// Bytes read on another queue (handed over after `DispatchGroup.wait`).
private final class Captured: @unchecked Sendable {
    var data = Data()
}

/// Runs blocking `work` (waiting for a process, a pipe, a semaphore) on a thread of its own and
/// awaits its result. Swift Testing runs tests in parallel on the concurrency pool, which has
/// a thread per core: a test blocking one of them stalls every other test on a 2-core machine.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
