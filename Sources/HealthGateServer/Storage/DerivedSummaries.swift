import Foundation
import HealthModel
import SyncProtocol

/// The user's derived habits in summaries (docs/derived-habits.md): each day's value computed
/// from the synced records by ``DerivedHabit`` (the rules the client computes its own values
/// with), read from the store as the client reads its own (heart rate one reading a minute and
/// steps per source and slot, reduced in SQL; the other records whole), then summed per period.
struct DerivedSummaries {
    let store: any ServerStore
    let userId: String

    /// At most this many days are read at a time: years of minute-level readings are never held
    /// at once.
    static let chunkDays = 31

    /// The derived habits the user defined, by name.
    func habits() async throws -> [(name: String, derivation: HabitDerivation)] {
        let decoder = SyncAPI.decoder()
        return try await store.definitionBodies(userId: userId, kind: "habit").compactMap { body in
            guard let definition = try? decoder.decode(Definition.self, from: Data(body.utf8)),
                  case .habit(let habit) = definition.body, let derivation = habit.derivation else { return nil }
            return (definition.name, derivation)
        }.sorted { $0.name < $1.name }
    }

    /// `buckets` (a store's summary over `periods`) with each derived habit's values per period
    /// added; a period holding a derived value but no record of its own gets a bucket.
    func add(to buckets: [SummaryResponse.Bucket], periods: SummaryPeriods, days: DayBoundary) async throws -> [SummaryResponse.Bucket] {
        let habits = try await habits()
        guard !habits.isEmpty, let from = periods.edges.first, let to = periods.edges.last, from < to else { return buckets }
        var byLabel: [String: SummaryResponse.Bucket] = [:]
        for b in buckets { byLabel[b.start] = b }
        let first = days.day(of: Date(timeIntervalSince1970: from)), last = days.day(of: Date(timeIntervalSince1970: to.nextDown))
        for (name, derivation) in habits {
            var totals: [Int: (value: Double, days: Int)] = [:]
            var day = first
            while day <= last {
                let end = min(day.adding(Self.chunkDays - 1), last)
                let input = try await self.input(derivation, boundary: days, from: day, through: end)
                for (d, value) in DerivedHabit.values(derivation, input, boundary: days, days: day...end) {
                    guard let i = periods.index(of: days.start(of: d).timeIntervalSince1970) else { continue }
                    totals[i, default: (0, 0)].value += value
                    totals[i, default: (0, 0)].days += 1
                }
                day = end.adding(1)
            }
            for (i, total) in totals {
                let label = periods.labels[i]
                byLabel[label, default: SummaryResponse.Bucket(start: label)].derived
                    .append(SummaryResponse.DerivedTotal(habit: name, unit: derivation.unit, value: total.value, days: total.days))
            }
        }
        return byLabel.values.sorted { $0.start < $1.start }
    }

    /// What `derivation` reads for the days `first` through `last`, as the client's store gives
    /// it (``HealthReports`` `derivationInput`, reduced): the records of its source within those
    /// days' bounds, workouts that started up to their longest span before, nights ending in them.
    func input(_ derivation: HabitDerivation, boundary: DayBoundary, from first: LocalDay, through last: LocalDay) async throws
        -> DerivationInput {
        let from = boundary.start(of: first).timeIntervalSince1970, to = boundary.start(of: last.adding(1)).timeIntervalSince1970
        let decoder = SyncAPI.decoder()
        func records<T: Decodable>(_ type: RecordType, _ kind: MeasurementKind? = nil, from: Double, as: T.Type) async throws -> [T] {
            try await store.recordBodies(userId: userId, type: type, kind: kind, from: from, to: to).map { try decoder.decode(T.self, from: Data($0.utf8)) }
        }
        switch derivation.source {
        case .steps:
            return .steps(slots: try await store.stepsBySlot(userId: userId, from: from, to: to, slotMinutes: DerivedHabit.stepSlotMinutes(boundary)))
        case .activeMinutes, .workouts:
            return DerivationInput(workouts: try await records(.workout, from: from - PhysicalLimits.workoutSpanS, as: Workout.self))
        case .heartRateAbove, .heartRateBelow:
            // Samples within the days only, as the client's reduced read takes them.
            let workouts = try await records(.workout, from: from - PhysicalLimits.workoutSpanS, as: Workout.self).map { w in
                var w = w
                w.samples = w.samples.filter { $0.time.timeIntervalSince1970 >= from && $0.time.timeIntervalSince1970 < to }
                return w
            }
            return .heartRate(minutes: try await store.heartRateByMinute(userId: userId, from: from, to: to,
                                                                         highest: derivation.source == .heartRateAbove),
                              workouts: workouts)
        case .sleep:
            let nights = try await records(.sleep, from: from - PhysicalLimits.sleepSpanS, as: SleepSession.self)
            return DerivationInput(sleep: nights.filter { $0.end.timeIntervalSince1970 >= from && $0.end.timeIntervalSince1970 < to })
        case .measurement:
            return DerivationInput(measurements: try await records(.measurement, derivation.kind ?? .weight, from: from, as: Measurement.self))
        case .hydration, .vaping:
            return DerivationInput(habitEvents: try await records(.habit, from: from, as: HabitEvent.self))
        }
    }
}
