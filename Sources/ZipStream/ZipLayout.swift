public import DriverKit

/// One file in a zip archive, as its central directory describes it.
public struct ZipEntry: Sendable, Equatable {
    /// The name as stored (`/`-separated; bytes not UTF-8 are replaced).
    public var name: String
    /// The compression method: 0 stored, 8 deflate; others are refused when read.
    public var method: UInt16
    /// General-purpose flags (bit 0: encrypted).
    public var flags: UInt16
    public var crc32: UInt32
    /// Sizes as declared (never trusted when reading: see ``ZipEntryDecoder``).
    public var compressedSize: Int
    public var uncompressedSize: Int
    /// Where its local header starts.
    public var localHeaderOffset: Int
    /// Where its central directory record starts (for messages).
    public var directoryOffset: Int

    public init(name: String, method: UInt16, flags: UInt16, crc32: UInt32, compressedSize: Int, uncompressedSize: Int,
                localHeaderOffset: Int, directoryOffset: Int) {
        self.name = name
        self.method = method
        self.flags = flags
        self.crc32 = crc32
        self.compressedSize = compressedSize
        self.uncompressedSize = uncompressedSize
        self.localHeaderOffset = localHeaderOffset
        self.directoryOffset = directoryOffset
    }

    public var isDirectory: Bool { name.hasSuffix("/") }

    /// The name of a zip file's first entry, read from its first local header in `head` (the
    /// file's first bytes, as a ``FileProbe`` holds them); nil when `head` is not such a header
    /// or is too short. For importers recognizing an archive by its layout before opening it.
    public static func firstName(head: [UInt8]) -> String? {
        guard head.count >= 30, head.starts(with: [0x50, 0x4B, 0x03, 0x04]) else { return nil }
        let length = Int(head[26]) | Int(head[27]) << 8
        guard length > 0, head.count >= 30 + length else { return nil }
        return String(decoding: head[30..<(30 + length)], as: UTF8.self)
    }
    public var isEncrypted: Bool { flags & 1 != 0 }

    /// The name as a relative path inside the archive, or nil when it is not one that may be
    /// resolved: absolute (`/x`, `C:x`, `\x`), with a `..` component, a backslash or a NUL.
    public var safePath: String? { ZipEntry.safePath(name) }

    /// `name` as a relative path (`./` components dropped), or nil for a path that escapes
    /// (absolute, drive letter, `..`, backslash, NUL, empty).
    public static func safePath(_ name: String) -> String? {
        if name.isEmpty || name.hasPrefix("/") || name.contains("\\") || name.contains("\0") { return nil }
        if name.count >= 2, name.dropFirst().first == ":" { return nil }
        var parts: [Substring] = []
        for part in name.split(separator: "/", omittingEmptySubsequences: true) {
            if part == ".." { return nil }
            if part != "." { parts.append(part) }
        }
        return parts.isEmpty ? nil : parts.joined(separator: "/") + (name.hasSuffix("/") ? "/" : "")
    }
}

/// Bounds on what one archive may hold; passing one is a ``DecodeError``.
public struct ZipLimits: Sendable, Equatable {
    /// Most entries in the central directory.
    public var maxEntries: Int
    /// Largest central directory, in bytes (it is read whole).
    public var maxDirectoryBytes: Int
    /// Most bytes one entry may inflate to.
    public var maxEntryBytes: Int
    /// Most inflated bytes per compressed byte, checked once ``ratioGrace`` bytes are out
    /// (deflate's own maximum is about 1032; text such as an Apple Health export stays near 20).
    public var maxRatio: Int
    public var ratioGrace: Int

    public init(maxEntries: Int = 1_000_000, maxDirectoryBytes: Int = 256 << 20, maxEntryBytes: Int = 64 << 30,
                maxRatio: Int = 200, ratioGrace: Int = 16 << 20) {
        self.maxEntries = maxEntries
        self.maxDirectoryBytes = maxDirectoryBytes
        self.maxEntryBytes = maxEntryBytes
        self.maxRatio = maxRatio
        self.ratioGrace = ratioGrace
    }
}

/// Where the central directory is, read from the end of the archive.
public struct ZipEnd: Sendable, Equatable {
    public var entryCount: Int
    public var directoryOffset: Int
    public var directorySize: Int
}

/// The zip format's records (PKWARE APPNOTE 6.3.x: end of central directory, its Zip64 form,
/// central directory headers, local headers), parsed from bytes handed in. Pure: the caller
/// reads the bytes (``ZipArchive`` with `pread`, or memory) and every error is a
/// ``DecodeError`` with the byte offset in the archive.
public enum ZipLayout {
    static let endSignature: UInt32 = 0x0605_4B50
    static let zip64LocatorSignature: UInt32 = 0x0706_4B50
    static let zip64EndSignature: UInt32 = 0x0606_4B50
    static let directorySignature: UInt32 = 0x0201_4B50
    static let localSignature: UInt32 = 0x0403_4B50

