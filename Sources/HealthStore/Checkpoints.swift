import Foundation
import GRDB
public import HealthModel

extension HealthStore {
    /// The driver checkpoint stored under `key` (table `driver_checkpoints`, JSON text); nil
    /// before the first one.
    public func checkpoint(_ key: CheckpointKey) async throws -> String? {
        try await reading { db in
            try String.fetchOne(db, sql: "SELECT value FROM driver_checkpoints WHERE driver = ? AND device = ?",
                                arguments: [key.driver, key.device])
        }
    }

    /// Stores `checkpoints` alone: for what is already stored (a file whose content the ledger
    /// holds), so nothing else needs to land with them.
    public func write(checkpoints: [CheckpointKey: String]) async throws {
        guard !checkpoints.isEmpty else { return }
        try await writing { db in try RecordWriter(db: db).writeCheckpoints(checkpoints) }
    }

    /// Every checkpoint of `driver`, by device.
    public func checkpoints(driver: String) async throws -> [String: String] {
        try await reading { db in
            var out: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT device, value FROM driver_checkpoints WHERE driver = ?", arguments: [driver]) {
                out[row["device"]] = row["value"]
            }
            return out
        }
    }
}

extension RecordWriter {
    /// Sets each checkpoint, in the transaction that stores the records it covers.
    func writeCheckpoints(_ checkpoints: [CheckpointKey: String]) throws {
        for (key, value) in checkpoints.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: """
                INSERT INTO driver_checkpoints (driver, device, value, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (driver, device) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, arguments: [key.driver, key.device, value, now])
        }
    }
}
