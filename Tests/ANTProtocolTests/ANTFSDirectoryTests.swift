import ANTFS
import TestSupport
import Testing

@Suite struct ANTFSDirectoryTests {
    typealias L = ANTFSLayout

    /// One entry by the layout: index, data type, subtype, file number, type flags, flags, size,
    /// date.
    static func entry(
        _ index: UInt16, type: UInt8 = 0x80, sub: UInt8, number: UInt16, typeFlags: UInt8 = 0, flags: UInt8, size: UInt32, date: UInt32
    ) -> [UInt8] {
        L.le16(index) + [type, sub] + L.le16(number) + [typeFlags, flags] + L.le32(size) + L.le32(date)
    }

    static func header(version: UInt8 = 0x01, length: UInt8 = 16, timeFormat: UInt8 = 0, systemTime: UInt32 = 0, modified: UInt32 = 0)
        -> [UInt8]
    {
        [version, length, timeFormat, 0, 0, 0, 0, 0] + L.le32(systemTime) + L.le32(modified)
    }

    /// 2012-03-28T17:12:32Z in seconds since the FIT epoch (1989-12-31T00:00:00Z).
    static let activityDate: UInt32 = 1_332_954_752 - 631_065_600

    @Test("openant's activity #33 (2336 B, 2012-03-28 17:12:32Z, r-eA--), built from its fields")
    func openantEntry() throws {
        // Entry 7 of the directory blob in Tigge/antfs-cli ant/fs/test/file_test.py (also openant
        // tests/fs/test_file.py): 07 00 80 04 21 00 00 b0 20 09 00 00 80 fa d5 29.
        let bytes = Self.entry(7, sub: 4, number: 33, flags: 0x80 | 0x20 | 0x10, size: 2336, date: Self.activityDate)
        #expect(bytes == L.bytes("07 00 80 04 21 00 00 b0 20 09 00 00 80 fa d5 29"))
        let directory = try ANTFSDirectory.parse(Self.header() + bytes)
        let e = try #require(directory.entries.first)
        #expect(directory.entries.count == 1)
        #expect(e.index == 7 && e.dataType == 0x80 && e.isFIT && e.subType == 4 && e.fileNumber == 33)
        #expect(e.typeSpecificFlags == 0)
        #expect(e.flags == [.read, .erase, .archived] && e.flags.description == "r-eA--")
        #expect(e.size == 2336 && e.date == 701_889_152)
        #expect(e.hasAbsoluteDate && e.unixTime == 1_332_954_752)
        #expect(e.subTypeName == "activity")
        #expect(e.suggestedFileName == "2012-03-28_17-12-32_4_33.fit")
        #expect(e.fetchKey == "7:701889152:2336")
        #expect(e.bytes == bytes)
        #expect(
            e == ANTFSFileEntry(index: 7, subType: 4, fileNumber: 33, flags: [.read, .erase, .archived], size: 2336, date: 701_889_152))
    }

    @Test("a directory with several entries: header fields, each entry, and its bytes again")
    func severalEntries() throws {
        let bytes =
            Self.header(version: 0x01, timeFormat: 2, systemTime: 0x0102_0304, modified: 0x2A00_0000)
            // Not FIT, no date (like the "Manufacturer" files watches list first).
            + Self.entry(1, type: 0x01, sub: 12, number: 0, flags: 0x50, size: 0x19E000, date: 0)
            + Self.entry(2, sub: 2, number: 1, flags: 0xC0, size: 680, date: Self.activityDate - 86_400)
            + Self.entry(3, sub: 4, number: 34, typeFlags: 0x02, flags: 0xB0, size: 12_704, date: Self.activityDate + 600)
            + Self.entry(0x0102, sub: 32, number: 0x0304, flags: 0x80, size: 0, date: 0x0FFF_FFFF)
        let d = try ANTFSDirectory.parse(bytes)
        #expect(d.version == 0x01 && d.timeFormat == 2 && d.systemTime == 0x0102_0304 && d.lastModified == 0x2A00_0000)
        #expect(d.entries.map(\.index) == [1, 2, 3, 0x0102])
        #expect(
            d.entries[0]
                == ANTFSFileEntry(index: 1, dataType: 1, subType: 12, fileNumber: 0, flags: [.write, .archived], size: 0x19E000, date: 0))
        #expect(!d.entries[0].isFIT && d.entries[0].subTypeName == nil && d.entries[0].unixTime == nil)
        #expect(d.entries[0].suggestedFileName == "systemtime-0_type1_1.bin")
        #expect(d.entries[1].subTypeName == "settings" && d.entries[1].flags == [.read, .write])
        #expect(d.entries[1].suggestedFileName == "2012-03-27_17-12-32_2_1.fit")
        #expect(d.entries[2].typeSpecificFlags == 0x02 && d.entries[2].suggestedFileName == "2012-03-28_17-22-32_4_34.fit")
        #expect(d.entries[3].subTypeName == "monitoring B" && d.entries[3].fileNumber == 0x0304)
        #expect(!d.entries[3].hasAbsoluteDate && d.entries[3].suggestedFileName == "systemtime-268435455_32_772.fit")
        #expect(d.bytes == bytes)
        #expect(try ANTFSDirectory.parse(ANTFSDirectory.parse(bytes).bytes) == d)
        #expect(try ANTFSDirectory.parse(Self.header()).entries.isEmpty)
    }

    @Test("refused: a header cut short, an element length other than 16, an entry cut short, more than the limit")
    func errors() throws {
        #expect(throws: ANTFSError.truncated(field: "directory header", offset: 0, needed: 16, available: 10)) {
            try ANTFSDirectory.parse(Array(Self.header().prefix(10)))
        }
        #expect(throws: ANTFSError.truncated(field: "directory header", offset: 0, needed: 16, available: 0)) {
            try ANTFSDirectory.parse([])
        }
        #expect(throws: ANTFSError.invalidValue(field: "directory element length", offset: 1, value: 32)) {
            try ANTFSDirectory.parse(Self.header(length: 32) + [UInt8](repeating: 0, count: 32))
        }
        let one = Self.entry(1, sub: 4, number: 1, flags: 0x80, size: 10, date: Self.activityDate)
        #expect(throws: ANTFSError.truncated(field: "directory entry", offset: 32, needed: 16, available: 5)) {
            try ANTFSDirectory.parse(Self.header() + one + one.prefix(5))
        }
        let limit = ANTFSDirectory.maxSize
        #expect(limit == 16 + 65_536 * 16)
        #expect(throws: ANTFSError.tooLarge(field: "directory", size: limit + 16, limit: limit)) {
            try ANTFSDirectory.parse(Self.header() + [UInt8](repeating: 0, count: limit))
        }
        #expect(try ANTFSDirectory.parse(Self.header() + [UInt8](repeating: 0, count: limit - 16)).entries.count == 65_536)
    }

    @Test("random bytes and mutated directories parse or throw, never trap")
    func random() {
        var rng = SeededGenerator(seed: 0xD1D1)
        let valid = Self.header() + Self.entry(1, sub: 4, number: 1, flags: 0x80, size: 10, date: Self.activityDate)
        for i in 0..<5_000 {
            var bytes = i % 2 == 0 ? rng.bytes(Int.random(in: 0...80, using: &rng)) : valid
            if i % 2 == 1 {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            }
            if let d = try? ANTFSDirectory.parse(bytes) {
                #expect(d.entries.count == (bytes.count - 16) / 16)
                #expect(d.entries.allSatisfy { !$0.suggestedFileName.isEmpty })
            }
        }
    }

    @Test("every FIT subtype HealthGate names; others and non-FIT files have none")
    func subTypeNames() {
        let names: [UInt8: String] = [
            1: "device", 2: "settings", 3: "sport", 4: "activity", 5: "workout", 6: "course", 9: "weight", 10: "totals", 11: "goals",
            14: "blood pressure", 15: "monitoring A", 20: "activity summary", 28: "daily monitoring", 32: "monitoring B",
        ]
        for sub in UInt8(0)...255 {
            let fit = ANTFSFileEntry(index: 1, subType: sub, fileNumber: 1, flags: .read, size: 1, date: 0)
            #expect(fit.subTypeName == names[sub])
            var other = fit
            other.dataType = 0x01
            #expect(other.subTypeName == nil)
        }
    }

    @Test("file names are UTC: two activities a day apart across the March summer-time changes keep their hour")
    func summerTime() {
        // The EU moved to summer time on 2024-03-31 at 01:00Z, the US on 2024-03-10 at 10:00Z (in
        // New York). A local-time name would move by an hour on one side and rename the file.
        let epoch: Int64 = 631_065_600
        let cases: [(unix: Int64, name: String)] = [
            (1_711_800_000, "2024-03-30_12-00-00_4_1.fit"), (1_711_886_400, "2024-03-31_12-00-00_4_2.fit"),
            (1_710_009_000, "2024-03-09_18-30-00_4_3.fit"), (1_710_095_400, "2024-03-10_18-30-00_4_4.fit"),
        ]
        for (i, c) in cases.enumerated() {
            let e = ANTFSFileEntry(
                index: UInt16(i + 1), subType: 4, fileNumber: UInt16(i + 1), flags: .read, size: 100, date: UInt32(c.unix - epoch))
            #expect(e.unixTime == c.unix)
            #expect(e.suggestedFileName == c.name)
            #expect(
                ANTFSFileEntry(index: e.index, subType: 4, fileNumber: e.fileNumber, flags: .read, size: 100, date: e.date)
                    .suggestedFileName == c.name)
        }
        // The change itself: 00:59:59Z and 01:00:00Z on 2024-03-31 are one second apart in the names too.
        let before = ANTFSFileEntry(index: 9, subType: 4, fileNumber: 9, flags: .read, size: 1, date: UInt32(1_711_846_799 - epoch))
        let after = ANTFSFileEntry(index: 9, subType: 4, fileNumber: 9, flags: .read, size: 1, date: UInt32(1_711_846_800 - epoch))
        #expect(before.suggestedFileName == "2024-03-31_00-59-59_4_9.fit")
        #expect(after.suggestedFileName == "2024-03-31_01-00-00_4_9.fit")
    }

    @Test("UTC dates: leap days, century years, the first absolute date and the last date ANT-FS can hold")
    func calendar() {
        let epoch: Int64 = 631_065_600
        func name(_ unix: Int64) -> String {
            ANTFSFileEntry(index: 1, subType: 4, fileNumber: 0, flags: .read, size: 1, date: UInt32(unix - epoch)).suggestedFileName
        }
        #expect(name(951_782_400) == "2000-02-29_00-00-00_4_0.fit")
        #expect(name(4_107_542_399) == "2100-02-28_23-59-59_4_0.fit")
        #expect(name(4_107_542_400) == "2100-03-01_00-00-00_4_0.fit")
        #expect(name(899_501_056) == "1998-07-03_21-24-16_4_0.fit")  // 0x10000000 after the epoch
        #expect(name(Int64(UInt32.max) + epoch) == "2126-02-06_06-28-15_4_0.fit")
        #expect(ANTFSFileEntry(index: 1, subType: 4, fileNumber: 0, flags: .read, size: 1, date: 0x0FFF_FFFF).unixTime == nil)
    }

    @Test("random absolute dates: the name's fields give back the same Unix time (days from the civil date, computed independently)")
    func randomDates() throws {
        var rng = SeededGenerator(seed: 0xDA7E)
        for _ in 0..<5_000 {
            let date = UInt32.random(in: 0x1000_0000...UInt32.max, using: &rng)
            let e = ANTFSFileEntry(index: 1, subType: 4, fileNumber: 0, flags: .read, size: 1, date: date)
            let name = e.suggestedFileName
            let parts = name.split(separator: "_")
            let ymd = parts[0].split(separator: "-").map { Int64($0)! }
            let hms = parts[1].split(separator: "-").map { Int64($0)! }
            #expect(ymd[1] >= 1 && ymd[1] <= 12 && ymd[2] >= 1 && ymd[2] <= 31 && hms[0] < 24 && hms[1] < 60 && hms[2] < 60)
            let unix = Self.daysFromCivil(ymd[0], ymd[1], ymd[2]) * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]
            #expect(unix == e.unixTime, "\(name)")
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date, by counting: whole years, then the
    /// months of the year.
    static func daysFromCivil(_ y: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        func leap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
        var days: Int64 = 0
        for year in 1970..<y { days += leap(year) ? 366 : 365 }
        let months: [Int64] = [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        for month in 0..<Int(m - 1) { days += months[month] }
        return days + d - 1
    }

    @Test("a system-time date is estimated from the directory's system time and the download's time")
    func estimatedTime() {
        let d = ANTFSDirectory(systemTime: 10_000, entries: [])
        let relative = ANTFSFileEntry(index: 1, subType: 4, fileNumber: 1, flags: .read, size: 1, date: 9_000)
        #expect(d.estimatedUnixTime(of: relative, downloadedAt: 1_700_000_000) == 1_699_999_000)
        let unknown = ANTFSFileEntry(index: 1, subType: 4, fileNumber: 1, flags: .read, size: 1, date: 0)
        #expect(d.estimatedUnixTime(of: unknown, downloadedAt: 1_700_000_000) == nil)
        let later = ANTFSFileEntry(index: 1, subType: 4, fileNumber: 1, flags: .read, size: 1, date: 10_001)
        #expect(d.estimatedUnixTime(of: later, downloadedAt: 1_700_000_000) == nil)
        let absolute = ANTFSFileEntry(index: 1, subType: 4, fileNumber: 1, flags: .read, size: 1, date: Self.activityDate)
        #expect(d.estimatedUnixTime(of: absolute, downloadedAt: 1_700_000_000) == 1_332_954_752)
    }

    @Test("the fetch key changes with the index, the date or the size, and only with them")
    func fetchKey() {
        let e = ANTFSFileEntry(index: 3, subType: 4, fileNumber: 1, flags: .read, size: 100, date: Self.activityDate)
        var archived = e
        archived.flags.insert(.archived)
        #expect(archived.fetchKey == e.fetchKey)
        var moved = e
        moved.index = 4
        var rewritten = e
        rewritten.date += 1
        var grown = e
        grown.size += 1
        #expect(Set([e.fetchKey, moved.fetchKey, rewritten.fetchKey, grown.fetchKey]).count == 4)
    }
}
