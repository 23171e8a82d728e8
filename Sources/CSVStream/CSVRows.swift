public import DriverKit

/// Reading CSV rows off chunks of bytes (a file's ``ImportSource/chunks(of:)``, or a zip entry's
/// inflated chunks): the one way importers read CSV.
public enum CSVRows {
    /// Calls `body` with every row of `chunks` in order. A malformed row is a ``DecodeError`` naming
    /// `file`, the line and the column; `body` may throw its own.
    public static func read<Chunks: AsyncSequence>(_ chunks: Chunks, file: String, delimiter: UInt8 = UInt8(ascii: ","),
                                                   _ body: (CSVRow) async throws -> Void) async throws where Chunks.Element == [UInt8] {
        var reader = CSVReader(delimiter: delimiter)
        do {
            for try await chunk in chunks {
                for row in try reader.feed(chunk) { try await body(row) }
            }
            for row in try reader.finish() { try await body(row) }
        } catch let error as CSVError {
            throw DecodeError(file: file, at: .line(error.line, column: error.column), error.reason)
        }
    }

    /// The rows of a file.
    public static func read(_ source: ImportSource, delimiter: UInt8 = UInt8(ascii: ","),
                            _ body: (CSVRow) async throws -> Void) async throws {
        try await read(source.chunks(), file: source.path, delimiter: delimiter, body)
    }

    /// The first line of a probed file's head, split on commas (for sniffing a header; quotes are
    /// not interpreted).
    public static func headerFields(_ probe: FileProbe) -> [Substring] {
        let head = probe.textHead
        let line = head.prefix { $0 != "\n" && $0 != "\r" }
        return line.split(separator: ",", omittingEmptySubsequences: false)
    }

    /// The probed head's lines (up to `count`), for sniffing headerless files.
    public static func headLines(_ probe: FileProbe, count: Int = 3) -> [Substring] {
        Array(probe.textHead.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).prefix(count))
    }
}
