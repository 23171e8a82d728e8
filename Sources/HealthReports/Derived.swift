public import Foundation
public import HealthModel
public import HealthStore

/// Derived habits read from the store: the records a derivation needs over some days, given to
/// ``DerivedHabit`` (the one implementation of the values).
extension Reports {
    /// What `derivation` reads for the days from `first` through `last`: the records of its
    /// source in those days' bounds (workouts that started up to their longest span before),
    /// each with its sources (``explain(_:_:boundary:day:)``; the views read through
    /// ``DerivationReads``, which reduces heart rate and steps in SQL).
    public static func derivationInput(_ store: HealthStore, _ derivation: HabitDerivation, boundary: DayBoundary,
                                       from first: LocalDay, through last: LocalDay) async throws -> DerivationInput {
        let range = DateRange(since: boundary.start(of: first), until: boundary.start(of: last.adding(1)))
        let widened = DateRange(since: range.since.map { $0.addingTimeInterval(-PhysicalLimits.workoutSpanS) }, until: range.until)
        switch derivation.source {
        case .steps:
            return DerivationInput(measurements: try await store.measurements(kind: .steps, in: range))
        case .activeMinutes, .workouts:
            return DerivationInput(workouts: try await store.wholeWorkouts(in: widened, samples: false))
        case .heartRateAbove, .heartRateBelow:
            return DerivationInput(workouts: try await store.wholeWorkouts(in: widened, samples: true),
                                   measurements: try await store.measurements(kind: .heartRate, in: range))
        case .sleep:
            return DerivationInput(sleep: try await store.sleepSessions(endingIn: range))
        case .measurement:
            return DerivationInput(measurements: try await store.measurements(kind: derivation.kind ?? .weight, in: range))
        case .hydration, .vaping:
            return DerivationInput(habitEvents: try await store.habitEvents(in: range))
        }
    }

    /// When the records a derivation reads begin (nil: there are none yet).
    public static func derivationStart(_ store: HealthStore, _ derivation: HabitDerivation) async throws -> Date? {
        switch derivation.source {
        case .steps: try await store.earliest(.measurement(.steps))
        case .activeMinutes, .workouts: try await store.earliest(.workout)
        case .heartRateAbove, .heartRateBelow:
            [try await store.earliest(.workout), try await store.earliest(.measurement(.heartRate))].compactMap { $0 }.min()
        case .sleep: try await store.earliest(.sleep)
        case .measurement: try await store.earliest(.measurement(derivation.kind ?? .weight))
        case .hydration: try await store.everyHabitSpan()[BuiltInHabit.hydration]?.first
        case .vaping: try await store.everyHabitSpan()[BuiltInHabit.vaping]?.first
        }
    }

    /// A derived habit's values per day of `days` (its buckets), as totals the goals count
    /// (``derivedTotals(_:_:days:)`` for one habit).
    static func derivedTotals(_ store: HealthStore, _ definition: Definition, _ derivation: HabitDerivation,
                              days: Periods) async throws -> [BucketTotal] {
        try await derivedTotals(store, [(definition, derivation)], days: days)[definition.id] ?? []
    }

    /// Derived habits' values per day of `days` (its buckets), as totals the goals count, by
    /// definition id. Days computed before and untouched since come from the store's cache of
    /// them; the others are computed and kept, a run of up to 31 consecutive days at a time for
    /// every habit missing a day in it, each source read once per run whatever the number of
    /// habits reading it (``DerivationReads``).
    static func derivedTotals(_ store: HealthStore, _ habits: [(Definition, HabitDerivation)],
                              days: Periods) async throws -> [RecordID: [BucketTotal]] {
        precondition(days.unit == .day, "derived habits' totals are per day")
        guard days.count > 0, !habits.isEmpty else { return [:] }
        let boundary = days.boundary
        let first = boundary.day(of: days.bounds[0]), last = boundary.day(of: days.bounds[days.count - 1])
        var values: [[LocalDay: Double?]] = []
        for (definition, derivation) in habits {
            let habit = definition.id.description
            let signature = "\(derivation)|v\(definition.version)|\(boundary.timeZone.identifier)|\(boundary.startMinutes)"
            try await store.prepareDerivedDays(habit: habit, signature: signature)
            values.append(try await store.derivedDays(habit: habit, from: first, through: last))
        }
        func missing(_ day: LocalDay) -> Bool { values.contains { $0[day] == nil } }
        var day = first
        while day <= last {
            guard missing(day) else {
                day = day.adding(1)
                continue
            }
            // At most 31 days at a time: years of minute-level readings are never held at once.
            var end = day
            while end < last, missing(end.adding(1)), day.days(to: end) < 30 { end = end.adding(1) }
            var reads = DerivationReads(store: store, boundary: boundary, first: day, last: end)
            for (i, (definition, derivation)) in habits.enumerated() {
                var d = day
                while d <= end, values[i][d] != nil { d = d.adding(1) }
                guard d <= end else { continue }
                let computed = DerivedHabit.values(derivation, try await reads.input(derivation), boundary: boundary, days: day...end)
                var kept: [(day: LocalDay, value: Double?)] = []
                d = day
                while d <= end {
                    kept.append((d, computed[d]))
                    values[i][d] = .some(computed[d])
                    d = d.adding(1)
                }
                try await store.keepDerivedDays(habit: definition.id.description, kept)
            }
            day = end.adding(1)
        }
        // Day `i` of the periods is the `i`-th day after the first.
        let firstNumber = first.dayNumber
        var out: [RecordID: [BucketTotal]] = [:]
        for (i, (definition, _)) in habits.enumerated() {
            out[definition.id] = values[i].compactMap { day, value in
                guard let value, (0..<days.count).contains(day.dayNumber - firstNumber) else { return nil }
                return BucketTotal(bucket: day.dayNumber - firstNumber, count: 1, sum: value)
            }.sorted { $0.bucket < $1.bucket }
        }
        return out
    }

