import CSVStream
import Testing

/// The one CSV reader: RFC 4180 quoting, BOM, CRLF, embedded newlines, any chunking, and clear
/// errors with line and column.
@Suite struct CSVReaderTests {
    static func read(_ text: String, chunk: Int? = nil, delimiter: UInt8 = UInt8(ascii: ",")) throws(CSVError) -> [CSVRow] {
        var reader = CSVReader(delimiter: delimiter)
        let bytes = Array(text.utf8)
        var rows: [CSVRow] = []
        let size = chunk ?? max(1, bytes.count)
        var start = 0
        while start < bytes.count {
            rows += try reader.feed(bytes[start..<min(bytes.count, start + size)])
            start += size
        }
        return rows + (try reader.finish())
    }

    @Test func quotingNewlinesAndTheByteOrderMark() throws {
        let text = "\u{FEFF}a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\nlines\"\r\nlast,,\"\"\n\n=HYPERLINK(\"\"),+1,@x"
            .replacingOccurrences(of: "=HYPERLINK(\"\")", with: "=SUM(A1)")
        let rows = try Self.read(text)
        #expect(rows.map(\.fields) == [["a", "b", "c"], ["x, y", "say \"hi\"", "two\nlines"], ["last", "", ""], [""], ["=SUM(A1)", "+1", "@x"]])
        #expect(rows.map(\.line) == [1, 2, 4, 5, 6])
        // Every cut of the bytes gives the same rows.
        for size in 1...9 { #expect(try Self.read(text, chunk: size) == rows, "chunks of \(size)") }
        #expect(try Self.read("a;b\rc;d", delimiter: UInt8(ascii: ";")).map(\.fields) == [["a", "b"], ["c", "d"]])
        #expect(try Self.read("").isEmpty)
        #expect(try Self.read("\u{FEFF}").isEmpty)
        #expect(try Self.read("\u{FEFF}x").map(\.fields) == [["x"]])
        // A partial BOM is text.
        #expect(try Self.read("\u{00EF}a").map(\.fields) == [["\u{00EF}a"]])
    }

    @Test(arguments: [
        ("a,b\nc,d\"e\n", 2, 4, "a quote inside a field that does not start with one"),
        ("a\n\"b\"c,d\n", 2, 4, "text after a closing quote"),
        ("a\nb,\"open\nstill open\n", 2, 1, "never closed"),
    ])
    func malformedQuotesNameLineAndColumn(text: String, line: Int, column: Int, reason: String) {
        for size in [1, 3, 100] {
            #expect {
                _ = try Self.read(text, chunk: size)
            } throws: { error in
                guard let error = error as? CSVError else { return false }
                return error.line == line && error.column == column && error.reason.contains(reason)
            }
        }
    }

    @Test func limitsAndEncoding() {
        var reader = CSVReader(limits: .init(maxFieldBytes: 8, maxFields: 3))
        #expect(throws: CSVError.self) { _ = try reader.feed(Array("\"123456789".utf8)) }
        reader = CSVReader(limits: .init(maxFieldBytes: 8, maxFields: 3))
        #expect(throws: CSVError.self) { _ = try reader.feed(Array("a,b,c,d\n".utf8)) }
        reader = CSVReader()
        #expect(throws: CSVError(line: 1, column: 3, "a field that is not UTF-8 text")) { _ = try reader.feed([0x61, 0xFF, 0x0A]) }
    }

    @Test func calendarDays() {
        #expect(CalendarDay("2024-03-01")?.description == "2024-03-01")
        #expect(CalendarDay("3/1/2024") == CalendarDay("2024-03-01"))
        #expect(CalendarDay("11/5/2020")?.description == "2020-11-05")
        for bad in ["2024-02-30", "2024-13-01", "24-03-01", "2024/03/01", "", "2024-03-01T10:00", "١٢/١/٢٠٢٠"] {
            #expect(CalendarDay(bad) == nil, "\(bad)")
        }
    }
}
