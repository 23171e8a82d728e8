import Foundation
import Hummingbird
import Logging
import SyncProtocol

/// Record upload (upsert by id and version) and history.
struct RecordRoutes {
    let deps: ServerDependencies

    static let historyLimits: ClosedRange<Int> = 1...5000
    /// Uploads of at most this many records are answered without a worker.
    static let inlineAnswerRecords = 100
    static let defaultHistoryLimit = 1000

    func add(to group: RouterGroup<ServerContext>) {
        group.post("records", use: upload)
        group.get("records", use: history)
    }

    /// `POST /v1/records`: one result per record, in order; the valid ones stored in one
    /// transaction. 400 (not an UploadRequest), 413 (too large, too many records or values),
    /// 415, 429 (the account has too many uploads in progress).
    ///
    /// Reading the body and storing wait here; inflating, decoding, checking and encoding run
    /// on ``UploadWorkers``, in turns between accounts. Bodies whose JSON is over
    /// ``UploadWorkers/bulkBodyBytes`` run in the bulk lane and one at a time in the whole
    /// server (``UploadWorkers/oneLargeAtATime(_:)``): the memory bound of uploads in flight.
    @Sendable func upload(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let account = principal.userId
        let deps = deps
        return try await deps.uploads.admitted(account) {
            let raw = try await JSONBody.read(request, limit: deps.limits.uploadBodyBytes)
            let now = Date()
            if raw.bytes.count <= UploadWorkers.bulkBodyBytes,
               let checked = try await deps.uploads.run(for: account, { try Self.check(raw, deps: deps, now: now, within: UploadWorkers.bulkBodyBytes) }) {
                return try await Self.store(checked, principal: principal, deps: deps, now: now, logger: context.logger)
            }
            // Large as sent, or once inflated: one such upload at a time, in the bulk lane.
            return try await deps.uploads.oneLargeAtATime {
                // The text, the parser's index and the decoded records are freed once checked:
                // given back before storing, whose buffers are taken on other threads.
                guard let checked = try await deps.uploads.run(for: account, large: true, {
                    defer { GlibcMalloc.trim() }
                    return try Self.check(raw, deps: deps, now: now)
                }) else {
                    throw APIError.internalError
                }
                let response = try await Self.store(checked, principal: principal, deps: deps, now: now, logger: context.logger)
                // What storing freed goes back too, before the next large upload starts: its parts
                // were allocated on other threads (the store's writer, the event loops), whose
                // malloc arenas would otherwise keep their high water, so that successive large
                // uploads added up. On a worker: trimming is blocking work.
                try await deps.uploads.run(for: account, large: true) { GlibcMalloc.trim() }
                return response
            }
        }
    }

    /// Stores the valid records of a checked upload and answers it.
    private static func store(_ checked: CheckedUpload, principal: Principal, deps: ServerDependencies, now: Date,
                              logger: Logger) async throws -> Response {
        let account = principal.userId
        let outcomes = try await deps.store.upsert(checked.valid, userId: principal.userId, deviceId: principal.deviceId, now: now)
        // A small answer is made where it is (a few microseconds a record: less than the trip
        // to a worker thread and back); a large one on a worker.
        let (response, counts) = checked.envelopes.count <= Self.inlineAnswerRecords
            ? Self.answer(checked, outcomes: outcomes)
            : try await deps.uploads.run(for: account) { Self.answer(checked, outcomes: outcomes) }
        deps.metrics.upload(accepted: counts.accepted, duplicate: counts.duplicate, rejected: counts.rejected)
        logger.info("upload", metadata: ["device": "\(principal.deviceId)", "accepted": "\(counts.accepted)",
                                         "duplicate": "\(counts.duplicate)", "rejected": "\(counts.rejected)"])
        return response
    }

    /// An upload decoded and checked: each record's envelope and verdict, in order.
    struct CheckedUpload: Sendable {
        var envelopes: [(id: String, version: Int)]
        var verdicts: [Result<IncomingRecord, UploadRejection>]
        var valid: [IncomingRecord] { verdicts.compactMap { try? $0.get() } }
    }

