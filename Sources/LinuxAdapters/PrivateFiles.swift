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
        try createDirectory((path as NSString).deletingLastPathComponent)
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: errno) ?? .EIO)])
        }
        fchmod(fd, 0o600)  // a temporary file left by a crash keeps its mode through O_TRUNC
        let written = data.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 { if errno == EINTR { continue } else { return false } }
                offset += n
            }
            return true
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard written, synced, rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.init(rawValue: code) ?? .EIO)])
        }
    }
}
