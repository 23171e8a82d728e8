public import Foundation
import HealthModel

/// Decodes JSON into values as ``SyncAPI/decoder()`` does (dates as ISO 8601 text through
/// ``ISO8601/parse(_:)``, data as base64), several times faster: the text is parsed once into a
/// compact index, and containers look their keys up in it directly.
///
/// Strict RFC 8259: no comments, trailing commas, leading zeros, unescaped control characters or
/// invalid UTF-8. Refused as well, rather than risking the stack or the time: nesting deeper than
/// ``maximumDepth``, objects with more than ``maximumMembers`` members. Syntax errors say at which
/// byte the text goes wrong. When a key appears twice in an object the first one counts, as with
/// `JSONDecoder`.
///
/// Cost: linear in the text. The index takes 4 bytes per string, number or literal and 12 per
/// array or object; ``indexLimit`` caps it (a server sets it from the body's size). Objects of
/// more than a few members get a hash table of their keys when they are decoded (Swift's hashing
/// is seeded per process, so chosen keys cannot make it slow).
public struct SyncJSONDecoder: Sendable {
    /// Nesting deeper than this is refused.
    public static let maximumDepth = 512
    /// Objects with more members than this are refused. No message of the protocol comes near it:
    /// its objects have fixed keys, and a measurement's `extra` a handful.
    public static let maximumMembers = 10_000
    /// The text may not be longer than this (the index holds 31-bit offsets).
    public static let maximumLength = Int(Int32.max)

    /// The most bytes the parsed index may take; nil: no limit beyond the text's length.
    /// Past it the text is refused with ``IndexLimitExceeded`` as the underlying error.
    public var indexLimit: Int?

    public init(indexLimit: Int? = nil) {
        self.indexLimit = indexLimit
    }

    /// The underlying error (of a `DecodingError.dataCorrupted`) when the text holds more values
    /// than ``indexLimit`` allows.
    public struct IndexLimitExceeded: Error, Sendable, CustomStringConvertible {
        /// The limit, in bytes of index.
        public var limit: Int
        /// Where in the text the value that went past it starts.
        public var offset: Int
        public var description: String {
            "more values than \(limit) bytes of index hold (4 per string, number or literal, 12 per array or object) at byte \(offset)"
        }
    }

    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, document: try JSONDocument(data: data, indexLimit: indexLimit))
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decode(type, document: try JSONDocument(data: Data(bytes), indexLimit: indexLimit))
    }

    func decode<T: Decodable>(_ type: T.Type, document: JSONDocument) throws -> T {
        try JSONNodeDecoder(document: document, node: 0, parent: [], key: nil).decodeValue(type)
    }

    /// Decodes one value cut out of a larger text (an element from ``JSONArrayMemberSplitter``):
    /// `offset` is where it starts there and `codingPath` where it sits, so that errors say
    /// both as for the whole text. Its nesting counts from the path's depth.
    public func decodeElement<T: Decodable>(_ type: T.Type, text: Data, offset: Int, codingPath: [any CodingKey]) throws -> T {
        let document = try JSONDocument(data: text, indexLimit: indexLimit, depth: codingPath.count, baseOffset: offset)
        return try JSONNodeDecoder(document: document, node: 0, parent: codingPath.dropLast(), key: codingPath.last).decodeValue(type)
    }
}

// MARK: - Parsing

/// What a value in the index is, told by its first byte.
enum JSONKind: UInt8 { case null, bool, number, string, array, object }

struct JSONSyntaxError: Error, CustomStringConvertible {
    var message: String
    var offset: Int
    var description: String { "\(message) at byte \(offset)" }
}

/// Parsed JSON text: the bytes and an index into them, a flat list of 32-bit words in text
/// order (a tape). Every value starts with the offset of its first byte, which tells its kind;
/// a string's top bit says it has escapes. Arrays and objects take two more words: the index
/// just past their contents, and how many elements or members they hold. Object contents are
/// key, value, key, value... Strings, numbers and literals end where their text ends: they are
/// scanned again when read (each is read once or twice).
final class JSONDocument {
    let data: Data
    let tape: [UInt32]
    /// Key comparisons made so far, in debug builds (the tests check that lookups stay linear).
    var keyComparisons = 0

    static let escapedBit: UInt32 = 1 << 31
    static let offsetMask: UInt32 = ~escapedBit
    /// Objects with more members than this get a hash table of their keys.
    static let indexedMembers = 16

