public import Foundation
public import HealthModel

/// The sync protocol between HealthGate and the tracking server (version 1), shared by the
/// forwarder and `healthgate-server`. `openapi/healthgate-sync.yaml` describes the same shapes
/// for other clients; both change together.
///
/// JSON keys are snake_case (spelled out by each type's coding keys, never by an encoder
/// strategy); times are ISO 8601 UTC strings with as many fractional digits as the value needs
/// to travel exactly (`2026-11-22T07:00:00Z`, `2026-11-22T07:00:00.25Z`, `...:00.1259765625Z`).
public enum SyncAPI {
    /// Path prefix of every endpoint.
    public static let prefix = "/v1"
    /// Bodies larger than this are refused with 413 (after decompression).
    public static let maxBodyBytes = 32 << 20
    /// Records per upload the server accepts (more: 413).
    public static let maxRecordsPerUpload = 5000

    /// The encoder of every body: exact ISO 8601 times, sorted keys. The reference for
    /// ``SyncJSONEncoder``, which writes the same bytes faster and is what the client and server use.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(ISO8601.preciseString(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoding error in a few words ("missing key 'sport' at data", "expected Int at
    /// records.[0].version", "not valid JSON (... at byte 11)") rather than Foundation's debug text.
    public static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "" : " at " + keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing key '\(key.stringValue)'" + path(context)
        case .typeMismatch(let type, let context): return "expected \(type)" + path(context)
        case .valueNotFound(let type, let context): return "null where \(type) is required" + path(context)
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON (\(context.debugDescription))" }
            return context.debugDescription + path(context)
        @unknown default: return "\(error)"
        }
    }

    /// The decoder of every body (the inverse of ``encoder()``). The reference for
    /// ``SyncJSONDecoder``, which reads the same values faster and is what the client and server use.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            guard let date = ISO8601.parse(text) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 time: \(text)")
            }
            return date
        }
        return decoder
    }
}

// MARK: - Accounts and devices

/// `POST /v1/accounts`: creates an account.
public struct RegisterRequest: Codable, Sendable, Equatable {
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// 201 answer to ``RegisterRequest``.
public struct RegisterResponse: Codable, Sendable, Equatable {
    public var userId: String
    enum CodingKeys: String, CodingKey { case userId = "user_id" }
    public init(userId: String) { self.userId = userId }
}

/// `POST /v1/sessions`: logs a device in; the answer carries its token.
public struct LoginRequest: Codable, Sendable, Equatable {
    public var email: String
    public var password: String
    /// A name for the device (e.g. the host name), shown in device lists.
    public var deviceName: String
    enum CodingKeys: String, CodingKey { case email, password, deviceName = "device_name" }
    public init(email: String, password: String, deviceName: String) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
    }
}

/// 201 answer to ``LoginRequest``. The token is shown once; the server keeps only its hash.
public struct LoginResponse: Codable, Sendable, Equatable {
    public var userId: String
    public var deviceId: String
    /// Sent as `Authorization: Bearer TOKEN` on every other request.
    public var token: String
    enum CodingKeys: String, CodingKey { case userId = "user_id", deviceId = "device_id", token }
    public init(userId: String, deviceId: String, token: String) {
        self.userId = userId
        self.deviceId = deviceId
        self.token = token
    }
}

/// One of the user's devices (`GET /v1/devices`; `PUT /v1/devices/current/primary` answers
/// with the device it marked).
public struct DeviceInfo: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    /// The user's primary syncing device (at most one).
    public var primary: Bool
    public var createdAt: Date
    public var lastSeenAt: Date?
    enum CodingKeys: String, CodingKey { case id, name, primary, createdAt = "created_at", lastSeenAt = "last_seen_at" }
    public init(id: String, name: String, primary: Bool, createdAt: Date, lastSeenAt: Date?) {
        self.id = id
        self.name = name
        self.primary = primary
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
    }
}

/// `GET /v1/devices`.
public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceInfo]
    public init(devices: [DeviceInfo]) { self.devices = devices }
}

// MARK: - Records

