/// The general flags of a directory entry.
public struct ANTFSFileFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The file can be downloaded.
    public static let read = ANTFSFileFlags(rawValue: 0x80)
    /// The file can be uploaded to.
    public static let write = ANTFSFileFlags(rawValue: 0x40)
    /// The file can be erased.
    public static let erase = ANTFSFileFlags(rawValue: 0x20)
    /// The file was downloaded before (by any host).
    public static let archived = ANTFSFileFlags(rawValue: 0x10)
    /// The file can only be appended to.
    public static let append = ANTFSFileFlags(rawValue: 0x08)
    /// The file is encrypted.
    public static let crypt = ANTFSFileFlags(rawValue: 0x04)

    /// "r-eA--": read, write, erase, Archived, append, crypt.
    public var description: String {
        let letters: [(ANTFSFileFlags, Character)] = [
            (.read, "r"), (.write, "w"), (.erase, "e"), (.archived, "A"), (.append, "a"), (.crypt, "c"),
        ]
        return String(letters.map { contains($0.0) ? $0.1 : "-" })
    }
}

/// One file in an ANT-FS directory: 16 bytes, `index LE16, data type, FIT subtype, file number
/// LE16, type-specific flags, flags, size LE32, date LE32`.
///
/// The date counts seconds since 1989-12-31T00:00:00Z (the FIT epoch). Dates below 0x10000000
/// are not calendar dates: by the FIT and ANT-FS convention they are the watch's system time
/// (seconds since it was powered up), or 0 when the watch does not know. This module does not
/// turn them into a date (that would take the watch's clock at download time, and it drifts):
/// `unixTime` is nil for them, ``ANTFSDirectory/estimatedUnixTime(of:downloadedAt:)`` gives an
/// estimate when the caller wants one, and `suggestedFileName` names them
/// `systemtime-<date>_…`.
public struct ANTFSFileEntry: Hashable, Sendable {
    /// The data type of FIT files.
    public static let fitDataType: UInt8 = 0x80
    /// Seconds from 1970-01-01T00:00:00Z to the FIT epoch, 1989-12-31T00:00:00Z.
    public static let fitEpochOffset: Int64 = 631_065_600
    /// Dates below this are the watch's system time, not seconds since the FIT epoch.
    public static let minimumAbsoluteDate: UInt32 = 0x1000_0000

    /// The file's index, which DOWNLOAD asks for.
    public var index: UInt16
    /// 0x80 for FIT files.
    public var dataType: UInt8
    /// For FIT files, the FIT file type (4 = activity, see `subTypeName`).
    public var subType: UInt8
    /// For FIT files, the file's number among the files of its type.
    public var fileNumber: UInt16
    /// Flags whose meaning depends on the data type.
    public var typeSpecificFlags: UInt8
    public var flags: ANTFSFileFlags
    /// The file's size in bytes.
    public var size: UInt32
    /// Seconds since 1989-12-31T00:00:00Z, or the watch's system time below 0x10000000.
    public var date: UInt32

    public init(
        index: UInt16, dataType: UInt8 = fitDataType, subType: UInt8, fileNumber: UInt16, typeSpecificFlags: UInt8 = 0,
        flags: ANTFSFileFlags, size: UInt32, date: UInt32
    ) {
        self.index = index
        self.dataType = dataType
        self.subType = subType
        self.fileNumber = fileNumber
        self.typeSpecificFlags = typeSpecificFlags
        self.flags = flags
        self.size = size
        self.date = date
    }

    /// Decodes the 16 bytes at `offset` (the caller checks the length).
    init(_ b: [UInt8], at offset: Int) {
        index = b.le16(at: offset)
        dataType = b[offset + 2]
        subType = b[offset + 3]
        fileNumber = b.le16(at: offset + 4)
        typeSpecificFlags = b[offset + 6]
        flags = ANTFSFileFlags(rawValue: b[offset + 7])
        size = b.le32(at: offset + 8)
        date = b.le32(at: offset + 12)
    }

    /// The 16 bytes of the entry.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.appendLE16(index)
        out += [dataType, subType]
        out.appendLE16(fileNumber)
        out += [typeSpecificFlags, flags.rawValue]
        out.appendLE32(size)
        out.appendLE32(date)
        return out
    }

    /// True for FIT files (data type 0x80).
    public var isFIT: Bool { dataType == Self.fitDataType }

    /// The FIT file type's name, for the types Garmin's ANT-FS watches serve; nil for other
    /// types and for files that are not FIT.
    public var subTypeName: String? {
        guard isFIT else { return nil }
        switch subType {
        case 1: return "device"
        case 2: return "settings"
        case 3: return "sport"
        case 4: return "activity"
        case 5: return "workout"
        case 6: return "course"
        case 9: return "weight"
        case 10: return "totals"
        case 11: return "goals"
        case 14: return "blood pressure"
        case 15: return "monitoring A"
        case 20: return "activity summary"
        case 28: return "daily monitoring"
        case 32: return "monitoring B"
        default: return nil
        }
    }

    /// False for dates that are the watch's system time (below 0x10000000).
    public var hasAbsoluteDate: Bool { date >= Self.minimumAbsoluteDate }

    /// Seconds since 1970-01-01T00:00:00Z; nil when the date is the watch's system time.
    public var unixTime: Int64? { hasAbsoluteDate ? Int64(date) + Self.fitEpochOffset : nil }

    /// A file name that depends only on the entry, in UTC:
    /// `YYYY-MM-DD_HH-MM-SS_<subtype>_<file number>.fit` for FIT files (the subtype as a number,
    /// as antfs-cli names its files, but in UTC where antfs-cli uses local time, so that a
    /// change to or from summer time does not rename every file), `systemtime-<date>_…` when the
    /// date is not a calendar date, and `…_type<data type>_<index>.bin` for other files.
    public var suggestedFileName: String {
        let when = unixTime.map(UTCDate.fileNameText) ?? "systemtime-\(date)"
        return isFIT ? "\(when)_\(subType)_\(fileNumber).fit" : "\(when)_type\(dataType)_\(index).bin"
    }

    /// What identifies this file on its watch across sessions: index, date and size (the
    /// caller adds the watch's serial number). A file rewritten under the same index gets
    /// another date or size, so it is fetched again.
    public var fetchKey: String { "\(index):\(date):\(size)" }
}