    /// `depth`: how deep the text's value is nested in a larger text (its nesting counts toward
    /// ``SyncJSONDecoder/maximumDepth``); `baseOffset`: where the text starts in that larger text
    /// (errors say at which byte of it).
    init(data: Data, indexLimit: Int?, depth: Int = 0, baseOffset: Int = 0) throws {
        self.data = data
        var tape: [UInt32] = []
        let limitWords = indexLimit.map { max(0, $0) / 4 } ?? Int.max
        do {
            guard data.count <= SyncJSONDecoder.maximumLength else {
                throw JSONSyntaxError(message: "text longer than \(SyncJSONDecoder.maximumLength) bytes", offset: 0)
            }
            // Room for the usual density (1 word per 8 bytes) without touching it: unused
            // capacity of a large allocation costs no memory.
            tape.reserveCapacity(min(limitWords, data.count / 8 + 16))
            try data.withUnsafeBytes { raw in
                var parser = Parser(bytes: raw.bindMemory(to: UInt8.self), limitWords: limitWords)
                parser.skipSpace()
                try parser.parseValue(into: &tape, depth: depth)
                parser.skipSpace()
                guard parser.position == parser.bytes.count else { throw parser.error("unexpected text after the JSON value") }
            }
        } catch var error as JSONSyntaxError {
            error.offset += baseOffset
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.description, underlyingError: error))
        } catch var error as SyncJSONDecoder.IndexLimitExceeded {
            error.offset += baseOffset
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
        self.tape = tape
    }

    /// The offset of the value's first byte.
    func offset(_ index: Int) -> Int { Int(tape[index] & Self.offsetMask) }

    func kind(_ index: Int) -> JSONKind {
        switch firstByte(index) {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        default: return .number
        }
    }

    /// Arrays and objects: how many elements or members.
    func count(_ index: Int) -> Int { Int(tape[index + 2]) }

    /// The index just past the value and everything inside it.
    func next(_ index: Int) -> Int {
        switch kind(index) {
        case .array, .object: Int(tape[index + 1])
        default: index + 1
        }
    }

    /// The first element or member of an array or object.
    func firstChild(_ index: Int) -> Int { index + 3 }

    /// The string's bytes between the quotes (the parser has checked them), and whether it has escapes.
    private func withStringBytes<R>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>, Bool) -> R) -> R {
        let word = tape[index]
        let start = Int(word & Self.offsetMask) + 1
        let escaped = word & Self.escapedBit != 0
        return data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var end = start
            if escaped {
                while bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
            } else {
                let found = memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\"")), bytes.count - start)!
                end = bytes.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            return body(UnsafeBufferPointer(rebasing: bytes[start..<end]), escaped)
        }
    }

    /// The string value, unescaped.
    func string(_ index: Int) -> String {
        withStringBytes(index) { raw, escaped in escaped ? Self.unescape(raw) : String(decoding: raw, as: UTF8.self) }
    }

    /// The value of the first member of `object` whose key is `key`, or nil: a scan of the
    /// keys, for small objects. Keys without escapes (the usual case) are compared byte for
    /// byte, without finding their end first.
    func scan(_ object: Int, for key: String) -> Int? {
        var key = key
        return key.withUTF8 { key in
            data.withUnsafeBytes { raw in
                tape.withUnsafeBufferPointer { tape in
                    let base = raw.baseAddress!
                    var index = object + 3
                    for _ in 0..<Int(tape[object + 2]) {
                        #if DEBUG
                        keyComparisons += 1
                        #endif
                        let word = tape[index]
                        if word & Self.escapedBit != 0 {
                            if string(index) == String(decoding: key, as: UTF8.self) { return index + 1 }
                        } else {
                            // A string without escapes holds no quote: when the key's bytes are
                            // followed by one, and hold none, they are the whole string.
                            let start = Int(word) + 1
                            if start + key.count < raw.count, raw[start + key.count] == UInt8(ascii: "\""),
                               key.isEmpty || memcmp(base + start, key.baseAddress!, key.count) == 0,
                               key.isEmpty || memchr(base + start, Int32(UInt8(ascii: "\"")), key.count) == nil {
                                return index + 1
                            }
                        }
                        let value = index + 1
                        switch raw[Int(tape[value] & Self.offsetMask)] {
                        case UInt8(ascii: "{"), UInt8(ascii: "["): index = Int(tape[value + 1])
                        default: index = value + 1
                        }
                    }
                    return nil
                }
            }
        }
    }

    /// The exact text of value `index`, quotes and brackets included (for ``RawJSON``). The
    /// tape keeps only where values start: the end is found by scanning the text, which the
    /// parser has checked.
    func raw(_ index: Int) -> [UInt8] {
        let start = offset(index)
        return data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> [UInt8] in
            let bytes = raw.bindMemory(to: UInt8.self)
            var i = start
            var depth = 0
            repeat {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i += 1
                    while bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                    i += 1
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    i += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    i += 1
                default:
                    // A number or literal (at depth 0: up to the next delimiter), or anything
                    // between the values of a container.
                    if depth == 0 {
                        while i < bytes.count, Parser.isNumberByte(bytes[i]) || (bytes[i] >= UInt8(ascii: "a") && bytes[i] <= UInt8(ascii: "z")) {
                            i += 1
                        }
                    } else {
                        i += 1
                    }
                }
            } while depth > 0
            return Array(bytes[start..<i])
        }
    }

    /// The first byte of a value.
    func firstByte(_ index: Int) -> UInt8 {
        let offset = offset(index)
        return data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in raw[offset] }
    }

    /// The token text of a number.
    func token(_ index: Int) -> Substring {
        let start = offset(index)
        return data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var end = start
            while end < raw.count, Parser.isNumberByte(raw[end]) { end += 1 }
            return Substring(String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self))
        }
    }

    private static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        func hex(_ at: Int) -> UInt32 {
            var value: UInt32 = 0
            for c in raw[at..<at + 4] { value = value << 4 | UInt32(Parser.hexValue(c)!) }
            return value
        }
        while i < raw.count {
            let c = raw[i]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                i += 1
                continue
            }
            let e = raw[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex(i)
                i += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    // The parser has checked that a low surrogate follows.
                    let low = hex(i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default: out.append(e)  // " \ /
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        /// The most words the tape may hold.
        let limitWords: Int
        var position = 0

        func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(message: message, offset: position) }

        /// Throws when `words` more words would take the tape past the limit (`offset`: where
        /// the value that needs them starts).
        func room(_ words: Int, at offset: Int, used: Int) throws {
            guard used + words <= limitWords else {
                throw SyncJSONDecoder.IndexLimitExceeded(limit: limitWords * 4, offset: offset)
            }
        }

        mutating func skipSpace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func parseValue(into tape: inout [UInt32], depth: Int) throws {
            guard position < bytes.count else { throw error("unexpected end of the text") }
            switch bytes[position] {
            case UInt8(ascii: "{"): try parseObject(into: &tape, depth: depth + 1)
            case UInt8(ascii: "["): try parseArray(into: &tape, depth: depth + 1)
            case UInt8(ascii: "\""): try parseString(into: &tape)
            case UInt8(ascii: "t"): try literal("true", into: &tape)
            case UInt8(ascii: "f"): try literal("false", into: &tape)
            case UInt8(ascii: "n"): try literal("null", into: &tape)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &tape)
            default: throw error("unexpected character '\(Self.show(bytes[position]))'")
            }
        }

        /// Starts the array or object at `position`: its three words (offset, then the end and the
        /// count that ``close(_:count:in:)`` sets), past its bracket. Answers its index.
        mutating func open(into tape: inout [UInt32], depth: Int) throws -> Int {
            guard depth <= SyncJSONDecoder.maximumDepth else { throw error("nested deeper than \(SyncJSONDecoder.maximumDepth)") }
            let index = tape.count
            try room(3, at: position, used: tape.count)
            tape.append(UInt32(position))
            tape.append(0)
            tape.append(0)
            position += 1
            skipSpace()
            return index
        }

        /// Sets the words of the container at `index` once its contents are parsed.
        func close(_ index: Int, count: Int, in tape: inout [UInt32]) {
            tape[index + 1] = UInt32(tape.count)
            tape[index + 2] = UInt32(count)
        }

        mutating func parseObject(into tape: inout [UInt32], depth: Int) throws {
            let index = try open(into: &tape, depth: depth)
            var members = 0
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    guard members < SyncJSONDecoder.maximumMembers else {
                        throw error("more than \(SyncJSONDecoder.maximumMembers) members in an object")
                    }
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error("expected a key in quotes")
                    }
                    try parseString(into: &tape)
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
                    position += 1
                    skipSpace()
                    try parseValue(into: &tape, depth: depth)
                    members += 1
                    skipSpace()
                    guard position < bytes.count else { throw error("unexpected end of the text in an object") }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        skipSpace()
                    } else if bytes[position] == UInt8(ascii: "}") {
                        position += 1
                        break
                    } else {
                        throw error("expected ',' or '}' in an object")
                    }
                }
            }
            close(index, count: members, in: &tape)
        }

        mutating func parseArray(into tape: inout [UInt32], depth: Int) throws {
            let index = try open(into: &tape, depth: depth)
            var elements = 0
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
            } else {
                while true {
                    try parseValue(into: &tape, depth: depth)
                    elements += 1
                    skipSpace()
                    guard position < bytes.count else { throw error("unexpected end of the text in an array") }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        skipSpace()
                    } else if bytes[position] == UInt8(ascii: "]") {
                        position += 1
                        break
                    } else {
                        throw error("expected ',' or ']' in an array")
                    }
                }
            }
            close(index, count: elements, in: &tape)
        }

        mutating func parseString(into tape: inout [UInt32]) throws {
            let opening = position
            position += 1  // the opening quote
            let start = position
            var escaped = false
            var ascii = true
            while true {
                guard position < bytes.count else { throw error("unterminated string") }
                let c = bytes[position]
                if c == UInt8(ascii: "\"") { break }
                if c < 0x20 { throw error("control character in a string") }
                if c >= 0x80 { ascii = false }
                if c == UInt8(ascii: "\\") {
                    escaped = true
                    position += 1
                    guard position < bytes.count else { throw error("unterminated string") }
                    switch bytes[position] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        position += 1
                    case UInt8(ascii: "u"):
                        let unit = try hex4(at: position + 1)
                        position += 5
                        if (0xD800..<0xDC00).contains(unit) {
                            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                                  bytes[position + 1] == UInt8(ascii: "u"),
                                  (0xDC00..<0xE000).contains(try hex4(at: position + 2)) else {
                                throw error("unpaired surrogate in a \\u escape")
                            }
                            position += 6
                        } else if (0xDC00..<0xE000).contains(unit) {
                            throw error("unpaired surrogate in a \\u escape")
                        }
                    default:
                        throw error("invalid escape '\\\(Self.show(bytes[position]))'")
                    }
                } else {
                    position += 1
                }
            }
            if !ascii, String(validating: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self) == nil {
                throw JSONSyntaxError(message: "invalid UTF-8 in a string", offset: start)
            }
            try room(1, at: opening, used: tape.count)
            tape.append(UInt32(opening) | (escaped ? JSONDocument.escapedBit : 0))
            position += 1  // the closing quote
        }

        func hex4(at offset: Int) throws -> UInt32 {
            guard offset + 4 <= bytes.count else { throw JSONSyntaxError(message: "unterminated \\u escape", offset: offset) }
            var value: UInt32 = 0
            for i in offset..<offset + 4 {
                guard let digit = Self.hexValue(bytes[i]) else {
                    throw JSONSyntaxError(message: "invalid hex digit in a \\u escape", offset: i)
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        static func hexValue(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        /// A byte that can be part of a number's text.
        static func isNumberByte(_ c: UInt8) -> Bool {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                 UInt8(ascii: "e"), UInt8(ascii: "E"): true
            default: false
            }
        }

        mutating func literal(_ word: StaticString, into tape: inout [UInt32]) throws {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count,
                  memcmp(bytes.baseAddress! + position, word.utf8Start, count) == 0 else {
                throw error("unexpected character '\(Self.show(bytes[position]))'")
            }
            try room(1, at: position, used: tape.count)
            tape.append(UInt32(position))
            position += count
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func parseNumber(into tape: inout [UInt32]) throws {
            let start = position
            func digits() -> Int {
                let from = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
                return position - from
            }
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else {
                throw error("expected a digit")
            }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
                if position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                    throw error("number with a leading zero")
                }
            } else {
                _ = digits()
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw error("expected a digit after '.'") }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                    position += 1
                }
                guard digits() > 0 else { throw error("expected a digit in the exponent") }
            }
            try room(1, at: start, used: tape.count)
            tape.append(UInt32(start))
        }

        static func show(_ c: UInt8) -> String {
            (0x21..<0x7F).contains(c) ? String(UnicodeScalar(c)) : String(format: "\\x%02X", c)
        }
    }
}

