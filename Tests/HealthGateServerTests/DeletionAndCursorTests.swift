import Foundation
import GRDB
import HealthModel
import SyncProtocol
import Testing
import TestSupport

/// Deleting records on request (tombstones in history) and per-user history cursors with their
/// epoch, against a real server process.
@Suite struct DeletionAndCursorTests {
    /// The history entries as JSON objects (a tombstone has no `data` for WireRecord to decode).
    func rawHistory(_ client: APIClient, after: Int64 = 0) async throws -> (page: [String: Any], records: [[String: Any]]) {
        let reply = try await client.send(.GET, "/v1/records?after=\(after)")
        #expect(reply.status == 200, "\(reply.text)")
        let page = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
        return (page, page["records"] as? [[String: Any]] ?? [])
    }

    @Test func aDeletedRecordBecomesATombstoneInHistory() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (laptop, _) = try await APIClient(server).account("ann@example.org", device: "laptop")
        let (phone, phoneLogin) = try await APIClient(server).account("ann@example.org", device: "phone")
        let (bob, _) = try await APIClient(server).account("bob@example.org")
        let run = Make.workout("run", version: 3)
        let water = Make.habit("water", time: "2026-03-02T10:00:00Z", note: "a private note")
        #expect(try await laptop.uploadStatuses([run, water]) == [.accepted, .accepted])
        #expect(try await bob.uploadStatuses([run]) == [.accepted])

        // Another account's record (Bob holds the same id), an unknown id: 404.
        #expect(try await bob.send(.DELETE, "/v1/records/\(water.id)").status == 404)
        let unknown = try await laptop.send(.DELETE, "/v1/records/\(Make.id("never").description)")
        #expect(try unknown.status == 404 && unknown.error().code == "not_found")

        let deleted = try await phone.send(.DELETE, "/v1/records/\(run.id.uppercased())")
        #expect(deleted.status == 204 && deleted.body.isEmpty)
        #expect(try await phone.send(.DELETE, "/v1/records/\(run.id)").status == 204, "again: nothing changes")

        // The laptop pulls from its cursor (2) and learns of the deletion: a tombstone with the
        // next change number, the deleting device, the version it had, no data.
        let (page, entries) = try await rawHistory(laptop, after: 2)
        #expect(entries.count == 1 && page["next"] as? Int == 3)
        let tombstone = entries[0]
        #expect(tombstone["id"] as? String == run.id && tombstone["deleted"] as? Bool == true && tombstone["data"] == nil)
        #expect(tombstone["seq"] as? Int == 3 && tombstone["version"] as? Int == 3 && tombstone["type"] as? String == "workout")
        #expect(tombstone["device_id"] as? String == phoneLogin.deviceId)
        // A client that does not know tombstones decodes the page and finds no valid record in it.
        let decoded = try await laptop.history(after: 2)
        #expect(decoded.records.count == 1 && (try? decoded.records[0].record()) == nil)

        // Summaries forget it; Bob's record with the same id is untouched.
        let summary = try await laptop.summaries("period=year").decode(SummaryResponse.self)
        #expect(summary.buckets == [SummaryResponse.Bucket(start: "2026-01-01", habitEvents: 1, habits: [.init(habit: "hydration", events: 1, value: 250, unit: "ml")])])
        #expect(try await bob.allHistory().map(\.id) == [run.id])

