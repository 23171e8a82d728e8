import Foundation
import HealthModel
import SyncProtocol
import Testing
import TestSupport

/// Uploads, history and summaries against a real server process.
@Suite struct RecordTests {
    @Test func uploadsAreUpsertsByIdAndVersion() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, login) = try await APIClient(server).account("ann@example.org")

        let run = Make.workout("run")
        let weight = Make.measurement("weight", time: "2026-03-02T06:00:00Z")
        #expect(try await api.uploadStatuses([run, weight]) == [.accepted, .accepted])
        // The same upload again changes nothing.
        #expect(try await api.uploadStatuses([run, weight]) == [.duplicate, .duplicate])
        let before = try await api.history()
        #expect(before.records.map(\.seq) == [1, 2])

        // A newer version replaces the old one; an older one is a duplicate.
        let edited = Make.workout("run", version: 2, distanceM: 10_500)
        #expect(try await api.uploadStatuses([edited]) == [.accepted])
        #expect(try await api.uploadStatuses([run, edited]) == [.duplicate, .duplicate])

        let history = try await api.history()
        #expect(history.records.count == 2)
        #expect(history.records.map(\.id) == [weight.id, run.id])
        let stored = try #require(history.records.last)
        #expect(stored.version == 2 && stored.type == "workout" && stored.seq == 3 && stored.deviceId == login.deviceId)
        #expect(try stored.record() == edited.data)
        #expect(history.next == 3 && !history.more)

        // Results echo each record's id and version, in order.
        let reply = try await api.upload([edited, Make.workout("run", version: 3)])
        let results = try reply.decode(UploadResponse.self).results
        #expect(results.map(\.id) == [run.id, run.id] && results.map(\.version) == [2, 3])
        #expect(results.map(\.status) == [.duplicate, .accepted])
    }

    /// Definitions (a habit's goal, a saved meal) are records the server keeps like the others;
    /// one whose id is not its kind and name's is refused.
    @Test func definitionsAreStoredAndVersioned() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")
        let time = Date(timeIntervalSince1970: 1_763_800_000)
        var goal = Definition(name: "hydration", time: time, body: .habit(HabitDefinition(valueKind: .numeric, unit: "ml",
                                                                                          target: HabitTarget(amount: 2000))),
                              source: Source(driver: "manual"))
        let meal = Definition(name: "porridge", time: time, body: .meal(SavedMeal(kcal: 350)), source: Source(driver: "manual"))
        var forged = Definition(name: "porridge", time: time, body: .trigger, source: Source(driver: "manual"))
        forged.id = RecordID.derive("forged")
        #expect(try await api.uploadStatuses([WireRecord(.definition(goal)), WireRecord(.definition(meal)), WireRecord(.definition(forged))])
                    == [.accepted, .accepted, .rejected])
        goal.version = 2
        goal.body = .habit(HabitDefinition(valueKind: .numeric, unit: "ml", target: HabitTarget(amount: 2500)))
        #expect(try await api.uploadStatuses([WireRecord(.definition(goal))]) == [.accepted])
        let history = try await api.history()
        #expect(Set(try history.records.map { try $0.record() }) == [.definition(goal), .definition(meal)])
    }

    @Test func rejectedRecordsCarryReasonsAndTheRestIsStored() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")

        let good = Make.habit("water", time: "2026-03-02T10:00:00Z")
        let future = Make.measurement("future", time: ISO8601.string(Date().addingTimeInterval(86_400)))
        var mismatch = Make.habit("mismatch", time: "2026-03-02T11:00:00Z")
        mismatch.version = 2
        var otherId = Make.habit("other-id", time: "2026-03-02T11:00:00Z")
        otherId.id = Make.id("someone else").description
        let backwards = Make.sleep("backwards", start: "2026-03-02T22:00:00Z", hours: -1)
        let goodToo = Make.measurement("weight", time: "2026-03-02T06:00:00Z")
        let body = try JSONSerialization.jsonObject(with: SyncAPI.encoder().encode(UploadRequest(records: [
            good, future, mismatch, otherId, backwards, goodToo,
        ]))) as! [String: Any]
        var records = body["records"] as! [[String: Any]]
        // Raw JSON the model cannot decode: a missing key, a wrong type, an unknown kind.
        records.append(["id": Make.id("bad").description, "version": 1, "type": "workout",
                        "data": ["id": Make.id("bad").description, "version": 1]])
        records.append(["id": Make.id("bad2").description, "version": 1, "type": "measurement",
                        "data": ["id": Make.id("bad2").description, "version": 1, "kind": "weight", "time": "yesterday",
                                 "value": 1, "extra": [String: Double](), "source": ["driver": "x"]]])
        records.append(["id": Make.id("steps").description, "version": 1, "type": "steps", "data": [String: Any]()])
        let raw = try JSONSerialization.data(withJSONObject: ["records": records])

        let reply = try await api.send(.POST, "/v1/records", body: raw)
        #expect(reply.status == 200, "\(reply.text)")
        let results = try reply.decode(UploadResponse.self).results
        #expect(results.map(\.status) == [.accepted, .rejected, .rejected, .rejected, .rejected, .accepted,
                                          .rejected, .rejected, .rejected])
        let reasons = results.map { $0.reason ?? "" }
        #expect(reasons[0].isEmpty && reasons[5].isEmpty)
        #expect(reasons[1].hasPrefix("future-dated"))
        #expect(reasons[2] == "version 2 differs from data.version 1")
        #expect(reasons[3].hasPrefix("id \(otherId.id) differs from data.id"))
        #expect(reasons[4].hasPrefix("ends (2026-03-02T21:00:00Z) before it starts"))
        #expect(reasons[6].contains("data is not a valid workout: missing key"))
        #expect(reasons[7].contains("not an ISO 8601 time: yesterday"))
        #expect(reasons[8].contains("unknown record type 'steps'"))

        let stored = try await api.allHistory()
        #expect(Set(stored.map(\.id)) == [good.id, goodToo.id])
        // Sending the rejected ones again still rejects them (and the good ones are duplicates).
        let again = try await api.send(.POST, "/v1/records", body: raw).decode(UploadResponse.self).results
        #expect(again.map(\.status) == [.duplicate, .rejected, .rejected, .rejected, .rejected, .duplicate,
                                        .rejected, .rejected, .rejected])
    }

    @Test func uploadBodyLimits() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")

        // gzip: accepted like plain JSON.
        let records = (0..<50).map { Make.measurement("m\($0)", time: "2026-03-02T06:\(String(format: "%02d", $0)):00Z") }
        let json = try SyncAPI.encoder().encode(UploadRequest(records: records))
        let zipped = gzip(json)
        #expect(zipped.count < json.count)
        let reply = try await api.send(.POST, "/v1/records", body: zipped, headers: [("Content-Encoding", "gzip")])
        #expect(reply.status == 200, "\(reply.text)")
        #expect(try reply.decode(UploadResponse.self).results.allSatisfy { $0.status == .accepted })
        #expect(try await api.allHistory().count == 50)

        // A gzip bomb: 40 MiB of spaces in about 40 KiB.
        let bomb = gzip(Data(repeating: 0x20, count: 40 << 20), level: 9)
        #expect(bomb.count < 100_000)
        let bombReply = try await api.send(.POST, "/v1/records", body: bomb, headers: [("Content-Encoding", "gzip")])
        #expect(bombReply.status == 413)
        #expect(try bombReply.error().code == "payload_too_large")
        #expect(try bombReply.error().message == "request body exceeds 33554432 bytes after decompression")

        // Too large as sent.
        let big = Data(repeating: 0x20, count: SyncAPI.maxBodyBytes + 1)
        let bigReply = try await api.send(.POST, "/v1/records", body: big)
        #expect(try bigReply.status == 413 && bigReply.error().code == "payload_too_large")

        // Too many records.
        let many = (0...SyncAPI.maxRecordsPerUpload).map { Make.habit("h\($0)", time: "2026-03-02T10:00:00Z") }
        let manyReply = try await api.upload(many)
        #expect(manyReply.status == 413)
        #expect(try manyReply.error().message == "5001 records in one upload: at most 5000")

        // Not JSON, not gzip, not a supported encoding.
        let text = try await api.send(.POST, "/v1/records", body: json, contentType: "text/csv")
        #expect(text.status == 415)
        let brotli = try await api.send(.POST, "/v1/records", body: json, headers: [("Content-Encoding", "br")])
        #expect(try brotli.status == 415 && brotli.error().message.contains("br"))
        let notGzip = try await api.send(.POST, "/v1/records", body: json, headers: [("Content-Encoding", "gzip")])
        #expect(try notGzip.status == 400 && notGzip.error().message.hasPrefix("request body is not valid gzip"))
        let truncated = try await api.send(.POST, "/v1/records", body: zipped.prefix(zipped.count / 2),
                                           headers: [("Content-Encoding", "gzip")])
        #expect(truncated.status == 400)
        let notUpload = try await api.send(.POST, "/v1/records", body: Data(#"{"records":{}}"#.utf8))
        #expect(try notUpload.status == 400 && notUpload.error().message.contains("UploadRequest"))

        // Nothing of the refused bodies was stored, and the server still answers.
        #expect(try await api.allHistory().count == 50)
        #expect(try await api.send(.GET, "/v1/health").status == 200)
    }

    @Test func historyPagesWithCursors() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")
        let records = (0..<25).map { Make.measurement("m\($0)", time: "2026-03-02T06:\(String(format: "%02d", $0)):00Z") }
        #expect(try await api.uploadStatuses(records).allSatisfy { $0 == .accepted })

        let empty = try await api.history(after: 25)
        #expect(empty.records.isEmpty && empty.next == 25 && !empty.more)

        var pages: [HistoryPage] = []
        var after: Int64 = 0
        repeat {
            pages.append(try await api.history(after: after, limit: 10))
            after = pages.last!.next
        } while pages.last!.more
        #expect(pages.map(\.records.count) == [10, 10, 5])
        #expect(pages.map(\.next) == [10, 20, 25])
        #expect(pages.flatMap(\.records).map(\.id) == records.map(\.id))
        #expect(pages.flatMap(\.records).map(\.seq) == (1...25).map { Int64($0) })

        // A new version moves the record to the end of history, with the next change number.
        #expect(try await api.uploadStatuses([Make.measurement("m3", version: 2, time: "2026-03-02T06:03:00Z", value: 71)])
            == [.accepted])
        let tail = try await api.history(after: 25)
        #expect(tail.records.map(\.id) == [records[3].id] && tail.records.map(\.seq) == [26] && tail.next == 26)
        #expect(try await api.history().records.count == 25)

        let defaultPage = try await api.send(.GET, "/v1/records")
        #expect(try defaultPage.status == 200 && defaultPage.decode(HistoryPage.self).records.count == 25)
        for query in ["limit=0", "limit=5001", "limit=ten", "after=-1", "after=1.5"] {
            let reply = try await api.send(.GET, "/v1/records?" + query)
            #expect(reply.status == 400, "\(query)")
            #expect(try reply.error().code == "bad_request")
        }
    }

    @Test func summariesPerPeriod() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")
        // 2025-12-29 is a Monday (its week holds 2026-01-01); 2026-03-01 is a Sunday.
        let records = [
            Make.workout("w1", start: "2025-12-30T07:00:00Z", minutes: 60, timerS: 3000, distanceM: 10_000, energyKcal: 600),
            Make.workout("w2", start: "2026-01-01T07:00:00Z", minutes: 30, distanceM: 5_000, energyKcal: nil),
            Make.workout("w3", start: "2026-03-01T23:30:00Z", minutes: 60, timerS: 3600, distanceM: nil, energyKcal: 400),
            Make.sleep("s1", start: "2025-12-31T23:00:00Z", hours: 8, awakeMinutes: 30),
            Make.habit("h1", time: "2026-01-01T09:00:00Z"),
            Make.habit("h2", time: "2026-03-02T09:00:00Z"),
            Make.measurement("m1", time: "2026-03-02T06:00:00Z"),
        ]
        #expect(try await api.uploadStatuses(records).allSatisfy { $0 == .accepted })
        typealias B = SummaryResponse.Bucket
        func water(_ events: Int) -> SummaryResponse.HabitTotal {
            SummaryResponse.HabitTotal(habit: "hydration", events: events, value: 250 * Double(events), unit: "ml")
        }

        func summary(_ query: String) async throws -> SummaryResponse {
            let reply = try await api.summaries(query)
            #expect(reply.status == 200, "\(reply.text)")
            return try reply.decode(SummaryResponse.self)
        }
        #expect(try await summary("period=day") == SummaryResponse(period: "day", buckets: [
            B(start: "2025-12-30", workouts: 1, activeS: 3000, distanceM: 10_000, energyKcal: 600),
            B(start: "2026-01-01", workouts: 1, activeS: 1800, distanceM: 5_000, sleepS: 27_000, habitEvents: 1, habits: [water(1)]),
            B(start: "2026-03-01", workouts: 1, activeS: 3600, energyKcal: 400),
            B(start: "2026-03-02", habitEvents: 1, measurements: 1, habits: [water(1)]),
        ]))
        #expect(try await summary("period=week") == SummaryResponse(period: "week", buckets: [
            B(start: "2025-12-29", workouts: 2, activeS: 4800, distanceM: 15_000, energyKcal: 600, sleepS: 27_000, habitEvents: 1, habits: [water(1)]),
            B(start: "2026-02-23", workouts: 1, activeS: 3600, energyKcal: 400),
            B(start: "2026-03-02", habitEvents: 1, measurements: 1, habits: [water(1)]),
        ]))
        #expect(try await summary("period=month") == SummaryResponse(period: "month", buckets: [
            B(start: "2025-12-01", workouts: 1, activeS: 3000, distanceM: 10_000, energyKcal: 600),
            B(start: "2026-01-01", workouts: 1, activeS: 1800, distanceM: 5_000, sleepS: 27_000, habitEvents: 1, habits: [water(1)]),
            B(start: "2026-03-01", workouts: 1, activeS: 3600, energyKcal: 400, habitEvents: 1, measurements: 1, habits: [water(1)]),
        ]))
        #expect(try await summary("period=year") == SummaryResponse(period: "year", buckets: [
            B(start: "2025-01-01", workouts: 1, activeS: 3000, distanceM: 10_000, energyKcal: 600),
            B(start: "2026-01-01", workouts: 2, activeS: 5400, distanceM: 5_000, energyKcal: 400, sleepS: 27_000, habitEvents: 2, measurements: 1,
              habits: [water(2)]),
        ]))
        // since and until are whole days, both included; the night counts on the day it ends.
        #expect(try await summary("period=month&since=2025-12-31&until=2026-03-01") == SummaryResponse(period: "month", buckets: [
            B(start: "2026-01-01", workouts: 1, activeS: 1800, distanceM: 5_000, sleepS: 27_000, habitEvents: 1, habits: [water(1)]),
            B(start: "2026-03-01", workouts: 1, activeS: 3600, energyKcal: 400),
        ]))
        #expect(try await summary("period=day&since=2027-01-01").buckets.isEmpty)

        // A new version replaces the old figures.
        #expect(try await api.uploadStatuses([Make.workout("w3", version: 2, start: "2026-03-01T23:30:00Z", minutes: 60,
                                                           timerS: 1200, distanceM: 3_000, energyKcal: 100)]) == [.accepted])
        #expect(try await summary("period=day&since=2026-03-01&until=2026-03-01").buckets
            == [B(start: "2026-03-01", workouts: 1, activeS: 1200, distanceM: 3_000, energyKcal: 100)])

        for query in ["", "period=fortnight", "period=day&since=2026-02-30", "period=day&since=2026-03-02&until=2026-03-01",
                      "period=day&until=03/01/2026"] {
            let reply = try await api.summaries(query)
            #expect(reply.status == 400, "\(query)")
            #expect(try reply.error().code == "bad_request")
        }
    }

    /// Summaries carry every habit's events per period: counts, value totals, categories
    /// (vaping per trigger, drink sizes); a new version replaces the old figures; a deleted
    /// event counts for nothing; a skipped day is not an entry; `Reading` and `reading` are one
    /// habit under its definition's spelling (as the client counts them).
    @Test func summariesPerHabit() async throws {
        let scratch = try Scratch()
        let server = try await ServerProcess.start(databasePath: scratch.dbPath)
        let (api, _) = try await APIClient(server).account("ann@example.org")
        func event(_ name: String, _ habit: String, _ time: String, value: Double?, category: String? = nil, unit: String? = nil,
                   label: String? = nil, version: Int = 1) -> WireRecord {
            WireRecord(.habit(HabitEvent(id: Make.id(name), version: version, habit: habit, time: Make.date(time), value: value,
                                         category: category, unit: unit, label: label, source: Source(driver: "manual"))))
        }
        let records = [
            event("d1", "hydration", "2026-03-02T08:00:00Z", value: 250, category: "glass", unit: "ml"),
            event("d2", "hydration", "2026-03-02T09:00:00Z", value: 500, category: "bottle", unit: "ml"),
            event("d3", "hydration", "2026-03-03T09:00:00Z", value: 330, category: "custom", unit: "ml"),
            event("v1", "vaping", "2026-03-02T10:00:00Z", value: 1, category: "stress"),
            event("v2", "vaping", "2026-03-02T11:00:00Z", value: 1, category: "stress"),
            event("v3", "vaping", "2026-03-02T12:00:00Z", value: 1, category: "boredom"),
            event("v4", "vaping", "2026-03-02T13:00:00Z", value: 1),
            event("m1", "meal", "2026-03-02T12:30:00Z", value: 700, unit: "kcal", label: "kebab"),
            event("m2", "meal", "2026-03-03T19:00:00Z", value: 450.5, unit: "kcal", label: "soup"),
            event("r1", "reading", "2026-03-02T21:00:00Z", value: 30, unit: "pages"),
            event("f1", "Flossing", "2026-03-02T22:00:00Z", value: 1),
            event("gone", "hydration", "2026-03-02T23:00:00Z", value: 1000, category: "custom", unit: "ml"),
            event("later", "reading", "2026-04-01T21:00:00Z", value: 12, unit: "pages"),
            event("r2", "Reading", "2026-03-03T21:00:00Z", value: 10, unit: "pages"),
            event("s1", "Flossing", "2026-03-03T22:00:00Z", value: nil, label: HabitEvent.Mark.skipped),
            WireRecord(.definition(Definition(name: "reading", time: Make.date("2026-03-02T07:00:00Z"),
                                              body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages")),
                                              source: Source(driver: "manual")))),
        ]
        #expect(try await api.uploadStatuses(records).allSatisfy { $0 == .accepted })
        #expect(try await api.send(.DELETE, "/v1/records/\(Make.id("gone").description)").status == 204)
        // An edit: the meal's second version replaces the first.
        #expect(try await api.uploadStatuses([event("m2", "meal", "2026-03-03T19:00:00Z", value: 500, unit: "kcal", label: "soup",
                                                    version: 2)]) == [.accepted])

        typealias H = SummaryResponse.HabitTotal
        typealias C = SummaryResponse.CategoryCount
        func summary(_ query: String) async throws -> SummaryResponse {
            let reply = try await api.summaries(query)
            #expect(reply.status == 200, "\(reply.text)")
            return try reply.decode(SummaryResponse.self)
        }
        let week = try await summary("period=week&until=2026-03-08")
        #expect(week.buckets.count == 1)
        #expect(week.buckets.first?.habitEvents == 12)
        #expect(week.buckets.first?.habits == [
            H(habit: "Flossing", events: 1, value: 1),
            H(habit: "hydration", events: 3, value: 1080, unit: "ml",
              categories: [C(category: "bottle", events: 1), C(category: "custom", events: 1), C(category: "glass", events: 1)]),
            H(habit: "meal", events: 2, value: 1200, unit: "kcal"),
            H(habit: "reading", events: 2, value: 40, unit: "pages"),
            H(habit: "vaping", events: 4, value: 4, categories: [C(category: "boredom", events: 1), C(category: "stress", events: 2)]),
        ])
        let days = try await summary("period=day&since=2026-03-03")
        #expect(days.buckets.map(\.start) == ["2026-03-03", "2026-04-01"])
        #expect(days.buckets.map(\.habits) == [
            [H(habit: "hydration", events: 1, value: 330, unit: "ml", categories: [C(category: "custom", events: 1)]),
             H(habit: "meal", events: 1, value: 500, unit: "kcal"), H(habit: "reading", events: 1, value: 10, unit: "pages")],
            [H(habit: "reading", events: 1, value: 12, unit: "pages")],
        ])
        // The JSON as the OpenAPI document describes it.
        let raw = try #require(try JSONSerialization.jsonObject(with: try await api.summaries("period=year").body) as? [String: Any])
        let habits = try #require(((raw["buckets"] as? [[String: Any]])?.first?["habits"]) as? [[String: Any]])
        #expect(habits.map { $0["habit"] as? String } == ["Flossing", "hydration", "meal", "reading", "vaping"])
        #expect(habits.first?.keys.sorted() == ["categories", "events", "habit", "value"])
        let triggers = try #require(habits.last?["categories"] as? [[String: Any]])
        #expect(triggers.map { $0["category"] as? String } == ["boredom", "stress"] && triggers.map { $0["events"] as? Int } == [1, 2])
    }
}
