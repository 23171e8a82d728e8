import DriverKit
import Foundation
#if canImport(Glibc)
import Glibc
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
/// `GARMIN/Monitor`, `GARMIN/Sleep` and their kin, names in any case.
public enum WatchVolume {
    static let folders = ["activity", "monitor", "sleep", "metrics", "hrv", "records", "weight"]

    /// The FIT files of the watch mounted at `mountPoint`, sorted by path; empty when it does not
    /// look like a watch. Only lists folders: nothing is opened for writing.
    public static func fitFiles(at mountPoint: String) -> [String] {
        let fm = FileManager.default
        guard let garmin = (try? fm.contentsOfDirectory(atPath: mountPoint))?.first(where: { $0.lowercased() == "garmin" }) else {
            return []
        }
        let base = mountPoint + "/" + garmin
        var files: [String] = []
        for folder in (try? fm.contentsOfDirectory(atPath: base)) ?? [] where folders.contains(folder.lowercased()) {
            for name in (try? fm.contentsOfDirectory(atPath: base + "/" + folder)) ?? []
            where name.lowercased().hasSuffix(".fit") && !name.hasPrefix(".") {
                files.append(base + "/" + folder + "/" + name)
            }
        }
        return files.sorted()
    }
}

/// The `mass_storage` driver: notices a watch mounted over USB under the configured roots (from
/// mountinfo: the kernel flags a change of `/proc/self/mountinfo` to poll(2), and any other file,
/// as tests use, is read again every `poll_s`) and imports its FIT files not imported yet (the
/// import ledger knows them by content). It only ever reads from the device.
struct MassStorage: Sendable {
    struct Settings: Sendable, Equatable {
        var roots = ["/media", "/run/media"]
        var mountInfo = "/proc/self/mountinfo"
        var poll: Duration = .seconds(2)
    }

    /// From the driver table: `roots` (list of folders), `mountinfo` (a path), `poll_s`.
    static func settings(_ config: DriverConfig, keyPath: String) throws(ConfigError) -> Settings {
        var settings = Settings()
        if let roots = config["roots"] {
            let list = roots.split(separator: ",").map(String.init)
            guard !list.isEmpty, list.allSatisfy({ $0.hasPrefix("/") }) else {
                throw ConfigError(keyPath: keyPath + ".roots", reason: "must be a list of absolute folders")
            }
            settings.roots = list
        }
        if let path = config["mountinfo"] { settings.mountInfo = path }
        if let poll = try config.seconds("poll_s", in: 0.1...3600, keyPath: keyPath) { settings.poll = poll }
        try config.rejectUnknownKeys(["roots", "mountinfo", "poll_s"], keyPath: keyPath)
        return settings
    }

    let settings: Settings
    let pipeline: ImportPipeline
    let onImported: @Sendable (FileReport) async -> Void
    let onProblem: @Sendable (String) -> Void

    func run() async throws {
        var imported: Set<String> = []  // "ID mountpoint" of the mounts handled while mounted
        while !Task.isCancelled {
            let text: String
            do { text = try String(contentsOfFile: settings.mountInfo, encoding: .utf8) } catch {
                throw ConfigError(keyPath: "mountinfo", reason: "cannot read \(settings.mountInfo): \(error.localizedDescription)")
            }
            let (mounts, errors) = MountInfo.parse(text)
            for error in errors { onProblem("\(settings.mountInfo): \(error)") }
            let current = MountInfo.mounts(mounts, under: settings.roots)
            let keys = Set(current.map { "\($0.id) \($0.mountPoint)" })
            imported.formIntersection(keys)  // unmounted: a later mount is a new visit
            for mount in current where !imported.contains("\(mount.id) \(mount.mountPoint)") {
                imported.insert("\(mount.id) \(mount.mountPoint)")
                for file in WatchVolume.fitFiles(at: mount.mountPoint) {
                    try Task.checkCancellation()
                    let report = await pipeline.importFile(file)
                    // Files the ledger knows are not worth a log line at every plug-in.
                    if report.status != .alreadyImported { await onImported(report) }
                }
            }
            try await waitForChange()
        }
    }

    /// Returns when mountinfo may have changed: at once when the kernel flags it, at the latest
    /// after `poll` (which also bounds how long a stop waits for it).
    private func waitForChange() async throws {
        if settings.mountInfo.hasPrefix("/proc/") {
            let path = settings.mountInfo
            let limit = settings.poll
            // poll(2) blocks: run it off the cooperative pool, with a bound so cancellation is seen.
            let changed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                DispatchQueue.global().async {
                    let fd = open(path, O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { return continuation.resume(returning: false) }
                    defer { close(fd) }
                    var scratch = [UInt8](repeating: 0, count: 4096)
                    while read(fd, &scratch, scratch.count) > 0 {}
                    var waiter = pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
                    let ms = Int32(limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000)
                    continuation.resume(returning: poll(&waiter, 1, ms) > 0)
                }
            }
            if !changed { try Task.checkCancellation() }
        } else {
            try await Task.sleep(for: settings.poll)
        }
    }
}
