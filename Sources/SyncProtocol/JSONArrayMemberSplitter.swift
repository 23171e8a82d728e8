public import Foundation

/// Reads a JSON object as its text streams in and hands over the elements of one of its array
/// members one at a time, each as its own text: an upload's `{"records":[...]}` without ever
/// holding the whole text or an index of it. Memory: the element being read, whatever the
/// size of the whole.
///
/// It checks the object's own syntax (braces, keys, colons, commas) and finds where each value
/// ends (strings and escapes, nesting); the values themselves are checked by parsing them
/// (``SyncJSONDecoder/decodeElement(_:text:offset:codingPath:)`` for the elements; members other
/// than the array are parsed and dropped, as a decoder ignores unknown keys). When the member
/// appears twice the first one counts, as with `JSONDecoder`. Errors say at which byte of the
/// whole text. A pure state machine: bytes in, elements out.
public struct JSONArrayMemberSplitter {
    /// One element of the array: its text and where it starts in the whole text.
    public struct Element {
        public var text: Data
        public var offset: Int
        /// Its position in the array, from 0.
        public var index: Int
    }

    private enum State {
        /// Before the object's `{`.
        case start
        /// After `{` (`first`: `}` may come) or after a `,` between members.
        case beforeKey(first: Bool)
        case key
        case beforeColon
        case beforeValue
        /// In a member's value other than the array.
        case otherValue
        /// After the array's `[` (`first`: `]` may come) or after a `,` between elements.
        case beforeElement(first: Bool)
        case element
        case afterElement
        case afterValue
        /// After the object's `}`.
        case end
    }

    private let member: String
    private var state = State.start
    /// Bytes seen so far (the offset of the next one).
    public private(set) var offset = 0
    /// Whether the member has been read.
    private var found = false
    private var elements = 0
    /// The key, value or element being read, and where it starts.
    private var pending = Data()
    private var pendingOffset = 0
    /// Within a value: nesting, in a string, after a backslash, a number or literal.
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var scalar = false

    public init(member: String) {
        self.member = member
    }

    /// Takes the next piece of the text; `element` is called for each element completed in it.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ element: (Element) throws -> Void) throws {
        var i = 0
        // Where the pending value's bytes start in this piece (nil: not in a value).
        var runStart: Int? = inValue ? 0 : nil
        func take(upTo end: Int) {
            if let start = runStart, end > start { pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
            runStart = nil
        }
        while i < bytes.count {
            let byte = bytes[i]
            switch state {
            case .start:
                if !Self.isSpace(byte) {
                    guard byte == UInt8(ascii: "{") else { throw error("expected an object", at: i) }
                    state = .beforeKey(first: true)
                }
                i += 1
            case .beforeKey(let first):
                if !Self.isSpace(byte) {
                    if first && byte == UInt8(ascii: "}") {
                        state = .end
                    } else {
                        guard byte == UInt8(ascii: "\"") else { throw error("expected a key", at: i) }
                        begin(at: i)
                        runStart = i
                        inString = true
                        state = .key
                    }
                }
                i += 1
            case .key:
                i = scanString(bytes, from: i)
                if !inString {
                    take(upTo: i)
                    state = .beforeColon
                }
            case .beforeColon:
                if !Self.isSpace(byte) {
                    guard byte == UInt8(ascii: ":") else { throw error("expected ':' after a key", at: i) }
                    let key = try keyText()
                    pending = Data()
                    if key == member && !found {
                        found = true
                        state = .beforeValue
                    } else {
                        state = .otherValue
                        depth = -1  // the value has not started yet
                    }
                }
                i += 1
            case .beforeValue:
                if !Self.isSpace(byte) {
                    guard byte == UInt8(ascii: "[") else {
                        throw DecodingError.typeMismatch([Any].self, .init(
                            codingPath: [MemberKey(stringValue: member)],
                            debugDescription: "expected an array at byte \(offset + i)"))
                    }
                    state = .beforeElement(first: true)
                }
                i += 1
            case .beforeElement(let first):
                if Self.isSpace(byte) {
                    i += 1
                } else if first && byte == UInt8(ascii: "]") {
                    state = .afterValue
                    i += 1
                } else {
                    guard byte != UInt8(ascii: "]"), byte != UInt8(ascii: ",") else { throw error("expected a value", at: i) }
                    begin(at: i)
                    runStart = i
                    state = .element
                }
            case .element, .otherValue:
                if case .otherValue = state, depth < 0 {
                    // Before the value of another member.
                    if Self.isSpace(byte) {
                        i += 1
                        continue
                    }
                    begin(at: i)
                    runStart = i
                }
                let (next, ended) = try scanValue(bytes, from: i)
                i = next
                if ended {
                    take(upTo: i)
                    let text = pending
                    pending = Data()
                    if case .element = state {
                        state = .afterElement
                        elements += 1
                        try element(Element(text: text, offset: pendingOffset, index: elements - 1))
                    } else {
                        state = .afterValue
                        try Self.checkValue(text, at: pendingOffset)
                    }
                }
            case .afterElement:
                if !Self.isSpace(byte) {
                    switch byte {
                    case UInt8(ascii: ","): state = .beforeElement(first: false)
                    case UInt8(ascii: "]"): state = .afterValue
                    default: throw error("expected ',' or ']' after an element", at: i)
                    }
                }
                i += 1
            case .afterValue:
                if !Self.isSpace(byte) {
                    switch byte {
                    case UInt8(ascii: ","): state = .beforeKey(first: false)
                    case UInt8(ascii: "}"): state = .end
                    default: throw error("expected ',' or '}' after a value", at: i)
                    }
                }
                i += 1
            case .end:
                guard Self.isSpace(byte) else { throw error("unexpected text after the JSON value", at: i) }
                i += 1
            }
        }
        take(upTo: bytes.count)
        offset += bytes.count
    }