    /// The end record's fixed size, and how far before the end of the file it may start
    /// (a comment of up to 65535 bytes follows it).
    public static let endSize = 22
    public static let tailSize = endSize + 0xFFFF + 20
    public static let zip64EndSize = 56
    public static let localHeaderSize = 30

    /// What the end record says: the directory, or (Zip64) the offset of the Zip64 end record
    /// to read next (``zip64End(_:at:fileSize:)``). `tail` is the file's last bytes, starting at
    /// `tailOffset`.
    public enum EndResult: Sendable, Equatable {
        case directory(ZipEnd)
        case zip64End(at: Int)
    }

    public static func end(tail: [UInt8], tailOffset: Int, fileSize: Int) throws(DecodeError) -> EndResult {
        guard tail.count >= endSize else {
            throw DecodeError(at: .file, "not a zip archive: \(fileSize) bytes, too short for the end of central directory record")
        }
        // The last signature whose comment length reaches the end of the file exactly; failing
        // that, the last signature at all (some writers miscount the comment).
        var found: Int?
        var index = tail.count - endSize
        while index >= 0 {
            if u32(tail, index) == endSignature {
                if found == nil { found = index }
                if index + endSize + Int(u16(tail, index + 20)) == tail.count {
                    found = index
                    break
                }
            }
            index -= 1
        }
        guard let at = found else {
            throw DecodeError(at: .file, "not a zip archive (or a truncated one): no end of central directory record in its last \(tail.count) bytes")
        }
        let offset = tailOffset + at
        let disk = u16(tail, at + 4), directoryDisk = u16(tail, at + 6)
        let entriesHere = Int(u16(tail, at + 8)), entries = Int(u16(tail, at + 10))
        let size = Int(u32(tail, at + 12)), start = Int(u32(tail, at + 16))
        // Zip64: the locator sits just before the end record.
        if at >= 20, u32(tail, at - 20) == zip64LocatorSignature {
            let zip64 = Int(clamping: u64(tail, at - 20 + 8))
            // Compared without adding to `zip64`, which may be as large as Int.max.
            guard zip64 >= 0, offset - 20 - zip64EndSize >= 0, zip64 <= offset - 20 - zip64EndSize else {
                throw DecodeError(at: .byte(offset - 20), "the Zip64 locator points to \(zip64), outside the archive")
            }
            return .zip64End(at: zip64)
        }
        guard disk == 0, directoryDisk == 0, entriesHere == entries else {
            throw DecodeError(at: .byte(offset), "a multi-volume (split) zip archive is not supported")
        }
        return .directory(try checked(ZipEnd(entryCount: entries, directoryOffset: start, directorySize: size), endOffset: offset))
    }

    /// The Zip64 end of central directory record (`bytes` read at `offset`, 56 bytes).
    public static func zip64End(_ bytes: [UInt8], at offset: Int, fileSize: Int) throws(DecodeError) -> ZipEnd {
        guard bytes.count >= zip64EndSize, u32(bytes, 0) == zip64EndSignature else {
            throw DecodeError(at: .byte(offset), "no Zip64 end of central directory record where its locator points")
        }
        let disk = u32(bytes, 16), directoryDisk = u32(bytes, 20)
        let entriesHere = u64(bytes, 24), entries = u64(bytes, 32)
        guard disk == 0, directoryDisk == 0, entriesHere == entries else {
            throw DecodeError(at: .byte(offset), "a multi-volume (split) zip archive is not supported")
        }
        let end = ZipEnd(entryCount: Int(clamping: entries), directoryOffset: Int(clamping: u64(bytes, 48)),
                         directorySize: Int(clamping: u64(bytes, 40)))
        return try checked(end, endOffset: offset)
    }

    private static func checked(_ end: ZipEnd, endOffset: Int) throws(DecodeError) -> ZipEnd {
        guard end.directoryOffset >= 0, end.directorySize >= 0, end.directoryOffset <= endOffset,
            end.directorySize <= endOffset - end.directoryOffset
        else {
            throw DecodeError(at: .byte(endOffset),
                              "the central directory (\(end.directorySize) bytes at \(end.directoryOffset)) lies outside the archive: truncated or damaged")
        }
        return end
    }

