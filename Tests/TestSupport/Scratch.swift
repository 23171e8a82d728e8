import Foundation
public import HealthStore

/// One test's temporary folder (`hg-TAG-XXXXXXXX` under the system's temporary folder), removed
/// when the test lets go of it, with a database path in it: the one scratch-folder helper of the
/// test targets.
public final class Scratch: Sendable {
    public let folder: String
    /// `healthgate.sqlite` in the folder (not created until something opens it).
    public var dbPath: String { folder + "/healthgate.sqlite" }
    /// `--db PATH`, for the CLI.
    public var db: [String] { ["--db", dbPath] }

    public init(_ tag: String = "test") throws { folder = try temporaryFolder(tag) }

    /// The store at ``dbPath``, opened (and made) now.
    public func store() async throws -> HealthStore { try await HealthStore(path: dbPath) }

    /// Writes `bytes` to `name` in the folder (its subfolders made) and answers its path.
    @discardableResult
    public func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = folder + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes `text` (UTF-8) to `name` in the folder and answers its path.
    @discardableResult
    public func file(_ name: String, _ text: String) throws -> String { try file(name, Array(text.utf8)) }

    /// Copies `path` (a file or folder) into the folder, as `name` or its own name.
    public func copy(_ path: String, as name: String? = nil) throws -> String {
        let target = folder + "/" + (name ?? (path as NSString).lastPathComponent)
        try FileManager.default.copyItem(atPath: path, toPath: target)
        return target
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}
