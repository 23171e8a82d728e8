import Foundation
import HealthModel
import HealthStore
import Testing

/// Ranges over stored times, which are text: `…:SSZ`, or `…:SS.fffZ` with a fraction.
@Suite struct TimeRangeTests {
    /// Regression: `Z` sorts after `.`, so a bound spelled `…:00Z` came after a record at
    /// `…:00.500Z` (which `--since` then left out) and a bound `…:00.001Z` came before a record at
    /// `…:00Z` (which `today` at that very second left out).
    @Test func boundsCompareAsTimesWithAndWithoutFractions() async throws {
        let store = try await HealthStore.inMemory()
        let base = try #require(ISO8601.parse("2026-04-01T21:59:00Z"))
        let offsets = [-0.5, 0, 0.5, 1]
        try await store.write(offsets.map { offset in
            .habit(HabitEvent(id: RecordID.derive("range", String(offset)), habit: "hydration", time: base.addingTimeInterval(offset),
                              value: 1, source: Source(driver: "manual")))
        })
        func times(_ range: DateRange) async throws -> [Double] {
            try await store.habitEvents(in: range).map { $0.time.timeIntervalSince(base) }.sorted()
        }
        #expect(try await times(DateRange(since: base)) == [0, 0.5, 1])
        #expect(try await times(DateRange(until: base)) == [-0.5])
        #expect(try await times(DateRange(since: base.addingTimeInterval(0.001))) == [0.5, 1])
        #expect(try await times(DateRange(until: base.addingTimeInterval(0.001))) == [-0.5, 0])
        #expect(try await times(DateRange(since: base.addingTimeInterval(-0.5), until: base.addingTimeInterval(0.5))) == [-0.5, 0])
        #expect(try await store.lastHabitEvent("hydration", atOrBefore: base)?.time == base)
    }
}
