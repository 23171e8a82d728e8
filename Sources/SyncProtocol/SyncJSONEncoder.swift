public import Foundation
import HealthModel

/// Encodes values to the same bytes as ``SyncAPI/encoder()`` (keys sorted by their UTF-8 bytes,
/// slashes unescaped, dates as ``ISO8601/preciseString(_:)``, whole doubles without `.0`),
/// several times faster: it writes JSON straight into one byte buffer instead of building a
/// tree of values first. The forwarder encodes every record it sends with it and the server
/// every record it stores.
///
/// Objects are written as their keys come and reordered when they close, so each value's bytes
/// are copied once per enclosing object. Differences from `JSONEncoder`: a key encoded twice in
/// one container is written twice (synthesized `Codable` never does that).
public struct SyncJSONEncoder: Sendable {
    public init() {}

    /// The JSON text of `value`.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = JSONByteWriter()
        try writer.encodeValue(value, parent: [], key: nil)
        return writer.finish()
    }

    /// The JSON text of `value` as `Data`.
    public func encodeData<T: Encodable>(_ value: T) throws -> Data {
        Data(try encode(value))
    }
}

/// The output buffer and the stack of containers still open in it. One per `encode` call.
final class JSONByteWriter {
    var bytes: [UInt8] = []
    /// Open containers, outermost first. Writing into one closes every container above it.
    private var open: [JSONContainerState] = []

    init() { bytes.reserveCapacity(512) }

    func finish() -> [UInt8] {
        close(above: 0)
        return bytes
    }

    // MARK: Containers

    /// Closes the containers above the first `depth` (their writers are done with them).
    func close(above depth: Int) {
        while open.count > depth {
            open.removeLast().close(in: self)
        }
    }

    /// Opens a container at the end of the buffer; it stays open until something is written into
    /// a container below it.
    func push(_ state: JSONContainerState) {
        open.append(state)
    }

    /// Makes `state` the innermost open container before writing into it.
    func prepare(_ state: JSONContainerState) {
        close(above: state.depth + 1)
    }

    var depth: Int { open.count }

    // MARK: Values