// MARK: - Decoding

/// The `Decoder` for one node. Its coding path (`parent` + `key`) is put together only when
/// asked for: most values are read without it.
struct JSONNodeDecoder: Decoder {
    let document: JSONDocument
    let node: Int
    let parent: [any CodingKey]
    let key: (any CodingKey)?
    var codingPath: [any CodingKey] { key.map { parent + [$0] } ?? parent }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(document: JSONDocument, node: Int, parent: [any CodingKey], key: (any CodingKey)?) {
        self.document = document
        self.node = node
        self.parent = parent
        self.key = key
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard document.kind(node) == .object else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(JSONKeyedDecoding<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard document.kind(node) == .array else { throw mismatch([Any].self) }
        return JSONUnkeyedDecoding(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { JSONSingleValueDecoding(decoder: self) }

    /// The decoder of a value inside this one; `path` is this one's coding path.
    func child(_ node: Int, key: any CodingKey, path: [any CodingKey]) -> JSONNodeDecoder {
        JSONNodeDecoder(document: document, node: node, parent: path, key: key)
    }

    var isNull: Bool { document.kind(node) == .null }

    func mismatch(_ type: Any.Type) -> DecodingError {
        let kind = document.kind(node)
        if kind == .null {
            return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) value but found null instead."))
        }
        return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(kind) instead."))
    }

    func corrupted(_ message: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: message))
    }