    /// Decodes and checks an upload body (CPU work: run on a worker); nil when its JSON text is
    /// longer than `bound`. The text streams through (a gzip body is inflated a piece at a time)
    /// and each record is decoded from its own text, checked, and dropped: what is kept is each
    /// record's envelope and verdict (canonical JSON and figures), never the whole text, its
    /// parsed index or all the decoded records at once.
    static func check(_ raw: RawBody, deps: ServerDependencies, now: Date, within bound: Int? = nil) throws -> CheckedUpload? {
        let maxRecords = deps.limits.recordsPerUpload
        var splitter = JSONArrayMemberSplitter(member: "records")
        var checked = CheckedUpload(envelopes: [], verdicts: [])
        do {
            let whole = try JSONBody.stream(raw, limit: deps.limits.uploadBodyBytes, within: bound) { piece in
                try splitter.feed(piece) { element in
                    // Past the most: counted (for the answer), not decoded.
                    guard element.index < maxRecords else { return }
                    let decoder = SyncJSONDecoder(indexLimit: JSONBody.indexLimit(forBodyBytes: element.text.count))
                    let wire = try decoder.decodeElement(WireRecord.self, text: element.text, offset: element.offset,
                                                         codingPath: [RecordsKey.records, RecordsKey.index(element.index)])
                    checked.envelopes.append((wire.id, wire.version))
                    checked.verdicts.append(deps.checker.check(wire, now: now))
                }
            }
            guard whole else { return nil }
            try splitter.finish()
            guard splitter.count <= maxRecords else {
                throw APIError.payloadTooLarge("\(splitter.count) records in one upload: at most \(maxRecords)")
            }
        } catch let error as DecodingError {
            throw JSONBody.refusal(error, expected: "UploadRequest")
        }
        return checked
    }

    /// The coding path of an uploaded record, for errors: `records[N]`.
    private enum RecordsKey: CodingKey {
        case records
        case index(Int)
        var stringValue: String {
            switch self {
            case .records: "records"
            case .index(let i): "Index \(i)"
            }
        }
        var intValue: Int? {
            if case .index(let i) = self { i } else { nil }
        }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self = .index(intValue) }
    }

    /// The answer to a checked upload once the store has taken its valid records, and its counts.
    static func answer(_ upload: CheckedUpload, outcomes: [UpsertOutcome])
        -> (Response, counts: (accepted: Int, duplicate: Int, rejected: Int)) {
        var stored = outcomes.makeIterator()
        var counts = (accepted: 0, duplicate: 0, rejected: 0)
        let results = zip(upload.envelopes, upload.verdicts).map { envelope, verdict -> UploadResult in
            switch verdict {
            case .failure(let rejection):
                counts.rejected += 1
                return UploadResult(id: envelope.id, version: envelope.version, status: .rejected, reason: rejection.reason)
            case .success:
                switch stored.next() {
                case .accepted?:
                    counts.accepted += 1
                    return UploadResult(id: envelope.id, version: envelope.version, status: .accepted)
                case .duplicate?, nil:
                    counts.duplicate += 1
                    return UploadResult(id: envelope.id, version: envelope.version, status: .duplicate)
                }
            }
        }
        return (JSONResponse.make(UploadResponse(results: results)), counts)
    }

    /// `GET /v1/records?after=CURSOR&limit=N`: the user's records changed after the cursor.
    @Sendable func history(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let query = Query(request)
        let after = try query.integer("after", in: 0...Int64.max, default: 0)
        let limit = try query.integer("limit", in: Self.historyLimits, default: Self.defaultHistoryLimit)
        let slice = try await deps.store.history(userId: principal.userId, after: after, limit: limit,
                                                 byteBudget: deps.limits.historyPageBytes)
        return JSONResponse.make(data: Self.historyPage(slice, after: after))
    }

    /// A ``HistoryPage`` as JSON, with each record's stored body put in as it is (it is already
    /// canonical JSON: decoding and re-encoding every page would only cost time). Keys sorted,
    /// as ``SyncAPI/encoder()`` writes them. A tombstone (no body) has `"deleted":true` and no `data`.
    static func historyPage(_ slice: HistorySlice, after: Int64) -> Data {
        let next = slice.records.last?.seq ?? after
        var out = Data()
        out.reserveCapacity(slice.records.reduce(96) { $0 + ($1.body?.utf8.count ?? 0) + 160 })
        // The epoch is 32 hex digits: nothing to escape.
        out.append(contentsOf: #"{"epoch":"\#(slice.epoch)","more":\#(slice.more),"next":\#(next),"records":["#.utf8)
        for (index, record) in slice.records.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            if let body = record.body {
                out.append(contentsOf: #"{"data":"#.utf8)
                out.append(contentsOf: body.utf8)
            } else {
                out.append(contentsOf: #"{"deleted":true"#.utf8)
            }
            // Ids are UUIDs and types one of four words: nothing to escape.
            out.append(contentsOf: #","device_id":"\#(record.deviceId)","id":"\#(record.id)","seq":\#(record.seq),"#.utf8)
            out.append(contentsOf: #""type":"\#(record.type)","version":\#(record.version)}"#.utf8)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