    /// Checks that the text ended where it may: after the object, with the member found.
    public func finish() throws {
        guard case .end = state else { throw error("unexpected end of the text", at: 0) }
        guard found else {
            throw DecodingError.keyNotFound(MemberKey(stringValue: member), .init(
                codingPath: [], debugDescription: "No value associated with key \(member)."))
        }
    }

    /// Elements handed over so far.
    public var count: Int { elements }

    // MARK: - Scanning

    private var inValue: Bool {
        switch state {
        case .key: true
        case .element: true
        case .otherValue: depth >= 0
        default: false
        }
    }

    private mutating func begin(at i: Int) {
        pending = Data()
        pendingOffset = offset + i
        depth = 0
        inString = false
        escaped = false
        scalar = false
    }

    /// Moves through a string from `i` (inside it); answers where scanning stopped: just past
    /// the closing quote (``inString`` false), or the end of the piece.
    private mutating func scanString(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                return i
            }
        }
        return i
    }

    /// Moves through a value from `i`; answers where scanning stopped and whether the value
    /// ended there (a container or string: just past its last byte; a number or literal: at
    /// the delimiter after it, which is not part of it).
    private mutating func scanValue(_ bytes: UnsafeRawBufferPointer, from start: Int) throws -> (Int, Bool) {
        var i = start
        while i < bytes.count {
            let byte = bytes[i]
            if inString {
                i += 1
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return (i, true) }
                }
                continue
            }
            if scalar {
                switch byte {
                case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"):
                    return (i, true)
                default:
                    i += 1
                    continue
                }
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                // The object and the array hold the elements: two levels already.
                guard depth <= SyncJSONDecoder.maximumDepth - 2 else {
                    throw error("nested deeper than \(SyncJSONDecoder.maximumDepth)", at: i)
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw error("expected a value", at: i) }
                depth -= 1
                if depth == 0 { return (i + 1, true) }
            default:
                if depth == 0 { scalar = true }
            }
            i += 1
        }
        return (i, false)
    }

    /// The key just read (its text includes the quotes), unescaped and checked.
    private func keyText() throws -> String {
        try SyncJSONDecoder().decodeElement(String.self, text: pending, offset: pendingOffset, codingPath: [])
    }

    /// Checks the text of a member's value that is not kept.
    private static func checkValue(_ text: Data, at offset: Int) throws {
        _ = try JSONDocument(data: text, indexLimit: text.count + 4096, depth: 1, baseOffset: offset)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func error(_ message: String, at i: Int) -> DecodingError {
        let syntax = JSONSyntaxError(message: message, offset: offset + i)
        return DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: syntax.description, underlyingError: syntax))
    }

    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
