public import Foundation

/// Files and folders that hold someone's health data are readable by their owner only, whatever
/// the umask: folders are made 0700 and files 0600 (SQLite gives a database's `-wal` and `-shm`
/// files the database's own mode). Folders and files that exist are left as they are: the owner
/// may have opened them up on purpose.
public enum PrivateFiles {
    /// Makes `path` and any missing parent folders, each new one 0700.
    public static func createDirectory(_ path: String) throws {
        guard !path.isEmpty else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: path]) }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path { try createDirectory(parent) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: errno) ?? .EIO)])
        }
        // mkdir's mode is masked by the umask, which can only take permissions away.
    }

    /// Creates `path` (empty, 0600) with its folders unless it exists.
    public static func createFile(_ path: String) throws {
        try createDirectory((path as NSString).deletingLastPathComponent)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            close(fd)
        } else if errno != EEXIST {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: errno) ?? .EIO)])
        }
    }

    /// Writes `data` to `path` atomically (a temporary file renamed over it), the new file 0600.
    public static func write(_ data: Data, to path: String) throws {
        try write(to: path) { fd in
            try data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw POSIXError(.init(rawValue: errno) ?? .EIO)
                    }
                    offset += n
                }
            }
        }
    }

    /// Writes `path` atomically, the new file 0600: `fill` writes a temporary file's descriptor
    /// (`path.tmp-PID`), which is then synced and renamed over `path`. When `fill` throws, or the
    /// file cannot be synced or renamed, the temporary file is removed and `path` is as it was: a
    /// reader never sees half a file.
    public static func write(to path: String, _ fill: (Int32) throws -> Void) throws {
        let fd = try openTemporary(path)
        do { try fill(fd) } catch {
            abandon(fd, path)
            throw error
        }
        try finish(fd, path)
    }

    /// ``write(to:_:)`` with a `fill` that waits (a copy from a device).
    public static func write(to path: String, _ fill: (Int32) async throws -> Void) async throws {
        let fd = try openTemporary(path)
        do { try await fill(fd) } catch {
            abandon(fd, path)
            throw error
        }
        try finish(fd, path)
    }

    private static func temporary(_ path: String) -> String { path + ".tmp-\(getpid())" }

    private static func openTemporary(_ path: String) throws -> Int32 {
        try createDirectory((path as NSString).deletingLastPathComponent)
        let fd = open(temporary(path), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: errno) ?? .EIO)])
        }
        fchmod(fd, 0o600)  // a temporary file left by a crash keeps its mode through O_TRUNC
        return fd
    }

    private static func abandon(_ fd: Int32, _ path: String) {
        close(fd)
        unlink(temporary(path))
    }

    private static func finish(_ fd: Int32, _ path: String) throws {
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary(path), path) == 0 else {
            let code = errno
            unlink(temporary(path))
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: code) ?? .EIO)])
        }
    }
}
