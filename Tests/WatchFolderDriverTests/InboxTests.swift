import DriverKit
import Foundation
import LinuxAdapters
import Testing
import TestSupport
@testable import WatchFolderDriver

@Suite struct InboxTests {
    /// A file found by a scan is complete once its size stood still for the settle time; one
    /// seen being written waits for its close; hidden and temporary names are ignored.
    @Test func decidesWhenAFileIsComplete() async throws {
        let folder = try temporaryFolder("inbox")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["found.fit", ".hidden.fit", "copy.fit.part", "backup.fit~"] {
            try "data".write(toFile: folder + "/" + name, atomically: false, encoding: .utf8)
        }
        let inbox = Inbox(folder: folder, settle: .milliseconds(300))
        let clock = ContinuousClock(), scanned = clock.now
        await inbox.rescan()
        #expect(await inbox.waiting == [folder + "/found.fit"])
        // Not stood still long enough yet: checked only while that is so (a loaded machine can
        // take longer than the settle time between the two calls). The sleeps below are longer
        // than the settle time, so the checks after them hold however late they run.
        let early = await inbox.settled()
        if clock.now - scanned < .milliseconds(300) { #expect(early.isEmpty) }
        try await Task.sleep(for: .milliseconds(400))
        #expect(early + (await inbox.settled()) == [folder + "/found.fit"])
        #expect(await inbox.waiting.isEmpty)

        // Being written (IN_MODIFY seen): never by settling, only on close.
        try "part".write(toFile: folder + "/live.fit", atomically: false, encoding: .utf8)
        #expect(await inbox.handle(InotifyEvent(watch: 1, mask: UInt32(IN_MODIFY), cookie: 0, name: "live.fit")).isEmpty)
        try await Task.sleep(for: .milliseconds(400))
        #expect(await inbox.settled().isEmpty)
        #expect(await inbox.handle(InotifyEvent(watch: 1, mask: UInt32(IN_CLOSE_WRITE), cookie: 0, name: "live.fit"))
                == [folder + "/live.fit"])
        // Removed before settling: forgotten. (The files handled above are taken away first, as
        // the driver moves them after importing.)
        for name in ["found.fit", "live.fit"] { try FileManager.default.removeItem(atPath: folder + "/" + name) }
        try "gone".write(toFile: folder + "/gone.fit", atomically: false, encoding: .utf8)
        await inbox.rescan()
        try FileManager.default.removeItem(atPath: folder + "/gone.fit")
        try await Task.sleep(for: .milliseconds(400))
        #expect(await inbox.settled().isEmpty)
        #expect(await inbox.waiting.isEmpty)
        // Temporary and hidden names never count, even on close.
        #expect(await inbox.handle(InotifyEvent(watch: 1, mask: UInt32(IN_CLOSE_WRITE), cookie: 0, name: "x.tmp")).isEmpty)
    }

    @Test func settingsNameTheirKey() {
        func check(_ table: [String: ConfigValue]) throws(ConfigError) {
            _ = try WatchFolder.descriptor.makeDeviceDriver(table, context: .standalone("in"))
        }
        #expect(throws: ConfigError(keyPath: "path", reason: "is required (the folder to watch)")) { try check([:]) }
        #expect(throws: ConfigError(keyPath: "after_import", reason: "'archive' is not one of move, keep, delete")) {
            try check(["path": .string("/x"), "after_import": .string("archive")])
        }
        #expect(throws: ConfigError(keyPath: "pat", reason: "unknown key")) { try check(["path": .string("/x"), "pat": .string("/y")]) }
        #expect(throws: ConfigError(keyPath: "settle_s", reason: "is out of range (0.1 to 3600)")) {
            try check(["path": .string("/x"), "settle_s": .integer(0)])
        }
    }
}
