public import Foundation
public import HealthModel
public import HealthStore

/// Totals and averages of one period (Zot "View Data": by day, week, month and year).
public struct PeriodStats: Sendable, Encodable, Equatable {
    public var period: String
    public var start: String
    /// Local days the averages divide by: the period's days from the first record's day to today.
    public var days = 0
    public var workouts = 0
    public var activeS = 0.0
    public var distanceM = 0.0
    public var energyKcal = 0.0
    /// Duration-weighted mean of the workouts' average heart rates.
    public var avgHR: Double?
    public var sleepSessions = 0
    public var avgSleepS: Double?
    public var steps = 0.0
    public var avgWeightKg: Double?
    public var habitEvents = 0
    /// Drinks (`hydration`): how many, their volume in ml and the mean per day.
    public var drinks = 0
    public var drinksMl = 0.0
    public var drinksMlPerDay = 0.0
    /// Vaping sessions: how many, per day, and per trigger.
    public var vapingSessions = 0
    public var vapingPerDay = 0.0
    public var vapingByTrigger: [String: Int] = [:]
    /// Meals: how many, their energy and the mean per day.
    public var meals = 0
    public var mealKcal = 0.0
    public var mealKcalPerDay = 0.0
    /// Every habit with entries in the period (the built-in ones too), by name.
    public var habits: [HabitPeriodStats] = []

    enum CodingKeys: String, CodingKey {
        case period, start, days, workouts, activeS = "active_s", distanceM = "distance_m", energyKcal = "energy_kcal"
        case avgHR = "avg_hr", sleepSessions = "sleep_sessions", avgSleepS = "avg_sleep_s", steps
        case avgWeightKg = "avg_weight_kg", habitEvents = "habit_events", drinks, drinksMl = "drinks_ml"
        case drinksMlPerDay = "drinks_ml_per_day", vapingSessions = "vaping_sessions", vapingPerDay = "vaping_per_day"
        case vapingByTrigger = "vaping_by_trigger", meals, mealKcal = "meal_kcal", mealKcalPerDay = "meal_kcal_per_day", habits
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(period, forKey: .period)
        try c.encode(start, forKey: .start)
        try c.encode(days, forKey: .days)
        try c.encode(workouts, forKey: .workouts)
        try c.encode(activeS, forKey: .activeS)
        try c.encode(distanceM, forKey: .distanceM)
        try c.encode(energyKcal, forKey: .energyKcal)
        try c.encode(avgHR, forKey: .avgHR)
        try c.encode(sleepSessions, forKey: .sleepSessions)
        try c.encode(avgSleepS, forKey: .avgSleepS)
        try c.encode(steps, forKey: .steps)
        try c.encode(avgWeightKg, forKey: .avgWeightKg)
        try c.encode(habitEvents, forKey: .habitEvents)
        try c.encode(drinks, forKey: .drinks)
        try c.encode(drinksMl, forKey: .drinksMl)
        try c.encode(drinksMlPerDay, forKey: .drinksMlPerDay)
        try c.encode(vapingSessions, forKey: .vapingSessions)
        try c.encode(vapingPerDay, forKey: .vapingPerDay)
        try c.encode(vapingByTrigger, forKey: .vapingByTrigger)
        try c.encode(meals, forKey: .meals)
        try c.encode(mealKcal, forKey: .mealKcal)
        try c.encode(mealKcalPerDay, forKey: .mealKcalPerDay)
        try c.encode(habits, forKey: .habits)
    }
}

/// One habit's entries in one period.
public struct HabitPeriodStats: Sendable, Encodable, Equatable {
    public var habit: String
    public var entries: Int
    /// The sum of the entries' values.
    public var total: Double
    /// `total` per day of the period (``PeriodStats/days``).
    public var perDay: Double
    /// Days of the period meeting a daily goal (or done, for a yes/no habit without a target),
    /// and the days counted; nil for a habit without a daily goal.
    public var daysMet: Int?
    public var completionRate: Double?

    enum CodingKeys: String, CodingKey {
        case habit, entries, total, perDay = "per_day", daysMet = "days_met", completionRate = "completion_rate"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(habit, forKey: .habit)
        try c.encode(entries, forKey: .entries)
        try c.encode(total, forKey: .total)
        try c.encode(perDay, forKey: .perDay)
        try c.encode(daysMet, forKey: .daysMet)
        try c.encode(completionRate, forKey: .completionRate)
    }
}

