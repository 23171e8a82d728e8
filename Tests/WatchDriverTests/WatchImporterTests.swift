import DriverKit
import Foundation
import HealthModel
import Synchronization
import Testing
import TestSupport
import WatchDriver
import WatchLayout

/// A watch in memory: files by path, with what a copy of each does.
private final class FakeWatch: WatchConnection, @unchecked Sendable {
    enum Copy { case whole, cutAfter(Int), fails(String) }
    struct Stored { var bytes: [UInt8]; var modified: Date; var copy: Copy = .whole }

    let watch = AttachedWatch(serial: "3991234567", name: "Forerunner 245 Music", attachment: .mtp, place: "bus 1 device 2")
    let state = Mutex<[String: Stored]>([:])
    let copies = Mutex<[String]>([])

    func put(_ path: String, _ bytes: [UInt8], modified: Date = Date(timeIntervalSinceNow: -3600), copy: Copy = .whole) {
        state.withLock { $0[path] = Stored(bytes: bytes, modified: modified, copy: copy) }
    }

    func listing(_ found: ([(file: WatchFile, ref: WatchRef)]) async throws -> Void) async throws {
        try await found(allFiles())
    }

    func allFiles() -> [(file: WatchFile, ref: WatchRef)] {
        state.withLock { files in
            files.keys.sorted().map { path in
                let kind: WatchFolderKind = path.contains("/Monitor/") ? .monitor : .activity
                return (WatchFile(path: path, size: UInt64(files[path]!.bytes.count), modified: files[path]!.modified, kind: kind), .path(path))
            }
        }
    }

    func copy(_ ref: WatchRef, to fd: Int32, progress: @escaping @Sendable (UInt64) -> Void) async throws {
        guard case .path(let path) = ref, let stored = state.withLock({ $0[path] }) else { throw CocoaError(.fileNoSuchFile) }
        copies.withLock { $0.append(path) }
        var bytes = stored.bytes
        switch stored.copy {
        case .whole: break
        case .cutAfter(let count): bytes = Array(bytes.prefix(count))
        case .fails(let reason): throw FakeFailure(description: reason)
        }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        progress(UInt64(bytes.count))
        if case .cutAfter = stored.copy { throw FakeFailure(description: "PTP I/O Error (unplugged)") }
    }

    func close() async {}
}

private struct FakeFailure: Error, CustomStringConvertible { var description: String }

/// The store's side: checkpoints stored with the files' imports, one transaction each; a file
/// whose import "fails to store" stores nothing.
private final class FakeStore: RecordSink, FileSink, @unchecked Sendable {
    let checkpoints = Mutex<[String: String]>([:])
    let imported = Mutex<[String]>([])
    let notStored = Mutex<Set<String>>([])

    func emit(_ batch: [HealthRecord]) async throws {}
    func emit(_ batch: LiveBatch) async throws {}
    func checkpoint(_ key: CheckpointKey) async throws -> String? { checkpoints.withLock { $0["\(key)"] } }

    func importFile(_ path: String, checkpoints new: [CheckpointKey: String]) async -> FileReport {
        if notStored.withLock({ $0.contains((path as NSString).lastPathComponent) }) {
            var report = FileReport(path: path, status: .failed, error: "database is full")
            report.notStored = true
            return report
        }
        imported.withLock { $0.append(path) }
        checkpoints.withLock { for (key, value) in new { $0["\(key)"] = value } }
        return FileReport(path: path, status: .imported, driver: "fit", records: 1)
    }
}

@Suite struct WatchImporterTests {
    let folder = NSTemporaryDirectory() + "watch-importer-\(UUID().uuidString)"

    func importer(_ configure: (inout WatchImporter.Configuration) -> Void = { _ in }) -> WatchImporter {
        var configuration = WatchImporter.Configuration(folder: folder)
        configuration.planner.settle = 0.2
        configure(&configuration)
        return WatchImporter(configuration: configuration)
    }

