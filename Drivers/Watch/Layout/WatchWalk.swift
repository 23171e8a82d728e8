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

/// The walk of a watch's folders down ``GarminLayout``, as a state machine: it says which folder
/// to list next (``nextFolder()``), takes that folder's listing (``listed(_:)``) and returns the
/// FIT files it holds when it is a data folder. The caller does the listing (MTP and mounted
/// volumes share the walk) and may fetch each data folder's files before the next listing: a new
/// activity is fetched without waiting for the listing of a `Monitor` folder of a thousand files.
///
/// Only the folders the layout enters are listed (a watch's music and maps never are). The
/// folders above the data folders come first, then the data folders by ``kindOrder``
/// (activities first, monitoring last: it is the largest). A hostile or broken device cannot make
/// it loop or grow without bound: a folder listed once is not listed again (an MTP device may
/// answer a folder's listing with one of its parents), the layout admits no deeper than
/// `wrapper/GARMIN/kind`, and a folder with more than ``maximumEntries`` entries is an error.
public struct WatchWalk<Ref: Hashable & Sendable>: Sendable {
    public let layout: GarminLayout
    public var maximumEntries = 100_000
    /// The order data folders are listed in.
    public static var kindOrder: [WatchFolderKind] { [.activity, .sleep, .hrvStatus, .weight, .metrics, .records, .monitor] }

    private var seen: Set<Ref>
    private var pending: [(ref: Ref, components: [String])]
    private var current: (ref: Ref, components: [String])?

    public init(root: Ref, layout: GarminLayout = .garmin) {
        self.layout = layout
        seen = [root]
        pending = [(root, [])]
    }

    public struct TooManyEntries: Error, CustomStringConvertible {
        public var folder: String
        public var count: Int
        public var description: String { "\(folder.isEmpty ? "the storage's root" : folder) lists \(count) entries; no watch has so many" }
    }

    /// The folder to list next (its reference and its path from the root), or nil when the walk is done.
    public mutating func nextFolder() -> (ref: Ref, path: String)? {
        guard !pending.isEmpty else { return nil }
        let index = pending.indices.min { rank(pending[$0].components) < rank(pending[$1].components) }!
        let next = pending.remove(at: index)
        current = next
        return (next.ref, next.components.joined(separator: "/"))
    }

    /// Takes the listing of the folder ``nextFolder()`` returned last; returns its FIT files (those
    /// of a data folder), each with its reference, sorted by path.
    public mutating func listed(_ entries: [WatchEntry<Ref>]) throws -> [(file: WatchFile, ref: Ref)] {
        guard let (_, components) = current else { return [] }
        current = nil
        guard entries.count <= maximumEntries else {
            throw TooManyEntries(folder: components.joined(separator: "/"), count: entries.count)
        }
        var found: [(file: WatchFile, ref: Ref)] = []
        let role = layout.folder(components)
        for entry in entries {
            if entry.isFolder {
                let next = components + [entry.name]
                guard case .walk = role, layout.folder(next) != .ignore, seen.insert(entry.ref).inserted else { continue }
                pending.append((entry.ref, next))
            } else if case .data(let kind) = role, layout.isFitFile(entry.name) {
                found.append((WatchFile(path: (components + [entry.name]).joined(separator: "/"), size: entry.size, modified: entry.modified,
                                        kind: kind), entry.ref))
            }
        }
        return found.sorted { $0.file.path < $1.file.path }
    }

    /// Folders to walk through first (in the order found), then data folders by ``kindOrder``.
    private func rank(_ components: [String]) -> Int {
        guard case .data(let kind) = layout.folder(components) else { return -1 }
        return Self.kindOrder.firstIndex(of: kind) ?? Self.kindOrder.count
    }

    /// The whole walk at once: every FIT file below `root`, sorted by path.
    public static func files(root: Ref, layout: GarminLayout = .garmin, maximumEntries: Int = 100_000,
                             list: (Ref, String) throws -> [WatchEntry<Ref>]) throws -> [(file: WatchFile, ref: Ref)] {
        var walk = WatchWalk(root: root, layout: layout)
        walk.maximumEntries = maximumEntries
        var found: [(file: WatchFile, ref: Ref)] = []
        while let (ref, path) = walk.nextFolder() { found += try walk.listed(list(ref, path)) }
        return found.sorted { $0.file.path < $1.file.path }
    }
}