/// A record on the wire: identity, version, type, and the record itself in `data` (the
/// HealthModel value, encoded with ``SyncAPI/encoder()``).
///
/// Decoding never fails on a bad `data`: the problem is kept (``problem``) so that the server
/// rejects that one record with the reason and stores the rest of the batch.
public struct WireRecord: Codable, Sendable, Equatable {
    public var id: String
    public var version: Int
    /// `workout`, `sleep`, `habit` or `measurement`.
    public var type: String
    /// The record (nil when `data` did not decode as `type`).
    public var data: HealthRecord?
    /// Why `data` did not decode.
    public var problem: String?
    /// In pulled history: the device that uploaded this version. Absent in uploads.
    public var deviceId: String?
    /// In pulled history: the server's change sequence number of this version.
    public var seq: Int64?
    /// The record was deleted (a tombstone: id, type and version, no data): in pulled history,
    /// and in uploads (a deletion made on a device).
    public var deleted: Bool

    public init(_ record: HealthRecord, deviceId: String? = nil, seq: Int64? = nil) {
        id = record.id.description
        version = record.version
        type = record.type.rawValue
        data = record
        self.deviceId = deviceId
        self.seq = seq
        deleted = false
    }

    /// A tombstone: the record `id` of `type` deleted at `version` (an upload of a deletion, or
    /// history). At equal versions a tombstone wins over data, on the server and in a pull.
    public init(tombstone id: String, type: RecordType, version: Int, deviceId: String? = nil, seq: Int64? = nil) {
        self.id = id
        self.version = version
        self.type = type.rawValue
        data = nil
        self.deviceId = deviceId
        self.seq = seq
        deleted = true
    }

    enum CodingKeys: String, CodingKey { case id, version, type, data, deviceId = "device_id", seq, deleted }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        version = try c.decode(Int.self, forKey: .version)
        type = try c.decode(String.self, forKey: .type)
        deviceId = try c.decodeIfPresent(String.self, forKey: .deviceId)
        seq = try c.decodeIfPresent(Int64.self, forKey: .seq)
        deleted = try c.decodeIfPresent(Bool.self, forKey: .deleted) ?? false
        if deleted { return }
        do {
            switch type {
            case "workout": data = .workout(try c.decode(Workout.self, forKey: .data))
            case "sleep": data = .sleep(try c.decode(SleepSession.self, forKey: .data))
            case "habit": data = .habit(try c.decode(HabitEvent.self, forKey: .data))
            case "measurement": data = .measurement(try c.decode(HealthModel.Measurement.self, forKey: .data))
            case "definition": data = .definition(try c.decode(Definition.self, forKey: .data))
            default: problem = "unknown record type '\(type)' (workout, sleep, habit, measurement or definition)"
            }
        } catch let error as DecodingError {
            problem = "data is not a valid \(type): " + SyncAPI.describe(error)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(deviceId, forKey: .deviceId)
        try c.encodeIfPresent(seq, forKey: .seq)
        if deleted {
            try c.encode(true, forKey: .deleted)
            return
        }
        switch data {
        case .workout(let w): try c.encode(w, forKey: .data)
        case .sleep(let s): try c.encode(s, forKey: .data)
        case .habit(let h): try c.encode(h, forKey: .data)
        case .measurement(let m): try c.encode(m, forKey: .data)
        case .definition(let d): try c.encode(d, forKey: .data)
        case nil: try c.encodeNil(forKey: .data)
        }
    }

    /// The record, checked against the envelope (id and version must agree with `data`).
    public func record() throws(WireRecordError) -> HealthRecord {
        guard let record = data else { throw .init(problem ?? "no data") }
        guard record.id.description == id.lowercased() else { throw .init("id \(id) differs from data.id \(record.id)") }
        guard record.version == version else { throw .init("version \(version) differs from data.version \(record.version)") }
        return record
    }
}

public struct WireRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// `POST /v1/records`: a batch of records (optionally `Content-Encoding: gzip`).
public struct UploadRequest: Codable, Sendable, Equatable {
    public var records: [WireRecord]
    public init(records: [WireRecord]) { self.records = records }
}

/// What the server did with one uploaded record.
public struct UploadResult: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        /// Stored: new, or a newer version of a record the server held.
        case accepted
        /// The server already holds this version or a newer one: nothing changed.
        case duplicate
        /// Not stored, permanently (the reason says why); sending it again will not help.
        case rejected
    }
    public var id: String
    public var version: Int
    public var status: Status
    public var reason: String?
    public init(id: String, version: Int, status: Status, reason: String? = nil) {
        self.id = id
        self.version = version
        self.status = status
        self.reason = reason
    }
}

