import HealthModel

/// Where the stored records of a glucose meter end: the last sequence number stored, and that
/// record as the meter sent it (its Glucose Measurement value). The meter sends the same bytes
/// for the same record every time; a meter reset since has another record under that number
/// (another time or value), which is how a reset meter that has since stored more records than
/// the last number is told from the same meter.
///
/// The `ble` driver's checkpoint for a meter (BLEDriver makes it a `DriverCheckpoint`): stored
/// as `{"sequence": N, "record": "hex"}` in the transaction that stores the records.
public struct GlucoseCursor: Hashable, Sendable, Codable {
    public let sequence: UInt16
    /// nil: not known (a cursor stored before HealthGate kept the record, or a value longer
    /// than a GATT attribute's 512 bytes, which no meter sends).
    public let record: [UInt8]?

    public init(sequence: UInt16, record: [UInt8]?) {
        self.sequence = sequence
        self.record = record.flatMap { (1...512).contains($0.count) ? $0 : nil }
    }

    /// Whether `value`, received as record `sequence`, is the stored record (true) or another
    /// one under its number (false: the meter was reset); nil when it is not the stored record's
    /// number, or the stored record is not known.
    public func isStoredRecord(sequence: UInt16, value: [UInt8]) -> Bool? {
        guard sequence == self.sequence, let record else { return nil }
        return record == value
    }

    private enum CodingKeys: String, CodingKey { case sequence, record }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let text = try c.decodeIfPresent(String.self, forKey: .record)
        var record: [UInt8]?
        if let text {
            guard let bytes = Hex.bytes(text) else {
                throw DecodingError.dataCorruptedError(forKey: .record, in: c, debugDescription: "not hexadecimal")
            }
            record = bytes
        }
        self.init(sequence: try c.decode(UInt16.self, forKey: .sequence), record: record)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encodeIfPresent(record.map(Hex.lowercase), forKey: .record)
    }
}
