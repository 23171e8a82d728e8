import Foundation
import Testing
import LinuxAdapters
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite struct MemoryTrimTests {
    @Test func picksTheReadOnlyFileMappings() {
        let maps = """
            55d0c0000000-55d0c1413000 r-xp 00000000 fe:00 1234   /usr/local/bin/healthgate
            55d0c1415000-55d0c1500000 rw-p 01414000 fe:00 1234   /usr/local/bin/healthgate
            7f0000000000-7f0000100000 r--p 00000000 fe:00 99     /usr/lib/x86_64-linux-gnu/libc.so.6
            7f0000200000-7f0000300000 r--s 00000000 fe:00 77     /var/lib/healthgate/healthgate.sqlite-shm
            7f0000400000-7f0000500000 rw-p 00000000 00:00 0
            7f0000600000-7f0000700000 r--p 00000000 00:00 0      [vvar]
            7f0000800000-7f0000900000 r-xp 00000000 fe:00 5      /opt/my lib/with spaces.so
            garbage
            7f0000a00000-7f0000900000 r-xp 00000000 fe:00 5      /backwards
            """
        // The addresses as the maps text above spells them, ungrouped.
        // swift-format-ignore: GroupNumericLiterals
        #expect(MemoryTrim.readOnlyFileRegions(maps) == [
            0x55d0c0000000..<0x55d0c1413000, 0x7f0000000000..<0x7f0000100000, 0x7f0000200000..<0x7f0000300000,
            0x7f0000800000..<0x7f0000900000,
        ])
    }

    @Test func readsTheResidentSet() {
        #expect(MemoryTrim.residentBytes(status: "Name:\thealthgate\nVmRSS:\t   35404 kB\nRssAnon:\t 3848 kB\n") == 35404 * 1024)
        #expect(MemoryTrim.residentBytes(status: "Name:\thealthgate\n") == nil)
        #expect(MemoryTrim.residentBytes(status: "VmRSS:\tlots kB\n") == nil)
        #expect(MemoryTrim.residentBytes() ?? 0 > 0, "this process's own")
    }

    /// A real read-only file mapping, every page touched: after the trim its pages are no
    /// longer resident (and reading them again still gives the file's bytes).
    @Test func givesBackTheTouchedPagesOfAFileMapping() throws {
        let folder = try temporaryFolder("trim")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/code.bin"
        let size = 8 << 20
        var content = [UInt8](repeating: 0xA5, count: size)
        for page in stride(from: 0, to: size, by: 4096) { content[page] = UInt8(truncatingIfNeeded: page / 4096) }
        try Data(content).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let mapped = try #require(mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0))
        try #require(mapped != MAP_FAILED)
        defer { munmap(mapped, size) }
        let bytes = mapped.assumingMemoryBound(to: UInt8.self)
        var sum = 0
        for page in stride(from: 0, to: size, by: 4096) { sum &+= Int(bytes[page]) }
        let start = UInt(bitPattern: mapped)
        let line = String(start, radix: 16) + "-" + String(start + UInt(size), radix: 16) + " r--p 00000000 fe:00 1 " + path
        let before = try residentKB(of: start)
        #expect(before >= 7 * 1024, "touched pages are resident")

        #expect(MemoryTrim.releaseFileBackedPages(maps: line) == 1)
        let after = try residentKB(of: start)
        #expect(after < before / 4, "\(before) kB before, \(after) kB after")
        var again = 0
        for page in stride(from: 0, to: size, by: 4096) { again &+= Int(bytes[page]) }
        #expect(again == sum)
    }

    /// Kernel files are read whole (Foundation stops after their first page).
    @Test func readsKernelFilesWhole() throws {
        let smaps = try ProcFile.read("/proc/self/smaps")
        #expect(smaps.utf8.count > 16 * 1024, "a test process maps dozens of files")
        #expect(smaps.hasSuffix("\n") && smaps.contains("[stack]"))
        #expect(throws: ProcFile.Failure.self) { try ProcFile.read("/proc/self/no-such-file") }
    }

    /// The `Rss:` of the mapping that starts at `start`, from /proc/self/smaps.
    func residentKB(of start: UInt) throws -> Int {
        let smaps = try ProcFile.read("/proc/self/smaps")
        let prefix = String(start, radix: 16) + "-"
        let lines = smaps.split(separator: "\n")
        let index = try #require(lines.firstIndex { $0.hasPrefix(prefix) }, "\(prefix) in \(lines.filter { $0.contains("code.bin") })")
        let rss = try #require(lines[(index + 1)...].first { $0.hasPrefix("Rss:") })
        return try #require(Int(rss.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
