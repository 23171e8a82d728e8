public import Foundation
import HealthModel
public import HealthStore

/// Calendar periods for `healthgate stats`.
public enum StatsPeriod: String, Sendable, CaseIterable {
    case day, week, month, year

    /// The period's label and start for `date` (ISO weeks: `2019-W20`).
    func bucket(_ date: Date, calendar: Calendar) -> (label: String, start: Date) {
        switch self {
        case .day:
            let c = calendar.dateComponents([.year, .month, .day], from: date)
            return (String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!), calendar.date(from: c)!)
        case .week:
            var iso = Calendar(identifier: .iso8601)
            iso.timeZone = calendar.timeZone
            let c = iso.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
            return (String(format: "%04d-W%02d", c.yearForWeekOfYear!, c.weekOfYear!), iso.date(from: c)!)
        case .month:
            let c = calendar.dateComponents([.year, .month], from: date)
            return (String(format: "%04d-%02d", c.year!, c.month!), calendar.date(from: c)!)
        case .year:
            let c = calendar.dateComponents([.year], from: date)
            return (String(format: "%04d", c.year!), calendar.date(from: c)!)
        }
    }
}

/// Totals and averages of one period (Zot "View Data": by day, week, month and year).
public struct PeriodStats: Sendable, Encodable, Equatable {
    public var period: String
    public var start: String
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

    enum CodingKeys: String, CodingKey {
        case period, start, workouts, activeS = "active_s", distanceM = "distance_m", energyKcal = "energy_kcal"
        case avgHR = "avg_hr", sleepSessions = "sleep_sessions", avgSleepS = "avg_sleep_s", steps
        case avgWeightKg = "avg_weight_kg", habitEvents = "habit_events"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(period, forKey: .period)
        try c.encode(start, forKey: .start)
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
    }
}

/// Read-side reports over the store: period statistics and the spreadsheet export.
public enum Reports {
    /// Statistics per period, oldest first, for periods that hold any record.
    public static func stats(_ store: HealthStore, period: StatsPeriod, range: DateRange = DateRange(),
                             timeZone: TimeZone = .current) async throws -> [PeriodStats] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var buckets: [String: PeriodStats] = [:]
        var hrWeight: [String: (sum: Double, weight: Double)] = [:]
        var sleepTotal: [String: Double] = [:]
        var weights: [String: [Double]] = [:]

        func withBucket(_ date: Date, _ update: (inout PeriodStats, String) -> Void) {
            let (label, start) = period.bucket(date, calendar: calendar)
            var stats = buckets[label] ?? PeriodStats(period: label, start: ISO8601.string(start))
            update(&stats, label)
            buckets[label] = stats
        }

        for w in try await store.workouts(in: range) {
            withBucket(ISO8601.parse(w.start) ?? Date(timeIntervalSince1970: 0)) { s, label in
                let active = w.timerS ?? w.elapsedS
                s.workouts += 1
                s.activeS += active
                s.distanceM += w.distanceM ?? 0
                s.energyKcal += w.energyKcal ?? 0
                if let hr = w.avgHR, active > 0 {
                    let acc = hrWeight[label] ?? (0, 0)
                    hrWeight[label] = (acc.sum + Double(hr) * active, acc.weight + active)
                }
            }
        }
        for sleep in try await store.sleepSessions(in: range) {
            withBucket(sleep.start) { s, label in
                s.sleepSessions += 1
                sleepTotal[label, default: 0] += sleep.totalSleepS
            }
        }
        for m in try await store.measurements(in: range) where m.kind == .steps || m.kind == .weight {
            withBucket(m.time) { s, label in
                if m.kind == .steps { s.steps += m.value } else { weights[label, default: []].append(m.value) }
            }
        }
        for h in try await store.habitEvents(in: range) {
            withBucket(h.time) { s, _ in s.habitEvents += 1 }
        }
        return buckets.values.map { stats in
            var s = stats
            if let acc = hrWeight[s.period], acc.weight > 0 { s.avgHR = (acc.sum / acc.weight * 10).rounded() / 10 }
            if s.sleepSessions > 0 { s.avgSleepS = (sleepTotal[s.period] ?? 0) / Double(s.sleepSessions) }
            if let list = weights[s.period], !list.isEmpty { s.avgWeightKg = list.reduce(0, +) / Double(list.count) }
            return s
        }.sorted { $0.start < $1.start }
    }

    /// Column names of ``csv(_:range:write:)``.
    public static let csvHeader = ["type", "id", "version", "start", "end", "name", "value", "unit", "duration_s",
                                   "distance_m", "energy_kcal", "avg_hr", "max_hr", "detail", "note",
                                   "source_driver", "source_device", "source_file"]

    /// Every entry as one CSV table (RFC 4180, UTF-8, a header row), oldest first per type.
    public static func csv(_ store: HealthStore, range: DateRange = DateRange(), write: (String) -> Void) async throws {
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