/// Read-side reports over the store: period statistics and the spreadsheet export.
public enum Reports {
    /// Statistics per period, oldest first, for periods that hold any record. Totals are summed
    /// in SQL per period of the local calendar (``HealthStore/habitTotals(_:bounds:byCategory:)``).
    /// Per-day means divide by the period's days from the first record's day to `now`'s.
    /// `history` (``habitHistory(_:days:now:)`` at the same `now` and days), when the
    /// caller has it, saves reading every habit's daily totals again.
    public static func stats(_ store: HealthStore, period: StatsPeriod, range: DateRange = DateRange(),
                             days boundary: DayBoundary = .midnight(in: .current), now: Date = Date(),
                             history: HabitHistory? = nil) async throws -> [PeriodStats] {
        guard let span = try await store.recordSpan(in: range) else { return [] }
        let periods = Periods(period, boundary: boundary, from: span.first, through: span.last)
        // The range cuts the first and last periods: their bounds move to the range's.
        var bounds = periods.bounds
        if let since = range.since, since > bounds[0] { bounds[0] = since }
        if let until = range.until, until < bounds[bounds.count - 1] { bounds[bounds.count - 1] = until }
        var buckets: [Int: PeriodStats] = [:]
        func update(_ i: Int, _ change: (inout PeriodStats) -> Void) {
            var s = buckets[i] ?? PeriodStats(period: periods.label(i), start: ISO8601.string(periods.bounds[i]))
            change(&s)
            buckets[i] = s
        }

        for w in try await store.workoutTotals(bounds: bounds) {
            update(w.bucket) { s in
                s.workouts = w.count
                s.activeS = w.activeS
                s.distanceM = w.distanceM
                s.energyKcal = w.energyKcal
                if w.hrWeight > 0 { s.avgHR = (w.hrSeconds / w.hrWeight * 10).rounded() / 10 }
            }
        }
        for t in try await store.sleepTotals(bounds: bounds) {
            update(t.bucket) { s in
                s.sleepSessions = t.count
                if t.count > 0 { s.avgSleepS = t.sleepS / Double(t.count) }
            }
        }
        for t in try await store.measurementTotals(.steps, bounds: bounds) { update(t.bucket) { $0.steps = t.sum } }
        for t in try await store.measurementTotals(.weight, bounds: bounds) where t.count > 0 {
            update(t.bucket) { $0.avgWeightKg = t.sum / Double(t.count) }
        }

        // Habits: per period; daily goals counted per local day within each period.
        let goals = try await Self.goals(store)
        let days = Periods(.day, boundary: boundary, from: max(range.since ?? span.first, span.first),
                           through: max(min(now, range.until ?? now), span.last))
        let periodTotals = try await store.everyHabitTotals(bounds: bounds)
        // Daily totals for the goals: the history's when it has them (its days may start
        // earlier: only those within `days` count), else read for `days`.
        let goalDays: Periods, dayTotals: [String: [BucketTotal]], skips: [String: Set<Int>]
        if let history, let historyDays = history.days, historyDays.boundary == boundary {
            (goalDays, dayTotals, skips) = (historyDays, history.daily, history.skipped)
        } else if goals.values.contains(where: { $0.period == .day }) {
            (goalDays, dayTotals, skips) = (days, try await store.everyHabitTotals(bounds: days.bounds), try await skippedDays(store, days: days))
        } else {
            (goalDays, dayTotals, skips) = (days, [:], [:])
        }
        for name in try await Self.habitNames(store) {
            guard let totals = periodTotals[Definition.key(name)], !totals.isEmpty else { continue }
            let goal = goals[Definition.key(name)].flatMap { $0.period == .day ? $0 : nil }
            var met: [Int: (met: Int, counted: Int)] = [:]
            if let goal {
                let daily = Dictionary((dayTotals[Definition.key(name)] ?? []).map { ($0.bucket, $0) }) { a, _ in a }
                for d in 0..<goalDays.count where goalDays.bounds[d] <= now && goalDays.bounds[d] >= days.bounds[0]
                    && goalDays.bounds[d] < days.bounds[days.count] {
                    guard let p = periods.index(of: goalDays.bounds[d]) else { continue }
                    let isMet = goal.isMet(daily[d])
                    // A day skipped on purpose and not met is neither met nor missed.
                    if !isMet && skips[Definition.key(name)]?.contains(d) == true { continue }
                    // Today counts once met, or when an at-most goal is already exceeded.
                    if goalDays.bounds[d + 1] > now && !isMet && goal.currentCanStillBeMet { continue }
                    met[p, default: (0, 0)].counted += 1
                    if isMet { met[p, default: (0, 0)].met += 1 }
                }
            }
            for t in totals {
                update(t.bucket) { s in
                    s.habitEvents += t.count
                    let m = goal == nil ? nil : met[t.bucket] ?? (0, 0)
                    s.habits.append(HabitPeriodStats(habit: name, entries: t.count, total: t.sum, perDay: 0, daysMet: m?.met,
                                                     completionRate: m.flatMap { $0.counted > 0 ? Double($0.met) / Double($0.counted) : nil }))
                    switch name {
                    case BuiltInHabit.hydration: s.drinks = t.count; s.drinksMl = t.sum
                    case BuiltInHabit.vaping: s.vapingSessions = t.count
                    case BuiltInHabit.meal: s.meals = t.count; s.mealKcal = t.sum
                    default: break
                    }
                }
            }
        }
        for t in try await store.habitTotals(BuiltInHabit.vaping, bounds: bounds, byCategory: true) {
            update(t.bucket) { $0.vapingByTrigger[t.key ?? "", default: 0] += t.count }
        }

        // Per-day means: the period's days from the first record's day up to today (or the
        // last record's day, for records after now).
        for (i, var s) in buckets {
            let from = days.index(of: max(periods.bounds[i], days.bounds[0])) ?? 0
            let through = days.index(of: min(periods.bounds[i + 1], days.bounds[days.count]).addingTimeInterval(-0.001)) ?? from
            s.days = max(1, through - from + 1)
            let n = Double(s.days)
            s.drinksMlPerDay = s.drinksMl / n
            s.vapingPerDay = Double(s.vapingSessions) / n
            s.mealKcalPerDay = s.mealKcal / n
            for h in s.habits.indices { s.habits[h].perDay = s.habits[h].total / n }
            buckets[i] = s
        }
        return buckets.keys.sorted().map { buckets[$0]! }
    }

