import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Testing
import TestSupport

/// A habit's id derives from its case-folded name; its entries are one habit whatever the case
/// of the name they carry: stats, streaks and today group them, and what drivers emit is stored
/// under the definition's spelling. Through the built binary with `TZ=Europe/Berlin`.
@Suite(.serialized) struct HabitNameCaseTests {
    static func local(_ mo: Int, _ d: Int, _ h: Int = 12, _ mi: Int = 0) -> Date { EditsAndUnitsCLITests.local(mo, d, h, mi) }

    static func succeed(_ scratch: Scratch, _ arguments: [String]) async throws -> String {
        try await EditsAndUnitsCLITests.succeed(scratch, arguments)
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    /// A habit's entries under names that differ only in case (`Reading` from one app, `reading`
    /// from an older version or another install) are one habit: one row in stats, one streak.
    /// Before, stats listed `Reading`, `READING` and `reading` apart and the streak counted only
    /// the entries spelled as the definition.
    @Test func oneHabitWhateverTheCaseOfItsEntries() async throws {
        let scratch = try Scratch()
        let source = Source(driver: "manual")
        var records: [HealthRecord] = [
            .definition(Definition(name: "Reading", time: Self.local(3, 1, 8),
                                   body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages", target: HabitTarget(amount: 10))),
                                   source: source)),
        ]
        for (day, name) in [(1, "Reading"), (2, "reading"), (3, "READING"), (4, "Reading")] {
            records.append(.habit(HabitEvent(id: RecordID(UUID()), habit: name, time: Self.local(3, day, 20), value: 12, unit: "pages",
                                             source: source)))
        }
        try await HealthStore(path: scratch.dbPath).write(records)

        let stats = try #require(try Self.json(try await Self.succeed(scratch, ["stats", "--period", "month", "--json",
                                                                                "--at", "2026-03-04T21:00"])) as? [String: Any])
        let month = try #require((stats["periods"] as? [[String: Any]])?.first)
        let habits = try #require(month["habits"] as? [[String: Any]])
        #expect(habits.map { $0["habit"] as? String ?? "?" } == ["Reading"], "\(habits)")
        #expect(habits.first?["entries"] as? Int == 4 && habits.first?["total"] as? Double == 48 && habits.first?["days_met"] as? Int == 4)
        let streaks = try #require(stats["habits"] as? [[String: Any]])
        #expect(streaks.count == 1 && streaks.first?["current_streak"] as? Int == 4 && streaks.first?["met"] as? Int == 4, "\(streaks)")

        let today = try #require(try Self.json(try await Self.succeed(scratch, ["today", "--json", "--at", "2026-03-04T21:00"]))
                                 as? [String: Any])
        let rows = try #require(today["habits"] as? [[String: Any]])
        #expect(rows.map { $0["name"] as? String ?? "?" } == ["Reading"] && rows.first?["current_streak"] as? Int == 4, "\(rows)")
        // A new entry takes the definition's spelling, whatever is typed.
        let logged = try Self.json(try await Self.succeed(scratch, ["log", "habit", "READING", "5", "--json"])) as? [String: Any]
        #expect(logged?["what"] as? String == "Reading")
    }

    /// What live drivers emit (the exec driver's `habit reading ...` lines) is stored under the
    /// definition's spelling; a habit nobody defined keeps its name.
    @Test func liveHabitEventsTakeTheDefinitionsSpelling() async throws {
        let scratch = try Scratch()
        let store = try await HealthStore(path: scratch.dbPath)
        let source = Source(driver: "exec")
        try await store.write([.definition(Definition(name: "Reading", time: Self.local(3, 1, 8),
                                                      body: .habit(HabitDefinition(valueKind: .numeric)), source: Source(driver: "manual")))])
        let sink = StoreSink(store: store)
        try await sink.emit([
            .habit(HabitEvent(id: RecordID(UUID()), habit: "reading", time: Self.local(3, 2, 20), value: 5, source: source)),
            .habit(HabitEvent(id: RecordID(UUID()), habit: "Chess", time: Self.local(3, 2, 21), value: 1, source: source)),
        ])
        #expect(try await store.habitEvents().map(\.habit) == ["Reading", "Chess"])
    }
}
