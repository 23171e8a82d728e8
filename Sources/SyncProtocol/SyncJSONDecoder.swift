import Foundation
import HealthModel

/// Decodes JSON into values as ``SyncAPI/decoder()`` does (dates as ISO 8601 text through
/// ``ISO8601/parse(_:)``, data as base64), several times faster: the text is parsed once into a
/// flat list of nodes, and containers look their keys up in it directly.
///
/// Strict RFC 8259: no comments, trailing commas, leading zeros, unescaped control characters or
/// invalid UTF-8; nesting deeper than 512 is refused rather than risking the stack. Syntax errors
/// say at which byte the text goes wrong. When a key appears twice in an object the first one
/// counts, as with `JSONDecoder`.
public struct SyncJSONDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let document = try JSONDocument(bytes: [UInt8](data))
        return try JSONNodeDecoder(document: document, node: 0, parent: [], key: nil).decodeValue(type)
    }

    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let document = try JSONDocument(bytes: bytes)
        return try JSONNodeDecoder(document: document, node: 0, parent: [], key: nil).decodeValue(type)
    }
}

// MARK: - Parsing

/// One value in the parsed text. Containers are followed by their contents (objects as key,
/// value, key, value...); `next` is the index just past the value and everything inside it.
struct JSONNode {
    enum Kind: UInt8 { case null, bool, number, string, array, object }
    var kind: Kind
    /// Strings: the text between the quotes; numbers, booleans: the token; containers: unused.
    var start: Int32
    var end: Int32
    var next: Int32
    /// Containers: their members (objects) or elements (arrays). Strings: 1 if escaped.
    var count: Int32
}

struct JSONSyntaxError: Error, CustomStringConvertible {
    var message: String
    var offset: Int
    var description: String { "\(message) at byte \(offset)" }
}

/// Parsed JSON text: the bytes and the nodes that point into them.
final class JSONDocument {
    let bytes: [UInt8]
    let nodes: [JSONNode]
    static let maximumDepth = 512

    init(bytes: [UInt8]) throws {
        self.bytes = bytes
        var nodes: [JSONNode] = []
        nodes.reserveCapacity(bytes.count / 8)
        do {
            try bytes.withUnsafeBufferPointer { buffer in
                var parser = Parser(bytes: buffer)
                parser.skipSpace()
                try parser.parseValue(into: &nodes, depth: 0)
                parser.skipSpace()
                guard parser.position == buffer.count else { throw parser.error("unexpected text after the JSON value") }
            }
        } catch let error as JSONSyntaxError {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
        self.nodes = nodes
    }

    func node(_ index: Int) -> JSONNode { nodes[index] }

    /// The string node's value, unescaped.
    func string(_ index: Int) -> String {
        let node = nodes[index]
        return bytes.withUnsafeBufferPointer { buffer in
            let raw = UnsafeBufferPointer(rebasing: buffer[Int(node.start)..<Int(node.end)])
            // The parser has checked the UTF-8 and the escapes.
            return node.count == 0 ? String(decoding: raw, as: UTF8.self) : Self.unescape(raw)
        }
    }

    /// Whether the string node `index` holds exactly `key` (compared without unescaping when it
    /// has no escapes, the usual case for keys).
    func string(_ index: Int, equals key: String) -> Bool {
        let node = nodes[index]
        guard node.count == 0 else { return string(index) == key }
        var key = key
        return key.withUTF8 { utf8 in
            guard utf8.count == Int(node.end - node.start) else { return false }
            return bytes.withUnsafeBufferPointer { buffer in
                memcmp(buffer.baseAddress! + Int(node.start), utf8.baseAddress!, utf8.count) == 0
            }
        }
    }

    /// The exact text of node `index`'s value, quotes and brackets included.
    func raw(_ index: Int) -> [UInt8] {
        let node = nodes[index]
        switch node.kind {
        case .string: return Array(bytes[Int(node.start) - 1..<Int(node.end) + 1])
        default: return Array(bytes[Int(node.start)..<Int(node.end)])
        }
    }

    /// The token text of a number or boolean node.
    func token(_ index: Int) -> Substring {
        let node = nodes[index]
        return Substring(String(decoding: bytes[Int(node.start)..<Int(node.end)], as: UTF8.self))
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
        var position = 0

        func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(message: message, offset: position) }

        mutating func skipSpace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func parseValue(into nodes: inout [JSONNode], depth: Int) throws {
            guard position < bytes.count else { throw error("unexpected end of the text") }
            switch bytes[position] {
            case UInt8(ascii: "{"): try parseObject(into: &nodes, depth: depth + 1)
            case UInt8(ascii: "["): try parseArray(into: &nodes, depth: depth + 1)
            case UInt8(ascii: "\""): try parseString(into: &nodes)
            case UInt8(ascii: "t"): try literal("true", .bool, into: &nodes)
            case UInt8(ascii: "f"): try literal("false", .bool, into: &nodes)
            case UInt8(ascii: "n"): try literal("null", .null, into: &nodes)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &nodes)
            default: throw error("unexpected character '\(Self.show(bytes[position]))'")
            }
        }