    /// One name per habit with entries, whatever the spellings its entries carry (`Reading` and
    /// `reading` are one habit): the definition's spelling, else the first stored one.
    static func habitNames(_ store: HealthStore) async throws -> [String] {
        var defined: [String: String] = [:]
        for d in try await store.definitions(.habit) { defined[Definition.key(d.name)] = d.name }
        var names: [String] = []
        var seen: Set<String> = []
        for name in try await store.habitNames() where seen.insert(Definition.key(name)).inserted {
            names.append(defined[Definition.key(name)] ?? name)
        }
        return names
    }

    /// The counted habits' goals by case-folded name: every habit definition with a target, and
    /// yes/no ones without.
    static func goals(_ store: HealthStore) async throws -> [String: HabitGoal] {
        var goals: [String: HabitGoal] = [:]
        for d in try await store.definitions(.habit) { if let goal = HabitGoal(d) { goals[Definition.key(d.name)] = goal } }
        return goals
    }

    /// Column names of ``csv(_:range:write:)``.
    public static let csvHeader = ["type", "id", "version", "start", "end", "name", "value", "unit", "duration_s",
                                   "distance_m", "energy_kcal", "avg_hr", "max_hr", "detail", "note",
                                   "source_driver", "source_device", "source_file"]

    /// Every entry as one CSV table (RFC 4180, UTF-8, a header row), oldest first per type; then
    /// each derived habit's value per day of `days` through `now` (type `derived`: the habit's
    /// definition id and version, the day's bounds, its name, the value and unit, `day=` the date).
    public static func csv(_ store: HealthStore, range: DateRange = DateRange(), days: DayBoundary, now: Date,
                           write: (String) -> Void) async throws {
        write(csvLine(csvHeader))
        func n(_ v: Double?) -> String { v.map { $0 == $0.rounded() && abs($0) < 1e15 ? String(Int($0)) : String($0) } ?? "" }
        func i(_ v: Int?) -> String { v.map(String.init) ?? "" }
        func src(_ s: Source) -> [String] { [s.driver, s.device ?? "", s.file ?? ""] }
        for w in try await store.workouts(in: range) {
            write(csvLine(["workout", w.id, String(w.version), w.start, w.end, w.sport, "", "", n(w.timerS ?? w.elapsedS),
                           n(w.distanceM), n(w.energyKcal), i(w.avgHR), i(w.maxHR), w.subSport ?? "", "", ] + src(w.source)))
        }
        for s in try await store.sleepSessions(in: range) {
            let stages = SleepStage.allCases.compactMap { stage -> String? in
                let total = s.stages.filter { $0.stage == stage }.reduce(0.0) { $0 + $1.end.timeIntervalSince($1.start) }
                return total > 0 ? "\(stage.rawValue)=\(Int(total))s" : nil
            }.joined(separator: " ")
            write(csvLine(["sleep", s.id.description, String(s.version), ISO8601.string(s.start), ISO8601.string(s.end),
                           "sleep", n(s.totalSleepS), "s", n(s.end.timeIntervalSince(s.start)), "", "", "", "", stages, ""]
                          + src(s.source)))
        }
        for m in try await store.measurements(in: range) {
            let detail = m.extra.sorted { $0.key < $1.key }.map { "\($0.key)=\(n($0.value))" }.joined(separator: " ")
            write(csvLine(["measurement", m.id.description, String(m.version), ISO8601.string(m.time),
                           ISO8601.string(m.end ?? m.time), m.kind.rawValue, n(m.value), m.unit, "", "", "", "", "",
                           detail, ""] + src(m.source)))
        }
        for h in try await store.habitEvents(in: range) {
            write(csvLine(["habit", h.id.description, String(h.version), ISO8601.string(h.time), ISO8601.string(h.time),
                           h.habit, n(h.value), h.unit ?? "", "", "", "", "", "",
                           [h.category, h.label].compactMap { $0 }.joined(separator: " "), h.note ?? ""] + src(h.source)))
        }
        for d in try await store.definitions() where range.contains(d.time) {
            let (value, unit, detail) = definitionCells(d.body, number: n)
            write(csvLine(["definition", d.id.description, String(d.version), ISO8601.string(d.time), ISO8601.string(d.time), d.name,
                           value, unit, "", "", "", "", "", detail, ""] + src(d.source)))
        }
        for v in try await derivedDays(store, boundary: days, range: range, now: now) {
            write(csvLine(["derived", v.definition.id.description, String(v.definition.version), ISO8601.string(v.start),
                           ISO8601.string(v.end), v.definition.name, n(v.value), v.derivation.unit, "", "", "", "", "",
                           "day=\(v.day)", "", "", "", ""]))
        }
    }

