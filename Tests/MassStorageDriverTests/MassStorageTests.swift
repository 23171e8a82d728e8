import DriverKit
import Foundation
import LinuxAdapters
import Logging
import Testing
import TestSupport
@testable import MassStorageDriver

@Suite struct MountInfoTests {
    let sample = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        36 22 0:30 / /run rw,nosuid,nodev shared:12 - tmpfs tmpfs rw,size=1625640k
        412 36 8:17 / /run/media/ann/GARMIN\\040FR945 rw,nosuid,nodev,relatime shared:230 - vfat /dev/sdb1 rw,fmask=0022
        418 22 8:33 / /media/usb0 ro,nosuid,nodev,relatime shared:240 - vfat /dev/sdc1 ro
        500 22 8:49 / /mediax rw shared:1 - ext4 /dev/sdd1 rw
        garbage line
        501 x 8:1 / /mnt rw - ext4 /dev/sde1 rw
        """

    @Test func parsesMountsAndReportsBadLines() {
        let (mounts, errors) = MountInfo.parse(sample)
        #expect(mounts.map(\.mountPoint) == ["/", "/run", "/run/media/ann/GARMIN FR945", "/media/usb0", "/mediax"])
        #expect(mounts[2] == Mount(id: 412, mountPoint: "/run/media/ann/GARMIN FR945", fileSystem: "vfat", source: "/dev/sdb1", readOnly: false))
        #expect(mounts[3].readOnly)
        #expect(errors == [MountInfoError(line: 6, reason: "expected at least 6 fields, '-', then 3 more"),
                           MountInfoError(line: 7, reason: "mount and parent IDs must be numbers")])
        let under = MountInfo.mounts(mounts, under: ["/media", "/run/media/"])
        #expect(under.map(\.mountPoint) == ["/run/media/ann/GARMIN FR945", "/media/usb0"])
    }

    @Test func unescapesOctal() {
        #expect(MountInfo.unescape("a\\040b\\011c\\012d\\134e") == "a b\tc\nd\\e")
        #expect(MountInfo.unescape("trailing\\04") == "trailing\\04")
        #expect(MountInfo.unescape("\\999") == "\\999")
    }

    /// A folder laid out like a Garmin watch: the FIT files of its data folders, any case.
    @Test func findsAWatchsFitFiles() async throws {
        let root = try temporaryFolder("volume")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        for folder in ["GARMIN/ACTIVITY", "GARMIN/Monitor", "GARMIN/Sleep", "GARMIN/HRVStatus", "GARMIN/Apps", "Music"] {
            try fm.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        for file in ["GARMIN/ACTIVITY/A1.FIT", "GARMIN/Monitor/m1.fit", "GARMIN/Sleep/s1.fit", "GARMIN/HRVStatus/h1.fit", "GARMIN/Apps/app.prg",
                     "GARMIN/Apps/x.fit", "Music/song.fit", "GARMIN/ACTIVITY/._A1.FIT"] {
            try #require(fm.createFile(atPath: root + "/" + file, contents: Data()))
        }
        #expect(WatchVolume.fitFiles(at: root) == [root + "/GARMIN/ACTIVITY/A1.FIT", root + "/GARMIN/HRVStatus/h1.fit",
                                                    root + "/GARMIN/Monitor/m1.fit", root + "/GARMIN/Sleep/s1.fit"])
        #expect(WatchVolume.fitFiles(at: root + "/Music").isEmpty)
    }

    /// Mounts coming and going, and what the events in their watched folders ask for.
    @Test func volumeWatchesFollowMountsAndEvents() {
        func mount(_ id: Int, _ point: String) -> Mount {
            Mount(id: id, mountPoint: point, fileSystem: "vfat", source: "/dev/sdb1", readOnly: false)
        }
        func event(_ wd: Int32, _ mask: Int32, _ name: String) -> InotifyEvent {
            InotifyEvent(watch: wd, mask: UInt32(mask), cookie: 0, name: name)
        }
        var state = VolumeWatches()
        let watch = mount(412, "/media/ann/FR945")
        var (arrived, removed) = state.update([watch])
        #expect(arrived == [watch] && removed.isEmpty)
        let key = VolumeWatches.key(watch)
        state.added(1, .init(kind: .volume, path: watch.mountPoint, mount: key))
        state.added(2, .init(kind: .device, path: watch.mountPoint + "/GARMIN", mount: key))
        state.added(3, .init(kind: .data, path: watch.mountPoint + "/GARMIN/Activity", mount: key))
        // The same mount read again is not a new visit.
        (arrived, removed) = state.update([watch])
        #expect(arrived.isEmpty && removed.isEmpty)

        #expect(state.handle(event(3, IN_CLOSE_WRITE, "A1.FIT")) == .importFile("/media/ann/FR945/GARMIN/Activity/A1.FIT"))
        #expect(state.handle(event(3, IN_MOVED_TO, "b.fit")) == .importFile("/media/ann/FR945/GARMIN/Activity/b.fit"))
        #expect(state.handle(event(3, IN_CLOSE_WRITE, "._A1.FIT")) == nil)
        #expect(state.handle(event(3, IN_CLOSE_WRITE, "notes.txt")) == nil)
        #expect(state.handle(event(3, IN_CREATE, "c.fit")) == nil, "created, not yet written: wait for the close")
        #expect(state.handle(event(2, IN_CREATE | IN_ISDIR, "SLEEP"))
                == .watch(.data, path: "/media/ann/FR945/GARMIN/SLEEP", mount: key))
        #expect(state.handle(event(2, IN_CREATE | IN_ISDIR, "Apps")) == nil)
        #expect(state.handle(event(1, IN_MOVED_TO | IN_ISDIR, "Garmin"))
                == .watch(.device, path: "/media/ann/FR945/Garmin", mount: key))
        #expect(state.handle(event(1, IN_CREATE, "GARMIN")) == nil, "a file named GARMIN is not the folder")
        #expect(state.handle(event(9, IN_CLOSE_WRITE, "x.fit")) == nil, "unknown watch")
        #expect(state.handle(event(-1, IN_Q_OVERFLOW, "")) == .rescan)
        // The kernel drops a watch (folder deleted, volume unmounted): its events mean nothing.
        #expect(state.handle(event(3, IN_IGNORED, "")) == nil)
        #expect(state.handle(event(3, IN_CLOSE_WRITE, "A2.FIT")) == nil)

        // Unplugged: its watches are removed; plugged in again (a new mount ID): a new visit.
        (arrived, removed) = state.update([])
        #expect(arrived.isEmpty && removed == [1, 2])
        #expect(state.watches.isEmpty && state.mounts.isEmpty)
        state.added(5, .init(kind: .volume, path: watch.mountPoint, mount: key))
        #expect(state.watches.isEmpty, "a watch for a mount no longer visited is not kept")
        let again = mount(415, "/media/ann/FR945")
        (arrived, removed) = state.update([again])
        #expect(arrived == [again] && removed.isEmpty)
    }

    /// On the kernel's own mount table the driver waits on a flagged descriptor: it starts,
    /// finds nothing under an empty root, reports no problem, and a stop ends it at once.
    @Test func watchesTheKernelsMountTable() async throws {
        let folder = try temporaryFolder("mounts-proc")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let problems = Problems()
        var settings = MassStorage.Settings()
        settings.roots = [folder + "/media"]
        let context = DriverContext(instance: "w", logger: Logger(label: "test"), events: { problems.add("\($0)") })
        let driver = MassStorage(settings: settings, context: context)
        let task = Task { try await driver.run() }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        let ended = await task.result
        if case .failure(let error) = ended { #expect(error is CancellationError, "\(error)") }
        #expect(problems.all.isEmpty, "\(problems.all)")

        settings.mountInfo = "/proc/self/no-such-table"
        let broken = MassStorage(settings: settings, context: .standalone("w"))
        await #expect(throws: ConfigError.self) { try await broken.run() }
    }

    @Test func settingsNameTheirKey() {
        func check(_ table: [String: ConfigValue]) throws(ConfigError) {
            _ = try MassStorage.descriptor.makeDeviceDriver(table, context: .standalone("w"))
        }
        #expect(throws: ConfigError(keyPath: "roots", reason: "must be a list of absolute folders")) {
            try check(["roots": .array([.string("media")])])
        }
        #expect(throws: ConfigError(keyPath: "roots", reason: "must be a list")) { try check(["roots": .string("/media")]) }
        #expect(throws: ConfigError(keyPath: "root", reason: "unknown key")) { try check(["root": .array([.string("/media")])]) }
    }
}

final class Problems: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    var all: [String] { lock.withLock { list } }
    func add(_ problem: String) { lock.withLock { list.append(problem) } }
}