    func leftovers() -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).filter { $0.contains(".tmp-") }
    }

    @Test("files are copied byte for byte, imported with the checkpoint, and not fetched again")
    func fetchesOnce() async throws {
        let watch = FakeWatch(), store = FakeStore()
        watch.put("GARMIN/Activity/A1.FIT", Array("activity".utf8))
        watch.put("GARMIN/Monitor/M1.FIT", Array("monitor".utf8))
        let first = try await importer().run(watch, sink: store, files: store)
        #expect(first.fetched == ["GARMIN/Activity/A1.FIT", "GARMIN/Monitor/M1.FIT"])
        #expect(first.bytes == 15 && first.records == 2 && first.failed.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/3991234567/GARMIN/Activity/A1.FIT")) == Data("activity".utf8))
        let second = try await importer().run(watch, sink: store, files: store)
        #expect(second.fetched.isEmpty && second.alreadyFetched == 2)
        // A file changed on the watch (new size) is a new version.
        watch.put("GARMIN/Activity/A1.FIT", Array("activity, longer".utf8))
        let third = try await importer().run(watch, sink: store, files: store)
        #expect(third.fetched == ["GARMIN/Activity/A1.FIT"] && third.alreadyFetched == 1)
        #expect(watch.copies.withLock { $0.count } == 3)
    }

    @Test("a copy cut off (the watch unplugged) leaves no file, no checkpoint and no import; the next look fetches it")
    func cutOff() async throws {
        let watch = FakeWatch(), store = FakeStore()
        watch.put("GARMIN/Activity/BIG.FIT", [UInt8](repeating: 7, count: 5000), copy: .cutAfter(1000))
        let summary = try await importer().run(watch, sink: store, files: store)
        #expect(summary.fetched.isEmpty && summary.failed.count == 1 && summary.failed[0].contains("PTP I/O Error"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/3991234567/GARMIN/Activity/BIG.FIT"))
        #expect(leftovers().isEmpty && store.imported.withLock { $0.isEmpty })
        #expect(store.checkpoints.withLock { $0.isEmpty })
        watch.put("GARMIN/Activity/BIG.FIT", [UInt8](repeating: 7, count: 5000))
        let again = try await importer().run(watch, sink: store, files: store)
        #expect(again.fetched == ["GARMIN/Activity/BIG.FIT"] && again.bytes == 5000)
    }

    @Test("a watch that gives fewer bytes than it listed, without an error, is not believed")
    func shortCopy() async throws {
        let watch = FakeWatch(), store = FakeStore()
        final class Short: WatchConnection, @unchecked Sendable {
            let base: FakeWatch
            init(_ base: FakeWatch) { self.base = base }
            var watch: AttachedWatch { base.watch }
            func listing(_ found: ([(file: WatchFile, ref: WatchRef)]) async throws -> Void) async throws { try await found(base.allFiles()) }
            func copy(_ ref: WatchRef, to fd: Int32, progress: @escaping @Sendable (UInt64) -> Void) async throws {
                _ = [UInt8](repeating: 1, count: 10).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            func close() async {}
        }
        watch.put("GARMIN/Activity/A1.FIT", [UInt8](repeating: 1, count: 100))
        let summary = try await importer().run(Short(watch), sink: store, files: store)
        #expect(summary.failed.count == 1 && summary.failed[0].contains("gave 10 bytes of the 100"), "\(summary.failed)")
        #expect(leftovers().isEmpty && store.checkpoints.withLock { $0.isEmpty })
    }

    @Test("a file whose records could not be stored is not marked fetched")
    func notStored() async throws {
        let watch = FakeWatch(), store = FakeStore()
        watch.put("GARMIN/Activity/A1.FIT", Array("a".utf8))
        watch.put("GARMIN/Activity/A2.FIT", Array("b".utf8))
        store.notStored.withLock { $0 = ["A1.FIT"] }
        let summary = try await importer().run(watch, sink: store, files: store)
        #expect(summary.failed.count == 1 && summary.failed[0].contains("not stored"))
        let fetched = try #require(try await store.checkpoint(WatchFetched.self, device: WatchFetched.device(serial: "3991234567")))
        #expect(Array(fetched.files.keys) == ["GARMIN/Activity/A2.FIT"])
        store.notStored.withLock { $0 = [] }
        let again = try await importer().run(watch, sink: store, files: store)
        #expect(again.fetched == ["GARMIN/Activity/A1.FIT"])
    }

    @Test("a file being written is left for a later look within the same run, then fetched")
    func stillWriting() async throws {
        let watch = FakeWatch(), store = FakeStore()
        watch.put("GARMIN/Activity/A1.FIT", Array("a".utf8), modified: Date())
        let events = Mutex<[Int]>([])
        let summary = try await importer {
            $0.onEvent = { event in if case .stillWriting(let count) = event { events.withLock { $0.append(count) } } }
        }.run(watch, sink: store, files: store)
        #expect(summary.fetched == ["GARMIN/Activity/A1.FIT"] && summary.stillWriting.isEmpty)
        #expect(events.withLock { $0 } == [1], "one look again, for the one file")
        // With one look only, a file being written is left for the next run, and said to be.
        watch.put("GARMIN/Activity/A2.FIT", Array("b".utf8), modified: Date())
        let once = try await importer { $0.looks = 1 }.run(watch, sink: store, files: store)
        #expect(once.stillWriting == ["GARMIN/Activity/A2.FIT"] && once.fetched.isEmpty)
    }

    @Test("hostile paths and sizes are refused, named, and never copied")
    func refused() async throws {
        let watch = FakeWatch(), store = FakeStore()
        watch.put("GARMIN/Activity/../../../etc/passwd.fit", Array("x".utf8))
        let summary = try await importer().run(watch, sink: store, files: store)
        #expect(summary.refused.count == 1 && summary.refused[0].contains("not a plain path"))
        #expect(watch.copies.withLock { $0.isEmpty })
    }

    @Test("a device's serial never picks where files are written")
    func safeSerial() {
        #expect(AttachedWatch.safeSerial("3991234567") == "3991234567")
        #expect(AttachedWatch.safeSerial("../../etc") == ".._.._etc")
        #expect(AttachedWatch.safeSerial("..") == "unknown" && AttachedWatch.safeSerial("") == "unknown")
        #expect(AttachedWatch.safeSerial("a/b\u{0}c") == "a_b_c")
        #expect(AttachedWatch.safeSerial(String(repeating: "9", count: 500)).count == 64)
    }
}

