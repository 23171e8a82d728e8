import DriverKit
import Foundation
import HealthStore
#if canImport(Glibc)
import Glibc
#endif

/// The `watch_folder` driver: imports every file that lands in a folder (FIT, TCX, GPX), once it
/// is complete: when the writer closes it, when it is moved in, or, for a file whose writing was
/// not seen (there at start, copied by a tool inotify cannot follow), when its size and time have
/// not changed for `settle_s`. Afterwards the file is moved to `imported/` (or `failed/`), left in
/// place, or deleted, as `after_import` says. Hidden files, temporary names (`*.part`, `*.tmp`,
/// `*.crdownload`, `*~`) and folders are ignored. Each file is one transaction and the import
/// ledger knows its content, so a file is stored once even if the daemon stops half-way.
struct WatchFolder: Sendable {
    enum AfterImport: String, Sendable, CaseIterable { case move, keep, delete }

    struct Settings: Sendable, Equatable {
        var path: String
        var afterImport = AfterImport.move
        var settle: Duration = .seconds(2)
    }

    /// From the driver table: `path` (required), `after_import` (`move`, `keep` or `delete`),
    /// `settle_s` (0.1 to 3600).
    static func settings(_ config: DriverConfig, keyPath: String) throws(ConfigError) -> Settings {
        guard let path = config["path"], !path.isEmpty else {
            throw ConfigError(keyPath: keyPath + ".path", reason: "is required (the folder to watch)")
        }
        var settings = Settings(path: path)
        if let text = config["after_import"] {
            guard let after = AfterImport(rawValue: text) else {
                throw ConfigError(keyPath: keyPath + ".after_import", reason: "'\(text)' is not one of move, keep, delete")
            }
            settings.afterImport = after
        }
        if let settle = try config.seconds("settle_s", in: 0.1...3600, keyPath: keyPath) { settings.settle = settle }
        try config.rejectUnknownKeys(["path", "after_import", "settle_s"], keyPath: keyPath)
        return settings
    }

    let settings: Settings
    let pipeline: ImportPipeline
    /// Told about every file handled.
    let onImported: @Sendable (FileReport) async -> Void

    func run() async throws {
        let fm = FileManager.default
        try PrivateFiles.createDirectory(settings.path)
        let inotify = try Inotify()
        defer { inotify.close() }
        try inotify.watch(settings.path, mask: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM
                                                     | IN_MODIFY))
        let inbox = Inbox(folder: settings.path, settle: settings.settle)
        await inbox.rescan()  // after the watch is in place, so nothing falls between
        // One task handles events and settle ticks in order; ticks run only while files wait,
        // so an idle folder costs no wake-ups.
        let (wakes, wake) = AsyncStream<Wake>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in inotify.events { wake.yield(.event(event)) }
            }
            group.addTask {
                var timer = SettleTimer()
                wake.yield(.settleTick)
                for await next in wakes {
                    switch next {
                    case .event(let event):
                        for path in await inbox.handle(event) { await self.importFile(path) }
                    case .settleTick:
                        timer.fired()
                        for path in await inbox.settled() { await self.importFile(path) }
                    }
                    if await !inbox.isIdle { timer.schedule(after: settings.settle / 2) { wake.yield(.settleTick) } }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private enum Wake: Sendable {
        case event(InotifyEvent)
        case settleTick
    }

    private func importFile(_ path: String) async {
        guard FileManager.default.fileExists(atPath: path) else { return }  // gone meanwhile
        let report = await pipeline.importFile(path)
        let succeeded = [.imported, .partial, .alreadyImported].contains(report.status)
        switch (settings.afterImport, succeeded) {
        case (.keep, _): break
        case (.delete, true): try? FileManager.default.removeItem(atPath: path)
        case (.move, true): Self.move(path, into: settings.path + "/imported")
        case (_, false): Self.move(path, into: settings.path + "/failed")
        }
        await onImported(report)
    }

    /// Moves `path` into `folder`, adding `-1`, `-2` ... before the extension if the name is taken.
    static func move(_ path: String, into folder: String) {
        let fm = FileManager.default
        try? PrivateFiles.createDirectory(folder)
        let name = (path as NSString).lastPathComponent
        var target = folder + "/" + name
        var n = 1
        while fm.fileExists(atPath: target) {
            let base = (name as NSString).deletingPathExtension, ext = (name as NSString).pathExtension
            target = folder + "/" + base + "-\(n)" + (ext.isEmpty ? "" : "." + ext)
            n += 1
        }
        try? fm.moveItem(atPath: path, toPath: target)
    }

    /// Whether a folder entry is a candidate: not hidden, not a temporary name.
    static func isCandidate(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.hasSuffix("~")
            && !["part", "tmp", "crdownload", "partial"].contains((name as NSString).pathExtension.lowercased())
    }
}

/// The files of a watched folder not imported yet, and when each will be: the one owner of that
/// state. Complete at once on close-after-write or move-in; otherwise as ``SettlingFiles`` says.
actor Inbox {
    let folder: String
    private var files: SettlingFiles

    init(folder: String, settle: Duration) {
        self.folder = folder
        files = SettlingFiles(settle: settle)
    }

    /// Puts every candidate file of the folder under watch (at start, and after lost events).
    func rescan() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names where WatchFolder.isCandidate(name) { files.observe(folder + "/" + name, writing: false) }
    }

    /// The files an event makes ready.
    func handle(_ event: InotifyEvent) -> [String] {
        if event.isOverflow {
            rescan()
            return []
        }
        guard !event.isDirectory, WatchFolder.isCandidate(event.name) else { return [] }
        let path = folder + "/" + event.name
        if event.isCloseWrite || event.isMovedTo {
            files.remove(path)
            return [path]
        }
        if event.mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
            files.remove(path)
        } else {
            files.observe(path, writing: true)  // created or written: wait for the close
        }
        return []
    }

    /// Files whose size and time have stood still for the settle time.
    func settled() -> [String] { files.settled() }

    /// Paths waiting, for tests and status.
    var waiting: [String] { files.waiting }
    /// Nothing waits.
    var isIdle: Bool { files.isEmpty }
}

