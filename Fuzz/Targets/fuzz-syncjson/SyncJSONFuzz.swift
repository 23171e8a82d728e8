import FuzzSupport
import SyncProtocol

/// The sync protocol's JSON decoder: the input is a JSON text, decoded as each message a server
/// or a client reads (uploads with their records, history pages raw and decoded, results, errors).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let bytes = input.rest
    let decoder = SyncJSONDecoder(indexLimit: 64 * 1024)
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
