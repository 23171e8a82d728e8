/// A streaming pull reader for XML 1.0 in UTF-8, over bytes, without a DOM.
///
/// Give it a whole document (`XMLReader(bytes:)`, then call ``next()`` until it returns nil), or
/// feed it chunks (`XMLReader()`, ``append(_:)`` and ``finishInput()``, then ``read()`` until it
/// says ``ReadResult/endOfDocument``; ``ReadResult/needsInput`` asks for the next chunk). Only the
/// unread part of the input is kept, so a 1 GB file can be read in 1 MB chunks.
///
/// It reports start tags (with attributes), end tags and text; it skips the XML declaration,
/// comments, processing instructions and the DOCTYPE. Security: a DOCTYPE's internal subset is
/// skipped, never interpreted; a reference to any entity but the five predefined ones fails with
/// ``XMLError/Kind/entityExpansionDisabled``; nothing external is ever resolved or fetched.
/// Every event has a ``location``; every error names one. Sizes are bounded by ``XMLLimits``.
public final class XMLReader {
    /// The outcome of one ``read()``.
    public enum ReadResult: Hashable, Sendable {
        case event(XMLEvent)
        /// The buffered input ends inside a construct: ``append(_:)`` more, or ``finishInput()``.
        case needsInput
        /// The root element is closed and the input is finished.
        case endOfDocument
    }

    // One reader is used from one place at a time (it is not Sendable), so the run-time
    // exclusivity check on every call is skipped.
    @exclusivity(unchecked) private var core: XMLScanner

    /// The limits this reader enforces.
    public var limits: XMLLimits { core.limits }
    /// Drop text events that hold only white space (indentation between elements).
    public var skipsWhitespaceText: Bool {
        get { core.skipsWhitespaceText }
        set { core.skipsWhitespaceText = newValue }
    }
    /// Where the last event returned by ``read()`` or ``next()`` starts.
    public var location: XMLLocation { core.location }
    /// How many elements are open.
    public var depth: Int { core.openEnds.count }

    /// A reader to be fed with ``append(_:)`` and ``finishInput()``.
    public init(limits: XMLLimits = XMLLimits(), skipsWhitespaceText: Bool = false) {
        core = XMLScanner(limits: limits, skipsWhitespaceText: skipsWhitespaceText)
    }

    /// A reader over a whole document.
    public convenience init(bytes: some Collection<UInt8>, limits: XMLLimits = XMLLimits(),
                            skipsWhitespaceText: Bool = false) {
        self.init(limits: limits, skipsWhitespaceText: skipsWhitespaceText)
        append(bytes)
        finishInput()
    }

    deinit { core.storage.deallocate() }

    /// Adds the next chunk of the document.
    public func append(_ bytes: some Collection<UInt8>) { core.append(bytes) }

    /// Marks the end of the input: from now on, input that ends inside a construct is an error.
    public func finishInput() { core.inputComplete = true }

    /// The next event of a document given whole (or fed and finished); nil at its end.
    public func next() throws(XMLError) -> XMLEvent? { try core.next() }

    /// Reads the next event, or tells that more input is needed or that the document ended.
    public func read() throws(XMLError) -> ReadResult { try core.read() }
}

/// The reader's state and scanning code, a struct so that its hot loops run without the
/// dynamic exclusivity checks that class properties get.
struct XMLScanner {
    typealias ReadResult = XMLReader.ReadResult

    let limits: XMLLimits
    var skipsWhitespaceText: Bool
    private(set) var location = XMLLocation(line: 1, column: 1)

    // Input: the unread bytes live in storage[pos..<count].
    private(set) var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    private var pos = 0
    var inputComplete = false

    // Line/column bookkeeping: the location of byte `anchorOffset` is known; later offsets are
    // counted from it, so each byte is counted once however often a location is asked for.
    private var anchorOffset = 0
    private var anchorLine = 1
    private var anchorColumn = 1

    // Open elements: their raw qualified names back to back, and where each starts.
    private var openNames: [UInt8] = []
    private(set) var openEnds: [Int] = []
    private var openLocations: [XMLLocation] = []
    private var pendingEnd: XMLName?

    private enum Phase { case prolog, content, epilog }
    private var phase = Phase.prolog
    /// Nothing consumed yet: the byte-order mark and the XML declaration are allowed here.
    private var atStart = true
    private var checkedSignature = false
    private var sawDoctype = false

    init(limits: XMLLimits, skipsWhitespaceText: Bool) {
        self.limits = limits
        self.skipsWhitespaceText = skipsWhitespaceText
        capacity = 4096
        storage = .allocate(capacity: capacity)
    }

