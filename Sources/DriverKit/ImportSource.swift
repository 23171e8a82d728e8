import Dispatch
public import Foundation
import Synchronization
import Timing

/// One file handed to a ``FileImporter``: its path (for messages and provenance), its size, the
/// first bytes (``probe``), and its contents, read in chunks (``chunks(of:)``) or mapped whole
/// (``mapped()``).
///
/// A file on disk is read on a dispatch queue, never on Swift's cooperative pool: a read waits
/// for the disk, and the pool has one thread per core.
public struct ImportSource: Sendable {
    public let path: String
    /// The size in bytes when the file was opened.
    public let size: Int
    /// What the pipeline chose the importer by (it adds an SQLite file's tables).
    public var probe: FileProbe
    private let storage: Storage

    private enum Storage: Sendable {
        case file
        case memory(Data)
    }

    /// The bytes a chunk holds unless the file ends first.
    public static let defaultChunkSize = 256 * 1024
    /// The size of the chunks ``chunks(of:)`` gives unless told otherwise (smaller in tests, to
    /// cut documents at many places).
    public var chunkSize = ImportSource.defaultChunkSize
    /// Counts the bytes read from the file (chunks and random reads) when set: the pipeline's
    /// progress within one file.
    public var bytesRead: ReadCounter?

    /// A file whose contents are already in memory (tests, fuzz targets, benchmarks).
    public init(path: String, data: Data, chunkSize: Int = ImportSource.defaultChunkSize) {
        self.path = path
        size = data.count
        probe = FileProbe(path: path, data: data)
        storage = .memory(data)
        self.chunkSize = chunkSize
    }

    private init(path: String, size: Int, head: [UInt8]) {
        self.path = path
        self.size = size
        probe = FileProbe(fileExtension: (path as NSString).pathExtension.lowercased(), head: head)
        storage = .file
    }

    /// Opens the file at `path`: its size and first bytes, read off the cooperative pool. Throws
    /// ``FileReadError`` for a file that cannot be read.
    public static func open(_ path: String) async throws(FileReadError) -> ImportSource {
        let result: Result<ImportSource, FileReadError> = await FileReads.perform { () throws(FileReadError) -> ImportSource in
            let descriptor = try FileReads.openForReading(path)
            defer { close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { throw FileReadError(path: path, errno: errno) }
            guard status.st_mode & S_IFMT == S_IFREG else { throw FileReadError(path: path, reason: "not a regular file") }
            var head = [UInt8](repeating: 0, count: 512)
            let count = try FileReads.read(descriptor, into: &head, path: path)
            return ImportSource(path: path, size: Int(status.st_size), head: Array(head.prefix(count)))
        }
        return try result.get()
    }

    /// The contents in chunks of at most `size` bytes (``chunkSize`` when nil), in order, each read
    /// when asked for: memory stays bounded by the chunk, whatever the file's size. Each
    /// iteration reads from the start.
    public func chunks(of size: Int? = nil) -> FileChunks {
        let size = size ?? chunkSize
        return switch storage {
        case .file: FileChunks(source: .file(path), chunkSize: max(1, size), counter: bytesRead)
        case .memory(let data): FileChunks(source: .memory(data), chunkSize: max(1, size), counter: bytesRead)
        }
    }

    /// Up to `count` bytes at `offset` (fewer at the end of the file), read with `pread` off the
    /// cooperative pool: random access for archives (zip), in bounded memory.
    public func read(at offset: Int, count: Int) async throws(FileReadError) -> [UInt8] {
        let count = max(0, count)
        switch storage {
        case .memory(let data):
            guard offset >= 0, offset < data.count else { return [] }
            let end = Swift.min(data.count, offset + Swift.min(count, data.count - offset))
            bytesRead?.add(end - offset)
            return [UInt8](data[data.startIndex + offset..<data.startIndex + end])
        case .file:
            let path = self.path
            let bytes = try await FileReads.perform { () throws(FileReadError) -> [UInt8] in
                let descriptor = try FileReads.openForReading(path)
                defer { close(descriptor) }
                var buffer = [UInt8](repeating: 0, count: count)
                let read = try FileReads.read(descriptor, into: &buffer, at: offset, path: path)
                if read < buffer.count { buffer.removeSubrange(read...) }
                return buffer
            }.get()
            bytesRead?.add(bytes.count)
            return bytes
        }
    }

    /// The whole file, memory-mapped (mapped off the cooperative pool): for formats that need
    /// random access and whose files stay small (FIT).
    public func mapped() async throws(FileReadError) -> Data {
        switch storage {
        case .memory(let data):
            return data
        case .file:
            let path = self.path
            return try await FileReads.perform { () throws(FileReadError) -> Data in
                do { return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) } catch {
                    throw FileReadError(path: path, reason: (error as NSError).localizedDescription)
                }
            }.get()
        }
    }
}

