public import Foundation
public import HealthModel

/// What a driver remembers about one device across runs: a glucose meter's last record, the
/// files already fetched from a watch. One value per driver and device (``CheckpointKey``), of
/// the driver's own type, read through the driver's sink (``RecordSink/checkpoint(_:device:)``)
/// and written with the records it covers: in a live batch (``HealthModel/LiveBatch/checkpoints``,
/// ``HealthModel/LiveBatch/setCheckpoint(_:device:)``) or with a file handed to the file sink
/// (``FileSink/importFile(_:checkpoints:)``), in the same transaction. Never a field of the model
/// or a method of the store: the store keeps it as JSON text and knows nothing of its shape.
///
/// A type's JSON must stay readable by later versions of the driver (add optional fields; a
/// checkpoint that does not decode is taken as none, so the driver starts over, which must be
/// safe: records are stored by their ids, once).
public protocol DriverCheckpoint: Codable, Sendable, Equatable {
    /// The driver whose checkpoint this is (its id, as stored with its records).
    static var driver: String { get }
}

extension DriverCheckpoint {
    /// The key of this driver's checkpoint for `device`.
    public static func key(device: String) -> CheckpointKey { CheckpointKey(driver: driver, device: device) }

    /// The checkpoint as stored: JSON with sorted keys (the same value gives the same text).
    public func encodedText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a Codable value of plain fields cannot fail; an empty object stands in if a
        // driver's type ever throws, and decoding it then fails, which is "no checkpoint".
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The checkpoint `text` holds, or nil when it is not one of this type (written by another
    /// version): the driver then starts as if it had none.
    public static func decoded(_ text: String) -> Self? {
        try? JSONDecoder().decode(Self.self, from: Data(text.utf8))
    }
}

extension LiveBatch {
    /// Stores `checkpoint` for `device` with this batch's records, in the same transaction.
    public mutating func setCheckpoint<C: DriverCheckpoint>(_ checkpoint: C, device: String) {
        checkpoints[C.key(device: device)] = checkpoint.encodedText()
    }
}

extension RecordSink {
    /// The driver's checkpoint for `device` as stored by this sink's store; nil before the first
    /// one, and for a sink without a store.
    public func checkpoint<C: DriverCheckpoint>(_ type: C.Type, device: String) async throws -> C? {
        try await checkpoint(C.key(device: device)).flatMap(C.decoded)
    }
}
