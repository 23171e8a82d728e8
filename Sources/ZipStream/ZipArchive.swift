public import DriverKit

/// A zip archive read in place: its central directory (Zip64 too) listed when opened, and one
/// entry's bytes handed out as chunks pulled on demand (``contents(of:)``). Nothing is
/// extracted to disk, and memory holds the directory plus one compressed piece and one
/// inflated chunk whatever the entries' sizes. Reads go through ``ImportSource/read(at:count:)``
/// (`pread` off the cooperative pool). Errors are ``DecodeError``s naming the file and the byte
/// offset, or ``FileReadError``s.
public struct ZipArchive: Sendable {
    public let source: ImportSource
    public let entries: [ZipEntry]
    public let limits: ZipLimits
    /// Where entries' data must end: the central directory's start.
    let dataEnd: Int

    /// Reads the end records and the central directory of `source`.
    public static func open(_ source: ImportSource, limits: ZipLimits = ZipLimits()) async throws -> ZipArchive {
        do {
            let tailStart = max(0, source.size - ZipLayout.tailSize)
            let tail = try await source.read(at: tailStart, count: source.size - tailStart)
            var end: ZipEnd
            switch try ZipLayout.end(tail: tail, tailOffset: tailStart, fileSize: source.size) {
            case .directory(let found):
                end = found
            case .zip64End(let offset):
                end = try ZipLayout.zip64End(try await source.read(at: offset, count: ZipLayout.zip64EndSize), at: offset, fileSize: source.size)
            }
            guard end.directorySize <= limits.maxDirectoryBytes else {
                throw DecodeError(at: .byte(end.directoryOffset),
                                  "a central directory of \(end.directorySize) bytes: more than the \(limits.maxDirectoryBytes) allowed")
            }
            let directory = try await source.read(at: end.directoryOffset, count: end.directorySize)
            let entries = try ZipLayout.entries(directory, end: end, limits: limits)
            return ZipArchive(source: source, entries: entries, limits: limits, dataEnd: end.directoryOffset)
        } catch let error as DecodeError {
            throw error.inFile(source.path)
        }
    }

    /// The entry whose name, as a safe relative path (``ZipEntry/safePath``), is `path`
    /// (`./` and repeated `/` ignored). Names that escape (`../`, absolute) are never matched,
    /// and neither is a `path` that would.
    public func entry(atPath path: String) -> ZipEntry? {
        guard let wanted = ZipEntry.safePath(path) else { return nil }
        return entries.first { $0.safePath == wanted }
    }

    /// `entry`'s bytes, inflated, in chunks read when asked for.
    public func contents(of entry: ZipEntry) -> ZipEntryChunks {
        ZipEntryChunks(archive: self, entry: entry)
    }

    /// The whole archive in memory, read synchronously (fuzz targets and tests): the entries,
    /// and each one's bytes through `body` (in order), with the same checks as ``open(_:limits:)``
    /// and ``contents(of:)``.
    public static func read(_ bytes: [UInt8], limits: ZipLimits = ZipLimits(),
                            entry body: (ZipEntry, [UInt8]) throws -> Void = { _, _ in }) throws -> [ZipEntry] {
        func slice(_ offset: Int, _ count: Int) -> [UInt8] {
            guard offset >= 0, offset < bytes.count, count > 0 else { return [] }
            return Array(bytes[offset..<min(bytes.count, offset + min(count, bytes.count - offset))])
        }
        let tailStart = max(0, bytes.count - ZipLayout.tailSize)
        var end: ZipEnd
        switch try ZipLayout.end(tail: slice(tailStart, bytes.count), tailOffset: tailStart, fileSize: bytes.count) {
        case .directory(let found): end = found
        case .zip64End(let offset): end = try ZipLayout.zip64End(slice(offset, ZipLayout.zip64EndSize), at: offset, fileSize: bytes.count)
        }
        guard end.directorySize <= limits.maxDirectoryBytes else {
            throw DecodeError(at: .byte(end.directoryOffset), "a central directory of \(end.directorySize) bytes: more than allowed")
        }
        let entries = try ZipLayout.entries(slice(end.directoryOffset, end.directorySize), end: end, limits: limits)
        for entry in entries where !entry.isDirectory {
            let start = try ZipLayout.dataOffset(of: entry, localHeader: slice(entry.localHeaderOffset, ZipLayout.localHeaderSize),
                                                 dataEnd: end.directoryOffset)
            let decoder = try ZipEntryDecoder(entry: entry, dataOffset: start, limits: limits)
            var output: [UInt8] = []
            var at = start
            while !decoder.isDone {
                if decoder.needsInput {
                    let piece = slice(at, min(decoder.remainingInput, ImportSource.defaultChunkSize))
                    guard !piece.isEmpty else { throw DecodeError(at: .byte(at), "entry '\(entry.name.prefix(200))': the archive ends inside its data") }
                    at += piece.count
                    decoder.give(piece)
                }
                output += try decoder.pull()
            }
            try decoder.finish()
            try body(entry, output)
        }
        return entries
    }
}

/// The inflated bytes of one zip entry, an `AsyncSequence` of chunks (at most
/// ``ZipEntryDecoder/chunkSize`` bytes each); the last step checks size and CRC-32. Each
/// iteration reads from the entry's start.
public struct ZipEntryChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let archive: ZipArchive
    let entry: ZipEntry

    public func makeAsyncIterator() -> Iterator { Iterator(archive: archive, entry: entry) }

    public struct Iterator: AsyncIteratorProtocol {
        let archive: ZipArchive
        let entry: ZipEntry
        private var decoder: ZipEntryDecoder?
        private var position = 0
        private var finished = false

        init(archive: ZipArchive, entry: ZipEntry) {
            self.archive = archive
            self.entry = entry
        }

        /// The next chunk, or nil once the entry ended and checked out. Throws ``DecodeError``
        /// (naming the archive and offset) or ``FileReadError``.
        public mutating func next() async throws -> [UInt8]? {
            guard !finished else { return nil }
            do {
                if decoder == nil {
                    let header = try await archive.source.read(at: entry.localHeaderOffset, count: ZipLayout.localHeaderSize)
                    let start = try ZipLayout.dataOffset(of: entry, localHeader: header, dataEnd: archive.dataEnd)
                    decoder = try ZipEntryDecoder(entry: entry, dataOffset: start, limits: archive.limits)
                    position = start
                }
                let decoder = decoder!
                while !decoder.isDone {
                    if decoder.needsInput {
                        let piece = try await archive.source.read(at: position, count: Swift.min(decoder.remainingInput, archive.source.chunkSize))
                        guard !piece.isEmpty else {
                            throw DecodeError(at: .byte(position), "entry '\(entry.name.prefix(200))': the archive ends inside its data (did it shrink?)")
                        }
                        position += piece.count
                        decoder.give(piece)
                    }
                    let chunk = try decoder.pull()
                    if !chunk.isEmpty { return chunk }
                }
                finished = true
                try decoder.finish()
                return nil
            } catch let error as DecodeError {
                finished = true
                throw error.inFile(archive.source.path)
            } catch {
                finished = true
                throw error
            }
        }
    }
}