    /// The entries of the central directory `bytes` (read whole at `end.directoryOffset`).
    public static func entries(_ bytes: [UInt8], end: ZipEnd, limits: ZipLimits = ZipLimits()) throws(DecodeError) -> [ZipEntry] {
        guard end.entryCount <= limits.maxEntries else {
            throw DecodeError(at: .byte(end.directoryOffset), "\(end.entryCount) entries: more than the \(limits.maxEntries) allowed")
        }
        var entries: [ZipEntry] = []
        entries.reserveCapacity(min(end.entryCount, 4096))
        var at = 0
        for _ in 0..<end.entryCount {
            let offset = end.directoryOffset + at
            guard at + 46 <= bytes.count, u32(bytes, at) == directorySignature else {
                throw DecodeError(at: .byte(offset), "central directory entry \(entries.count + 1) of \(end.entryCount) is missing or damaged")
            }
            let flags = u16(bytes, at + 8), method = u16(bytes, at + 10)
            let crc = u32(bytes, at + 16)
            var compressed = UInt64(u32(bytes, at + 20)), uncompressed = UInt64(u32(bytes, at + 24))
            let nameLength = Int(u16(bytes, at + 28)), extraLength = Int(u16(bytes, at + 30)), commentLength = Int(u16(bytes, at + 32))
            let startDisk = u16(bytes, at + 34)
            var local = UInt64(u32(bytes, at + 42))
            let next = at + 46 + nameLength + extraLength + commentLength
            guard next <= bytes.count else {
                throw DecodeError(at: .byte(offset), "central directory entry \(entries.count + 1) runs past the directory's end")
            }
            let name = String(decoding: bytes[(at + 46)..<(at + 46 + nameLength)], as: UTF8.self)
            // Zip64 extended information (header 0x0001): the 64-bit values of the fields set to 0xFFFFFFFF, in order.
            var extra = at + 46 + nameLength
            let extraEnd = extra + extraLength
            while extra + 4 <= extraEnd {
                let id = u16(bytes, extra), size = Int(u16(bytes, extra + 2))
                guard extra + 4 + size <= extraEnd else { break }
                if id == 1 {
                    var field = extra + 4
                    let fieldEnd = field + size
                    func take() throws(DecodeError) -> UInt64 {
                        guard field + 8 <= fieldEnd else {
                            throw DecodeError(at: .byte(offset), "entry '\(name.prefix(200))': its Zip64 extra field is too short")
                        }
                        defer { field += 8 }
                        return u64(bytes, field)
                    }
                    if uncompressed == 0xFFFF_FFFF { uncompressed = try take() }
                    if compressed == 0xFFFF_FFFF { compressed = try take() }
                    if local == 0xFFFF_FFFF { local = try take() }
                }
                extra += 4 + size
            }
            guard startDisk == 0 || startDisk == 0xFFFF else {
                throw DecodeError(at: .byte(offset), "entry '\(name.prefix(200))' lies on another volume: split archives are not supported")
            }
            let entry = ZipEntry(name: name, method: method, flags: flags, crc32: crc, compressedSize: Int(clamping: compressed),
                                 uncompressedSize: Int(clamping: uncompressed), localHeaderOffset: Int(clamping: local),
                                 directoryOffset: offset)
            guard entry.localHeaderOffset < end.directoryOffset, entry.compressedSize <= end.directoryOffset - entry.localHeaderOffset else {
                throw DecodeError(at: .byte(offset),
                                  "entry '\(name.prefix(200))' claims \(entry.compressedSize) bytes at \(entry.localHeaderOffset), outside the archive's data (truncated archive?)")
            }
            entries.append(entry)
            at = next
        }
        return entries
    }

    /// Where `entry`'s data starts, from its local header (`header`: the 30 bytes at its
    /// ``ZipEntry/localHeaderOffset``); checks that it may be read at all (not encrypted, a
    /// method this reader knows, data within `dataEnd`, the central directory's start).
    public static func dataOffset(of entry: ZipEntry, localHeader header: [UInt8], dataEnd: Int) throws(DecodeError) -> Int {
        let at = entry.localHeaderOffset
        let label = "entry '\(entry.name.prefix(200))'"
        guard header.count >= localHeaderSize, u32(header, 0) == localSignature else {
            throw DecodeError(at: .byte(at), "\(label): no local file header where the central directory points (truncated or damaged archive)")
        }
        if entry.isEncrypted || u16(header, 6) & 1 != 0 || entry.method == 99 {
            throw DecodeError(at: .byte(at), "\(label) is encrypted: HealthGate reads unencrypted archives only")
        }
        guard entry.method == 0 || entry.method == 8 else {
            throw DecodeError(at: .byte(at), "\(label) uses compression method \(entry.method): only stored (0) and deflate (8) are read")
        }
        let start = at + localHeaderSize + Int(u16(header, 26)) + Int(u16(header, 28))
        guard start <= dataEnd, entry.compressedSize <= dataEnd - start else {
            throw DecodeError(at: .byte(at), "\(label): its \(entry.compressedSize) bytes of data run past the archive's data (truncated archive)")
        }
        return start
    }

    // MARK: Little-endian reads (callers check the bounds).

    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(u16(b, i)) | UInt32(u16(b, i + 2)) << 16 }
    static func u64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(u32(b, i)) | UInt64(u32(b, i + 4)) << 32 }
}
