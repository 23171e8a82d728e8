public import Foundation

/// A date on the calendar, without a time or a zone (`2026-03-29`).
public struct LocalDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// `2026-03-29`; nil for anything else, or a date the calendar does not have.
    public init?(_ text: String) {
        // Four digits, a dash, two, a dash, two: read byte by byte (a report reads thousands).
        guard text.utf8.count == 10 else { return nil }
        var fields = (0, 0, 0)
        for (i, c) in text.utf8.enumerated() {
            if i == 4 || i == 7 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            let digit = Int(c - UInt8(ascii: "0"))
            switch i {
            case 0..<4: fields.0 = fields.0 * 10 + digit
            case 5..<7: fields.1 = fields.1 * 10 + digit
            default: fields.2 = fields.2 * 10 + digit
            }
        }
        let (year, month, day) = fields
        // A date the proleptic Gregorian calendar has (from year 1, as the calendar's era).
        guard year >= 1, (1...12).contains(month), (1...ISO8601.daysIn(month: month, year: year)).contains(day) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    init(_ c: DateComponents) { self.init(year: c.year!, month: c.month!, day: c.day!) }

    public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }

    public static func < (a: Self, b: Self) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    /// The day `count` days (or months, or years) on: calendar arithmetic on dates, no zone.
    public func adding(_ count: Int, _ unit: Calendar.Component = .day) -> LocalDay {
        if unit == .day { return Self(dayNumber: dayNumber + count) }
        return Self(Self.plain.dateComponents([.year, .month, .day], from: Self.plain.date(byAdding: unit, value: count, to: noon)!))
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (negative before): integer
    /// arithmetic, no Calendar (a report walks thousands of days).
    public var dayNumber: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `dayNumber` days after 1970-01-01.
    public init(dayNumber: Int) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month, day: day)
    }

    /// Monday = 1 ... Sunday = 7 (ISO 8601; 1970-01-01 was a Thursday).
    public var isoWeekday: Int { ((dayNumber + 3) % 7 + 7) % 7 + 1 }

    /// The ISO 8601 week this day is in: its year and number (`2026-W13`).
    public var isoWeek: (year: Int, week: Int) {
        var iso = Calendar(identifier: .iso8601)
        iso.timeZone = Self.plain.timeZone
        let c = iso.dateComponents([.yearForWeekOfYear, .weekOfYear], from: noon)
        return (c.yearForWeekOfYear!, c.weekOfYear!)
    }

    /// Days from this day to `other` (negative when `other` is earlier).
    public func days(to other: LocalDay) -> Int { other.dayNumber - dayNumber }

    var components: DateComponents { DateComponents(year: year, month: month, day: day) }
    /// Noon UTC of this date: where plain date arithmetic happens.
    private var noon: Date { Self.plain.date(from: DateComponents(year: year, month: month, day: day, hour: 12))! }

    /// The Gregorian calendar in UTC, which has no DST: arithmetic on dates only.
    private static let plain: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}

/// The one definition of a local day, which every view, report and summary uses
/// (docs/days.md):
///
/// - A day starts at the user's *day start* (`Preferences.dayStartMinutes`, midnight unless set,
///   e.g. 04:00) in their time zone, and lasts until the next day's start: 23 or 25 hours on a
///   day the clocks change, 24 otherwise. An entry at 01:30 with a 04:00 day start belongs to the
///   day before.
/// - When the day start does not exist on a date (the clocks jump over it), the day starts at the
///   first instant after the jump; when it happens twice (the clocks go back over it), at the
///   first of the two.
/// - A night of sleep (any sleep session) belongs to the day in which it ends.
/// - Weeks are ISO weeks (Monday first), months and years the calendar's; each starts at the day
///   start of its first day.
public struct DayBoundary: Hashable, Sendable {
    public let timeZone: TimeZone
    /// Minutes after local midnight at which a day starts, in ``allowedStart``.
    public let startMinutes: Int
    /// The Gregorian calendar in ``timeZone``.
    public let calendar: Calendar

    /// A day start from midnight up to (not including) noon.
    public static let allowedStart = 0..<720