@Suite struct WatchDriverMountTests {
    let base = NSTemporaryDirectory() + "watch-driver-\(UUID().uuidString)"

    func mountLine(id: Int, _ mountPoint: String) -> String {
        "\(id) 1 8:17 / \(mountPoint) rw,nosuid - vfat /dev/sdb1 rw\n"
    }

    @Test("a watch mounted under a root is fetched once; mounted again, nothing is fetched; a new file, only it")
    func mountedWatch() async throws {
        let volume = base + "/media/GARMIN-WATCH"
        let activity = volume + "/GARMIN/Activity"
        try FileManager.default.createDirectory(atPath: activity, withIntermediateDirectories: true)
        try Data("<Device><Model><Description>Forerunner 735XT</Description></Model><Id>3912345678</Id></Device>".utf8)
            .write(to: URL(fileURLWithPath: volume + "/GARMIN/GarminDevice.xml"))
        let old = Date(timeIntervalSinceNow: -3600)
        for name in ["A1.FIT", "A2.FIT"] {
            try Data(name.utf8).write(to: URL(fileURLWithPath: activity + "/" + name))
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: activity + "/" + name)
        }
        let mountInfo = base + "/mountinfo"
        try mountLine(id: 40, volume).write(toFile: mountInfo, atomically: true, encoding: .utf8)
        let store = FakeStore()
        let events = Mutex<[DriverEvent]>([])
        let context = DriverContext(instance: "watch", logger: .init(label: "test"), files: store, stateDirectory: base + "/state",
                                    events: { event in events.withLock { $0.append(event) } })
        let settings = try ConfigDecoder.decode(WatchDriver.Settings.self, from: [
            "mtp": .bool(false), "roots": .array([.string(base + "/media")]), "mountinfo": .string(mountInfo),
        ])
        let driver = WatchDriver(settings: settings, context: context)
        let task = Task { try await driver.run(into: store) }
        defer { task.cancel() }
        func fetchedPaths() async throws -> [String] {
            try await store.checkpoint(WatchFetched.self, device: WatchFetched.device(serial: "3912345678"))?.files.keys.sorted() ?? []
        }
        try await eventually("both files fetched") { try await fetchedPaths() == ["GARMIN/Activity/A1.FIT", "GARMIN/Activity/A2.FIT"] }
        #expect(FileManager.default.contents(atPath: base + "/state/watch/3912345678/GARMIN/Activity/A1.FIT") == Data("A1.FIT".utf8))
        #expect(events.withLock { $0.contains(.connected(device: "watch:3912345678", name: "Forerunner 735XT")) })

        // Unmounted (the watch is gone from the status), a new file written, mounted again (a new
        // mount ID): only the new file.
        try "".write(toFile: mountInfo, atomically: true, encoding: .utf8)
        try await eventually("the watch reported gone") { events.withLock { $0.contains(.disconnected(device: "watch:3912345678")) } }
        try Data("A3.FIT".utf8).write(to: URL(fileURLWithPath: activity + "/A3.FIT"))
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: activity + "/A3.FIT")
        try mountLine(id: 41, volume).write(toFile: mountInfo, atomically: true, encoding: .utf8)
        try await eventually("the new file fetched") { try await fetchedPaths().count == 3 }
        #expect(store.imported.withLock { $0.count } == 3)
    }

    @Test("settings: roots must be absolute, since a day, folder absolute")
    func settings() throws {
        #expect(throws: ConfigError.self) { try ConfigDecoder.decode(WatchDriver.Settings.self, from: ["roots": .array([.string("media")])]) }
        #expect(throws: ConfigError.self) { try ConfigDecoder.decode(WatchDriver.Settings.self, from: ["since": .string("last year")]) }
        #expect(throws: ConfigError.self) { try ConfigDecoder.decode(WatchDriver.Settings.self, from: ["folder": .string("watch")]) }
        let settings = try ConfigDecoder.decode(WatchDriver.Settings.self, from: ["since": .string("2026-03-01")])
        #expect(settings.since == Date(timeIntervalSince1970: 1_772_323_200))
    }
}

