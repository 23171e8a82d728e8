import Foundation
import HealthModel
import SyncProtocol
import Testing
import TestSupport

/// What the server accepted before the shared physical limits (each found by a review), sent to
/// a real server: every one is rejected with a reason naming the field, the valid record in the
/// same upload is stored.
@Suite struct PhysicalLimitServerTests {
    @Test func impossibleValuesAreRejectedOneByOne() async throws {
        let server = try await ServerProcess.start()
        let (api, _) = try await APIClient(server).account("limits@example.org")
        let source = Source(driver: "test")
        let t = Make.date("2025-06-01T07:00:00Z")
        func weight(_ name: String, _ kg: Double) -> WireRecord { Make.measurement(name, time: "2025-06-01T07:00:00Z", value: kg) }
        func measurement(_ name: String, _ kind: MeasurementKind, _ value: Double) -> WireRecord {
            Make.measurement(name, time: "2025-06-01T07:00:00Z", kind: kind, value: value)
        }
        func workout(_ name: String, end: Date, samples: [Sample] = [], version: Int = 1) -> WireRecord {
            WireRecord(.workout(Workout(id: Make.id(name), version: version, sport: "running", start: t, end: end, samples: samples,
                                        source: source)))
        }
        let hour = t.addingTimeInterval(3600)
        let stage = SleepStageSpan(start: t.addingTimeInterval(-25 * 365 * 86400), end: t.addingTimeInterval(600), stage: .deep)
        let cases: [(WireRecord, String)] = [
            (weight("negative", -70), "weight -70 kg is outside"),
            (weight("huge", 1e308), "weight 1e+308 kg is outside"),
            (measurement("hr", .heartRate, 100_000), "heart_rate 100000 bpm is outside"),
            (measurement("spo2", .spo2, 500), "spo2 500 % is outside"),
            (workout("lat", end: hour, samples: [Sample(time: t, latitude: 1000, longitude: 0)]), "latitude 1000 is outside"),
            (workout("2090", end: hour, samples: [Sample(time: Make.date("2090-01-01T00:00:00Z"), heartRate: 120)]),
             "lies outside the workout"),
            (WireRecord(.workout(Workout(id: Make.id("30y"), sport: "running", start: t.addingTimeInterval(-30 * 365 * 86400), end: t,
                                         source: source))), "the workout lasts"),
            (WireRecord(.sleep(SleepSession(id: Make.id("stage"), start: t, end: t.addingTimeInterval(8 * 3600), stages: [stage],
                                            source: source))), "stages[0].start"),
            (workout("version", end: hour, version: 9_007_199_254_740_992), "version 9007199254740992 is outside"),
        ]
        let valid = weight("valid", 70.5)
        let reply = try await api.upload(cases.map(\.0) + [valid])
        #expect(reply.status == 200, "\(reply.text)")
        let results = try reply.decode(UploadResponse.self).results
        for ((_, expected), result) in zip(cases, results) {
            #expect(result.status == .rejected && result.reason?.contains(expected) == true, "\(expected): \(result)")
        }
        #expect(results.last?.status == .accepted)

        // A day that does not exist is no date: the record is rejected, not stored as 2 March.
        var text = String(decoding: try SyncAPI.encoder().encode(UploadRequest(records: [weight("feb30", 70)])), as: UTF8.self)
        text = text.replacingOccurrences(of: "2025-06-01T07:00:00Z", with: "2025-02-30T07:00:00Z")
        let feb30 = try await api.send(.POST, "/v1/records", body: Data(text.utf8))
        let result = try feb30.decode(UploadResponse.self).results.first
        #expect(result?.status == .rejected && result?.reason?.contains("2025-02-30") == true, "\(String(describing: result))")
        #expect(try await api.allHistory().map(\.id) == [valid.id])
    }
}
