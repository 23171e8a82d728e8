/// A D-Bus value as read from a message (variants are unwrapped to the value they hold). Pure
/// data, so the BlueZ object model can be tested with values built in the test.
public indirect enum DBusValue: Equatable, Sendable {
    case bool(Bool)
    case byte(UInt8)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A Unix file descriptor (owned by the message it came from).
    case fd(Int32)
    /// An array of bytes (`ay`).
    case bytes([UInt8])
    case array([DBusValue])
    /// An array of dict entries (`a{..}`), in message order.
    case dict([DBusEntry])
    case structure([DBusValue])

    /// A string or object path.
    public var string: String? {
        switch self {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Any integer type, as an Int.
    public var int: Int? {
        switch self {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    /// `ay` (or an array of bytes).
    public var bytes: [UInt8]? {
        switch self {
        case .bytes(let b): return b
        case .array(let items):
            var out: [UInt8] = []
            for item in items {
                guard case .byte(let b) = item else { return nil }
                out.append(b)
            }
            return out
        default: return nil
        }
    }

    /// An array of strings (or object paths).
    public var strings: [String]? {
        guard case .array(let items) = self else { return nil }
        var out: [String] = []
        for item in items {
            guard let s = item.string else { return nil }
            out.append(s)
        }
        return out
    }

    /// A dict keyed by strings or object paths (`a{sv}`, `a{oa{sa{sv}}}`, ...); later keys win.
    public var properties: [String: DBusValue]? {
        switch self {
        case .dict(let entries):
            var out: [String: DBusValue] = [:]
            for e in entries {
                guard let key = e.key.string else { return nil }
                out[key] = e.value
            }
            return out
        case .array(let items) where items.isEmpty: return [:]
        default: return nil
        }
    }
}

/// One entry of a D-Bus dict.
public struct DBusEntry: Equatable, Sendable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}
