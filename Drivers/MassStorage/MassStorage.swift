public import DriverKit
import Foundation
import LinuxAdapters
#if canImport(Glibc)
import Glibc
import WatchLayout
#endif

/// One line of `/proc/self/mountinfo`.
public struct Mount: Sendable, Equatable {
    public var id: Int
    public var mountPoint: String
    public var fileSystem: String
    public var source: String
    /// Mounted read-only (`ro` in the mount options).
    public var readOnly: Bool
}

/// A line of mountinfo that could not be read, with its number (from 1).
public struct MountInfoError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var reason: String
    public var description: String { "mountinfo line \(line): \(reason)" }
}

/// Reads the kernel's mountinfo format (proc(5)): `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
/// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS`, with spaces, tabs, newlines and backslashes in
/// paths written as octal escapes (`\040`). Pure.
public enum MountInfo {
    /// The mounts of `text`, and the lines that could not be read (the others still count).
    public static func parse(_ text: String) -> (mounts: [Mount], errors: [MountInfoError]) {
        var mounts: [Mount] = [], errors: [MountInfoError] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard let dash = fields.firstIndex(of: "-"), dash >= 6, fields.count >= dash + 3 else {
                errors.append(MountInfoError(line: index + 1, reason: "expected at least 6 fields, '-', then 3 more"))
                continue
            }
            guard let id = Int(fields[0]), Int(fields[1]) != nil else {
                errors.append(MountInfoError(line: index + 1, reason: "mount and parent IDs must be numbers"))
                continue
            }
            mounts.append(Mount(id: id, mountPoint: unescape(fields[4]), fileSystem: fields[dash + 1],
                                source: unescape(fields[dash + 2]), readOnly: fields[5].split(separator: ",").contains("ro")))
        }
        return (mounts, errors)
    }

    /// `\040` -> space, `\011` -> tab, `\012` -> newline, `\134` -> backslash (any `\NNN` octal).
    static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        let bytes = Array(text.utf8)
        func octal(_ i: Int) -> UInt8? {
            guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(bytes[i]) else { return nil }
            return bytes[i] - UInt8(ascii: "0")
        }
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), let a = octal(i + 1), let b = octal(i + 2), let c = octal(i + 3), a <= 3 {
                out.append(a << 6 | b << 3 | c)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The mounts whose mount point is one of `roots` or below one (on path-component
    /// boundaries: `/media` holds `/media/usb`, not `/mediax`).
    public static func mounts(_ mounts: [Mount], under roots: [String]) -> [Mount] {
        mounts.filter { mount in
            roots.contains { root in
                let root = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
                return mount.mountPoint == root || mount.mountPoint.hasPrefix(root == "/" ? "/" : root + "/")
            }
        }
    }
}

/// Where a watch that mounts as USB mass storage keeps its FIT files: `GARMIN/Activity`,
/// `GARMIN/Monitor`, `GARMIN/Sleep` and their kin, names in any case, as the watch family's
/// ``GarminLayout`` names them (one list of folders for every way a watch attaches).
public enum WatchVolume {
    static let layout = GarminLayout.garmin

    /// `GARMIN`, in any case.
    static func isDeviceFolder(_ name: String) -> Bool { name.lowercased() == layout.deviceFolder }
    /// One of the data folders under `GARMIN`.
    static func isDataFolder(_ name: String) -> Bool { layout.folders[name.lowercased()] != nil }
    /// A FIT file's name (not a hidden one such as macOS's `._A1.FIT`).
    static func isFitFile(_ name: String) -> Bool { layout.isFitFile(name) }

    /// The `GARMIN` folder of the watch mounted at `mountPoint`, or nil.
    static func deviceFolder(at mountPoint: String) -> String? {
        (try? FileManager.default.contentsOfDirectory(atPath: mountPoint))?.first(where: isDeviceFolder).map { mountPoint + "/" + $0 }
    }

    /// The data folders in a `GARMIN` folder, sorted.
    static func dataFolders(in deviceFolder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: deviceFolder)) ?? []).filter(isDataFolder).sorted()
            .map { deviceFolder + "/" + $0 }
    }

    /// The FIT files in one data folder, sorted by path.
    static func fitFiles(inDataFolder folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter(isFitFile).sorted().map { folder + "/" + $0 }
    }

    /// The FIT files of the watch mounted at `mountPoint`, sorted by path; empty when it does not
    /// look like a watch. Only lists folders: nothing is opened for writing.
    public static func fitFiles(at mountPoint: String) -> [String] {
        guard let device = deviceFolder(at: mountPoint) else { return [] }
        return dataFolders(in: device).flatMap(fitFiles(inDataFolder:)).sorted()
    }
}