    /// Adds the next chunk of the document.
    mutating func append(_ bytes: some Collection<UInt8>) {
        precondition(!inputComplete, "append after finishInput")
        let n = bytes.count
        if n == 0 { return }
        // Drop what was read, keeping the line/column anchor on the first unread byte.
        if pos > 0 && (pos >= 1 << 16 || pos * 2 >= count) {
            advanceAnchor(to: pos)
            let rest = count - pos
            if rest > 0 { (storage).update(from: storage + pos, count: rest) }
            count = rest
            anchorOffset -= pos
            pos = 0
        }
        if count + n > capacity {
            var newCapacity = capacity * 2
            while newCapacity < count + n { newCapacity *= 2 }
            let newStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
            newStorage.initialize(from: storage, count: count)
            storage.deallocate()
            storage = newStorage
            capacity = newCapacity
        }
        let target = UnsafeMutableBufferPointer(start: storage + count, count: n)
        let copied: Int? = bytes.withContiguousStorageIfAvailable { source in
            target.baseAddress!.initialize(from: source.baseAddress!, count: n)
            return n
        }
        if copied == nil { _ = target.initialize(from: bytes) }
        count += n
    }

    /// The next event of a document given whole (or fed and finished); nil at its end.
    mutating func next() throws(XMLError) -> XMLEvent? {
        switch try read() {
        case .event(let event): return event
        case .endOfDocument: return nil
        case .needsInput:
            throw XMLError(.truncated, at: location(of: count), "more input is needed: call finishInput() after the last chunk")
        }
    }

    /// Reads the next event, or tells that more input is needed or that the document ended.
    mutating func read() throws(XMLError) -> ReadResult {
        if let end = pendingEnd {
            pendingEnd = nil
            return .event(.endElement(end))
        }
        do {
            while true {
                if !checkedSignature, let result = try readStart() { return result }
                guard pos < count else {
                    if !inputComplete { return .needsInput }
                    return try endOfInput()
                }
                let start = pos
                let event = storage[start] == UInt8(ascii: "<") ? try scanMarkup(start) : try scanText(start)
                if let event { return .event(event) }
            }
        } catch let error as XMLError {
            throw error
        } catch {
            return .needsInput
        }
    }

    // MARK: - Document start and end

    /// Handles a byte-order mark and recognizes other encodings' signatures.
    private mutating func readStart() throws -> ReadResult? {
        guard pos < count else { return inputComplete ? nil : .needsInput }
        let b = storage[pos]
        if b == 0xEF {
            if count - pos < 3 {
                if !inputComplete { return .needsInput }
                throw XMLError(.invalidUTF8, at: location(of: pos), "the input starts with an incomplete byte-order mark")
            }
            guard storage[pos + 1] == 0xBB, storage[pos + 2] == 0xBF else {
                throw XMLError(.invalidUTF8, at: location(of: pos), "the input starts with bytes that are not UTF-8")
            }
            pos += 3
            anchorOffset = pos  // a byte-order mark takes no column
            checkedSignature = true
            return nil
        } else if b == 0xFE || b == 0xFF || b == 0x00 {
            throw XMLError(.unsupportedEncoding, at: location(of: pos),
                           "the input looks like UTF-16 or UTF-32; only UTF-8 is supported")
        }
        checkedSignature = true
        return nil
    }

    private mutating func endOfInput() throws -> ReadResult {
        switch phase {
        case .epilog:
            return .endOfDocument
        case .prolog:
            throw XMLError(.truncated, at: location(of: count),
                           count == 0 ? "empty input: an XML document needs a root element" : "no root element")
        case .content:
            let name = String(decoding: openNames[(openEnds.count > 1 ? openEnds[openEnds.count - 2] : 0)...], as: UTF8.self)
            throw XMLError(.truncated, at: location(of: count),
                           "unexpected end of input: <\(name)> opened at \(openLocations.last!) is not closed")
        }
    }

    // MARK: - Locations

    private mutating func advanceAnchor(to offset: Int) {
        guard offset > anchorOffset else { return }
        (anchorLine, anchorColumn) = lineAndColumn(storage, from: anchorOffset, to: offset, line: anchorLine, column: anchorColumn)
        anchorOffset = offset
    }

    /// The location of `offset` (at or after the anchor), without moving the anchor.
    private func location(of offset: Int) -> XMLLocation {
        let (line, column) = offset > anchorOffset
            ? lineAndColumn(storage, from: anchorOffset, to: min(offset, count), line: anchorLine, column: anchorColumn)
            : (anchorLine, anchorColumn)
        return XMLLocation(line: line, column: column)
    }

