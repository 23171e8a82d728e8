public import DriverKit
import Foundation
import LinuxAdapters
#if canImport(Glibc)
import Glibc
#endif

/// The `watch_folder` driver: imports every file that lands in a folder (FIT, TCX, GPX), once it
/// is complete: when the writer closes it, when it is moved in, or, for a file whose writing was
/// not seen (there at start, copied by a tool inotify cannot follow), when its size and time have
/// not changed for `settle_s`. Afterwards the file is moved to `imported/` (or `failed/`), left in
/// place, or deleted, as `after_import` says. Hidden files, temporary names (`*.part`, `*.tmp`,
/// `*.crdownload`, `*~`) and folders are ignored. Files go to the context's file sink (the import
/// pipeline): each file is one transaction and the import ledger knows its content, so a file is
/// stored once even if the daemon stops half-way.
public struct WatchFolder: DeviceDriver {
    public static let id = "watch_folder"

    public enum AfterImport: String, ConfigChoice { case move, keep, delete }

    /// The `[drivers.NAME]` table: `path` (required), `after_import`, `settle_s`.
    public struct Settings: Decodable, Sendable, Equatable {
        public var path: String
        public var afterImport = AfterImport.move
        public var settle: Duration = .seconds(2)

        public init(path: String) { self.path = path }

        enum CodingKeys: String, CodingKey { case path, afterImport = "after_import", settle = "settle_s" }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            path = try c.decode(String.self, forKey: .path, required: "the folder to watch")
            guard !path.isEmpty else { throw c.configError(.path, "is required (the folder to watch)") }
            afterImport = try c.decodeIfPresent(AfterImport.self, forKey: .afterImport) ?? .move
            settle = try c.decodeIfPresent(duration: .settle, unit: .seconds, in: .milliseconds(100)...(.seconds(3600))) ?? .seconds(2)
        }
    }

    let settings: Settings
    let files: any FileSink
    let context: DriverContext

    /// Ready once the folder is watched and listed: a file written from then on is seen being written.
    public static let announcesReady = true

    public init(settings: Settings, context: DriverContext) {
        self.settings = settings
        self.files = context.files
        self.context = context
    }

    /// Watches the folder until cancelled. Stores nothing itself: records reach the store
    /// through the file sink.
    public func run(into sink: some RecordSink) async throws {
        try await run()
    }

    func run() async throws {
        try PrivateFiles.createDirectory(settings.path)
        let inotify = try Inotify()
        defer { inotify.close() }
        try inotify.watch(settings.path, mask: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM
                                                     | IN_MODIFY))
        let inbox = Inbox(folder: settings.path, settle: settings.settle)
        await inbox.rescan()  // after the watch is in place, so nothing falls between
        context.report(.ready)
        // One task handles events and settle ticks in order; ticks run only while files wait,
        // so an idle folder costs no wake-ups.
        let (wakes, wake) = AsyncStream<Wake>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in inotify.events { wake.yield(.event(event)) }
            }
            let settleTimer = SettleTimer()
            group.addTask { await settleTimer.run(after: settings.settle / 2) { wake.yield(.settleTick) } }
            group.addTask {
                var timer = settleTimer
                wake.yield(.settleTick)
                for await next in wakes {
                    switch next {
                    case .event(let event):
                        for path in await inbox.handle(event) { await self.importFile(path) }
                    case .settleTick:
                        timer.fired()
                        for path in await inbox.settled() { await self.importFile(path) }
                    }
                    if await !inbox.isIdle { timer.schedule() }
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
        let report = await files.importFile(path)
        // Stopped meanwhile: a failure may be the stop's; the file stays for the next start.
        if Task.isCancelled, report.status == .failed { return }
        let succeeded = [.imported, .partial, .alreadyImported].contains(report.status)
        switch (settings.afterImport, succeeded) {
        case (.keep, _): break
        case (.delete, true): try? FileManager.default.removeItem(atPath: path)
        case (.move, true): Self.move(path, into: settings.path + "/imported")
        case (_, false): Self.move(path, into: settings.path + "/failed")
        }
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

extension WatchFolder {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        WatchFolder.self, summary: "Imports every file that lands in a folder, once complete, then moves, keeps or deletes it",
        sample: PackageResources.sample_toml)
}
