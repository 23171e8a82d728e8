import Foundation
import Timing
import MassStorageDriver
import Synchronization
public import WatchLayout
public import WatchMTP

/// A watch attached to this computer, whichever way: what `watch list` shows and what the checkpoint
/// and the copies are keyed by.
public struct AttachedWatch: Hashable, Sendable, Encodable {
    public enum Attachment: String, Hashable, Sendable, Encodable {
        case mtp
        case massStorage = "mass_storage"
    }

    /// The watch's serial number (MTP: as the device says; mass storage: `GARMIN/GarminDevice.xml`'s
    /// `Id`, else the volume's name), made safe to be a folder's name.
    public var serial: String
    public var name: String
    public var attachment: Attachment
    /// Where: `bus 1 device 5 (091e:4c05)` or the mount point.
    public var place: String

    public init(serial: String, name: String, attachment: Attachment, place: String) {
        self.serial = serial
        self.name = name
        self.attachment = attachment
        self.place = place
    }

    /// `serial` as a folder name: letters, digits, `.`, `-` and `_` kept, anything else `_`,
    /// never empty, `.` or `..`, at most 64 characters. A device names itself; it does not pick
    /// where its files are written.
    public static func safeSerial(_ text: String) -> String {
        let kept = String(text.unicodeScalars.prefix(64).map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        return kept.isEmpty || kept.allSatisfy({ $0 == "." }) ? "unknown" : kept
    }
}

/// Where a listed file is on its watch: an MTP object, or a path on a mounted volume.
public enum WatchRef: Hashable, Sendable {
    case object(UInt32)
    case path(String)
}

/// An open attachment of one watch: its listing down ``GarminLayout`` and copies of its files.
/// Never writes to the watch.
public protocol WatchConnection: Sendable {
    var watch: AttachedWatch { get }
    /// Walks the watch down ``GarminLayout`` (``WatchWalk``) and hands `found` the FIT files of
    /// each data folder as soon as that folder is listed (activities first), so that they can be
    /// fetched before the next, larger folders are listed.
    func listing(_ found: ([(file: WatchFile, ref: WatchRef)]) async throws -> Void) async throws
    /// Copies the file at `ref` into `fd`; `progress` gets the bytes so far.
    func copy(_ ref: WatchRef, to fd: Int32, progress: @escaping @Sendable (UInt64) -> Void) async throws
    func close() async
}

extension WatchConnection {
    /// Every FIT file of the layout's data folders, sorted by path.
    public func listing() async throws -> [(file: WatchFile, ref: WatchRef)] {
        var all: [(file: WatchFile, ref: WatchRef)] = []
        try await listing { all += $0 }
        return all.sorted { $0.file.path < $1.file.path }
    }
}

/// A watch over MTP: one libmtp session, every call on the MTP thread.
public final class MTPWatchConnection: WatchConnection {
    public let watch: AttachedWatch
    private let device: MTPDevice
    private let layout: GarminLayout

    /// Opens a session with `raw`.
    public static func open(_ raw: MTPRawDevice, layout: GarminLayout = .garmin) async throws -> MTPWatchConnection {
        let device = try await MTP.run { () throws(MTPError) in try MTPDevice(opening: raw) }
        return MTPWatchConnection(device: device, layout: layout)
    }

    private init(device: MTPDevice, layout: GarminLayout) {
        self.device = device
        self.layout = layout
        let raw = device.raw
        let name = [device.manufacturer, device.model].compactMap { $0 }.joined(separator: " ")
        watch = AttachedWatch(serial: AttachedWatch.safeSerial(device.serial ?? "\(raw.ids)-bus\(raw.bus)-\(raw.address)"),
                              name: name.isEmpty ? raw.name : name, attachment: .mtp,
                              place: "bus \(raw.bus) device \(raw.address) (\(raw.ids))")
    }

    public func listing(_ found: ([(file: WatchFile, ref: WatchRef)]) async throws -> Void) async throws {
        let (device, layout) = (self.device, self.layout)
        let storages = try await MTP.run { () throws(MTPError) in try device.storages() }
        for storage in storages {
            // A second storage (a memory card) keeps its files apart by its name.
            let prefix = storages.count > 1 && storage != storages[0] ? AttachedWatch.safeSerial(storage.description) + "/" : ""
            var walk = WatchWalk<UInt32>(root: MTPDevice.rootFolder, layout: layout)
            while let (ref, _) = walk.nextFolder() {
                let entries = try await MTP.run { () throws(MTPError) in try device.list(storage: storage.id, parent: ref) }
                let files = try walk.listed(entries)
                guard !files.isEmpty else { continue }
                try await found(files.map { (WatchFile(path: prefix + $0.file.path, size: $0.file.size, modified: $0.file.modified, kind: $0.file.kind),
                                             WatchRef.object($0.ref)) })
            }
        }
    }