    // MARK: Values

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if let special = Self.specialTypes[ObjectIdentifier(T.self)] {
            return try decodeSpecial(special) as! T
        }
        return try T(from: self)
    }

    /// Types read directly (as `JSONDecoder` does) rather than through their `init(from:)`.
    private enum Special {
        case date, data, url, string, double, float, bool, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8
        case raw
    }

    private static let specialTypes: [ObjectIdentifier: Special] = [
        ObjectIdentifier(Date.self): .date, ObjectIdentifier(Data.self): .data, ObjectIdentifier(URL.self): .url,
        ObjectIdentifier(String.self): .string, ObjectIdentifier(Double.self): .double, ObjectIdentifier(Float.self): .float,
        ObjectIdentifier(Bool.self): .bool, ObjectIdentifier(Int.self): .int, ObjectIdentifier(Int64.self): .int64,
        ObjectIdentifier(Int32.self): .int32, ObjectIdentifier(Int16.self): .int16, ObjectIdentifier(Int8.self): .int8,
        ObjectIdentifier(UInt.self): .uint, ObjectIdentifier(UInt64.self): .uint64, ObjectIdentifier(UInt32.self): .uint32,
        ObjectIdentifier(UInt16.self): .uint16, ObjectIdentifier(UInt8.self): .uint8,
        ObjectIdentifier(RawJSON.self): .raw,
    ]

    private func decodeSpecial(_ special: Special) throws -> Any {
        switch special {
        case .date:
            let text = try string()
            guard let date = ISO8601.parse(text) else { throw corrupted("not an ISO 8601 time: \(text)") }
            return date
        case .data:
            guard let data = Data(base64Encoded: try string()) else { throw corrupted("Encountered Data is not valid Base64.") }
            return data
        case .url:
            guard let url = URL(string: try string()) else { throw corrupted("Invalid URL string.") }
            return url
        case .string: return try string()
        case .double: return try double()
        case .float: return Float(try double())
        case .bool: return try bool()
        case .int: return try integer(Int.self)
        case .int64: return try integer(Int64.self)
        case .int32: return try integer(Int32.self)
        case .int16: return try integer(Int16.self)
        case .int8: return try integer(Int8.self)
        case .uint: return try integer(UInt.self)
        case .uint64: return try integer(UInt64.self)
        case .uint32: return try integer(UInt32.self)
        case .uint16: return try integer(UInt16.self)
        case .uint8: return try integer(UInt8.self)
        case .raw: return RawJSON(bytes: document.raw(node))
        }
    }

    func string() throws -> String {
        guard document.kind(node) == .string else { throw mismatch(String.self) }
        return document.string(node)
    }

    func bool() throws -> Bool {
        guard document.kind(node) == .bool else { throw mismatch(Bool.self) }
        return document.firstByte(node) == UInt8(ascii: "t")
    }

    func double() throws -> Double {
        guard document.kind(node) == .number else { throw mismatch(Double.self) }
        let text = document.token(node)
        // Too large (infinite) or too small (a nonzero mantissa read as 0): not representable.
        guard let value = Double(text), value.isFinite,
              value != 0 || !text.prefix(while: { $0 != "e" && $0 != "E" }).contains(where: { ("1"..."9").contains($0) }) else {
            throw corrupted("Parsed JSON number <\(text)> does not fit in Double.")
        }
        return value
    }

    /// An integer: digits only, or a number with a fraction or exponent whose value is a whole
    /// number that fits (`1.0`, `1e3`), as `JSONDecoder` reads them.
    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard document.kind(node) == .number else { throw mismatch(I.self) }
        let text = document.token(node)
        if let value = I(text) { return value }
        if let double = Double(text), double.rounded() == double, let value = I(exactly: double) { return value }
        throw corrupted("Parsed JSON number <\(text)> does not fit in \(I.self).")
    }
}