/// 200 answer to ``UploadRequest``: one result per record, in request order.
public struct UploadResponse: Codable, Sendable, Equatable {
    public var results: [UploadResult]
    public init(results: [UploadResult]) { self.results = results }
}

/// `GET /v1/records?after=CURSOR&limit=N`: the user's records (from every device) changed after
/// the cursor, oldest change first. Start with `after=0`; continue with `next` while `more`.
public struct HistoryPage: Codable, Sendable, Equatable {
    public var records: [WireRecord]
    /// The cursor to continue from (the last record's `seq`, or the request's cursor).
    public var next: Int64
    public var more: Bool
    /// Names the numbering the cursors belong to (key `epoch`; absent from older servers). It
    /// changes when the server renumbers its cursors: a client whose saved epoch differs restarts
    /// from 0.
    public var epoch: String?
    public init(records: [WireRecord], next: Int64, more: Bool, epoch: String? = nil) {
        self.records = records
        self.next = next
        self.more = more
        self.epoch = epoch
    }
}

/// A ``HistoryPage`` with each record kept as the JSON text the server sent, so that a client
/// can keep a record it cannot decode (one a newer install wrote) instead of losing it.
/// Decoded with ``SyncJSONDecoder`` only.
public struct RawHistoryPage: Decodable, Sendable {
    public var records: [RawJSON]
    public var next: Int64
    public var more: Bool
    public var epoch: String?
}

/// A JSON value kept as its exact text. ``SyncJSONDecoder`` fills it with the bytes of the value
/// as they appear in the document; other decoders cannot (they do not keep the text).
public struct RawJSON: Decodable, Sendable, Equatable {
    public var bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                debugDescription: "RawJSON is read by SyncJSONDecoder only"))
    }
}

// MARK: - Summaries, health, errors

/// `GET /v1/summaries?period=day|week|month|year[&since=..][&until=..][&tz=..][&day_start=..]`:
/// totals per period of the user's days (docs/days.md) in `time_zone` from `day_start`; weeks
/// start on Monday.
public struct SummaryResponse: Codable, Sendable, Equatable {
    public struct Bucket: Codable, Sendable, Equatable {
        /// First day of the period, `YYYY-MM-DD`.
        public var start: String
        public var workouts: Int
        public var activeS: Double
        public var distanceM: Double
        public var energyKcal: Double
        public var sleepS: Double
        public var habitEvents: Int
        public var measurements: Int
        /// The habit events per habit, by name (absent in a server's answer before habits were
        /// summed: empty).
        public var habits: [HabitTotal]
        /// The user's derived habits' values in the period, by name (absent in a server's answer
        /// before derived habits: empty).
        public var derived: [DerivedTotal]
        enum CodingKeys: String, CodingKey {
            case start, workouts, activeS = "active_s", distanceM = "distance_m", energyKcal = "energy_kcal", sleepS = "sleep_s"
            case habitEvents = "habit_events", measurements, habits, derived
        }
        public init(start: String, workouts: Int = 0, activeS: Double = 0, distanceM: Double = 0, energyKcal: Double = 0,
                    sleepS: Double = 0, habitEvents: Int = 0, measurements: Int = 0, habits: [HabitTotal] = [],
                    derived: [DerivedTotal] = []) {
            self.start = start
            self.workouts = workouts
            self.activeS = activeS
            self.distanceM = distanceM
            self.energyKcal = energyKcal
            self.sleepS = sleepS
            self.habitEvents = habitEvents
            self.measurements = measurements
            self.habits = habits
            self.derived = derived
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(start: try c.decode(String.self, forKey: .start), workouts: try c.decode(Int.self, forKey: .workouts),
                      activeS: try c.decode(Double.self, forKey: .activeS), distanceM: try c.decode(Double.self, forKey: .distanceM),
                      energyKcal: try c.decode(Double.self, forKey: .energyKcal), sleepS: try c.decode(Double.self, forKey: .sleepS),
                      habitEvents: try c.decode(Int.self, forKey: .habitEvents), measurements: try c.decode(Int.self, forKey: .measurements),
                      habits: try c.decodeIfPresent([HabitTotal].self, forKey: .habits) ?? [],
                      derived: try c.decodeIfPresent([DerivedTotal].self, forKey: .derived) ?? [])
        }
    }

