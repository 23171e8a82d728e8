/// Where a Garmin watch keeps the files HealthGate fetches, whichever way it attaches (USB mass
/// storage or MTP): `GARMIN/` at the root of a storage, or below one wrapping level some models
/// add (`Primary/GARMIN/...` on a Fenix 6), and in it one folder per kind of data. The names that
/// differ by model are data (``folders``, ``wrappers``), not code; any case matches. Pure: the
/// walkers of each attachment ask it which folders to enter and what a file is.
public struct GarminLayout: Hashable, Sendable {
    /// The data folders' names (lowercased) and the kind of data each holds.
    public var folders: [String: WatchFolderKind]
    /// Folders that may stand between a storage's root and `GARMIN` (lowercased).
    public var wrappers: Set<String>
    /// The device folder's name (lowercased).
    public var deviceFolder: String

    public static let garmin = GarminLayout(
        folders: ["activity": .activity, "monitor": .monitor, "sleep": .sleep, "hrvstatus": .hrvStatus, "hrv": .hrvStatus,
                  "metrics": .metrics, "weight": .weight, "records": .records],
        wrappers: ["primary", "internal storage"], deviceFolder: "garmin")

    public init(folders: [String: WatchFolderKind], wrappers: Set<String>, deviceFolder: String) {
        self.folders = folders
        self.wrappers = wrappers
        self.deviceFolder = deviceFolder
    }

    /// What a folder is, by its path of names from the storage's root (`["Primary", "GARMIN",
    /// "Activity"]`): where a walk goes on, where files are taken, or neither.
    public func folder(_ components: [String]) -> WatchFolderRole {
        var rest = components.map { $0.lowercased() }[...]
        guard let first = rest.first else { return .walk }
        if wrappers.contains(first) {
            rest = rest.dropFirst()
            if rest.isEmpty { return .walk }
        }
        guard rest.first == deviceFolder else { return .ignore }
        rest = rest.dropFirst()
        guard let name = rest.first else { return .walk }
        if rest.count == 1, let kind = folders[name] { return .data(kind) }
        return .ignore
    }

    /// A FIT file HealthGate fetches: `.fit` in any case, not hidden (macOS's `._A1.FIT`).
    public func isFitFile(_ name: String) -> Bool {
        name.lowercased().hasSuffix(".fit") && !name.hasPrefix(".")
    }
}

/// The kinds of data a watch keeps in folders of their own.
public enum WatchFolderKind: String, Hashable, Sendable, Codable, CaseIterable {
    case activity, monitor, sleep, hrvStatus = "hrv_status", metrics, weight, records
}

/// What ``GarminLayout/folder(_:)`` says of a folder.
public enum WatchFolderRole: Hashable, Sendable {
    /// Enter it: the storage's root, a wrapping level, `GARMIN`.
    case walk
    /// Take its FIT files.
    case data(WatchFolderKind)
    /// Leave it alone.
    case ignore
}
