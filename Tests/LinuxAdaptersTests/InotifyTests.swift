import Foundation
import Testing
import TestSupport
import LinuxAdapters

@Suite struct InotifyTests {
    /// `struct inotify_event` records as the kernel lays them out: wd, mask, cookie, len, name
    /// padded with NULs; a truncated record ends the list without reading past the buffer.
    @Test func parsesEventRecords() {
        func record(_ wd: Int32, _ mask: UInt32, _ name: String, padTo length: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            withUnsafeBytes(of: wd.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: UInt32(7).littleEndian) { bytes += $0 }
            withUnsafeBytes(of: UInt32(length).littleEndian) { bytes += $0 }
            bytes += Array(name.utf8) + [UInt8](repeating: 0, count: length - name.utf8.count)
            return bytes
        }
        let two = record(1, 0x8, "run.fit", padTo: 16) + record(1, 0x80, "", padTo: 0)
        let events = two.withUnsafeBytes { InotifyEvent.parse($0) }
        #expect(events == [InotifyEvent(watch: 1, mask: 0x8, cookie: 7, name: "run.fit"),
                           InotifyEvent(watch: 1, mask: 0x80, cookie: 7, name: "")])
        #expect(events[0].isCloseWrite && events[1].isMovedTo)
        // Every truncation: whole records only, never a crash.
        for cut in 0..<two.count {
            let parsed = Array(two[..<cut]).withUnsafeBytes { InotifyEvent.parse($0) }
            #expect(parsed.count == (cut >= 32 ? 1 : 0) + (cut >= two.count ? 1 : 0))
        }
        // A length larger than what follows stops the parse.
        let lying = record(1, 0x8, "x", padTo: 4).prefix(16) + [0x78]
        #expect(Array(lying).withUnsafeBytes { InotifyEvent.parse($0) }.isEmpty)
    }

    /// A real inotify instance on a temporary folder: a file written in two parts is reported
    /// once closed; a file moved in is reported as moved in; closing ends the stream.
    @Test func reportsClosedAndMovedFiles() async throws {
        let folder = try temporaryFolder("inotify")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let inotify = try Inotify()
        try inotify.watch(folder, mask: UInt32(IN_CLOSE_WRITE | IN_MOVED_TO))
        // O_CLOEXEC: a process other tests start meanwhile must not hold it (its exit would close
        // the file a second time, and the kernel would report that close too).
        let fd = open(folder + "/a.fit", O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        handle.write(Data("first".utf8))
        handle.write(Data("second".utf8))
        try handle.close()
        // The file moved in is written through O_CLOEXEC too (Foundation's write does not set it:
        // a process started meanwhile kept it open and its exit reported a close of b.fit).
        let moved = open(NSTemporaryDirectory() + "hg-moved-\(getpid()).fit", O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        try #require(moved >= 0)
        #expect(write(moved, "x", 1) == 1)
        close(moved)
        try FileManager.default.moveItem(atPath: NSTemporaryDirectory() + "hg-moved-\(getpid()).fit", toPath: folder + "/b.fit")
        var seen: [String] = []
        for await event in inotify.events {
            if event.isCloseWrite { seen.append("closed " + event.name) }
            if event.isMovedTo { seen.append("moved " + event.name) }
            if seen.count == 2 { break }
        }
        // Both, in either order: a process another test spawns between the open and the close of
        // a.fit holds a copy of its descriptor until it execs (O_CLOEXEC closes it only then), and
        // the kernel reports the close when the last copy goes, which can be after the move
        // (fresh-clone CI saw "moved b.fit" first).
        #expect(seen.sorted() == ["closed a.fit", "moved b.fit"])
        inotify.close()
        var after: [String] = []
        for await event in inotify.events { after.append("\(event.name) mask \(String(event.mask, radix: 16))") }
        #expect(after.isEmpty, "\(after)")
    }
}

