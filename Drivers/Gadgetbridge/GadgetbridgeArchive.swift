import Dispatch
import DriverKit
import Foundation
import ZipStream
import Timing

/// Gadgetbridge's export zip ("Export data" / the automatic zip backup): `preferences/global.json`,
/// one `preferences/device_<address>.json` per device, `database/Gadgetbridge` (the database),
/// `files/...` and `gadgetbridge.json` (util/backup/ZipBackupExportJob). Only the database is
/// read. SQLite reads a file, not a stream, so the entry is inflated (ZipStream, chunk by chunk)
/// into a private temporary file first.
enum GadgetbridgeArchive {
    /// Where the export keeps the database.
    static let databaseEntry = "database/Gadgetbridge"
    /// The names an export's first entry has (preferences first; the others for zips rewritten
    /// by other tools).
    static let firstEntries: Set<String> = ["preferences/global.json", databaseEntry, "gadgetbridge.json"]

    /// A private copy of the database: `path` inside a folder of its own. ``remove()`` deletes
    /// both.
    struct Copy: Sendable {
        let folder: String
        let path: String

        /// Deletes the file and its folder (two system calls, run in place: this must happen on
        /// every way out, cancellation and errors included, so it runs from a `defer`).
        func remove() {
            unlink(path)
            rmdir(folder)
        }
    }

    private static let writeQueue = DispatchQueue(label: "healthgate.gadgetbridge.copy")

    /// Copies `archive`'s database into a new folder made by `mkdtemp` (mode 0700) inside
    /// `directory` (nil: `$TMPDIR`, else `/tmp`), as a file created anew with mode 0600, streamed
    /// a chunk at a time (writes on a queue of their own, off Swift's cooperative threads). At
    /// most `maxBytes` inflated: a larger entry (declared or real) is refused before or while it
    /// is written. On any error, or when the task is cancelled, the copy is removed before this
    /// returns. Throws a ``DecodeError`` naming the archive.
    static func copyDatabase(of archive: ZipArchive, into directory: String?, maxBytes: Int) async throws -> Copy {
        let name = archive.source.path
        guard let entry = archive.entry(atPath: databaseEntry), !entry.isDirectory else {
            let escaping = archive.entries.filter { $0.safePath == nil }.count
            throw DecodeError(file: name, at: .file,
                              "no Gadgetbridge database in this zip (\(databaseEntry))"
                                + (escaping > 0 ? "; \(escaping) entr\(escaping == 1 ? "y whose name escapes" : "ies whose names escape") the archive (absolute or ../) not read" : ""))
        }
        guard !entry.isEncrypted else { throw DecodeError(file: name, at: .file, "\(databaseEntry) is encrypted") }
        guard entry.uncompressedSize <= maxBytes else {
            throw DecodeError(file: name, at: .file, "\(databaseEntry) inflates to \(entry.uncompressedSize) bytes: more than the \(maxBytes) allowed")
        }
        let copy = try await make(in: directory ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp",
                                  archive: name)
        do {
            let descriptor = try await perform(name) { () throws -> Int32 in
                let fd = open(copy.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
                guard fd >= 0 else { throw posixError("cannot create \(copy.path)") }
                return fd
            }
            defer { close(descriptor) }
            var written = 0
            for try await chunk in archive.contents(of: entry) {
                try Task.checkCancellation()
                written += chunk.count
                guard written <= maxBytes else {
                    throw DecodeError(file: name, at: .file, "\(databaseEntry) inflates to more than the \(maxBytes) bytes allowed")
                }
                try await perform(name) { () throws in
                    var offset = 0
                    while offset < chunk.count {
                        let n = chunk[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                        if n < 0, errno == EINTR { continue }
                        guard n > 0 else { throw posixError("cannot write \(copy.path)") }
                        offset += n
                    }
                }
            }
            return copy
        } catch {
            copy.remove()
            throw error
        }
    }

    /// A new private folder (0700) inside `directory`, and the database's path in it.
    private static func make(in directory: String, archive: String) async throws -> Copy {
        try await perform(archive) { () throws -> Copy in
            var template = Array((directory + "/healthgate-gadgetbridge-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw posixError("cannot make a temporary folder in \(directory)")
            }
            let folder = String(cString: made)
            return Copy(folder: folder, path: folder + "/Gadgetbridge")
        }
    }

    private struct SystemError: Error { var text: String }

    private static func posixError(_ text: String) -> SystemError {
        SystemError(text: text + ": " + String(cString: strerror(errno)))
    }

    /// Runs blocking `work` on the copy's queue; a system error becomes a ``DecodeError`` naming
    /// the archive.
    private static func perform<T: Sendable>(_ archive: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await OffPool.run(on: writeQueue, work)
        } catch let error as SystemError {
            throw DecodeError(file: archive, at: .file, error.text)
        }
    }
}
