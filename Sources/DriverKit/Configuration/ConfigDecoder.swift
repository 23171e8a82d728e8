/// Decodes typed settings (`Decodable`) from a configuration table.
///
/// Every mistake is a ``ConfigError`` naming the key path and the reason: a value of the wrong
/// kind (`must be a string`), a required key left out (`is required`), a value out of range
/// (``Swift/KeyedDecodingContainer/decodeIfPresent(_:forKey:in:)-(_,_,ClosedRange<Int>)``), and,
/// after decoding, the first key that nothing read (`unknown key`): a misspelt key is an error,
/// not a silent default.
public enum ConfigDecoder {
    /// `type` decoded from `table`; error key paths start with `keyPath` (the table's own path,
    /// such as `drivers.inbox`).
    public static func decode<T: Decodable>(_ type: T.Type, from table: [String: ConfigValue],
                                            keyPath: String = "") throws(ConfigError) -> T {
        let reads = KeyReads()
        let decoder = ValueDecoder(value: .table(table), codingPath: [], reads: reads)
        let value: T
        do {
            value = try T(from: decoder)
        } catch let error as ConfigError {
            throw error.under(keyPath)
        } catch let error as DecodingError {
            throw ConfigError(decoding: error).under(keyPath)
        } catch {
            throw ConfigError(keyPath: keyPath, reason: "\(error)")
        }
        if let unknown = reads.firstUnread(in: table, at: "") {
            throw ConfigError(keyPath: unknown, reason: "unknown key").under(keyPath)
        }
        return value
    }

    /// The key path of a coding path: `command[1]`, `api.socket`.
    static func keyPath(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = (key as? IndexKey)?.intValue {
                path += "[\(index)]"
            } else {
                path += path.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return path
    }
}

extension ConfigError {
    /// A decoding error of a settings type (thrown by its own `init(from:)` or by a standard
    /// library conformance) as a configuration error at the same key path.
    init(decoding error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(keyPath: ConfigDecoder.keyPath(context.codingPath + [key]), reason: "is required")
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            self.init(keyPath: ConfigDecoder.keyPath(context.codingPath), reason: context.debugDescription)
        @unknown default:
            self.init(keyPath: "", reason: "\(error)")
        }
    }
}

/// The key paths read so far, for the unknown-key check.
final class KeyReads {
    private var read: Set<String> = []
    /// Tables taken whole (decoded as ``ConfigValue``): nothing under them is unknown.
    private var whole: Set<String> = []

    func markRead(_ path: String) { read.insert(path) }
    func markWhole(_ path: String) { whole.insert(path) }

    /// The first key (sorted, depth first) under `table` that nothing read.
    func firstUnread(in table: [String: ConfigValue], at prefix: String) -> String? {
        if whole.contains(prefix) { return nil }
        for key in table.keys.sorted() {
            let path = prefix.isEmpty ? key : prefix + "." + key
            guard read.contains(path) else { return path }
            if case .table(let inner) = table[key], let unread = firstUnread(in: inner, at: path) { return unread }
            if case .array(let items) = table[key] {
                for (index, item) in items.enumerated() {
                    if case .table(let inner) = item, let unread = firstUnread(in: inner, at: path + "[\(index)]") { return unread }
                }
            }
        }
        return nil
    }
}

struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

struct ValueDecoder: Decoder {
    let value: ConfigValue
    let codingPath: [any CodingKey]
    let reads: KeyReads
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    var path: String { ConfigDecoder.keyPath(codingPath) }

    func mismatch(_ expected: String) -> ConfigError {
        ConfigError(keyPath: path, reason: "must be \(expected)")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .table(let table) = value else {
            throw ConfigError(keyPath: path, reason: "must be a table ([\(path)])")
        }
        return KeyedDecodingContainer(TableContainer<Key>(table: table, codingPath: codingPath, reads: reads))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch("a list") }
        return ListContainer(items: items, codingPath: codingPath, reads: reads)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
}

extension ValueDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { false }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch("true or false") }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw mismatch("a string") }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case .float(let number): return number
        case .integer(let number): return Double(number)
        default: throw mismatch("a number")
        }
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    func decode(_ type: Int.Type) throws -> Int {
        guard case .integer(let number) = value else { throw mismatch("a whole number") }
        return number
    }

    func decode<T: FixedWidthInteger & Decodable>(integer type: T.Type) throws -> T {
        let number = try decode(Int.self)
        guard let exact = T(exactly: number) else {
            throw ConfigError(keyPath: path, reason: "\(number) is out of range (\(T.min) to \(T.max))")
        }
        return exact
    }

    func decode(_ type: Int8.Type) throws -> Int8 { try decode(integer: type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decode(integer: type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decode(integer: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decode(integer: type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decode(integer: type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decode(integer: type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decode(integer: type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decode(integer: type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decode(integer: type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: self)
    }
}

struct TableContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let table: [String: ConfigValue]
    let codingPath: [any CodingKey]
    let reads: KeyReads

    var allKeys: [Key] {
        table.keys.sorted().compactMap { name in
            reads.markRead(path(name))
            return Key(stringValue: name)
        }
    }

    func path(_ name: String) -> String {
        let prefix = ConfigDecoder.keyPath(codingPath)
        return prefix.isEmpty ? name : prefix + "." + name
    }

    func contains(_ key: Key) -> Bool {
        reads.markRead(path(key.stringValue))
        return table[key.stringValue] != nil
    }

    func value(_ key: Key) throws -> ValueDecoder {
        reads.markRead(path(key.stringValue))
        guard let value = table[key.stringValue] else {
            throw ConfigError(keyPath: path(key.stringValue), reason: "is required")
        }
        return ValueDecoder(value: value, codingPath: codingPath + [key], reads: reads)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        reads.markRead(path(key.stringValue))
        return table[key.stringValue] == nil
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try value(key).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        try value(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try value(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: .table(table), codingPath: codingPath, reads: reads)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }
}

struct ListContainer: UnkeyedDecodingContainer {
    let items: [ConfigValue]
    let codingPath: [any CodingKey]
    let reads: KeyReads
    var currentIndex = 0

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw ConfigError(keyPath: ConfigDecoder.keyPath(codingPath), reason: "has too few items")
        }
        defer { currentIndex += 1 }
        return ValueDecoder(value: items[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)], reads: reads)
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}