/// The mounts under the roots being visited, and the inotify watches on their folders: what
/// each mountinfo reading and each event means. Pure: the driver reads mountinfo, adds and
/// removes the watches and imports what this says.
struct VolumeWatches: Equatable {
    /// What a watched folder is: a mount point (waiting for `GARMIN`), a `GARMIN` folder
    /// (waiting for data folders) or a data folder (FIT files land there).
    enum Kind: Equatable { case volume, device, data }

    struct Watch: Equatable {
        var kind: Kind
        var path: String
        /// The mount (its key) the folder is on.
        var mount: String
    }

    enum Action: Equatable {
        /// Watch `path` as `kind`, then list it (files that arrived before the watch count too).
        case watch(Kind, path: String, mount: String)
        case importFile(String)
        /// Events were lost: list every visited mount again.
        case rescan
    }

    /// Mounts being visited by key (`ID mountpoint`): a mount that goes and comes back is a new visit.
    private(set) var mounts: [String: Mount] = [:]
    private(set) var watches: [Int32: Watch] = [:]

    static func key(_ mount: Mount) -> String { "\(mount.id) \(mount.mountPoint)" }

    /// Takes the mounts now under the roots; returns the new ones (to watch and list) and the
    /// watches of those gone (to remove).
    mutating func update(_ current: [Mount]) -> (arrived: [Mount], removedWatches: [Int32]) {
        let keys = Set(current.map(Self.key))
        let gone = Set(mounts.keys).subtracting(keys)
        for key in gone { mounts[key] = nil }
        let removed = watches.filter { gone.contains($0.value.mount) }.map(\.key).sorted()
        for wd in removed { watches[wd] = nil }
        var arrived: [Mount] = []
        for mount in current where mounts[Self.key(mount)] == nil {
            mounts[Self.key(mount)] = mount
            arrived.append(mount)
        }
        return (arrived, removed)
    }

    /// Records a watch the driver added (a folder watched twice keeps one entry).
    mutating func added(_ wd: Int32, _ watch: Watch) {
        guard mounts[watch.mount] != nil else { return }
        watches[wd] = watch
    }

    /// What an inotify event asks for.
    mutating func handle(_ event: InotifyEvent) -> Action? {
        if event.isOverflow { return .rescan }
        if event.isWatchRemoved {
            watches[event.watch] = nil
            return nil
        }
        guard let watch = watches[event.watch], event.isCloseWrite || event.isMovedTo || event.isCreate else { return nil }
        let path = watch.path + "/" + event.name
        switch watch.kind {
        case .volume where event.isDirectory && WatchVolume.isDeviceFolder(event.name):
            return .watch(.device, path: path, mount: watch.mount)
        case .device where event.isDirectory && WatchVolume.isDataFolder(event.name):
            return .watch(.data, path: path, mount: watch.mount)
        case .data where !event.isDirectory && (event.isCloseWrite || event.isMovedTo) && WatchVolume.isFitFile(event.name):
            return .importFile(path)
        default:
            return nil
        }
    }
}

