import HealthModel

/// What the `ble` driver asks a glucose meter for on each connection, and how it tells a meter
/// with nothing new from a meter that was reset: a pure state machine (no I/O, no clock) over the
/// Record Access Control Point's response codes and the check of the stored record.
///
/// The driver knows where the meter's stored records end (``GlucoseCursor``: the last sequence
/// number `after`, and usually that record as the meter sent it). It asks for every record when it
/// knows none. When it knows the stored record, it asks for the records from it on (">= after"):
/// the record arrives again (stored once, by its identity) and the driver compares it with the
/// stored one (``GlucoseCursorTracker``, fed here with ``storedRecordChecked(same:)``). The same
/// record: the others are new. Another record under that number, or "no records found" (neither
/// it nor any after it): the meter was reset, and every record it holds is asked for. That also
/// catches a meter reset and then filled past `after` before the next connection, whose records
/// numbered up to `after` would otherwise be skipped.
///
/// Without the stored record (a cursor kept before HealthGate stored it), the records after it
/// are asked for (">= after + 1"); "no records found" is then told apart by asking for the stored
/// record itself (">= after"): a meter that still holds it was not reset, one that holds neither
/// it nor anything after it was.
///
/// Records arrive as Glucose Measurement notifications on the driver's own path; only the
/// control point's response codes and the check are fed here.
public struct GlucoseCatchUp: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case idle
        /// The records after (or from) `after` asked for: waiting for the response code.
        case newRecords
        /// Without the stored record, nothing after `after`: ">= after" sent, waiting for its
        /// response code.
        case storedRecord
        /// The meter sent what was asked for; the stored record's check is still to come.
        case awaitingCheck
        /// "Report all records" sent: nothing left to decide.
        case allRecords
        /// Nothing more to ask.
        case done
    }

    /// What the edge does next.
    public enum Step: Sendable, Equatable {
        /// Write this request to the control point.
        case write([UInt8])
        /// The meter was reset: forget the stored sequence number, then write this request
        /// ("report all stored records").
        case meterReset(write: [UInt8])
        /// Keep waiting for the response or the check.
        case wait
        /// Nothing more to ask on this connection.
        case done
    }

    /// The last sequence number stored for the meter; nil: none.
    public let after: UInt16?
    /// Whether the stored record is known, so that it is asked for again and checked.
    public let checksStoredRecord: Bool
    public private(set) var phase: Phase = .idle
    /// The check of the stored record, when it came before the meter's response.
    private var check: Bool?
    /// The meter was found reset because its stored record came back changed (else because it
    /// holds neither it nor any after it).
    public private(set) var storedRecordChanged = false

    public init(after cursor: GlucoseCursor?) {
        after = cursor?.sequence
        checksStoredRecord = cursor?.record != nil
    }

    /// True while the edge should wait for the control point's response or the check.
    public var awaitsResponse: Bool { phase == .newRecords || phase == .storedRecord || phase == .awaitingCheck }

    /// The first request: every record, or those from (or after) `after`.
    public mutating func start() -> Step {
        guard let after, after < .max else {  // after 65535 comes 0: every record
            phase = .allRecords
            return .write(RecordAccessControlPoint.reportAllRecords())
        }
        phase = .newRecords
        return .write(RecordAccessControlPoint.reportRecords(fromSequenceNumber: checksStoredRecord ? after : after + 1))
    }

    /// A response of the control point.
    public mutating func response(_ response: RecordAccessControlPoint.Response) -> Step {
        guard phase == .newRecords || phase == .storedRecord else { return phase == .awaitingCheck ? .wait : .done }
        // Only the end of "report stored records" decides anything.
        guard case .responseCode(RecordAccessControlPoint.OpCode.reportStoredRecords.rawValue, let code) = response else { return .wait }
        switch (phase, code) {
        case (.newRecords, .noRecordsFound) where checksStoredRecord:
            return reset()  // neither the stored record nor any after it
        case (.newRecords, .noRecordsFound):
            phase = .storedRecord
            return .write(RecordAccessControlPoint.reportRecords(fromSequenceNumber: after ?? 0))
        case (.storedRecord, .noRecordsFound):
            return reset()
        case (.newRecords, .success) where checksStoredRecord:
            switch check {
            case true?: return finish()
            case false?: return reset(recordChanged: true)
            case nil:
                phase = .awaitingCheck
                return .wait
            }
        default:
            // Records arrived (success), or the meter refused: nothing more to ask.
            return finish()
        }
    }

    /// The stored record arrived again: the same record (`same`), or another one under its
    /// sequence number (the meter was reset).
    public mutating func storedRecordChecked(same: Bool) -> Step {
        switch phase {
        case .newRecords:
            check = same
            return .wait
        case .awaitingCheck:
            return same ? finish() : reset(recordChanged: true)
        default:
            return phase == .storedRecord ? .wait : .done
        }
    }

    private mutating func reset(recordChanged: Bool = false) -> Step {
        storedRecordChanged = recordChanged
        phase = .allRecords
        return .meterReset(write: RecordAccessControlPoint.reportAllRecords())
    }

    private mutating func finish() -> Step {
        phase = .done
        return .done
    }
}
