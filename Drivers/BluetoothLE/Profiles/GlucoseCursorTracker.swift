import HealthModel

/// Where a glucose meter's stored records end while the `ble` driver records it: a pure state
/// machine fed every Glucose Measurement of one meter, in the order they arrive (sequence number
/// and the value as sent).
///
/// The cursor follows the highest sequence number received, with that record's bytes. When the
/// record under the cursor's number arrives again, it is compared with the stored bytes
/// (``Check``): another record under that number means the meter was reset (and has since
/// stored at least that many records). From then until the meter sends its records from the
/// start (after ``meterReset()``, when the driver asks for every record: a sequence number not
/// above the one checked), the cursor stays where it is: the new meter's records after that
/// number are stored, but a cursor moved past them would skip its records before it, should the
/// driver stop before asking for them. Stored again as it was, the cursor finds the reset again.
public struct GlucoseCursorTracker: Sendable, Equatable {
    /// What a measurement said of the stored record.
    public enum Check: Sendable, Equatable {
        /// Not the stored record (or its bytes are not known).
        case none
        /// The stored record, sent again unchanged.
        case same
        /// Another record under the stored record's sequence number: the meter was reset.
        case differs
    }

    public private(set) var cursor: GlucoseCursor?
    /// The sequence number whose record was found changed; nil when none is.
    public private(set) var resetAt: UInt16?
    /// Every record was asked for since the reset was found: the next record not above
    /// `resetAt` is the meter's first.
    private var everyRecordAsked = false

    public init(stored cursor: GlucoseCursor?) {
        self.cursor = cursor
    }

    /// A Glucose Measurement, as the meter sent it.
    public mutating func received(sequence: UInt16, value: [UInt8]) -> Check {
        if let changed = resetAt {
            if sequence < changed || (everyRecordAsked && sequence == changed) {  // the meter's first records
                resetAt = nil
                everyRecordAsked = false
                cursor = GlucoseCursor(sequence: sequence, record: value)
            } else if sequence == changed, cursor?.isStoredRecord(sequence: sequence, value: value) == false {
                // Asked for from the stored one again (a new connection before every record
                // came): still another record.
                return .differs
            }
            return .none
        }
        guard let stored = cursor else {
            cursor = GlucoseCursor(sequence: sequence, record: value)
            return .none
        }
        switch stored.isStoredRecord(sequence: sequence, value: value) {
        case true?: return .same
        case false?:
            resetAt = sequence
            return .differs
        case nil: break
        }
        if sequence > stored.sequence { cursor = GlucoseCursor(sequence: sequence, record: value) }
        return .none
    }

    /// The cursor a connection's request procedure starts from (called once per connection,
    /// before its first request): a reset found before is asked about again.
    public mutating func requesting() -> GlucoseCursor? {
        everyRecordAsked = false
        return cursor
    }

    /// The meter was found reset (``GlucoseCatchUp``) and every record is asked for: its sequence
    /// numbers start over, and the records it sends next set the cursor. A reset found by its
    /// changed record keeps the cursor until the first of those records arrives.
    public mutating func meterReset() {
        if resetAt == nil { cursor = nil } else { everyRecordAsked = true }
    }
}