/// The ANT-FS directory, file index 0: a 16-byte header (version, element length 16, time
/// format, 5 reserved bytes, system time LE32, last modified LE32), then one 16-byte
/// ``ANTFSFileEntry`` per file.
public struct ANTFSDirectory: Hashable, Sendable {
    /// The largest directory accepted: the header and 65,536 entries (one per 16-bit index).
    public static let maxSize = 16 + 65_536 * 16

    /// The directory format's version: major in the high nibble, minor in the low one.
    public var version: UInt8
    /// How the watch keeps dates: 0 automatic, 1 system time, 2 date.
    public var timeFormat: UInt8
    /// The watch's system time when it wrote the directory (seconds since power-up).
    public var systemTime: UInt32
    /// When the directory last changed (seconds since the FIT epoch, or system time).
    public var lastModified: UInt32
    /// The files, in the directory's order.
    public var entries: [ANTFSFileEntry]

    public init(version: UInt8 = 0x01, timeFormat: UInt8 = 0, systemTime: UInt32 = 0, lastModified: UInt32 = 0, entries: [ANTFSFileEntry]) {
        self.version = version
        self.timeFormat = timeFormat
        self.systemTime = systemTime
        self.lastModified = lastModified
        self.entries = entries
    }

    /// Parses a downloaded directory. Refused: more than `maxSize` bytes, an element length
    /// other than 16, bytes left over after the last whole entry.
    public static func parse(_ bytes: [UInt8]) throws(ANTFSError) -> ANTFSDirectory {
        guard bytes.count <= maxSize else { throw .tooLarge(field: "directory", size: bytes.count, limit: maxSize) }
        guard bytes.count >= 16 else {
            throw .truncated(field: "directory header", offset: 0, needed: 16, available: bytes.count)
        }
        guard bytes[1] == 16 else { throw .invalidValue(field: "directory element length", offset: 1, value: Int(bytes[1])) }
        let partial = (bytes.count - 16) % 16
        guard partial == 0 else {
            throw .truncated(field: "directory entry", offset: bytes.count - partial, needed: 16, available: partial)
        }
        var directory = ANTFSDirectory(
            version: bytes[0], timeFormat: bytes[2], systemTime: bytes.le32(at: 8), lastModified: bytes.le32(at: 12), entries: [])
        directory.entries.reserveCapacity((bytes.count - 16) / 16)
        for offset in stride(from: 16, to: bytes.count, by: 16) {
            directory.entries.append(ANTFSFileEntry(bytes, at: offset))
        }
        return directory
    }

    /// The directory's bytes (for simulated clients and tests).
    public var bytes: [UInt8] {
        var out: [UInt8] = [version, 16, timeFormat, 0, 0, 0, 0, 0]
        out.appendLE32(systemTime)
        out.appendLE32(lastModified)
        for entry in entries { out += entry.bytes }
        return out
    }

    /// The Unix time of an entry: its date when it is one, else an estimate from the watch's
    /// system time (`now` − (directory's system time − entry's system time), `now` being when
    /// the directory was downloaded, in Unix seconds); nil for a date of 0 (unknown) or a
    /// system time after the directory's.
    public func estimatedUnixTime(of entry: ANTFSFileEntry, downloadedAt now: Int64) -> Int64? {
        if let t = entry.unixTime { return t }
        guard entry.date > 0, entry.date <= systemTime else { return nil }
        return now - Int64(systemTime - entry.date)
    }
}

/// Calendar dates in UTC from Unix seconds, without Foundation: the day count is walked year
/// by year and month by month from 1970 (ANT-FS dates end in 2126, so the walk is short).
enum UTCDate {
    static func isLeap(_ year: Int64) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    /// Year, month (1-12), day (1-31), hour, minute, second of `unixTime` (which must be ≥ 0).
    static func components(_ unixTime: Int64) -> (year: Int64, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        var days = unixTime / 86_400
        let seconds = Int(unixTime % 86_400)
        var year: Int64 = 1970
        while days >= (isLeap(year) ? 366 : 365) {
            days -= isLeap(year) ? 366 : 365
            year += 1
        }
        let lengths = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        var month = 0
        while days >= Int64(lengths[month]) {
            days -= Int64(lengths[month])
            month += 1
        }
        return (year, month + 1, Int(days) + 1, seconds / 3600, seconds / 60 % 60, seconds % 60)
    }

    /// "2012-03-28_17-12-32".
    static func fileNameText(_ unixTime: Int64) -> String {
        let c = components(max(0, unixTime))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(c.year)-\(two(c.month))-\(two(c.day))_\(two(c.hour))-\(two(c.minute))-\(two(c.second))"
    }
}