    /// What derived habits read over one run of days, each source read once however many habits
    /// read it (minutes above a heart rate and below one, workouts and active minutes, sleep and
    /// deep sleep, water and vaping). Heart rate and steps come reduced in SQL (each minute's
    /// highest and lowest reading; a sum per source and slot), which gives the rules' values but
    /// not the sources of each contribution; the rest as ``derivationInput(_:_:boundary:from:through:)``
    /// reads it.
    struct DerivationReads {
        let store: HealthStore
        let boundary: DayBoundary
        let first: LocalDay, last: LocalDay
        private var inputs: [String: DerivationInput] = [:]
        private var heartRate: [(minute: Int, highest: Double, lowest: Double)]?

        init(store: HealthStore, boundary: DayBoundary, first: LocalDay, last: LocalDay) {
            (self.store, self.boundary, self.first, self.last) = (store, boundary, first, last)
        }

        mutating func input(_ derivation: HabitDerivation) async throws -> DerivationInput {
            let range = DateRange(since: boundary.start(of: first), until: boundary.start(of: last.adding(1)))
            let key: String
            switch derivation.source {
            case .heartRateAbove, .heartRateBelow:
                if heartRate == nil { heartRate = try await store.heartRateByMinute(in: range, lookBack: PhysicalLimits.workoutSpanS) }
                return .heartRate(minutes: heartRate ?? [], highest: derivation.source == .heartRateAbove)
            case .steps: key = "steps"
            case .activeMinutes, .workouts: key = "workouts"
            case .sleep: key = "sleep"
            case .measurement: key = "measurement:\((derivation.kind ?? .weight).rawValue)"
            case .hydration, .vaping: key = "habit events"
            }
            if let input = inputs[key] { return input }
            let input = derivation.source == .steps
                ? .steps(slots: try await store.stepsBySlot(in: range, slotMinutes: DerivedHabit.stepSlotMinutes(boundary)))
                : try await Reports.derivationInput(store, derivation, boundary: boundary, from: first, through: last)
            inputs[key] = input
            return input
        }
    }

    /// A derived habit's value on one day (`healthgate export`).
    public struct DerivedDay: Sendable, Equatable {
        public var definition: Definition
        public var derivation: HabitDerivation
        public var day: LocalDay
        /// The day's bounds by the day rule.
        public var start: Date
        public var end: Date
        public var value: Double
    }

    /// Every derived habit's values on the days from its source's first record (or its
    /// definition) through the one holding `now`, the days starting within `range` only; by
    /// habit name, then oldest first. From the cache of daily values, as every view reads them.
    public static func derivedDays(_ store: HealthStore, boundary: DayBoundary, range: DateRange = DateRange(), now: Date) async throws
        -> [DerivedDay] {
        var out: [DerivedDay] = []
        for d in try await store.definitions(.habit).sorted(by: { $0.name < $1.name }) {
            guard case .habit(let habit) = d.body, let derivation = habit.derivation else { continue }
            let first = min(d.time, try await derivationStart(store, derivation) ?? d.time)
            let from = max(first, range.since ?? first), through = min(now, (range.until ?? now).addingTimeInterval(-0.001))
            guard from <= through else { continue }
            let days = Periods(.day, boundary: boundary, from: from, through: through)
            for t in try await derivedTotals(store, d, derivation, days: days) where range.contains(days.bounds[t.bucket]) {
                out.append(DerivedDay(definition: d, derivation: derivation, day: boundary.day(of: days.bounds[t.bucket]),
                                      start: days.bounds[t.bucket], end: days.bounds[t.bucket + 1], value: t.sum))
            }
        }
        return out
    }

    /// What made a derived habit's value on `day` (`healthgate habit explain`): its value and
    /// every contribution, oldest first.
    public static func explain(_ store: HealthStore, _ derivation: HabitDerivation, boundary: DayBoundary,
                               day: LocalDay) async throws -> (value: Double?, contributions: [DerivedContribution]) {
        let input = try await derivationInput(store, derivation, boundary: boundary, from: day, through: day)
        return (DerivedHabit.values(derivation, input, boundary: boundary, days: day...day)[day],
                DerivedHabit.contributions(derivation, input, boundary: boundary, days: day...day))
    }
}

extension DerivationInput {
    /// Heart rate reduced to a reading a minute: each minute's highest, or its lowest.
    static func heartRate(minutes: [(minute: Int, highest: Double, lowest: Double)], highest: Bool) -> DerivationInput {
        .heartRate(minutes: minutes.map { ($0.minute, highest ? $0.highest : $0.lowest) })
    }
}
