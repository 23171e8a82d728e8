/// Where in its input a decoder stopped.
public enum InputPosition: Sendable, Equatable, CustomStringConvertible {
    /// A byte offset from the start of the file.
    case byte(Int)
    /// A 1-based line and column of a text file.
    case line(Int, column: Int)
    /// The whole input (empty file, wrong format).
    case file

    public var description: String {
        switch self {
        case .byte(let offset): "byte \(offset)"
        case .line(let line, let column): "line \(line), column \(column)"
        case .file: "start of file"
        }
    }
}

/// Malformed, truncated or hostile input: names the file, the position and the reason.
public struct DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file's path; decoders that do not know it leave it empty and the pipeline fills it in.
    public var file: String
    public var position: InputPosition
    public var reason: String

    public init(file: String = "", at position: InputPosition, _ reason: String) {
        self.file = file
        self.position = position
        self.reason = reason
    }

    /// The same error, naming `file`.
    public func inFile(_ file: String) -> DecodeError {
        var copy = self
        if copy.file.isEmpty { copy.file = file }
        return copy
    }

    public var description: String {
        let prefix = file.isEmpty ? "" : "\(file): "
        return "\(prefix)\(position): \(reason)"
    }
}

/// A file an importer accepted by its name or first bytes but cannot read after all, without
/// anything wrong in it (a CSV the generic importer has no mapping for). Thrown before emitting
/// anything: a file found in a folder is then skipped, a file named by the user fails with `reason`.
public struct UnrecognizedFile: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
