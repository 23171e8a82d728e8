public import Foundation
public import HealthModel
public import SyncProtocol

/// Decides, for each uploaded record, whether it can be stored, and prepares it. Pure: no I/O.
///
/// A record is rejected (permanently, with the reason) when its `data` did not decode as its
/// `type`, when the envelope's id or version differ from the data's, or when it breaks the
/// model's rules (``RecordValidator``: future-dated, ends before it starts, impossible values),
/// or when what it adds to summaries is not a plausible amount (a negative timer, say).
public struct UploadChecker: Sendable {
    public var validator: RecordValidator

    public init(validator: RecordValidator = RecordValidator()) {
        self.validator = validator
    }

    /// The record ready to store, or why it is rejected.
    public func check(_ wire: WireRecord, now: Date) -> Result<IncomingRecord, UploadRejection> {
        if wire.deleted { return Self.checkTombstone(wire) }
        let record: HealthRecord
        do {
            record = try wire.record()
            try validator.validate(record, now: now)
        } catch let error as WireRecordError {
            return .failure(UploadRejection(reason: error.description))
        } catch let error as ValidationError {
            return .failure(UploadRejection(reason: error.reason))
        } catch {
            return .failure(UploadRejection(reason: "\(error)"))
        }
        let figures = RecordFigures(record)
        if let problem = Self.problem(with: figures) { return .failure(UploadRejection(reason: problem)) }
        let body: [UInt8]
        do {
            body = try Self.canonicalJSON(record)
        } catch {
            return .failure(UploadRejection(reason: "data cannot be stored as JSON: \(error)"))
        }
        return .success(IncomingRecord(id: record.id.description, version: record.version, type: record.type,
                                       start: record.start, end: record.end, body: String(decoding: body, as: UTF8.self),
                                       figures: figures))
    }

    /// A deletion made on a device (`"deleted": true`, no `data`): a known type, a UUID and a
    /// version in range. Stored as a tombstone; see ``ServerStore/upsert(_:userId:deviceId:now:)``
    /// for which version wins.
    static func checkTombstone(_ wire: WireRecord) -> Result<IncomingRecord, UploadRejection> {
        guard let type = RecordType(rawValue: wire.type) else {
            return .failure(UploadRejection(reason: "unknown record type '\(wire.type)' (workout, sleep, habit, measurement or definition)"))
        }
        guard let id = RecordID(string: wire.id.lowercased()) else {
            return .failure(UploadRejection(reason: "id \(wire.id) is not a UUID"))
        }
        guard PhysicalLimits.versions.contains(wire.version) else {
            return .failure(UploadRejection(
                reason: "version \(wire.version) is outside \(PhysicalLimits.versions.lowerBound)...\(PhysicalLimits.versions.upperBound)"))
        }
        let epoch = Date(timeIntervalSince1970: 0)
        return .success(IncomingRecord(id: id.description, version: wire.version, type: type, start: epoch, end: epoch, body: nil,
                                       figures: RecordFigures()))
    }

    /// What a record adds to summaries must be a real amount: from 0 to 10^12 (seconds, metres,
    /// kcal), so that totals stay finite and never negative.
    static let figureRange = 0.0...1e12

    static func problem(with figures: RecordFigures) -> String? {
        let checks = [("active time", figures.activeS, "s"), ("distance", figures.distanceM, "m"),
                      ("energy", figures.energyKcal, "kcal"), ("time asleep", figures.sleepS, "s")]
        for (name, value, unit) in checks where !figureRange.contains(value) {
            return "\(name) \(value) \(unit) is out of range (0 to 1e12 \(unit))"
        }
        return nil
    }

    /// The record (without envelope) as the sync protocol encodes it: sorted keys, ISO 8601 times.
    static func canonicalJSON(_ record: HealthRecord) throws -> [UInt8] {
        let encoder = SyncJSONEncoder()
        switch record {
        case .workout(let w): return try encoder.encode(w)
        case .sleep(let s): return try encoder.encode(s)
        case .habit(let h): return try encoder.encode(h)
        case .measurement(let m): return try encoder.encode(m)
        case .definition(let d): return try encoder.encode(d)
        }
    }
}

/// Why an uploaded record is not stored.
public struct UploadRejection: Error, Equatable, Sendable {
    public var reason: String
}
