import FuzzSupport
import SyncProtocol

/// The sync protocol's JSON decoder: the input is a JSON text, decoded as each message a server
/// or a client reads (uploads with their records, history pages raw and decoded, results, errors).
/// Uploads are also read as the server reads them, record by record through
/// `JSONArrayMemberSplitter` in pieces of a size the input's length chooses: that must read exactly
/// what the whole-text decoder reads, and refuse what it refuses.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let bytes = input.rest
    let piece = 1 + bytes.count % 61
    let decoder = SyncJSONDecoder(indexLimit: 64 * 1024)
    let whole = try? SyncJSONDecoder().decode(UploadRequest.self, from: bytes)
    let streamed = try? streamedRecords(bytes, piece: piece)
    precondition(whole?.records == streamed, "the streamed upload reads otherwise than the whole text")
    if let upload = try? decoder.decode(UploadRequest.self, from: bytes) {
        for record in upload.records { _ = try? record.record() }
    }
    _ = try? decoder.decode(HistoryPage.self, from: bytes)
    _ = try? decoder.decode(RawHistoryPage.self, from: bytes)
    _ = try? decoder.decode(UploadResponse.self, from: bytes)
    _ = try? decoder.decode(ErrorResponse.self, from: bytes)
    _ = try? decoder.decode(LoginRequest.self, from: bytes)
    _ = try? decoder.decode(SummaryResponse.self, from: bytes)
    return 0
}

private struct RecordKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

private func streamedRecords(_ bytes: [UInt8], piece: Int) throws -> [WireRecord] {
    var splitter = JSONArrayMemberSplitter(member: "records")
    var records: [WireRecord] = []
    var start = 0
    repeat {
        let end = min(start + piece, bytes.count)
        try bytes[start..<end].withUnsafeBytes { raw in
            try splitter.feed(raw) { element in
                records.append(try SyncJSONDecoder().decodeElement(
                    WireRecord.self, text: element.text, offset: element.offset,
                    codingPath: [RecordKey(stringValue: "records"), RecordKey(intValue: element.index)]))
            }
        }
        start = end
    } while start < bytes.count
    try splitter.finish()
    return records
}
