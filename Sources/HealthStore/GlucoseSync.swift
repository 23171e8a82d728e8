import Foundation
import GRDB
public import HealthModel

extension HealthStore {
    /// Where `device`'s glucose records stored by a download end (table `glucose_sync`): the
    /// last sequence number and that record's bytes; nil before the first download.
    public func glucoseCursor(device: String) async throws -> GlucoseCursor? {
        try await reading { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT last_sequence, last_record FROM glucose_sync WHERE device = ?",
                                             arguments: [device]),
                  let sequence = UInt16(exactly: row["last_sequence"] as Int) else { return nil }
            let record = (row["last_record"] as Data?).map { [UInt8]($0) }
            return GlucoseCursor(sequence: sequence, record: record)
        }
    }

    /// Stores a download's records and, in the same transaction, where the meter's stored
    /// records now end: a download is stored whole or not at all, and the next one starts from it.
    @discardableResult
    public func write(_ batch: LiveBatch, glucoseDevice device: String, cursor: GlucoseCursor) async throws -> WriteResult {
        var batch = batch
        batch.glucoseCursors[device] = cursor
        return try await write(batch)
    }
}

extension RecordWriter {
    /// Sets each meter's cursor (`LiveBatch.glucoseCursors`), in the transaction that stores the
    /// records.
    func writeGlucoseCursors(_ cursors: [String: GlucoseCursor]) throws {
        for (device, cursor) in cursors.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: """
                INSERT INTO glucose_sync (device, last_sequence, last_record, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (device) DO UPDATE SET last_sequence = excluded.last_sequence, last_record = excluded.last_record,
                    updated_at = excluded.updated_at
                """, arguments: [device, Int(cursor.sequence), cursor.record.map { Data($0) }, now])
        }
    }
}