/// The `mass_storage` driver: notices a watch mounted over USB under the configured roots (from
/// mountinfo: the kernel flags a change of `/proc/self/mountinfo` to poll(2), and any other file,
/// as tests use, is read again every `poll_s`) and imports its FIT files not imported yet (the
/// import ledger knows them by content). While it stays mounted, inotify on its `GARMIN` folders
/// brings files written or moved there later: at once when closed after writing or moved in;
/// found in a folder that appeared meanwhile, once they stood still for `settle_s` (they may
/// still be being written). It only ever reads from the device.
public struct MassStorage: DeviceDriver {
    public static let id = "mass_storage"

    /// The `[drivers.NAME]` table: `roots` (absolute folders), `mountinfo`, `poll_s`, `settle_s`.
    public struct Settings: Decodable, Sendable, Equatable {
        public var roots = ["/media", "/run/media"]
        public var mountInfo = "/proc/self/mountinfo"
        public var poll: Duration = .seconds(2)
        public var settle: Duration = .seconds(2)

        public init() {}

        enum CodingKeys: String, CodingKey { case roots, mountInfo = "mountinfo", poll = "poll_s", settle = "settle_s" }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if let roots = try c.decodeIfPresent([String].self, forKey: .roots) {
                guard !roots.isEmpty, roots.allSatisfy({ $0.hasPrefix("/") }) else {
                    throw c.configError(.roots, "must be a list of absolute folders")
                }
                self.roots = roots
            }
            mountInfo = try c.decodeIfPresent(String.self, forKey: .mountInfo) ?? mountInfo
            poll = try c.decodeIfPresent(duration: .poll, unit: .seconds, in: .milliseconds(100)...(.seconds(3600))) ?? poll
            settle = try c.decodeIfPresent(duration: .settle, unit: .seconds, in: .milliseconds(100)...(.seconds(3600))) ?? settle
        }
    }

    let settings: Settings
    let files: any FileSink
    let onProblem: @Sendable (String) -> Void

    public init(settings: Settings, context: DriverContext) {
        self.settings = settings
        self.files = context.files
        onProblem = { problem in
            context.report(.problem(kind: "mass_storage", message: problem))
            context.logger.warning("\(problem)")
        }
    }

    /// Watches for mounts until cancelled. Stores nothing itself: records reach the store
    /// through the file sink.
    public func run(into sink: some RecordSink) async throws {
        try await run()
    }

    /// What wakes the driver: mountinfo may have changed, something happened in a watched
    /// folder, or files found while they may have been written are due a look.
    private enum Wake: Sendable {
        case mounts
        case event(InotifyEvent)
        case settleTick
    }

    /// The driver's state, owned by the one task that handles the wakes.
    private struct Visits {
        var watches = VolumeWatches()
        var settling: SettlingFiles
        var timer: SettleTimer
    }

    func run() async throws {
        let inotify = try Inotify()
        defer { inotify.close() }
        let (wakes, wake) = AsyncStream<Wake>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await watchMountInfo(wake) }
            group.addTask {
                for await event in inotify.events { wake.yield(.event(event)) }
            }
            let settleTimer = SettleTimer()
            group.addTask { await settleTimer.run(after: settings.settle / 2) { wake.yield(.settleTick) } }
            group.addTask {
                // The one owner of the watches: every wake is handled here, in order.
                var state = Visits(settling: SettlingFiles(settle: settings.settle), timer: settleTimer)
                for await next in wakes {
                    switch next {
                    case .mounts: try await mountsMayHaveChanged(&state, inotify)
                    case .settleTick:
                        state.timer.fired()
                        for path in state.settling.settled() { await importFile(path) }
                    case .event(let event):
                        switch state.watches.handle(event) {
                        case .watch(let kind, let path, let mount)?:
                            try await visit(path, as: kind, mount: mount, complete: false, &state, inotify)
                        case .importFile(let path)?:
                            state.settling.remove(path)
                            await importFile(path)
                        case .rescan?:
                            for mount in state.watches.mounts.values.sorted(by: { $0.id < $1.id }) {
                                try await visit(mount.mountPoint, as: .volume, mount: VolumeWatches.key(mount), complete: false,
                                                &state, inotify)
                            }
                        case nil: break
                        }
                    }
                    if !state.settling.isEmpty { state.timer.schedule() }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func mountsMayHaveChanged(_ state: inout Visits, _ inotify: Inotify) async throws {
        let text: String
        do { text = try ProcFile.read(settings.mountInfo) } catch {
            throw ConfigError(keyPath: "mountinfo", reason: "\(error)")
        }
        let (mounts, errors) = MountInfo.parse(text)
        for error in errors { onProblem("\(settings.mountInfo): \(error)") }
        let (arrived, removed) = state.watches.update(MountInfo.mounts(mounts, under: settings.roots))
        for wd in removed { inotify.unwatch(wd) }
        for mount in arrived {
            // Just mounted: what it holds was written before.
            try await visit(mount.mountPoint, as: .volume, mount: VolumeWatches.key(mount), complete: true, &state, inotify)
        }
    }

    /// Watches `path` (a mount point, `GARMIN` folder or data folder), then goes down it: the
    /// folders below are watched the same way and the FIT files found imported, at once when
    /// `complete` (a volume just mounted), else once they stand still. The watch comes first, so
    /// a file landing meanwhile is seen one way or the other.
    private func visit(_ path: String, as kind: VolumeWatches.Kind, mount: String, complete: Bool,
                       _ state: inout Visits, _ inotify: Inotify) async throws {
        let mask: UInt32 = switch kind {
        case .volume, .device: UInt32(IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)
        case .data: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR)
        }
        do {
            state.watches.added(try inotify.watch(path, mask: mask), .init(kind: kind, path: path, mount: mount))
        } catch {
            onProblem("cannot watch \(path): \(error)")  // still listed once below
        }
        switch kind {
        case .volume:
            if let device = WatchVolume.deviceFolder(at: path) {
                try await visit(device, as: .device, mount: mount, complete: complete, &state, inotify)
            }
        case .device:
            for folder in WatchVolume.dataFolders(in: path) {
                try await visit(folder, as: .data, mount: mount, complete: complete, &state, inotify)
            }
        case .data:
            for file in WatchVolume.fitFiles(inDataFolder: path) {
                try Task.checkCancellation()
                if complete { await importFile(file) } else { state.settling.observe(file, writing: false) }
            }
        }
    }

    private func importFile(_ path: String) async {
        _ = await files.importFile(path)
    }

    private func watchMountInfo(_ wake: AsyncStream<Wake>.Continuation) async throws {
        try await MountTable.watch(settings.mountInfo, poll: settings.poll) { wake.yield(.mounts) }
    }
}

