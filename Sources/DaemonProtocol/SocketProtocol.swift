import Foundation
public import Entries

/// The status socket's protocol: one JSON line each way, then the daemon closes the connection.
///
/// - `{"request":"status"}` answers the daemon's status snapshot.
/// - `{"request":"log","entry":{"kind":"water","value":"250ml"}}` stores the entry (the JSON form
///   of ``EntryRequest``) through `ManualEntries.log` (HealthPipeline) as `healthgate log` does
///   and answers `{"stored":[...]}` (``LoggedEntry`` objects).
/// - Anything wrong answers `{"error":"..."}`: the message `healthgate log` prints for a refused
///   entry, or what is wrong with the request.
///
/// The pure parts: framing (``RequestLineReader``), parsing with messages for people who write
/// scripts (``parse(_:)``) and the answers' bytes. The I/O is HealthGateDaemon's `StatusServer`.
public enum SocketProtocol {
    /// The longest request line, newline excluded; a longer one is refused unread.
    public static let maxRequestBytes = 64 * 1024
    /// Time a client has from connecting to its request's newline.
    public static let readTimeout: Duration = .seconds(5)
    /// Connections served at once; past it a connection is answered an error and closed.
    public static let maxConnections = 32

    /// What a client asks.
    public enum Request: Equatable, Sendable {
        case status
        case log(EntryRequest)
    }

    /// Why a request is refused: one sentence for the script's author.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public static let example = #"{"request":"status"} or {"request":"log","entry":{"kind":"water","value":"250ml"}}"#

    /// The request in `line` (without its newline), or why it cannot be served.
    public static func parse(_ line: [UInt8]) -> Result<Request, Refusal> {
        do { return .success(try request(Data(line))) } catch { return .failure(error) }
    }

    private static func request(_ data: Data) throws(Refusal) -> Request {
        let decoder = JSONDecoder()
        let keys: [String: AnyJSON]
        do { keys = try decoder.decode([String: AnyJSON].self, from: data) } catch {
            if case DecodingError.typeMismatch = error { throw Refusal("the request must be a JSON object: \(example)") }
            throw Refusal("the request is not JSON: send one object on one line, \(example)")
        }
        guard let name = try? decoder.decode(Head.self, from: data).request else {
            throw Refusal(keys["request"] == nil ? "'request' is missing: status or log"
                                                 : "'request' must be a string: status or log")
        }
        switch name {
        case "status":
            try onlyKnown(keys.keys, ["request"], in: "a status request")
            return .status
        case "log":
            try onlyKnown(keys.keys, ["request", "entry"], in: "a log request")
            return .log(try entry(data, present: keys["entry"] != nil))
        default:
            throw Refusal("unknown request '\(name)': status or log")
        }
    }

    private static func entry(_ data: Data, present: Bool) throws(Refusal) -> EntryRequest {
        let decoder = JSONDecoder()
        let fields: [String: AnyJSON]
        do { fields = try decoder.decode(Wrapped<[String: AnyJSON]>.self, from: data).entry } catch {
            throw Refusal(present ? "'entry' must be an object: {\"kind\":\"water\",\"value\":\"250ml\"}"
                                  : "a log request needs an 'entry': {\"kind\":\"water\",\"value\":\"250ml\"}")
        }
        try onlyKnown(fields.keys, EntryRequest.jsonKeys, in: "entry")
        let kinds = EntryRequest.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        let kind: String?
        do { kind = try decoder.decode(Wrapped<KindField>.self, from: data).entry.kind } catch {
            throw Refusal("entry.kind must be a string: one of \(kinds)")
        }
        guard let kind else { throw Refusal("entry.kind is missing: one of \(kinds)") }
        guard EntryRequest.Kind(rawValue: kind) != nil else { throw Refusal("entry.kind '\(kind)' is not one of \(kinds)") }
        do { return try decoder.decode(Wrapped<EntryRequest>.self, from: data).entry } catch {
            throw Refusal(describe(error))
        }
    }

    private static func onlyKnown(_ keys: Dictionary<String, AnyJSON>.Keys, _ known: [String], in place: String) throws(Refusal) {
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw Refusal("\(place) has no key '\(unknown)' (known: \(known.joined(separator: ", ")))")
        }
    }

    /// A decoding error of a field as `entry.kcal must be a number`.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "entry: \(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(let type, let context):
            let expected = type == Bool.self ? "true or false" : type == String.self ? "a string" : type == Double.self ? "a number" : "\(type)"
            return "\(path(context)) must be \(expected)"
        case .valueNotFound(_, let context): return "\(path(context)) must not be null"
        case .keyNotFound(let key, let context): return "\((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")) is missing"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "entry: \(error)"
        }
    }

    // MARK: Answers

    /// `{"error": message}`.
    public static func errorAnswer(_ message: String) -> [UInt8] {
        (try? StatusJSON.encode(["error": message])) ?? Array(#"{"error":"internal"}"#.utf8)
    }

    /// `{"stored": [...]}`.
    public static func storedAnswer(_ entries: [LoggedEntry]) throws -> [UInt8] {
        try StatusJSON.encode(["stored": entries])
    }

    /// The request line for `request`, newline included (what clients send).
    public static func line(_ request: Request) throws -> [UInt8] {
        var bytes: [UInt8]
        switch request {
        case .status: bytes = try StatusJSON.encode(["request": "status"])
        case .log(let entry): bytes = try StatusJSON.encode(LogLine(entry: entry))
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private struct Head: Decodable { var request: String }
    private struct Wrapped<T: Decodable>: Decodable { var entry: T }
    private struct KindField: Decodable { var kind: String? }
    private struct LogLine: Encodable {
        var request = "log"
        var entry: EntryRequest
    }

    /// Any JSON value, not kept (to see an object's keys).
    private struct AnyJSON: Decodable {
        init(from decoder: any Decoder) throws { _ = try decoder.singleValueContainer() }
    }
}

/// Frames the request: the bytes up to the first newline, at most
/// ``SocketProtocol/maxRequestBytes`` of them. Pure: the connection feeds what it reads.
public struct RequestLineReader: Sendable {
    /// What a connection sent.
    public enum Outcome: Equatable, Sendable {
        /// The line, without its newline (and a `\r` before it).
        case line([UInt8])
        /// More than the limit before a newline.
        case tooLong
        /// The client closed its side without sending anything.
        case empty
        /// No newline within ``SocketProtocol/readTimeout``.
        case timedOut
    }

    public let limit: Int
    private var buffer: [UInt8] = []

    public init(limit: Int = SocketProtocol.maxRequestBytes) { self.limit = limit }

    /// Takes what arrived; the outcome once the line is complete or too long, else nil.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> Outcome? {
        let newline = bytes.firstIndex(of: UInt8(ascii: "\n"))
        let part = newline.map { bytes[..<$0] } ?? bytes[...]
        // Never more than one byte past the limit is kept.
        buffer.append(contentsOf: part.prefix(max(0, limit + 1 - buffer.count)))
        if newline != nil { return complete() }
        return buffer.count > limit ? .tooLong : nil
    }

    /// The client closed its side: what it sent without a newline counts as the line.
    public func end() -> Outcome {
        buffer.isEmpty ? .empty : complete()
    }

    private func complete() -> Outcome {
        guard buffer.count <= limit else { return .tooLong }
        return .line(buffer.last == UInt8(ascii: "\r") ? Array(buffer.dropLast()) : buffer)
    }
}

/// JSON for the status socket (plain `JSONEncoder`, sorted keys).
public enum StatusJSON {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }
}