    /// A derived habit's values in a period (docs/derived-habits.md): computed by the server from
    /// the synced records by the same rule as the client's, per day of the period.
    public struct DerivedTotal: Codable, Sendable, Equatable {
        /// The habit's name, as its definition spells it.
        public var habit: String
        /// The values' unit: `steps`, `min`, `workouts`, `ml`, `sessions`, a measurement's unit.
        public var unit: String
        /// The sum of the period's daily values (for a measurement, each day's mean reading: the
        /// period's mean is `value / days`).
        public var value: Double
        /// The days of the period with a value.
        public var days: Int
        public init(habit: String, unit: String, value: Double, days: Int) {
            self.habit = habit
            self.unit = unit
            self.value = value
            self.days = days
        }
    }

    /// One habit's events in a period: `hydration` (values in ml), `vaping` (one per session,
    /// categories the triggers), `meal` (kcal), the user's habits.
    public struct HabitTotal: Codable, Sendable, Equatable {
        public var habit: String
        public var events: Int
        /// The sum of the events' values (ml of water, kcal of meals, a numeric habit's amounts;
        /// 1 for each yes/no check-in and vaping session).
        public var value: Double
        /// The events' unit, when they have one.
        public var unit: String?
        /// Events per category (drink sizes, vaping triggers, a categorical habit's categories),
        /// by category; events without one are not listed.
        public var categories: [CategoryCount]
        public init(habit: String, events: Int, value: Double, unit: String? = nil, categories: [CategoryCount] = []) {
            self.habit = habit
            self.events = events
            self.value = value
            self.unit = unit
            self.categories = categories
        }
    }

    /// Events of one category.
    public struct CategoryCount: Codable, Sendable, Equatable {
        public var category: String
        public var events: Int
        public init(category: String, events: Int) {
            self.category = category
            self.events = events
        }
    }
    public var period: String
    /// The zone the days were counted in (`Europe/Berlin`; `UTC` unless asked).
    public var timeZone: String
    /// When the days start, `HH:MM` (the user's synced preference unless asked).
    public var dayStart: String
    public var buckets: [Bucket]
    enum CodingKeys: String, CodingKey { case period, timeZone = "time_zone", dayStart = "day_start", buckets }
    public init(period: String, timeZone: String = "UTC", dayStart: String = "00:00", buckets: [Bucket]) {
        self.period = period
        self.timeZone = timeZone
        self.dayStart = dayStart
        self.buckets = buckets
    }
}

/// `GET /v1/health`.
public struct HealthResponse: Codable, Sendable, Equatable {
    public var status: String
    public var version: String
    /// Whether the server's database answers: `ok` or `unavailable` (absent from older servers).
    public var database: String?
    public init(status: String = "ok", version: String, database: String? = nil) {
        self.status = status
        self.version = version
        self.database = database
    }
}

/// Every error answer: `{"error": {"code": "...", "message": "..."}}` with the HTTP status.
/// Codes: `bad_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
/// `payload_too_large`, `unsupported_media_type`, `too_many_requests`, `internal`; also
/// `method_not_allowed` (405, a known path with another method) and `unavailable` (503, try
/// again after `Retry-After`). Clients should treat an unknown code by its HTTP status.
///
/// An error about one record of an upload (a batch refused as a whole because of it) names it
/// in `record_id`; a client may then give that record up (a dead letter) and send the others.
/// Without it, an error says nothing about any single record. A 413 says the largest body the
/// server takes in `max_bytes` (after decompression): a record larger than that on its own can
/// never be uploaded there.
public struct ErrorResponse: Codable, Sendable, Equatable, Error {
    public struct Body: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
        public var recordId: String?
        public var maxBytes: Int?
        enum CodingKeys: String, CodingKey { case code, message, recordId = "record_id", maxBytes = "max_bytes" }
        public init(code: String, message: String, recordId: String? = nil, maxBytes: Int? = nil) {
            self.code = code
            self.message = message
            self.recordId = recordId
            self.maxBytes = maxBytes
        }
    }
    public var error: Body
    public init(code: String, message: String, recordId: String? = nil, maxBytes: Int? = nil) {
        error = Body(code: code, message: message, recordId: recordId, maxBytes: maxBytes)
    }
}