    /// Writes any value at the end of the buffer, closing whatever containers it opened.
    /// Writes any value at the end of the buffer, closing whatever containers it opened. Its
    /// coding path (`parent` + `key`) is only put together when needed.
    func encodeValue<T: Encodable>(_ value: T, parent: [any CodingKey], key: (any CodingKey)?) throws {
        // Compared by type first: a failed `as?` cast costs more than writing most values.
        if let special = Self.specialTypes[ObjectIdentifier(T.self)] {
            try writeSpecial(value, special, codingPath: { key.map { parent + [$0] } ?? parent })
            return
        }
        let depth = open.count
        let start = bytes.count
        try value.encode(to: JSONByteEncoder(writer: self, codingPath: key.map { parent + [$0] } ?? parent))
        close(above: depth)
        // A value that asked for no container: JSONEncoder writes an empty object.
        if bytes.count == start { bytes.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "}")]) }
    }

    /// Types written directly (as `JSONEncoder` does) rather than through their `encode(to:)`.
    private enum Special {
        case date, data, url, decimal, string, double, float, bool, int, int64, int32, int16, int8
        case uint, uint64, uint32, uint16, uint8
    }

    private static let specialTypes: [ObjectIdentifier: Special] = [
        ObjectIdentifier(Date.self): .date, ObjectIdentifier(Data.self): .data, ObjectIdentifier(URL.self): .url,
        ObjectIdentifier(Decimal.self): .decimal, ObjectIdentifier(String.self): .string,
        ObjectIdentifier(Double.self): .double, ObjectIdentifier(Float.self): .float, ObjectIdentifier(Bool.self): .bool,
        ObjectIdentifier(Int.self): .int, ObjectIdentifier(Int64.self): .int64, ObjectIdentifier(Int32.self): .int32,
        ObjectIdentifier(Int16.self): .int16, ObjectIdentifier(Int8.self): .int8, ObjectIdentifier(UInt.self): .uint,
        ObjectIdentifier(UInt64.self): .uint64, ObjectIdentifier(UInt32.self): .uint32,
        ObjectIdentifier(UInt16.self): .uint16, ObjectIdentifier(UInt8.self): .uint8,
    ]

    private func writeSpecial<T>(_ value: T, _ special: Special, codingPath: () -> [any CodingKey]) throws {
        switch special {
        case .date: writeString(ISO8601.preciseString(value as! Date))
        case .data: writeString((value as! Data).base64EncodedString())
        case .url: writeString((value as! URL).absoluteString)
        case .decimal: bytes.append(contentsOf: (value as! Decimal).description.utf8)
        case .string: writeString(value as! String)
        case .double: try writeFloat(value as! Double, codingPath: codingPath())
        case .float: try writeFloat(value as! Float, codingPath: codingPath())
        case .bool: writeBool(value as! Bool)
        case .int: writeInteger(value as! Int)
        case .int64: writeInteger(value as! Int64)
        case .int32: writeInteger(value as! Int32)
        case .int16: writeInteger(value as! Int16)
        case .int8: writeInteger(value as! Int8)
        case .uint: writeInteger(value as! UInt)
        case .uint64: writeInteger(value as! UInt64)
        case .uint32: writeInteger(value as! UInt32)
        case .uint16: writeInteger(value as! UInt16)
        case .uint8: writeInteger(value as! UInt8)
        }
    }

    func writeNull() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    func writeBool(_ value: Bool) {
        bytes.append(contentsOf: value ? [0x74, 0x72, 0x75, 0x65] : [0x66, 0x61, 0x6C, 0x73, 0x65])
    }

    func writeInteger<I: BinaryInteger>(_ value: I) {
        if value >= 0 && value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
        } else {
            bytes.append(contentsOf: value.description.utf8)
        }
    }

    func writeFloat<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F, codingPath: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath(),
                                                          debugDescription: "\(value) cannot be written as a JSON number"))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`-style or `\u00XX`
    /// escapes, everything else (slashes and non-ASCII included) as it is.
    func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var plainStart = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: utf8[plainStart..<index])
                plainStart = index + 1
                switch byte {
                case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
                case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
                case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            bytes.append(contentsOf: utf8[plainStart...])
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// One open object or array in the buffer.
final class JSONContainerState {
    enum Kind { case object, array }
    let kind: Kind
    /// Its index in the writer's stack.
    let depth: Int
    /// Where its `{` or `[` is in the buffer.
    let start: Int
    /// Object members: their keys and where each `"key":value` begins.
    private(set) var members: [(key: String, start: Int)] = []
    private var sorted = true
    /// Array elements written so far.
    private(set) var count = 0

    init(kind: Kind, depth: Int, start: Int) {
        self.kind = kind
        self.depth = depth
        self.start = start
    }

    /// Writes the separator and (for an object) the key of the next member.
    func beginMember(key: String, in writer: JSONByteWriter) {
        if !members.isEmpty || count > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        if let last = members.last, !last.key.utf8.lexicographicallyPrecedes(key.utf8) { sorted = false }
        members.append((key, writer.bytes.count))
        writer.writeString(key)
        writer.bytes.append(UInt8(ascii: ":"))
    }

    func beginElement(in writer: JSONByteWriter) {
        if count > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        count += 1
    }

    /// Writes the closing bracket; an object whose keys came out of order is rewritten in order.
    func close(in writer: JSONByteWriter) {
        switch kind {
        case .array:
            writer.bytes.append(UInt8(ascii: "]"))
        case .object:
            if !sorted {
                let end = writer.bytes.count
                // Member i runs from its start to the comma before member i + 1 (or the end).
                var spans: [(key: String, range: Range<Int>)] = []
                spans.reserveCapacity(members.count)
                for (index, member) in members.enumerated() {
                    let stop = index + 1 < members.count ? members[index + 1].start - 1 : end
                    spans.append((member.key, member.start..<stop))
                }
                spans.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                var reordered: [UInt8] = []
                reordered.reserveCapacity(end - start)
                for (index, span) in spans.enumerated() {
                    if index > 0 { reordered.append(UInt8(ascii: ",")) }
                    reordered.append(contentsOf: writer.bytes[span.range])
                }
                writer.bytes.replaceSubrange((start + 1)..<end, with: reordered)
            }
            writer.bytes.append(UInt8(ascii: "}"))
        }
    }
}

/// The `Encoder` handed to each value's `encode(to:)`.
struct JSONByteEncoder: Encoder {
    let writer: JSONByteWriter
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let state = JSONContainerState(kind: .object, depth: writer.depth, start: writer.bytes.count)
        writer.bytes.append(UInt8(ascii: "{"))
        writer.push(state)
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(writer: writer, state: state, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let state = JSONContainerState(kind: .array, depth: writer.depth, start: writer.bytes.count)
        writer.bytes.append(UInt8(ascii: "["))
        writer.push(state)
        return JSONUnkeyedContainer(writer: writer, state: state, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueContainer(writer: writer, codingPath: codingPath)
    }
}

struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONByteWriter
    let state: JSONContainerState
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) { begin(key.stringValue) }

    private func begin(_ key: String) {
        writer.prepare(state)
        state.beginMember(key: key, in: writer)
    }

    mutating func encodeNil(forKey key: Key) throws {
        begin(key)
        writer.writeNull()
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        begin(key)
        writer.writeBool(value)
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        begin(key)
        writer.writeString(value)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        begin(key)
        try writer.writeFloat(value, codingPath: codingPath + [key])
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        begin(key)
        try writer.writeFloat(value, codingPath: codingPath + [key])
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        begin(key)
        writer.writeInteger(value)
    }

    mutating func encode(_ value: Int64, forKey key: Key) throws {
        begin(key)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        begin(key)
        try writer.encodeValue(value, parent: codingPath, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        begin(key)
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        begin(key)
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        begin("super")
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [SuperKey()])
    }

    struct SuperKey: CodingKey {
        init() {}
        init?(stringValue: String) { nil }
        init?(intValue: Int) { nil }
        var stringValue: String { "super" }
        var intValue: Int? { nil }
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        // The member gets a value only if the super encoder asks for a container.
        begin(key)
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key])
    }
}

struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: JSONByteWriter
    let state: JSONContainerState
    let codingPath: [any CodingKey]
    var count: Int { state.count }

    private func begin() {
        writer.prepare(state)
        state.beginElement(in: writer)
    }

    private var nextKey: any CodingKey { IndexKey(index: state.count) }

    mutating func encodeNil() throws {
        begin()
        writer.writeNull()
    }

    mutating func encode(_ value: Bool) throws {
        begin()
        writer.writeBool(value)
    }

    mutating func encode(_ value: String) throws {
        begin()
        writer.writeString(value)
    }

    mutating func encode(_ value: Double) throws {
        let key = nextKey
        begin()
        try writer.writeFloat(value, codingPath: codingPath + [key])
    }

    mutating func encode(_ value: Int) throws {
        begin()
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = nextKey
        begin()
        try writer.encodeValue(value, parent: codingPath, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = nextKey
        begin()
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = nextKey
        begin()
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = nextKey
        begin()
        return JSONByteEncoder(writer: writer, codingPath: codingPath + [key])
    }

    struct IndexKey: CodingKey {
        let index: Int
        init(index: Int) { self.index = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { index = intValue }
        var stringValue: String { "Index \(index)" }
        var intValue: Int? { index }
    }
}

struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let writer: JSONByteWriter
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { writer.writeNull() }
    mutating func encode(_ value: Bool) throws { writer.writeBool(value) }
    mutating func encode(_ value: String) throws { writer.writeString(value) }
    mutating func encode(_ value: Double) throws { try writer.writeFloat(value, codingPath: codingPath) }
    mutating func encode(_ value: Float) throws { try writer.writeFloat(value, codingPath: codingPath) }
    mutating func encode(_ value: Int) throws { writer.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { writer.writeInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try writer.encodeValue(value, parent: codingPath, key: nil) }
}
