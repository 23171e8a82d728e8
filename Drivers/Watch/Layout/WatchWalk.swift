public import Foundation

/// One entry of a watch's folder as its attachment lists it: a folder or a file, with the
/// attachment's own reference to it (an MTP object id, a path).
public struct WatchEntry<Ref: Hashable & Sendable>: Hashable, Sendable {
    public var ref: Ref
    public var name: String
    public var isFolder: Bool
    public var size: UInt64
    public var modified: Date?

    public init(ref: Ref, name: String, isFolder: Bool, size: UInt64 = 0, modified: Date? = nil) {
        self.ref = ref
        self.name = name
        self.isFolder = isFolder
        self.size = size
        self.modified = modified
    }
}

/// The walk of a watch's storages down ``GarminLayout``: only the folders the layout enters are
/// listed (a watch's music and maps are never walked), and the FIT files of its data folders are
/// what it finds. Pure but for `list`, the attachment's one call: MTP and mounted volumes share it.
///
/// A hostile or broken device cannot make it loop or grow without bound: a folder listed once is
/// not listed again (an MTP device may answer a folder's listing with one of its parents), the
/// layout admits no deeper than `wrapper/GARMIN/kind`, and a folder with more than
/// ``maximumEntries`` entries is an error.
public struct WatchWalk<Ref: Hashable & Sendable>: Sendable {
    public var layout: GarminLayout
    public var maximumEntries = 100_000

    public init(layout: GarminLayout = .garmin) { self.layout = layout }

    public struct TooManyEntries: Error, CustomStringConvertible {
        public var folder: String
        public var count: Int
        public var description: String { "\(folder.isEmpty ? "the storage's root" : folder) lists \(count) entries; no watch has so many" }
    }

    /// The FIT files below the root `root`, each with its reference, sorted by path.
    public func files(root: Ref, list: (Ref, String) throws -> [WatchEntry<Ref>]) throws -> [(file: WatchFile, ref: Ref)] {
        var found: [(file: WatchFile, ref: Ref)] = []
        var listed: Set<Ref> = [root]
        var pending: [(ref: Ref, components: [String])] = [(root, [])]
        while let (ref, components) = pending.popLast() {
            let path = components.joined(separator: "/")
            let entries = try list(ref, path)
            guard entries.count <= maximumEntries else { throw TooManyEntries(folder: path, count: entries.count) }
            let role = layout.folder(components)
            for entry in entries {
                if entry.isFolder {
                    let next = components + [entry.name]
                    guard case .walk = role, layout.folder(next) != .ignore, !listed.contains(entry.ref) else { continue }
                    listed.insert(entry.ref)
                    pending.append((entry.ref, next))
                } else if case .data(let kind) = role, layout.isFitFile(entry.name) {
                    let file = WatchFile(path: (components + [entry.name]).joined(separator: "/"), size: entry.size,
                                         modified: entry.modified, kind: kind)
                    found.append((file, entry.ref))
                }
            }
        }
        return found.sorted { $0.file.path < $1.file.path }
    }
}
