/// A qualified element or attribute name, split at its colon: `ns3:hr` has prefix `ns3` and
/// local name `hr`. Namespace URIs are not resolved; match on ``local`` (and ``prefix`` if needed).
public struct XMLName: Hashable, Sendable, CustomStringConvertible {
    /// The namespace prefix, empty when the name has none.
    public var prefix: String
    /// The name without its prefix.
    public var local: String

    public init(prefix: String = "", local: String) {
        self.prefix = prefix
        self.local = local
    }

    /// The name as written: `prefix:local` or `local`.
    public var description: String { prefix.isEmpty ? local : prefix + ":" + local }
}

/// One attribute of a start tag, its value with references decoded and white space normalized.
public struct XMLAttribute: Hashable, Sendable {
    public var name: XMLName
    public var value: String

    public init(name: XMLName, value: String) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == XMLAttribute {
    /// The value of the first attribute whose local name is `local`, ignoring its prefix.
    public func value(of local: String) -> String? {
        for attribute in self where attribute.name.local == local { return attribute.value }
        return nil
    }
}

/// A 1-based line and column. Columns count Unicode scalars, so a tab or an `é` is one column.
public struct XMLLocation: Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column)" }
}

/// What the reader found next.
public enum XMLEvent: Hashable, Sendable {
    /// A start tag. A self-closing tag `<a/>` yields a start and then an end event.
    case startElement(XMLName, attributes: [XMLAttribute])
    /// An end tag (or the end of a self-closing tag).
    case endElement(XMLName)
    /// Character data: text with the predefined entities and character references decoded and
    /// line ends normalized to `\n`, or the content of a CDATA section. Adjacent runs (text, CDATA,
    /// text split by a comment) come as separate events.
    case text(String)
}

/// Malformed, hostile or over-limit input, with the line and column where the reader stopped.
public struct XMLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Broad classes of failure, for callers that react differently (e.g. tests, metrics).
    public enum Kind: String, Sendable {
        /// Not well-formed XML 1.0 (syntax, nesting, characters).
        case malformed
        /// The input ended inside a construct or before the root element was closed.
        case truncated
        /// A reference to an entity other than the five predefined ones (DTD entities are never expanded).
        case entityExpansionDisabled
        /// An encoding other than UTF-8 (or its subset US-ASCII).
        case unsupportedEncoding
        /// Bytes that are not UTF-8.
        case invalidUTF8
        /// One of ``XMLLimits`` was exceeded.
        case limitExceeded
    }

    public var kind: Kind
    public var location: XMLLocation
    public var reason: String

    public init(_ kind: Kind, at location: XMLLocation, _ reason: String) {
        self.kind = kind
        self.location = location
        self.reason = reason
    }

    public var line: Int { location.line }
    public var column: Int { location.column }

    public var description: String { "\(location): \(reason)" }
}

/// Explicit bounds on what one document may contain; exceeding one is an ``XMLError/Kind/limitExceeded``.
public struct XMLLimits: Hashable, Sendable {
    /// Deepest element nesting.
    public var maxDepth: Int
    /// Longest element, attribute or entity name, in bytes.
    public var maxNameBytes: Int
    /// Most attributes on one start tag.
    public var maxAttributes: Int
    /// Longest attribute value, in bytes as written.
    public var maxAttributeValueBytes: Int
    /// Longest run of text or CDATA, in bytes as written.
    public var maxTextBytes: Int
    /// Longest comment, processing instruction or DOCTYPE declaration (all skipped), in bytes.
    public var maxMarkupBytes: Int

    public init(maxDepth: Int = 256, maxNameBytes: Int = 1024, maxAttributes: Int = 256,
                maxAttributeValueBytes: Int = 1 << 20, maxTextBytes: Int = 16 << 20,
                maxMarkupBytes: Int = 4 << 20) {
        self.maxDepth = maxDepth
        self.maxNameBytes = maxNameBytes
        self.maxAttributes = maxAttributes
        self.maxAttributeValueBytes = maxAttributeValueBytes
        self.maxTextBytes = maxTextBytes
        self.maxMarkupBytes = maxMarkupBytes
    }
}