    /// A definition's `value`, `unit` and `detail` cells: `kind=...` first, then what the kind
    /// holds (a habit's value kind, categories and target; a saved meal's ingredients).
    static func definitionCells(_ body: DefinitionBody, number n: (Double?) -> String) -> (String, String, String) {
        switch body {
        case .habit(let h):
            var detail = ["kind=habit", "value_kind=\(h.valueKind.rawValue)"]
            if !h.categories.isEmpty { detail.append("categories=" + h.categories.joined(separator: "|")) }
            if let t = h.target { detail.append("target=\(t.direction.rawValue) \(n(t.amount))/\(t.period.rawValue)") }
            if let d = h.derivation {
                detail.append("from=\(d.source.rawValue)")
                if let sport = d.sport { detail.append("sport=\(sport)") }
                if let m = d.minMinutes { detail.append("min_minutes=\(n(m))") }
                if let bpm = d.bpm { detail.append("bpm=\(bpm)") }
                if let stage = d.stage { detail.append("stage=\(stage.rawValue)") }
                if let kind = d.kind { detail.append("measurement=\(kind.rawValue)") }
            }
            return (n(h.target?.amount), h.unit ?? "", detail.joined(separator: " "))
        case .trigger:
            return ("", "", "kind=trigger")
        case .meal(let m):
            let parts = m.ingredients.map { "\($0.name)=\(n($0.kcal))kcal" }.joined(separator: "|")
            return (n(m.kcal), "kcal", "kind=meal" + (parts.isEmpty ? "" : " ingredients=" + parts))
        case .profile(let p):
            return (n(p.weightKg), "kg", "kind=profile")
        case .preferences(let p):
            return ("", "", "kind=preferences volume=\(p.volume.rawValue) mass=\(p.mass.rawValue)")
        }
    }

    /// One CSV line: fields quoted when needed; text that a spreadsheet would run as a formula
    /// gets a leading apostrophe: one that starts with `=`, `+`, `-`, `@` (or their full-width
    /// forms), a tab or a carriage return, after any leading spaces and line breaks, unless it is
    /// a plain number.
    static func csvLine(_ fields: [String]) -> String {
        fields.map { field -> String in
            var value = field
            if isFormula(value) { value = "'" + value }
            if value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
                return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            }
            return value
        }.joined(separator: ",")
    }

    static func isFormula(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first(where: { $0 != " " && $0 != "\n" }) else { return false }
        let triggers: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r", "\u{FF1D}", "\u{FF0B}", "\u{FF0D}", "\u{FF20}"]
        return triggers.contains(first) && Double(text) == nil
    }
}
