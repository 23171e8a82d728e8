import Foundation
import GRDB
public import HealthModel

extension HealthStore {
    /// The last sequence number of `device`'s glucose records stored by a download (table
    /// `glucose_sync`); nil before the first download.
    public func glucoseLastSequence(device: String) async throws -> UInt16? {
        try await reading { db in
            try Int.fetchOne(db, sql: "SELECT last_sequence FROM glucose_sync WHERE device = ?", arguments: [device])
                .flatMap { UInt16(exactly: $0) }
        }
    }

    /// Stores a download's records and, in the same transaction, the meter's last sequence
    /// number: a download is stored whole or not at all, and the next one starts after it.
    @discardableResult
    public func write(_ batch: LiveBatch, glucoseDevice device: String, lastSequence: UInt16) async throws -> WriteResult {
        try await writing { db in
            let writer = RecordWriter(db: db)
            let result = try writer.write(batch.records, importHash: nil)
            try db.execute(sql: """
                INSERT INTO glucose_sync (device, last_sequence, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (device) DO UPDATE SET last_sequence = excluded.last_sequence, updated_at = excluded.updated_at
                """, arguments: [device, Int(lastSequence), writer.now])
            return result
        }
    }
}