        // The same or an older version does not bring it back; a newer one does.
        #expect(try await laptop.uploadStatuses([run, Make.workout("run", version: 2)]) == [.duplicate, .duplicate])
        #expect(try await laptop.history(after: 3).records.isEmpty)
        #expect(try await laptop.uploadStatuses([Make.workout("run", version: 4)]) == [.accepted])
        let revived = try await laptop.history(after: 3).records
        #expect(try revived.map(\.seq) == [4] && revived[0].record().version == 4)
    }

    @Test func deletingEveryRecord() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (ann, _) = try await APIClient(server).account("ann@example.org")
        let (bob, _) = try await APIClient(server).account("bob@example.org")
        let records = (0..<5).map { Make.habit("h\($0)", time: "2026-03-02T10:0\($0):00Z", note: "note \($0)") }
        #expect(try await ann.uploadStatuses(records).allSatisfy { $0 == .accepted })
        #expect(try await bob.uploadStatuses(records).allSatisfy { $0 == .accepted })
        #expect(try await ann.send(.DELETE, "/v1/records/\(records[0].id)").status == 204)

        let reply = try await ann.send(.DELETE, "/v1/records")
        #expect(reply.status == 200)
        #expect(try reply.decode(RecordDeletionResponse.self) == RecordDeletionResponse(deleted: 4))
        #expect(try await ann.send(.DELETE, "/v1/records").decode(RecordDeletionResponse.self).deleted == 0)

        let (_, entries) = try await rawHistory(ann)
        #expect(entries.count == 5 && entries.allSatisfy { $0["deleted"] as? Bool == true && $0["data"] == nil })
        #expect(entries.compactMap { $0["seq"] as? Int } == [6, 7, 8, 9, 10])
        #expect(try await ann.summaries("period=year").decode(SummaryResponse.self).buckets.isEmpty)
        #expect(try await bob.allHistory().count == 5, "another account keeps its records")

        // The records' data is gone from the rows (ids, types and versions stay).
        let bodies = try await server.sql("""
            SELECT count(*) FROM records JOIN users ON users.id = records.user_id
            WHERE users.email = 'ann@example.org' AND (body IS NOT NULL OR start_time <> 0 OR end_time <> 0)
            """)
        #expect(bodies == "0")
    }

    /// Each account counts its own changes, so nobody learns from the gaps how much others store.
    @Test func cursorsArePerAccountWithAnEpoch() async throws {
        let scratch = try Scratch()
        var server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (ann, _) = try await APIClient(server).account("ann@example.org")
        let (bob, _) = try await APIClient(server).account("bob@example.org")
        #expect(try await ann.uploadStatuses([Make.habit("a1", time: "2026-03-02T10:00:00Z")]) == [.accepted])
        for i in 0..<3 {
            #expect(try await bob.uploadStatuses([Make.habit("b\(i)", time: "2026-03-02T10:00:00Z")]) == [.accepted])
        }
        #expect(try await ann.uploadStatuses([Make.habit("a2", time: "2026-03-02T11:00:00Z"),
                                              Make.habit("a1", version: 2, time: "2026-03-02T10:00:00Z")]) == [.accepted, .accepted])
        let annPage = try await ann.history()
        #expect(annPage.records.map(\.seq) == [2, 3] && annPage.next == 3)
        #expect(try await bob.history().records.map(\.seq) == [1, 2, 3])

        let epoch = try #require(annPage.epoch)
        #expect(epoch.count == 32 && epoch.allSatisfy(\.isHexDigit))
        #expect(try await bob.history(after: 3).epoch == epoch)
        #expect(await server.stopped() == 0)

        // The epoch belongs to the database: it survives a restart.
        server = try await ServerProcess.start(databasePath: scratch.dbPath)
        var again = APIClient(server)
        again.token = ann.token
        #expect(try await again.history().epoch == epoch)
    }
}

/// Deletions uploaded by devices (tombstones in `POST /v1/records`), by version: a higher
/// version wins whether data or tombstone, and at equal versions the tombstone wins.
@Suite struct UploadedTombstoneTests {
    func tombstone(_ record: WireRecord, version: Int) -> WireRecord {
        WireRecord(tombstone: record.id, type: RecordType(rawValue: record.type)!, version: version)
    }

    @Test func aTombstoneWinsByVersionAndAtAnEqualOne() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let (laptop, _) = try await APIClient(server).account("tess@example.org", device: "laptop")
        let water = Make.habit("water", time: "2026-03-02T10:00:00Z")
        #expect(try await laptop.uploadStatuses([water]) == [.accepted])
        // The same version deleted (an edit elsewhere made data of version 2 too: the deletion wins).
        let edited = Make.habit("water", version: 2, time: "2026-03-02T10:00:00Z", value: 500)
        #expect(try await laptop.uploadStatuses([edited, tombstone(water, version: 2)]) == [.accepted, .accepted])
        #expect(try await laptop.uploadStatuses([edited, tombstone(water, version: 2), tombstone(water, version: 1)])
            == [.duplicate, .duplicate, .duplicate])
        let history = try await laptop.allHistory()
        #expect(history.count == 1 && history[0].deleted && history[0].version == 2)
        let summary = try await laptop.summaries("period=year").decode(SummaryResponse.self)
        #expect(summary.buckets.isEmpty, "a tombstone counts for nothing")
        // A newer version brings it back.
        #expect(try await laptop.uploadStatuses([Make.habit("water", version: 3, time: "2026-03-02T10:00:00Z")]) == [.accepted])
        #expect(try await laptop.allHistory().map(\.deleted) == [false])

        // A tombstone of an id the server never had is kept: its older data, uploaded later, stays out.
        let tea = Make.habit("tea", version: 1, time: "2026-03-02T11:00:00Z")
        #expect(try await laptop.uploadStatuses([tombstone(tea, version: 2), tea]) == [.accepted, .duplicate])
        #expect(try await laptop.allHistory().filter { !$0.deleted }.count == 1)

        // A tombstone must name a known type, a UUID and a version in range.
        let bad = try await laptop.send(.POST, "/v1/records", body: Data("""
            {"records":[{"id":"\(tea.id)","version":3,"type":"meal","deleted":true},
                        {"id":"not-a-uuid","version":3,"type":"habit","deleted":true},
                        {"id":"\(tea.id)","version":0,"type":"habit","deleted":true}]}
            """.utf8))
        let results = try bad.decode(UploadResponse.self).results
        #expect(results.map(\.status) == [.rejected, .rejected, .rejected])
        #expect(results[0].reason?.contains("unknown record type 'meal'") == true)
        #expect(results[1].reason?.contains("is not a UUID") == true)
        #expect(results[2].reason?.contains("version 0 is outside") == true)
    }
}