    public init(timeZone: TimeZone, startMinutes: Int = 0) {
        precondition(Self.allowedStart.contains(startMinutes), "a day start is 00:00 to 11:59")
        self.timeZone = timeZone
        self.startMinutes = startMinutes
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    /// Days that start at local midnight in `timeZone`.
    public static func midnight(in timeZone: TimeZone) -> DayBoundary { DayBoundary(timeZone: timeZone) }

    /// The local day holding `instant`.
    public func day(of instant: Date) -> LocalDay {
        let day = LocalDay(calendar.dateComponents([.year, .month, .day], from: instant))
        // Compared as instants, not as wall times: when the clocks go back over the day start,
        // the repeated hour after its first occurrence is already the new day.
        return startMinutes > 0 && instant < start(of: day) ? day.adding(-1) : day
    }

    /// A reader of the days of many instants in time order: it remembers the last day's bounds,
    /// so instants in the same day cost no calendar work.
    public struct Cursor {
        public let boundary: DayBoundary
        private var last: (day: LocalDay, bounds: Range<Date>)?

        public init(_ boundary: DayBoundary) { self.boundary = boundary }

        /// ``DayBoundary/day(of:)``.
        public mutating func day(of instant: Date) -> LocalDay {
            if let last, last.bounds.contains(instant) { return last.day }
            let day = boundary.day(of: instant)
            last = (day, boundary.start(of: day)..<boundary.start(of: day.adding(1)))
            return day
        }
    }

    /// The day a night of sleep (or any session) belongs to: the one in which it ends.
    public func day(ofNightEnding end: Date) -> LocalDay { day(of: end) }

    /// The instant `day` starts.
    public func start(of day: LocalDay) -> Date {
        // Nearly every day: the zone's offset is the same from 26 hours before the day start to
        // 26 hours after it (zones have moved by as much as a whole day), so its wall time shows
        // once, at one instant. Four offset lookups instead of the calendar's arithmetic; the
        // days near a clock change go to the calendar.
        let wall = Double(day.dayNumber * 86_400 + startMinutes * 60)
        let offset = Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - Double(timeZone.secondsFromGMT(
            for: Date(timeIntervalSince1970: wall))))))
        let instant = wall - offset
        if Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: instant - 93_600))) == offset,
           Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: instant + 93_600))) == offset {
            return Date(timeIntervalSince1970: instant)
        }
        return calendarStart(of: day)
    }

    /// ``start(of:)`` by the calendar, for the days near a clock change.
    func calendarStart(of day: LocalDay) -> Date {
        var noon = day.components
        noon.hour = 12
        // Local midnight, or the first instant of the day where the clocks skip midnight.
        let midnight = calendar.startOfDay(for: calendar.date(from: noon)!)
        guard startMinutes > 0 else { return midnight }
        // No clock change between midnight and the day start (nearly every day): the wall
        // time shows exactly the day start, for the first time.
        let plain = midnight.addingTimeInterval(TimeInterval(startMinutes * 60))
        let shown = calendar.dateComponents([.day, .hour, .minute], from: plain)
        if shown.day == day.day, shown.hour! * 60 + shown.minute! == startMinutes { return plain }
        // The first instant after midnight that shows the day start, or the first after it
        // where the clocks skip it.
        return calendar.nextDate(after: midnight, matching: DateComponents(hour: startMinutes / 60, minute: startMinutes % 60, second: 0),
                                 matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)!
    }

    /// The start of the day holding `instant`.
    public func start(ofDayHolding instant: Date) -> Date { start(of: day(of: instant)) }

    /// The instants bounding the day holding `instant`: `start ..< end`.
    public func bounds(ofDayHolding instant: Date) -> Range<Date> {
        let day = day(of: instant)
        return start(of: day)..<start(of: day.adding(1))
    }

    /// `04:00`.
    public var startText: String { Self.text(minutes: startMinutes) }

    /// `HH:MM` as minutes after midnight, within ``allowedStart``; nil otherwise.
    public static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              let h = Int(parts[0]), let m = Int(parts[1]), (0..<60).contains(m), h >= 0 else { return nil }
        let minutes = h * 60 + m
        return allowedStart.contains(minutes) ? minutes : nil
    }

    public static func text(minutes: Int) -> String { String(format: "%02d:%02d", minutes / 60, minutes % 60) }
}

/// Calendar periods of `stats`, the dashboard and the server's summaries: days, ISO weeks (Monday
/// first), calendar months and years, each starting at the day start of its first day.
public enum StatsPeriod: String, Sendable, CaseIterable {
    case day, week, month, year

    /// The first day of the period holding `day`: itself, its ISO week's Monday, the 1st of
    /// its month or of its year.
    public func first(of day: LocalDay) -> LocalDay {
        switch self {
        case .day: day
        case .week: day.adding(1 - day.isoWeekday)
        case .month: LocalDay(year: day.year, month: day.month, day: 1)
        case .year: LocalDay(year: day.year, month: 1, day: 1)
        }
    }

    /// The first day of the period after the one starting on `first`.
    public func next(after first: LocalDay) -> LocalDay {
        switch self {
        case .day: first.adding(1)
        case .week: first.adding(7)
        case .month: first.adding(1, .month)
        case .year: first.adding(1, .year)
        }
    }

    /// The label of the period holding `day` (ISO weeks: `2019-W20`).
    public func label(_ day: LocalDay) -> String {
        switch self {
        case .day: return day.description
        case .week:
            let week = day.isoWeek
            return String(format: "%04d-W%02d", week.year, week.week)
        case .month: return String(format: "%04d-%02d", day.year, day.month)
        case .year: return String(format: "%04d", day.year)
        }
    }
}