struct JSONKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONNodeDecoder
    let codingPath: [any CodingKey]
    /// Objects of more than `JSONDocument.indexedMembers` members: the value node of each key
    /// (the first when a key repeats). Smaller objects are scanned: cheaper than hashing.
    private let table: [String: Int]?
    private var document: JSONDocument { decoder.document }

    init(decoder: JSONNodeDecoder) {
        self.decoder = decoder
        codingPath = decoder.codingPath
        let document = decoder.document
        let count = document.count(decoder.node)
        guard count > JSONDocument.indexedMembers else {
            table = nil
            return
        }
        var table: [String: Int] = [:]
        table.reserveCapacity(count)
        var index = document.firstChild(decoder.node)
        for _ in 0..<count {
            #if DEBUG
            document.keyComparisons += 1
            #endif
            let key = document.string(index)
            if table[key] == nil { table[key] = index + 1 }
            index = document.next(index + 1)
        }
        self.table = table
    }

    /// The value node of `key` (the first one if the key appears twice), or nil.
    private func find(_ key: String) -> Int? {
        guard let table else { return decoder.document.scan(decoder.node, for: key) }
        #if DEBUG
        decoder.document.keyComparisons += 1
        #endif
        return table[key]
    }

    private func value(_ key: Key) throws -> JSONNodeDecoder {
        guard let node = find(key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                                                       debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return decoder.child(node, key: key, path: codingPath)
    }

    var allKeys: [Key] {
        var index = document.firstChild(decoder.node)
        var keys: [Key] = []
        for _ in 0..<document.count(decoder.node) {
            if let key = Key(stringValue: document.string(index)) { keys.append(key) }
            index = document.next(index + 1)
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { find(key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).isNull }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(key).bool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(key).double() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(key).integer(Int.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(key).integer(Int64.self) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(key).decodeValue(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try value(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try value(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = JSONUnkeyedDecoding.IndexKey(stringValue: "super")
        guard let node = find("super") else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key super."))
        }
        return decoder.child(node, key: key, path: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }
}

struct JSONUnkeyedDecoding: UnkeyedDecodingContainer {
    let decoder: JSONNodeDecoder
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0
    /// The node of the element at `currentIndex`.
    private var cursor: Int
    var count: Int? { decoder.document.count(decoder.node) }
    var isAtEnd: Bool { currentIndex >= count! }

    init(decoder: JSONNodeDecoder) {
        self.decoder = decoder
        codingPath = decoder.codingPath
        cursor = decoder.document.firstChild(decoder.node)
    }

    struct IndexKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(index: Int) {
            stringValue = "Index \(index)"
            intValue = index
        }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { self.init(index: intValue) }
    }

    /// The current element, moving past it.
    private mutating func next<T>(_ type: T.Type) throws -> JSONNodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [IndexKey(index: currentIndex)],
                                                          debugDescription: "Unkeyed container is at end."))
        }
        let element = decoder.child(cursor, key: IndexKey(index: currentIndex), path: codingPath)
        cursor = decoder.document.next(cursor)
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.document.kind(cursor) == .null else { return false }
        cursor += 1
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).bool() }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).string() }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).double() }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).integer(Int.self) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}

struct JSONSingleValueDecoding: SingleValueDecodingContainer {
    let decoder: JSONNodeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
    func decode(_ type: String.Type) throws -> String { try decoder.string() }
    func decode(_ type: Double.Type) throws -> Double { try decoder.double() }
    func decode(_ type: Int.Type) throws -> Int { try decoder.integer(Int.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
}
