import Foundation
import NIOHTTP1
import SyncProtocol
import TestSupport
import Testing

/// Deleting a record or an account on request deletes the bytes: once the write-ahead log is
/// copied back, the database file no longer holds the record's text or the account's email.
/// (SQLite keeps deleted cells readable in the page's free space unless `secure_delete` is on;
/// Debian's build turns it on by default, others do not, so the server turns it on itself. With
/// it off this test fails.) SQLite's own property, so SQLite whatever store the run tests:
/// PostgreSQL keeps a deleted row's bytes until VACUUM reuses its space (docs/server.md).
@Suite(.serialized) struct ErasureTests {
    func fileHolds(_ path: String, _ marker: String) throws -> Bool {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.range(of: Data(marker.utf8)) != nil
    }

    /// Waits (the checkpointer copies the log back every half second; at most
    /// ``Patience/limit``) for the database file to stop holding `marker`.
    func eventuallyGone(_ path: String, _ marker: String) async throws -> Bool {
        try await cameTrue(every: .milliseconds(100)) { try !fileHolds(path, marker) }
    }

    @Test func deletedRecordsAndAccountsLeaveNoBytesBehind() async throws {
        let server = try await ServerProcess.start(store: .sqlite)
        let api = APIClient(server)
        let email = "erase-\(UUID().uuidString.prefix(8))@example.org"
        let (ann, _) = try await api.account(email, "ann's password")
        let marker = "secret-note-" + UUID().uuidString
        let kept = "kept-note-" + UUID().uuidString
        let notes = [Make.habit("erased", time: "2025-03-01T08:00:00Z", note: marker),
                     Make.habit("kept", time: "2025-03-01T09:00:00Z", note: kept)]
        #expect(try await ann.uploadStatuses(notes) == [.accepted, .accepted])
        // Both reach the database file (the checkpointer copies them in).
        try await eventually("both notes reach the database file", every: .milliseconds(100)) {
            try fileHolds(server.databasePath, marker) && fileHolds(server.databasePath, kept)
        }

        #expect(try await ann.send(.DELETE, "/v1/records/\(notes[0].id)").status == 204)
        #expect(try await eventuallyGone(server.databasePath, marker), "the deleted note is still in the file")
        #expect(try fileHolds(server.databasePath, kept))

        let deleted = try await ann.send(.POST, "/v1/accounts/current/deletion", json: AccountDeletionRequest(password: "ann's password"))
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(try await eventuallyGone(server.databasePath, kept), "the deleted account's note is still in the file")
        #expect(try await eventuallyGone(server.databasePath, email), "the deleted account's email is still in the file")
    }
}
