import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive advisory lock (`flock`) on a folder, held while `work` runs: processes that take
/// it on the same folder run their `work` one after another. Blocking: call it off the
/// cooperative pool. (A folder, not the database file: a second descriptor of an SQLite file,
/// once closed, would drop that process's SQLite locks on it.)
public enum FolderLock {
    public static func exclusively<T>(_ folder: String, _ work: () throws -> T) throws -> T {
        let fd = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        defer { flock(fd, LOCK_UN) }
        return try work()
    }
}
