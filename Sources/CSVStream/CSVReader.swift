/// One row of a CSV file: its fields, unquoted, and the 1-based line it starts on.
public struct CSVRow: Sendable, Equatable {
    public var fields: [String]
    /// The line the row starts on (a quoted field may carry newlines: the row then spans several).
    public var line: Int

    public init(fields: [String], line: Int) {
        self.fields = fields
        self.line = line
    }

    /// The field at `index`, or nil past the row's end.
    public subscript(safe index: Int) -> String? { index < fields.count ? fields[index] : nil }

    /// A row of one empty field (a blank line).
    public var isBlank: Bool { fields.count == 1 && fields[0].isEmpty }
}

/// Malformed CSV: where (1-based line and column, in bytes) and why.
public struct CSVError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var reason: String

    public init(line: Int, column: Int, _ reason: String) {
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var description: String { "line \(line), column \(column): \(reason)" }
}

/// A streaming CSV reader (RFC 4180): push bytes in any cuts with ``feed(_:)``, take the rows
/// finished so far, call ``finish()`` at the end. Pure: no I/O, no allocation beyond the row under
/// way, which ``Limits`` bound.
///
/// Accepted: a UTF-8 byte-order mark at the start; LF, CRLF or a lone CR between rows; quoted
/// fields with doubled quotes and embedded delimiters and newlines; a last row without a newline.
/// Refused with a ``CSVError`` naming line and column: a quote inside an unquoted field, text after
/// a closing quote, a quoted field still open at the end, a field or row over the limits, bytes
/// that are not UTF-8. A cell's text is returned as written: nothing is evaluated (`=HYPERLINK(...)`
/// stays text).
public struct CSVReader: Sendable {
    /// Bounds on one row, against hostile input (a quote that never closes).
    public struct Limits: Sendable {
        public var maxFieldBytes: Int
        public var maxFields: Int

        public init(maxFieldBytes: Int = 1 << 20, maxFields: Int = 10_000) {
            self.maxFieldBytes = maxFieldBytes
            self.maxFields = maxFields
        }
    }

    private enum State: Sendable {
        /// At the start of a field.
        case fieldStart
        case unquoted
        case quoted
        /// A quote inside a quoted field: the end of the field, or the first of a doubled quote.
        case quoteInQuoted
        /// A CR ended a row: a following LF belongs to it.
        case afterCR
    }

    public let delimiter: UInt8
    public let limits: Limits
    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fields: [String] = []
    private var line = 1
    private var column = 0
    private var rowLine = 1
    private var rowHasContent = false
    private var atStart = true
    private var bomMatched = 0

    public init(delimiter: UInt8 = UInt8(ascii: ","), limits: Limits = Limits()) {
        self.delimiter = delimiter
        self.limits = limits
    }

    /// The rows `bytes` finished. When it throws, the rows this call finished before the error are
    /// not returned (importers check a whole file before emitting anything).
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(CSVError) -> [CSVRow] {
        var rows: [CSVRow] = []
        for byte in bytes {
            if atStart {
                let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
                if byte == bom[bomMatched] {
                    bomMatched += 1
                    if bomMatched == 3 { atStart = false }
                    continue
                }
                atStart = false
                // A partial BOM was text after all.
                for pending in bom.prefix(bomMatched) { try consume(pending, into: &rows) }
            }
            try consume(byte, into: &rows)
        }
        return rows
    }

    /// The last row (when the input does not end with a newline). Throws for a quoted field still
    /// open.
    public mutating func finish() throws(CSVError) -> [CSVRow] {
        if atStart, bomMatched > 0 {
            atStart = false
            var rows: [CSVRow] = []
            for pending in [UInt8]([0xEF, 0xBB, 0xBF]).prefix(bomMatched) { try consume(pending, into: &rows) }
            return try rows + finish()
        }
        switch state {
        case .quoted:
            throw CSVError(line: rowLine, column: 1, "a quoted field opened on this line is never closed")
        case .afterCR:
            return []
        case .fieldStart, .unquoted, .quoteInQuoted:
            guard rowHasContent || !fields.isEmpty || !field.isEmpty else { return [] }
            return [try endRow()]
        }
    }

    private mutating func consume(_ byte: UInt8, into rows: inout [CSVRow]) throws(CSVError) {
        let quote = UInt8(ascii: "\""), cr: UInt8 = 0x0D, lf: UInt8 = 0x0A
        column += 1
        switch state {
        case .afterCR:
            state = .fieldStart
            if byte == lf {
                column = 0
                return
            }
            column = 1
            try consume(byte, afterNewline: &rows, quote: quote, cr: cr, lf: lf)
        default:
            try consume(byte, afterNewline: &rows, quote: quote, cr: cr, lf: lf)
        }
    }

    private mutating func consume(_ byte: UInt8, afterNewline rows: inout [CSVRow], quote: UInt8, cr: UInt8, lf: UInt8) throws(CSVError) {
        switch state {
        case .fieldStart, .afterCR:
            if byte == quote {
                rowHasContent = true
                state = .quoted
            } else if byte == delimiter {
                rowHasContent = true
                try endField()
            } else if byte == lf || byte == cr {
                rows.append(try endRow())
                newline(byte == cr)
            } else {
                rowHasContent = true
                try append(byte)
                state = .unquoted
            }
        case .unquoted:
            if byte == delimiter {
                try endField()
                state = .fieldStart
            } else if byte == lf || byte == cr {
                rows.append(try endRow())
                newline(byte == cr)
            } else if byte == quote {
                throw CSVError(line: line, column: column, "a quote inside a field that does not start with one")
            } else {
                try append(byte)
            }
        case .quoted:
            if byte == quote {
                state = .quoteInQuoted
            } else {
                try append(byte)
                if byte == lf {
                    // A newline inside quotes: the row goes on, the line count too.
                    line += 1
                    column = 0
                }
            }
        case .quoteInQuoted:
            if byte == quote {
                try append(quote)
                state = .quoted
            } else if byte == delimiter {
                try endField()
                state = .fieldStart
            } else if byte == lf || byte == cr {
                rows.append(try endRow())
                newline(byte == cr)
            } else {
                throw CSVError(line: line, column: column, "text after a closing quote (a quote inside a quoted field is written twice)")
            }
        }
    }

    private mutating func newline(_ wasCR: Bool) {
        line += 1
        column = 0
        rowLine = line
        state = wasCR ? .afterCR : .fieldStart
    }

    private mutating func append(_ byte: UInt8) throws(CSVError) {
        guard field.count < limits.maxFieldBytes else {
            throw CSVError(line: rowLine, column: 1, "a field longer than \(limits.maxFieldBytes) bytes")
        }
        field.append(byte)
    }

    private mutating func endField() throws(CSVError) {
        guard fields.count < limits.maxFields else {
            throw CSVError(line: rowLine, column: column, "more than \(limits.maxFields) fields in a row")
        }
        guard let text = String(validating: field, as: UTF8.self) else {
            throw CSVError(line: line, column: column, "a field that is not UTF-8 text")
        }
        fields.append(text)
        field.removeAll(keepingCapacity: true)
    }

    private mutating func endRow() throws(CSVError) -> CSVRow {
        try endField()
        let row = CSVRow(fields: fields, line: rowLine)
        fields = []
        rowHasContent = false
        return row
    }
}
