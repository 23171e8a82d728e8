/// A pure consumer of XML events (the TCX and GPX parsers): the same handler reads a document
/// given whole or one arriving in chunks, fed by ``XMLReader/read(into:)``.
public protocol XMLEventHandler {
    /// Handles one event; `location` is where it starts in the document.
    mutating func handle(_ event: XMLEvent, at location: XMLLocation) throws
}

extension XMLReader {
    /// Hands `handler` every event the input appended so far holds. Returns true once the
    /// document has ended, false when it needs more input (``append(_:)``, or ``finishInput()``
    /// after the last chunk). Throws ``XMLError`` for malformed input, or what `handler` throws.
    public func read(into handler: inout some XMLEventHandler) throws -> Bool {
        while true {
            switch try read() {
            case .event(let event): try handler.handle(event, at: location)
            case .needsInput: return false
            case .endOfDocument: return true
            }
        }
    }
}