/// The kernel's mount table as it changes.
public enum MountTable {
    /// Calls `changed` now and whenever `mountInfo` may have changed since, until cancelled. The
    /// kernel flags a change of `/proc/.../mountinfo` to poll(2) on a descriptor opened before
    /// the change, so the descriptor is opened before the first call and then waited on by a
    /// thread (no time limit: nothing polls while no mount changes); other files (tests) are
    /// read again every `poll`. Throws a ConfigError (key `mountinfo`) when it cannot be opened.
    public static func watch(_ mountInfo: String, poll: Duration, changed: @escaping @Sendable () -> Void) async throws {
        guard mountInfo.hasPrefix("/proc/") else {
            while true {
                changed()
                try await Task.sleep(for: poll)
            }
        }
        let fd = open(mountInfo, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigError(keyPath: "mountinfo", reason: "cannot open \(mountInfo): \(String(cString: strerror(errno)))")
        }
        let (changes, change) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watch: DescriptorWatch
        do {
            watch = try DescriptorWatch(fd: fd, events: Int16(POLLPRI), name: "mountinfo",
                                        onReady: { _ in change.yield(); return true }, onEnd: { change.finish() })
        } catch {
            throw ConfigError(keyPath: "mountinfo", reason: "\(error)")
        }
        defer { watch.close() }
        changed()
        for await _ in changes { changed() }
    }
}

extension MassStorage {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        MassStorage.self, summary: "Imports the FIT files of a watch mounted over USB as mass storage, and those written while it stays",
        sample: PackageResources.sample_toml)
}