    public func copy(_ ref: WatchRef, to fd: Int32, progress: @escaping @Sendable (UInt64) -> Void) async throws {
        guard case .object(let id) = ref else { throw MTPError("not an MTP object") }
        let device = self.device
        let stop = Atomic<Bool>(false)
        try await withTaskCancellationHandler {
            try await MTP.run {
                try device.copy(id, to: fd) { sent, _ in
                    progress(sent)
                    return !stop.load(ordering: .relaxed)
                }
            }
        } onCancel: {
            stop.store(true, ordering: .relaxed)
        }
    }

    public func close() async {
        let device = self.device
        _ = try? await MTP.run { device.close() }
    }
}

/// A watch mounted as USB mass storage (a `GARMIN` folder on a volume).
public struct MountedWatchConnection: WatchConnection {
    public let watch: AttachedWatch
    let mountPoint: String
    let layout: GarminLayout

    /// The watch mounted at `mountPoint`, or nil when it holds no `GARMIN` folder (read off the
    /// concurrency pool).
    public static func at(_ mountPoint: String, layout: GarminLayout = .garmin) async -> MountedWatchConnection? {
        (try? await FolderReads.run { find(mountPoint, layout: layout) }) ?? nil
    }

    private static func find(_ mountPoint: String, layout: GarminLayout) -> MountedWatchConnection? {
        let files = FileManager.default
        let entries = (try? files.contentsOfDirectory(atPath: mountPoint)) ?? []
        var garmin = entries.first { $0.lowercased() == layout.deviceFolder }.map { mountPoint + "/" + $0 }
        if garmin == nil {
            for wrapper in entries where layout.wrappers.contains(wrapper.lowercased()) {
                let inner = (try? files.contentsOfDirectory(atPath: mountPoint + "/" + wrapper)) ?? []
                if let found = inner.first(where: { $0.lowercased() == layout.deviceFolder }) { garmin = mountPoint + "/" + wrapper + "/" + found }
            }
        }
        guard let garmin else { return nil }
        let device = GarminDeviceXML.read(garmin + "/GarminDevice.xml")
        let volume = (mountPoint as NSString).lastPathComponent
        let watch = AttachedWatch(serial: AttachedWatch.safeSerial(device.id ?? "volume-" + volume), name: device.description ?? "Garmin watch",
                                  attachment: .massStorage, place: mountPoint)
        return MountedWatchConnection(watch: watch, mountPoint: mountPoint, layout: layout)
    }

    public func listing(_ found: ([(file: WatchFile, ref: WatchRef)]) async throws -> Void) async throws {
        var walk = WatchWalk<String>(root: mountPoint, layout: layout)
        while let (folder, _) = walk.nextFolder() {
            let entries = try await FolderReads.run { try Self.entries(of: folder) }
            let files = try walk.listed(entries)
            if !files.isEmpty { try await found(files.map { ($0.file, WatchRef.path($0.ref)) }) }
        }
    }

    static func entries(of folder: String) throws -> [WatchEntry<String>] {
        try FileManager.default.contentsOfDirectory(atPath: folder).map { name in
            let path = folder + "/" + name
            var info = stat()
            let isFolder = lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            return WatchEntry(ref: path, name: name, isFolder: isFolder, size: UInt64(max(0, info.st_size)),
                              modified: Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec)))
        }
    }

    public func copy(_ ref: WatchRef, to fd: Int32, progress: @escaping @Sendable (UInt64) -> Void) async throws {
        guard case .path(let path) = ref else { throw CocoaError(.fileReadUnknown) }
        try await FolderReads.run {
            let source = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard source >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            defer { Glibc.close(source) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var total: UInt64 = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError(.init(rawValue: errno) ?? .EIO)
                }
                if n == 0 { break }
                var offset = 0
                while offset < n {
                    let w = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + offset, n - offset) }
                    if w < 0 {
                        if errno == EINTR { continue }
                        throw POSIXError(.init(rawValue: errno) ?? .EIO)
                    }
                    offset += w
                }
                total += UInt64(n)
                progress(total)
                try Task.checkCancellation()
            }
        }
    }

    public func close() async {}
}

/// Blocking reads of mounted folders (a watch's USB disk can be slow), off Swift's concurrency pool.
enum FolderReads {
    static let queue = DispatchQueue(label: "healthgate.watch.files", qos: .utility)

    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await OffPool.run(on: queue, work)
    }
}

/// What `GARMIN/GarminDevice.xml` says of a watch mounted as mass storage: its `Id` (the serial
/// number) and its model's `Description`. Only these two elements are looked for, in the first
/// 64 kB; a file that lacks them or is not there gives nils.
enum GarminDeviceXML {
    static func read(_ path: String) -> (id: String?, description: String?) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return (nil, nil) }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 65536)) ?? Data()
        return parse(String(decoding: data, as: UTF8.self))
    }

    static func parse(_ text: String) -> (id: String?, description: String?) {
        func element(_ name: String) -> String? {
            guard let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex) else {
                return nil
            }
            let value = text[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            return value.isEmpty || value.count > 200 ? nil : value
        }
        return (element("Id"), element("Description"))
    }
}