    /// Consumes a token that becomes an event starting at `start`.
    private mutating func commitEvent(start: Int, end: Int) {
        advanceAnchor(to: start)
        location = XMLLocation(line: anchorLine, column: anchorColumn)
        pos = end
        atStart = false
    }

    /// Consumes a token that yields no event.
    private mutating func skip(to end: Int) {
        pos = end
        atStart = false
    }

    private func fail(_ kind: XMLError.Kind = .malformed, at offset: Int, _ reason: String) -> XMLError {
        XMLError(kind, at: location(of: offset), reason)
    }

    /// The buffer ended inside a construct: wait for more, or fail when the input is complete.
    private func incomplete(_ what: @autoclosure () -> String, startedAt start: Int) throws -> Never {
        if !inputComplete { throw NeedInput() }
        throw XMLError(.truncated, at: location(of: count),
                       "unexpected end of input in \(what()) started at \(location(of: start))")
    }

    private func text(_ from: Int, _ to: Int) -> String { makeString(storage, from, to) }

    /// A short, printable rendering of the byte at `offset` for messages.
    private func describeByte(at offset: Int) -> String {
        guard offset < count else { return "end of input" }
        let b = storage[offset]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        if b == 0x20 { return "a space" }
        return "byte 0x" + String(b, radix: 16, uppercase: true)
    }

    // MARK: - Text

    private mutating func scanText(_ start: Int) throws -> XMLEvent? {
        let p = storage
        let end = count
        var i = start
        var firstNonSpace = -1
        var needsDecoding = false
        while i < end {
            let c = p[i]
            if c == 0x3C { break }  // <
            switch c {
            case 0x20, 0x0A, 0x09:
                break
            case 0x0D:
                needsDecoding = true
            case 0x26:  // &
                needsDecoding = true
                if firstNonSpace < 0 { firstNonSpace = i }
            case 0x5D:  // ]]> may not appear in text
                if firstNonSpace < 0 { firstNonSpace = i }
                if i + 2 < end && p[i + 1] == 0x5D && p[i + 2] == 0x3E {
                    throw fail(at: i, "']]>' is not allowed in text outside a CDATA section")
                }
            case 0..<0x20:
                throw fail(at: i, "control character U+\(hex4(UInt32(c))) is not allowed in XML")
            default:
                if firstNonSpace < 0 { firstNonSpace = i }
            }
            i += 1
        }
        if i - start > limits.maxTextBytes {
            throw fail(.limitExceeded, at: start, "text longer than \(limits.maxTextBytes) bytes")
        }
        if i == end && !inputComplete { throw NeedInput() }

        if phase != .content {
            if firstNonSpace >= 0 {
                if phase == .prolog {
                    throw fail(at: firstNonSpace, "text before the root element (found \(describeByte(at: firstNonSpace)))")
                }
                throw fail(at: firstNonSpace, "text after the root element (found \(describeByte(at: firstNonSpace)))")
            }
            skip(to: i)
            return nil
        }
        if firstNonSpace < 0 && skipsWhitespaceText {
            skip(to: i)
            return nil
        }
        let value = try characterData(start, i, decodeReferences: needsDecoding, attribute: false)
        commitEvent(start: start, end: i)
        return .text(value)
    }