/// Bytes read so far, shared between the reads of an ``ImportSource`` and whoever shows progress.
public final class ReadCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    public func add(_ bytes: Int) { count.add(bytes, ordering: .relaxed) }

    /// The bytes read so far.
    public var value: Int { count.load(ordering: .relaxed) }
}

/// A file that could not be opened or read: its path and why.
public struct FileReadError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    init(path: String, errno code: Int32) {
        self.init(path: path, reason: String(cString: strerror(code)))
    }

    public var description: String { "\(path): cannot read: \(reason)" }
}

/// The chunks of an ``ImportSource``: an `AsyncSequence` of byte arrays.
public struct FileChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    enum Source: Sendable {
        case file(String)
        case memory(Data)
    }

    let source: Source
    let chunkSize: Int
    var counter: ReadCounter?

    public func makeAsyncIterator() -> Iterator {
        var iterator = switch source {
        case .file(let path): Iterator(reader: FileChunkReader(path: path, chunkSize: chunkSize))
        case .memory(let data): Iterator(data: data, chunkSize: chunkSize)
        }
        iterator.counter = counter
        return iterator
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let reader: FileChunkReader?
        private let data: Data
        private let chunkSize: Int
        private var offset = 0
        var counter: ReadCounter?

        init(reader: FileChunkReader) {
            self.reader = reader
            data = Data()
            chunkSize = 0
        }

        init(data: Data, chunkSize: Int) {
            reader = nil
            self.data = data
            self.chunkSize = chunkSize
        }

        /// The next chunk, or nil at the end of the file. Throws ``FileReadError``.
        public mutating func next() async throws -> [UInt8]? {
            if let reader {
                let chunk = try await reader.next()
                if let chunk { counter?.add(chunk.count) }
                return chunk
            }
            guard offset < data.count else { return nil }
            let end = Swift.min(data.count, offset + chunkSize)
            defer { offset = end }
            counter?.add(end - offset)
            return [UInt8](data[data.startIndex + offset..<data.startIndex + end])
        }
    }
}

/// Reads one file in order, a chunk per ``next()``, on the file-read queue; closes the file at
/// its end, on an error, or when dropped.
final class FileChunkReader: @unchecked Sendable {
    // Touched only inside FileReads.perform, one call at a time (each next() is awaited).
    private let path: String
    private let chunkSize: Int
    private var descriptor: Int32 = -1
    private var finished = false

    init(path: String, chunkSize: Int) {
        self.path = path
        self.chunkSize = chunkSize
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func next() async throws(FileReadError) -> [UInt8]? {
        try await FileReads.perform { () throws(FileReadError) -> [UInt8]? in
            guard !self.finished else { return nil }
            do throws(FileReadError) {
                if self.descriptor < 0 { self.descriptor = try FileReads.openForReading(self.path) }
                var chunk = [UInt8](repeating: 0, count: self.chunkSize)
                let count = try FileReads.read(self.descriptor, into: &chunk, path: self.path)
                if count == 0 {
                    self.finish()
                    return nil
                }
                if count < chunk.count { chunk.removeSubrange(count...) }
                return chunk
            } catch {
                self.finish()
                throw error
            }
        }.get()
    }

    private func finish() {
        finished = true
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }
}

/// Blocking file work, done on a queue of its own and awaited.
enum FileReads {
    private static let queue = DispatchQueue(label: "healthgate.file-reads", qos: .utility, attributes: .concurrent)

    static func perform<T: Sendable>(_ work: @escaping @Sendable () throws(FileReadError) -> T) async -> Result<T, FileReadError> {
        do throws(FileReadError) { return .success(try await OffPool.run(on: queue, work)) } catch { return .failure(error) }
    }

    static func openForReading(_ path: String) throws(FileReadError) -> Int32 {
        let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { throw FileReadError(path: path, errno: errno) }
        return descriptor
    }

    /// Fills `buffer` as far as the file goes; returns the bytes read (fewer only at its end).
    /// Reads from the descriptor's position, or at `offset` (`pread`) when one is given.
    static func read(_ descriptor: Int32, into buffer: inout [UInt8], at offset: Int? = nil, path: String) throws(FileReadError) -> Int {
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                if let offset { return pread(descriptor, bytes.baseAddress! + total, bytes.count - total, off_t(offset + total)) }
                return Foundation.read(descriptor, bytes.baseAddress! + total, bytes.count - total)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, errno: errno)
            }
            if count == 0 { break }
            total += count
        }
        return total
    }
}