        mutating func parseObject(into nodes: inout [JSONNode], depth: Int) throws {
            guard depth <= JSONDocument.maximumDepth else { throw error("nested deeper than \(JSONDocument.maximumDepth)") }
            let index = nodes.count
            nodes.append(JSONNode(kind: .object, start: Int32(position), end: 0, next: 0, count: 0))
            position += 1
            skipSpace()
            var members: Int32 = 0
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error("expected a key in quotes")
                    }
                    try parseString(into: &nodes)
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
                    position += 1
                    skipSpace()
                    try parseValue(into: &nodes, depth: depth)
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
            nodes[index].end = Int32(position)
            nodes[index].next = Int32(nodes.count)
            nodes[index].count = members
        }

        mutating func parseArray(into nodes: inout [JSONNode], depth: Int) throws {
            guard depth <= JSONDocument.maximumDepth else { throw error("nested deeper than \(JSONDocument.maximumDepth)") }
            let index = nodes.count
            nodes.append(JSONNode(kind: .array, start: Int32(position), end: 0, next: 0, count: 0))
            position += 1
            skipSpace()
            var elements: Int32 = 0
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
            } else {
                while true {
                    try parseValue(into: &nodes, depth: depth)
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
            nodes[index].end = Int32(position)
            nodes[index].next = Int32(nodes.count)
            nodes[index].count = elements
        }

        mutating func parseString(into nodes: inout [JSONNode]) throws {
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
            nodes.append(JSONNode(kind: .string, start: Int32(start), end: Int32(position), next: Int32(nodes.count + 1),
                                  count: escaped ? 1 : 0))
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

        mutating func literal(_ word: StaticString, _ kind: JSONNode.Kind, into nodes: inout [JSONNode]) throws {
            let start = position
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count,
                  memcmp(bytes.baseAddress! + position, word.utf8Start, count) == 0 else {
                throw error("unexpected character '\(Self.show(bytes[position]))'")
            }
            position += count
            nodes.append(JSONNode(kind: kind, start: Int32(start), end: Int32(position), next: Int32(nodes.count + 1), count: 0))
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func parseNumber(into nodes: inout [JSONNode]) throws {
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
            nodes.append(JSONNode(kind: .number, start: Int32(start), end: Int32(position), next: Int32(nodes.count + 1), count: 0))
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
        guard document.node(node).kind == .object else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(JSONKeyedDecoding<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard document.node(node).kind == .array else { throw mismatch([Any].self) }
        return JSONUnkeyedDecoding(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { JSONSingleValueDecoding(decoder: self) }

    /// The decoder of a value inside this one; `path` is this one's coding path.
    func child(_ node: Int, key: any CodingKey, path: [any CodingKey]) -> JSONNodeDecoder {
        JSONNodeDecoder(document: document, node: node, parent: path, key: key)
    }

    var isNull: Bool { document.node(node).kind == .null }

    func mismatch(_ type: Any.Type) -> DecodingError {
        let kind = document.node(node).kind
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
        guard document.node(node).kind == .string else { throw mismatch(String.self) }
        return document.string(node)
    }

    func bool() throws -> Bool {
        guard document.node(node).kind == .bool else { throw mismatch(Bool.self) }
        return document.bytes[Int(document.node(node).start)] == UInt8(ascii: "t")
    }

    func double() throws -> Double {
        guard document.node(node).kind == .number else { throw mismatch(Double.self) }
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
        guard document.node(node).kind == .number else { throw mismatch(I.self) }
        let text = document.token(node)
        if let value = I(text) { return value }
        if let double = Double(text), double.rounded() == double, let value = I(exactly: double) { return value }
        throw corrupted("Parsed JSON number <\(text)> does not fit in \(I.self).")
    }
}

struct JSONKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONNodeDecoder
    let codingPath: [any CodingKey]
    private var document: JSONDocument { decoder.document }

    init(decoder: JSONNodeDecoder) {
        self.decoder = decoder
        codingPath = decoder.codingPath
    }

    /// The value node of `key` (the first one if the key appears twice), or nil.
    private func find(_ key: String) -> Int? {
        let object = document.node(decoder.node)
        var index = decoder.node + 1
        for _ in 0..<object.count {
            let value = index + 1
            if document.string(index, equals: key) { return value }
            index = Int(document.node(value).next)
        }
        return nil
    }

    private func value(_ key: Key) throws -> JSONNodeDecoder {
        guard let node = find(key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                                                       debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return decoder.child(node, key: key, path: codingPath)
    }

    var allKeys: [Key] {
        let object = document.node(decoder.node)
        var index = decoder.node + 1
        var keys: [Key] = []
        for _ in 0..<object.count {
            if let key = Key(stringValue: document.string(index)) { keys.append(key) }
            index = Int(document.node(index + 1).next)
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
    var count: Int? { Int(decoder.document.node(decoder.node).count) }
    var isAtEnd: Bool { currentIndex >= count! }

    init(decoder: JSONNodeDecoder) {
        self.decoder = decoder
        codingPath = decoder.codingPath
        cursor = decoder.node + 1
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
        cursor = Int(decoder.document.node(cursor).next)
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.document.node(cursor).kind == .null else { return false }
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
