import FuzzSupport
import XMLStream

/// The streaming XML reader. The input is a document; it is read twice, whole and in chunks of
/// a size taken from its length, and both reads must give the same events and the same error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let whole = read([input.bytes])
    let chunked = read(input.chunks(of: 1 + size % 17))
    guard whole.events == chunked.events, whole.error?.kind == chunked.error?.kind else {
        fatalError("chunked read differs: whole \(whole), chunks of \(1 + size % 17): \(chunked)")
    }
    return 0
}

/// Every event until the end of the document or the first error.
private func read(_ chunks: [ArraySlice<UInt8>]) -> (events: [XMLEvent], error: XMLError?) {
    let reader = XMLReader()
    var events: [XMLEvent] = []
    var pending = chunks[...]
    do {
        if pending.isEmpty { reader.finishInput() }
        while true {
            switch try reader.read() {
            case .event(let event):
                events.append(event)
            case .needsInput:
                guard let chunk = pending.popFirst() else { fatalError("needsInput after finishInput") }
                reader.append(chunk)
                if pending.isEmpty { reader.finishInput() }
            case .endOfDocument:
                return (events, nil)
            }
        }
    } catch {
        return (events, error)
    }
}
