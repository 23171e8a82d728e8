import CSVStream
import FuzzSupport

/// The CSV reader. The first byte picks the delimiter; the rest is a file, read twice: whole and
/// in chunks of a size taken from its length. Both reads must give the same error, and without
/// one the same rows (a `feed` that throws drops the rows it finished: how many precede the error
/// depends on the cuts); every row must start on a line no earlier than the previous one, and reading never
/// holds a field over its limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let delimiters: [UInt8] = [0x2C, 0x3B, 0x09, 0x7C]
    let delimiter = delimiters[Int(input.byte()) % delimiters.count]
    let limits = CSVReader.Limits(maxFieldBytes: 256, maxFields: 64)
    let whole = read([input.bytes], delimiter: delimiter, limits: limits)
    let chunked = read(input.chunks(of: 1 + size % 13), delimiter: delimiter, limits: limits)
    guard whole.error == chunked.error, whole.error != nil || whole.rows == chunked.rows else {
        fatalError("chunked read differs: whole \(whole), chunks of \(1 + size % 13): \(chunked)")
    }
    var line = 0
    for row in whole.rows {
        guard row.line > line || (row.line == line && line == 0), row.fields.count <= limits.maxFields,
              row.fields.allSatisfy({ $0.utf8.count <= limits.maxFieldBytes }) else {
            fatalError("row out of order or over the limits: \(row)")
        }
        line = row.line
    }
    return 0
}

private func read(_ chunks: [ArraySlice<UInt8>], delimiter: UInt8, limits: CSVReader.Limits) -> (rows: [CSVRow], error: CSVError?) {
    var reader = CSVReader(delimiter: delimiter, limits: limits)
    var rows: [CSVRow] = []
    do {
        for chunk in chunks { rows += try reader.feed(chunk) }
        rows += try reader.finish()
        return (rows, nil)
    } catch {
        return (rows, error)
    }
}
