import Dispatch
public import Foundation
public import GRDB
import Timing

/// Another program's SQLite file (a Gadgetbridge database, a Loop Habit Tracker backup): opened
/// read-only and immutable (`file:...?immutable=1`), so SQLite takes no locks and writes no
/// journal, WAL or shared-memory file: the user's file and its folder are never touched. Opening
/// and reading the schema block, so they happen on a queue of their own, never on Swift's
/// cooperative pool. The one way the importers and the pipeline open such a file.
public enum ForeignSQLite {
    private static let queue = DispatchQueue(label: "healthgate.foreign-sqlite", attributes: .concurrent)

    /// Opens `path` read-only and immutable.
    public static func open(_ path: String, label: String) async throws -> DatabaseQueue {
        let uri = uri(path)
        return try await OffPool.run(on: queue) { () throws -> DatabaseQueue in
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = label
            return try DatabaseQueue(path: uri, configuration: configuration)
        }
    }

    /// The names of the file's tables, upper-cased (SQLite compares them without case); nil when
    /// it cannot be opened and read as SQLite.
    public static func tables(_ path: String) async -> Set<String>? {
        guard let database = try? await open(path, label: "probe") else { return nil }
        defer { try? database.close() }
        return try? await database.read { db in
            Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map { $0.uppercased() })
        }
    }

    /// The URI of a file path, percent-encoded so that `?`, `#` and `%` in names stay names.
    public static func uri(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
    }
}