/// At most one pending settle check: ``schedule(after:_:)`` starts a timer unless one runs,
/// ``fired()`` says it came. Checks run only while files wait, so idle folders cost nothing.
struct SettleTimer {
    private var pending = false

    mutating func schedule(after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        guard !pending else { return }
        pending = true
        Task {
            try? await Task.sleep(for: delay)
            fire()
        }
    }

    mutating func fired() { pending = false }
}

/// Files that may still be being written, and when each counts as complete. A file seen being
/// written waits for its close (the caller hears of it from inotify and calls ``remove(_:)``;
/// the kernel closes a file even when its writer dies). A file whose writing was not seen
/// (found by listing a folder) is complete once its size and time stood still for `settle`.
struct SettlingFiles {
    struct Seen {
        var size: Int64
        var modified: Double
        var since: ContinuousClock.Instant
        /// A writer was seen (created or modified while watched): wait for its close.
        var writing: Bool
    }

    let settle: Duration
    private var pending: [String: Seen] = [:]
    private let clock = ContinuousClock()

    init(settle: Duration) { self.settle = settle }

    var isEmpty: Bool { pending.isEmpty }
    /// Paths waiting, sorted.
    var waiting: [String] { pending.keys.sorted() }

    /// Starts (or goes on) watching `path`; `writing`: a writer was seen.
    mutating func observe(_ path: String, writing: Bool) {
        guard let now = Self.stat(path) else { return }
        let wasWriting = pending[path]?.writing ?? false
        if let seen = pending[path], seen.size == now.size, seen.modified == now.modified, seen.writing || !writing { return }
        pending[path] = Seen(size: now.size, modified: now.modified, since: clock.now, writing: writing || wasWriting)
    }

    /// Forgets `path` (closed after writing, moved away, deleted).
    mutating func remove(_ path: String) { pending[path] = nil }

    /// Files whose size and time have stood still for the settle time; they are forgotten.
    mutating func settled() -> [String] {
        var ready: [String] = []
        for (path, seen) in pending where !seen.writing {
            guard let now = Self.stat(path) else {
                pending[path] = nil  // gone
                continue
            }
            if now.size != seen.size || now.modified != seen.modified {
                pending[path] = Seen(size: now.size, modified: now.modified, since: clock.now, writing: false)
            } else if clock.now - seen.since >= settle {
                pending[path] = nil
                ready.append(path)
            }
        }
        return ready.sorted()
    }

    /// Size and modification time of a regular file, or nil.
    static func stat(_ path: String) -> (size: Int64, modified: Double)? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (Int64(info.st_size), Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }
}
