public import DriverKit
public import Foundation
import HealthModel

/// One file a watch shows, as listed: its path from the storage's root (`GARMIN/Activity/
/// A1B2C3D4.FIT`), its size and modification time as the watch reports them, and its folder's kind.
public struct WatchFile: Hashable, Sendable {
    public var path: String
    public var size: UInt64
    public var modified: Date?
    public var kind: WatchFolderKind

    public init(path: String, size: UInt64, modified: Date?, kind: WatchFolderKind) {
        self.path = path
        self.size = size
        self.modified = modified
        self.kind = kind
    }

    /// What identifies this version of the file: size and modification time.
    public var stamp: WatchFetched.Stamp { WatchFetched.Stamp(size: size, modified: modified.map { Int64($0.timeIntervalSince1970.rounded(.down)) }) }
}

/// What a watch already gave: per path, the size and modification time of the version fetched.
/// The watch driver's checkpoint per watch (device `watch:SERIAL`), stored with the import of the
/// file it covers. Times are whole seconds since 1970 (UTC): a time zone or DST change on the
/// computer does not change them, so nothing is fetched again for it.
public struct WatchFetched: DriverCheckpoint {
    public static let driver = "watch"

    public struct Stamp: Codable, Hashable, Sendable {
        public var size: UInt64
        public var modified: Int64?

        public init(size: UInt64, modified: Int64?) {
            self.size = size
            self.modified = modified
        }
    }

    public var files: [String: Stamp]

    public init(files: [String: Stamp] = [:]) { self.files = files }

    /// The checkpoint's device for the watch with `serial`.
    public static func device(serial: String) -> String { "watch:\(serial)" }

    /// With `file` fetched.
    public func adding(_ file: WatchFile) -> WatchFetched {
        var next = self
        next.files[file.path] = file.stamp
        return next
    }
}

/// Decides, for each file a watch lists, whether to fetch it now. Pure: the listing, what was
/// fetched before, the previous listing of this visit and the time are its inputs.
public struct WatchFetchPlanner: Sendable {
    /// Files modified before this are outside the backlog asked for (`--since`).
    public var since: Date?
    /// A file modified less than this long ago may still be being written.
    public var settle: TimeInterval = 2
    /// A file claiming more than this is refused (a FIT file of a long activity is a few MB).
    public var maximumSize: UInt64 = 256 << 20

    public init(since: Date? = nil) {
        self.since = since
    }

    public enum Decision: Hashable, Sendable {
        case fetch
        /// This version (size and time) was fetched before.
        case alreadyFetched
        /// Its size or time changed since the previous listing, or it was modified within
        /// `settle`: the next look decides.
        case stillWriting
        /// Modified before `since`.
        case outOfRange
        /// A name or size no watch gives: never fetched, the reason said.
        case refused(String)
    }

    public func decide(_ file: WatchFile, fetched: WatchFetched, previous: WatchFile?, now: Date) -> Decision {
        if let reason = Self.refusal(file, maximumSize: maximumSize) { return .refused(reason) }
        if fetched.files[file.path] == file.stamp { return .alreadyFetched }
        if let previous, previous.stamp != file.stamp { return .stillWriting }
        if let modified = file.modified, now.timeIntervalSince(modified) < settle, now.timeIntervalSince(modified) > -settle {
            return .stillWriting
        }
        if let since, let modified = file.modified, modified < since { return .outOfRange }
        return .fetch
    }

    /// Why a listed file cannot be fetched safely, or nil: a path that could leave the folder it
    /// is copied to (`..`, an absolute path, a backslash, a NUL, an empty part), or a size over
    /// `maximumSize`.
    public static func refusal(_ file: WatchFile, maximumSize: UInt64) -> String? {
        let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
        if file.path.isEmpty || file.path.hasPrefix("/") || parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." })
            || file.path.contains("\\") || file.path.contains("\0") {
            return "\(DisplayText.safe(file.path, limit: 200)): not a plain path inside the watch's folders"
        }
        if file.size > maximumSize {
            return "\(file.path): claims \(file.size) bytes, more than the \(maximumSize) a watch's file may have"
        }
        return nil
    }
}