    /// Text or attribute bytes as a string: UTF-8 checked, line ends normalized, references
    /// decoded; attribute values also get tabs and line ends turned into spaces.
    private mutating func characterData(_ from: Int, _ to: Int, decodeReferences: Bool, attribute: Bool) throws -> String {
        let raw = UnsafeBufferPointer(start: storage + from, count: to - from)
        if !decodeReferences {
            if let s = validString(raw) { return s }
            throw invalidUTF8(from, to, in: attribute ? "an attribute value" : "text")
        }
        if firstInvalidUTF8(raw) != nil { throw invalidUTF8(from, to, in: attribute ? "an attribute value" : "text") }
        var out: [UInt8] = []
        out.reserveCapacity(to - from)
        let p = storage
        var i = from
        while i < to {
            let c = p[i]
            switch c {
            case 0x0D:
                out.append(attribute ? 0x20 : 0x0A)
                if i + 1 < to && p[i + 1] == 0x0A { i += 1 }
                i += 1
            case 0x0A, 0x09:
                out.append(attribute ? 0x20 : c)
                i += 1
            case 0x26:
                let (scalar, next) = try reference(at: i, end: to)
                appendUTF8(scalar, to: &out)
                i = next
            default:
                out.append(c)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func invalidUTF8(_ from: Int, _ to: Int, in what: String) -> XMLError {
        let bad = firstInvalidUTF8(UnsafeBufferPointer(start: storage + from, count: to - from)) ?? 0
        return fail(.invalidUTF8, at: from + bad, "invalid UTF-8 in \(what) (\(describeByte(at: from + bad)))")
    }

    /// Decodes `&lt;`, `&gt;`, `&amp;`, `&apos;`, `&quot;`, `&#N;` or `&#xH;` at `i`.
    private mutating func reference(at i: Int, end: Int) throws -> (UInt32, Int) {
        let p = storage
        var j = i + 1
        if j < end && p[j] == UInt8(ascii: "#") {
            j += 1
            var radix: UInt32 = 10
            if j < end && p[j] == UInt8(ascii: "x") { radix = 16; j += 1 }
            let digitsStart = j
            var value: UInt32 = 0
            while j < end && p[j] != UInt8(ascii: ";") {
                guard let digit = digitValue(p[j], radix: radix), j - digitsStart < 8 else {
                    throw fail(at: i, "malformed character reference (expected \(radix == 16 ? "hex " : "")digits and ';')")
                }
                value = value * radix + digit
                j += 1
            }
            guard j < end, j > digitsStart else { throw fail(at: i, "malformed character reference (expected digits and ';')") }
            guard isXMLChar(value) else {
                throw fail(at: i, "character reference to U+\(hex4(value)), which is not an XML character")
            }
            return (value, j + 1)
        }
        while j < end && isNameByte(p[j]) && j - i <= limits.maxNameBytes { j += 1 }
        guard j > i + 1, j < end, p[j] == UInt8(ascii: ";"), isNameStart(p[i + 1]) else {
            throw fail(at: i, "'&' must start an entity or character reference (write &amp; for a literal ampersand)")
        }
        let name = UnsafeBufferPointer(start: p + i + 1, count: j - i - 1)
        switch Array(name) {
        case Array("lt".utf8): return (0x3C, j + 1)
        case Array("gt".utf8): return (0x3E, j + 1)
        case Array("amp".utf8): return (0x26, j + 1)
        case Array("apos".utf8): return (0x27, j + 1)
        case Array("quot".utf8): return (0x22, j + 1)
        default:
            let entity = String(decoding: name, as: UTF8.self)
            throw fail(.entityExpansionDisabled, at: i,
                       "reference to entity '&\(entity);': entity expansion is disabled (only &lt; &gt; &amp; &apos; &quot; and character references are read\(sawDoctype ? "; DOCTYPE declarations are never interpreted" : ""))")
        }
    }

    // MARK: - Markup

    private mutating func scanMarkup(_ start: Int) throws -> XMLEvent? {
        guard start + 1 < count else { try incomplete("markup", startedAt: start) }
        switch storage[start + 1] {
        case UInt8(ascii: "?"):
            try skipProcessingInstruction(start)
            return nil
        case UInt8(ascii: "!"):
            if try matches(literalComment, at: start + 2, what: "markup", start: start) {
                try skipComment(start)
                return nil
            }
            if try matches(literalCDATA, at: start + 2, what: "markup", start: start) {
                return try scanCDATA(start)
            }
            if try matches(literalDOCTYPE, at: start + 2, what: "markup", start: start) {
                try skipDoctype(start)
                return nil
            }
            throw fail(at: start, "unknown markup declaration '<!' (expected a comment, CDATA section or DOCTYPE)")
        case UInt8(ascii: "/"):
            return try scanEndTag(start)
        default:
            return try scanStartTag(start)
        }
    }

    /// Whether `literal` is at `offset`; waits for more input when the buffer ends mid-way.
    private mutating func matches(_ literal: [UInt8], at offset: Int, what: String, start: Int) throws -> Bool {
        for (k, byte) in literal.enumerated() {
            if offset + k >= count {
                if !inputComplete { throw NeedInput() }
                return false
            }
            if storage[offset + k] != byte { return false }
        }
        return true
    }

    /// Finds `a b` (and `c` if given) from `from`; returns the offset just after them.
    private mutating func find(_ a: UInt8, _ b: UInt8, from: Int, what: String, start: Int) throws -> Int {
        let p = storage
        var j = from
        while true {
            guard j + 1 < count else { try incomplete(what, startedAt: start) }
            if p[j] == a && p[j + 1] == b { return j + 2 }
            j += 1
            if j - start > limits.maxMarkupBytes {
                throw fail(.limitExceeded, at: start, "\(what) longer than \(limits.maxMarkupBytes) bytes")
            }
        }
    }

    private mutating func skipComment(_ start: Int) throws {
        let j = try find(0x2D, 0x2D, from: start + 4, what: "a comment", start: start)  // --
        guard j < count else { try incomplete("a comment", startedAt: start) }
        guard storage[j] == 0x3E else { throw fail(at: j - 2, "'--' is not allowed inside a comment") }
        skip(to: j + 1)
    }

    private mutating func skipProcessingInstruction(_ start: Int) throws {
        let (nameEnd, _) = try scanName(at: start + 2, what: "a processing instruction")
        let target = text(start + 2, nameEnd)
        let end = try find(0x3F, 0x3E, from: nameEnd, what: "a processing instruction", start: start)  // ?>
        if nameEnd < end - 2 && !isSpace(storage[nameEnd]) {
            throw fail(at: nameEnd, "expected white space after the processing instruction target '\(target)'")
        }
        if target.lowercased() == "xml" {
            guard target == "xml", atStart else {
                throw fail(at: start, target == "xml" ? "the XML declaration is only allowed at the very start of the document"
                                                      : "processing instruction target '\(target)' is reserved")
            }
            try checkDeclaration(from: nameEnd, to: end - 2)
        }
        skip(to: end)
    }

    /// Checks the `encoding` of the XML declaration: UTF-8 (or US-ASCII) only.
    private mutating func checkDeclaration(from: Int, to: Int) throws {
        let body = Array(UnsafeBufferPointer(start: storage + from, count: to - from))
        let key = Array("encoding".utf8)
        guard let at = (0...max(0, body.count - key.count)).first(where: { body.count >= key.count && Array(body[$0..<$0 + key.count]) == key }) else { return }
        var j = at + key.count
        while j < body.count && isSpace(body[j]) { j += 1 }
        guard j < body.count, body[j] == UInt8(ascii: "=") else { throw fail(at: from + at, "malformed encoding declaration") }
        j += 1
        while j < body.count && isSpace(body[j]) { j += 1 }
        guard j < body.count, body[j] == 0x22 || body[j] == 0x27 else { throw fail(at: from + j, "malformed encoding declaration") }
        let quote = body[j]
        let valueStart = j + 1
        var k = valueStart
        while k < body.count && body[k] != quote { k += 1 }
        guard k < body.count else { throw fail(at: from + j, "malformed encoding declaration") }
        let name = String(decoding: body[valueStart..<k], as: UTF8.self)
        guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(name.lowercased()) else {
            throw fail(.unsupportedEncoding, at: from + valueStart, "unsupported encoding '\(name)': only UTF-8 is read")
        }
    }

    private mutating func scanCDATA(_ start: Int) throws -> XMLEvent? {
        guard phase == .content else { throw fail(at: start, "a CDATA section is only allowed inside the root element") }
        let contentStart = start + 9
        var j = contentStart
        let p = storage
        while true {
            guard j + 2 < count else { try incomplete("a CDATA section", startedAt: start) }
            let c = p[j]
            if c == 0x5D && p[j + 1] == 0x5D && p[j + 2] == 0x3E { break }
            if c < 0x20 && c != 0x09 && c != 0x0A && c != 0x0D {
                throw fail(at: j, "control character U+\(hex4(UInt32(c))) is not allowed in XML")
            }
            j += 1
            if j - contentStart > limits.maxTextBytes {
                throw fail(.limitExceeded, at: start, "CDATA section longer than \(limits.maxTextBytes) bytes")
            }
        }
        // Only line ends need normalizing: no references inside CDATA.
        var value: String
        if UnsafeBufferPointer(start: p + contentStart, count: j - contentStart).contains(0x0D) {
            guard firstInvalidUTF8(UnsafeBufferPointer(start: p + contentStart, count: j - contentStart)) == nil else {
                throw invalidUTF8(contentStart, j, in: "a CDATA section")
            }
            var out: [UInt8] = []
            var i = contentStart
            while i < j {
                if p[i] == 0x0D {
                    out.append(0x0A)
                    if i + 1 < j && p[i + 1] == 0x0A { i += 1 }
                } else {
                    out.append(p[i])
                }
                i += 1
            }
            value = String(decoding: out, as: UTF8.self)
        } else {
            guard let s = validString(UnsafeBufferPointer(start: p + contentStart, count: j - contentStart)) else {
                throw invalidUTF8(contentStart, j, in: "a CDATA section")
            }
            value = s
        }
        commitEvent(start: start, end: j + 3)
        return .text(value)
    }

    /// Skips `<!DOCTYPE name ExternalID? [internal subset]? >` without interpreting any of it.
    private mutating func skipDoctype(_ start: Int) throws {
        guard phase == .prolog, !sawDoctype else {
            throw fail(at: start, sawDoctype ? "a second DOCTYPE declaration" : "a DOCTYPE declaration is only allowed before the root element")
        }
        let p = storage
        var j = start + 9
        let what = "the DOCTYPE declaration"
        func step() throws {
            j += 1
            if j - start > limits.maxMarkupBytes {
                throw fail(.limitExceeded, at: start, "DOCTYPE declaration longer than \(limits.maxMarkupBytes) bytes")
            }
            if j >= count { try incomplete(what, startedAt: start) }
        }
        guard j < count else { try incomplete(what, startedAt: start) }
        guard isSpace(p[j]) else { throw fail(at: j, "expected white space after '<!DOCTYPE'") }
        var inSubset = false
        while true {
            let c = p[j]
            if c == 0x22 || c == 0x27 {  // a quoted literal: skip to its closing quote
                try step()
                while p[j] != c { try step() }
            } else if inSubset && c == 0x3C && j + 3 < count && p[j + 1] == 0x21 && p[j + 2] == 0x2D && p[j + 3] == 0x2D {
                j = try find(0x2D, 0x2D, from: j + 4, what: what, start: start)  // a comment inside the subset
                j -= 1
            } else if inSubset && c == 0x5D {
                inSubset = false
            } else if !inSubset && c == 0x5B {
                inSubset = true
            } else if !inSubset && c == 0x3E {
                sawDoctype = true
                skip(to: j + 1)
                return
            }
            try step()
        }
    }

    // MARK: - Tags

    /// Scans a name at `i`; returns its end and the offset of its colon, if any.
    private mutating func scanName(at i: Int, what: @autoclosure () -> String) throws -> (end: Int, colon: Int?) {
        let p = storage
        guard i < count else { try incomplete(what(), startedAt: i - 1) }
        guard isNameStart(p[i]) else {
            throw fail(at: i, "expected a name in \(what()), found \(describeByte(at: i))")
        }
        var j = i + 1
        var colon: Int?
        var colons = 0
        var nonASCII = p[i] >= 0x80
        while true {
            guard j < count else { try incomplete(what(), startedAt: i - 1) }
            let c = p[j]
            guard isNameByte(c) else { break }
            if c == 0x3A { colons += 1; colon = j }
            if c >= 0x80 { nonASCII = true }
            j += 1
            if j - i > limits.maxNameBytes {
                throw fail(.limitExceeded, at: i, "name longer than \(limits.maxNameBytes) bytes in \(what())")
            }
        }
        if nonASCII, let bad = firstInvalidUTF8(UnsafeBufferPointer(start: p + i, count: j - i)) {
            throw fail(.invalidUTF8, at: i + bad, "invalid UTF-8 in a name in \(what()) (\(describeByte(at: i + bad)))")
        }
        if colons > 1 || (colon != nil && (colon! == i || colon! == j - 1)) {
            throw fail(at: i, "'\(text(i, j))' is not a valid qualified name (at most one ':' between a prefix and a local name)")
        }
        return (j, colon)
    }

    private mutating func makeName(_ from: Int, _ to: Int, colon: Int?) -> XMLName {
        let p = storage
        guard let colon else { return XMLName(local: makeString(p, from, to)) }
        return XMLName(prefix: makeString(p, from, colon), local: makeString(p, colon + 1, to))
    }

    private mutating func skipSpaces(from: Int, what: @autoclosure () -> String, start: Int) throws -> Int {
        var j = from
        while true {
            guard j < count else { try incomplete(what(), startedAt: start) }
            guard isSpace(storage[j]) else { return j }
            j += 1
        }
    }

    private mutating func scanStartTag(_ start: Int) throws -> XMLEvent? {
        let p = storage
        let (nameEnd, colon) = try scanName(at: start + 1, what: "a start tag")
        func what() -> String { "the start tag <\(makeString(p, start + 1, nameEnd))>" }
        var attributes: [XMLAttribute] = []
        var j = nameEnd
        var selfClosing = false
        while true {
            let spaceStart = j
            j = try skipSpaces(from: j, what: what(), start: start)
            let c = p[j]
            if c == UInt8(ascii: ">") { j += 1; break }
            if c == UInt8(ascii: "/") {
                guard j + 1 < count else { try incomplete(what(), startedAt: start) }
                guard p[j + 1] == UInt8(ascii: ">") else { throw fail(at: j, "expected '/>' to end \(what())") }
                j += 2
                selfClosing = true
                break
            }
            guard j > spaceStart else {
                throw fail(at: j, "expected white space, '>' or '/>' in \(what()), found \(describeByte(at: j))")
            }
            // name = "value"
            let (attributeEnd, attributeColon) = try scanName(at: j, what: what())
            let attributeStart = j
            j = try skipSpaces(from: attributeEnd, what: what(), start: start)
            guard p[j] == UInt8(ascii: "=") else {
                throw fail(at: j, "attribute '\(text(attributeStart, attributeEnd))' needs '=' and a quoted value in \(what())")
            }
            j = try skipSpaces(from: j + 1, what: what(), start: start)
            let quote = p[j]
            guard quote == 0x22 || quote == 0x27 else {
                throw fail(at: j, "the value of attribute '\(text(attributeStart, attributeEnd))' must be quoted")
            }
            let valueStart = j + 1
            var k = valueStart
            var needsDecoding = false
            while true {
                guard k < count else { try incomplete(what(), startedAt: start) }
                let v = p[k]
                if v == quote { break }
                if v == 0x3C { throw fail(at: k, "'<' is not allowed in an attribute value") }
                if v == 0x26 || v < 0x20 {
                    if v < 0x20 && v != 0x09 && v != 0x0A && v != 0x0D {
                        throw fail(at: k, "control character U+\(hex4(UInt32(v))) is not allowed in XML")
                    }
                    needsDecoding = true
                }
                k += 1
                if k - valueStart > limits.maxAttributeValueBytes {
                    throw fail(.limitExceeded, at: attributeStart,
                               "value of attribute '\(text(attributeStart, attributeEnd))' longer than \(limits.maxAttributeValueBytes) bytes")
                }
            }
            if attributes.count == limits.maxAttributes {
                throw fail(.limitExceeded, at: attributeStart, "more than \(limits.maxAttributes) attributes in \(what())")
            }
            let name = makeName(attributeStart, attributeEnd, colon: attributeColon)
            if attributes.contains(where: { $0.name == name }) {
                throw fail(at: attributeStart, "duplicate attribute '\(name)' in \(what())")
            }
            let value = try characterData(valueStart, k, decodeReferences: needsDecoding, attribute: true)
            attributes.append(XMLAttribute(name: name, value: value))
            j = k + 1
        }
        if phase == .epilog {
            throw fail(at: start, "a second root element <\(text(start + 1, nameEnd))>: a document has one root")
        }
        if openEnds.count >= limits.maxDepth {
            throw fail(.limitExceeded, at: start, "elements nested deeper than \(limits.maxDepth)")
        }
        let name = makeName(start + 1, nameEnd, colon: colon)
        commitEvent(start: start, end: j)
        if selfClosing {
            phase = openEnds.isEmpty ? .epilog : .content
            pendingEnd = name
        } else {
            openNames.append(contentsOf: UnsafeBufferPointer(start: p + start + 1, count: nameEnd - start - 1))
            openEnds.append(openNames.count)
            openLocations.append(location)
            phase = .content
        }
        return .startElement(name, attributes: attributes)
    }

    private mutating func scanEndTag(_ start: Int) throws -> XMLEvent? {
        let p = storage
        let (nameEnd, colon) = try scanName(at: start + 2, what: "an end tag")
        let j = try skipSpaces(from: nameEnd, what: "an end tag", start: start)
                guard p[j] == UInt8(ascii: ">") else { throw fail(at: j, "expected '>' to end the end tag </\(text(start + 2, nameEnd))>") }
        guard let topEnd = openEnds.last else {
            throw fail(at: start, "end tag </\(text(start + 2, nameEnd))> without a matching start tag")
        }
        let topStart = openEnds.count > 1 ? openEnds[openEnds.count - 2] : 0
        let length = nameEnd - start - 2
        var same = length == topEnd - topStart
        if same {
            for k in 0..<length where openNames[topStart + k] != p[start + 2 + k] {
                same = false
                break
            }
        }
        guard same else {
            let open = String(decoding: openNames[topStart..<topEnd], as: UTF8.self)
            throw fail(at: start, "mismatched end tag: expected </\(open)> for <\(open)> opened at \(openLocations.last!), found </\(text(start + 2, nameEnd))>")
        }
        openNames.removeLast(length)
        openEnds.removeLast()
        openLocations.removeLast()
        if openEnds.isEmpty { phase = .epilog }
        let name = makeName(start + 2, nameEnd, colon: colon)
        commitEvent(start: start, end: j + 1)
        return .endElement(name)
    }
}

/// Thrown inside the reader when the buffer ends mid-construct and more input may come.
private struct NeedInput: Error {}

private let literalComment = Array("--".utf8)
private let literalCDATA = Array("[CDATA[".utf8)
private let literalDOCTYPE = Array("DOCTYPE".utf8)

@inline(__always) private func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D }

/// Name start: ASCII letter, `_`, `:` or any non-ASCII byte (checked as UTF-8 afterwards).
@inline(__always) private func isNameStart(_ b: UInt8) -> Bool {
    let lower = b | 0x20
    return (lower >= 0x61 && lower <= 0x7A) || b == 0x5F || b == 0x3A || b >= 0x80
}

/// Name character: a name start, a digit, `-` or `.`.
@inline(__always) private func isNameByte(_ b: UInt8) -> Bool {
    isNameStart(b) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2E
}

/// XML 1.0 `Char`: tab, line feed, carriage return and U+0020 and up, minus surrogates, U+FFFE and U+FFFF.
private func isXMLChar(_ v: UInt32) -> Bool {
    v == 0x09 || v == 0x0A || v == 0x0D || (v >= 0x20 && v <= 0xD7FF) || (v >= 0xE000 && v <= 0xFFFD) || (v >= 0x10000 && v <= 0x10FFFF)
}

private func digitValue(_ b: UInt8, radix: UInt32) -> UInt32? {
    switch b {
    case 0x30...0x39: return UInt32(b - 0x30)
    case 0x61...0x66 where radix == 16: return UInt32(b - 0x61 + 10)
    case 0x41...0x46 where radix == 16: return UInt32(b - 0x41 + 10)
    default: return nil
    }
}

private func hex4(_ v: UInt32) -> String {
    let digits = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

private func appendUTF8(_ v: UInt32, to out: inout [UInt8]) {
    switch v {
    case 0..<0x80:
        out.append(UInt8(v))
    case 0x80..<0x800:
        out.append(UInt8(0xC0 | (v >> 6)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    case 0x800..<0x10000:
        out.append(UInt8(0xE0 | (v >> 12)))
        out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    default:
        out.append(UInt8(0xF0 | (v >> 18)))
        out.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
        out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (v & 0x3F)))
    }
}

/// Line and column of offset `to`, given those of `from`: line feeds, then the scalars after the last one.
private func lineAndColumn(_ p: UnsafeMutablePointer<UInt8>, from: Int, to: Int, line: Int, column: Int) -> (Int, Int) {
    let newlines = countLineFeeds(p, from, to)
    guard newlines > 0 else { return (line, column + countScalars(p, from, to)) }
    var k = to - 1
    while p[k] != 0x0A { k -= 1 }
    return (line + newlines, 1 + countScalars(p, k + 1, to))
}

@inline(__always) private func makeString(_ p: UnsafeMutablePointer<UInt8>, _ from: Int, _ to: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: p + from, count: to - from), as: UTF8.self)
}

private let lowSevenBits: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
private let highBits: UInt64 = 0x8080_8080_8080_8080

/// Line feeds in `p[from..<to]`, eight bytes at a time (a byte equals 0x0A when it XORs to zero).
private func countLineFeeds(_ p: UnsafeMutablePointer<UInt8>, _ from: Int, _ to: Int) -> Int {
    var n = 0
    var i = from
    let raw = UnsafeRawPointer(p)
    while i &+ 8 <= to {
        let y = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ 0x0A0A_0A0A_0A0A_0A0A
        let zeroBytes = ~(((y & lowSevenBits) &+ lowSevenBits) | y | lowSevenBits)
        n &+= zeroBytes.nonzeroBitCount
        i &+= 8
    }
    while i < to {
        if p[i] == 0x0A { n &+= 1 }
        i &+= 1
    }
    return n
}

/// Unicode scalars in `p[from..<to]` (bytes that are not UTF-8 continuation bytes 10xxxxxx).
private func countScalars(_ p: UnsafeMutablePointer<UInt8>, _ from: Int, _ to: Int) -> Int {
    var continuation = 0
    var i = from
    let raw = UnsafeRawPointer(p)
    while i &+ 8 <= to {
        let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        continuation &+= (x & ~(x << 1) & highBits).nonzeroBitCount
        i &+= 8
    }
    while i < to {
        if p[i] & 0xC0 == 0x80 { continuation &+= 1 }
        i &+= 1
    }
    return (to - from) - continuation
}

/// The bytes as a string, or nil when they are not UTF-8.
@inline(__always) private func validString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    guard firstInvalidUTF8(bytes) == nil else { return nil }
    return String(decoding: bytes, as: UTF8.self)
}

/// The index of the first byte that does not belong to a well-formed UTF-8 sequence
/// (Unicode table 3-7: no overlongs, no surrogates, nothing above U+10FFFF), or nil.
func firstInvalidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var i = 0
    let n = bytes.count
    while i < n {
        let b = bytes[i]
        if b < 0x80 { i += 1; continue }
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch b {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return i
        }
        guard i + length <= n else { return i }
        let second = bytes[i + 1]
        guard second >= low && second <= high else { return i }
        for k in 2..<max(2, length) where bytes[i + k] & 0xC0 != 0x80 { return i }
        i += length
    }
    return nil
}
