import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads kernel text files (`/proc/self/mountinfo`, `/proc/self/maps`) whole. They report a size
/// of 0 and hand out their text a page per read(2); Foundation's `String(contentsOfFile:)` stops
/// after the first page, so a machine with many mounts would lose the later lines.
public enum ProcFile {
    public struct Failure: Error, CustomStringConvertible {
        var path: String
        var code: Int32
        public var description: String { "cannot read \(path): \(String(cString: strerror(code)))" }
    }

    /// The whole text of `path`, read until the end of file.
    public static func read(_ path: String) throws(Failure) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(path: path, code: errno) }
        defer { close(fd) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw Failure(path: path, code: errno) }
            if count == 0 { break }
            text += chunk[..<count]
        }
        return String(decoding: text, as: UTF8.self)
    }
}
