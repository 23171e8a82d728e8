import DriverKit
public import Foundation

/// A calendar day without a time of day (habit trackers' check-ins: Loop, HabitBull).
public struct CalendarDay: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init?(year: Int, month: Int, day: Int) {
        guard (1900...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // 2021-02-30 is not a day.
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
              calendar.component(.day, from: date) == day else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// `yyyy-MM-dd` (Loop, ISO 8601) or `M/d/yyyy` (HabitBull's US dates); nil for anything else.
    public init?(_ text: some StringProtocol) {
        let text = text.trimmingCharacters(in: .whitespaces)
        let dash = text.split(separator: "-", omittingEmptySubsequences: false)
        if dash.count == 3, dash[0].count == 4, dash[1].count == 2, dash[2].count == 2,
           let y = Int(dash[0]), let m = Int(dash[1]), let d = Int(dash[2]), dash.allSatisfy({ $0.allSatisfy(\.isASCII) }) {
            self.init(year: y, month: m, day: d)
            return
        }
        let slash = text.split(separator: "/", omittingEmptySubsequences: false)
        if slash.count == 3, (1...2).contains(slash[0].count), (1...2).contains(slash[1].count), slash[2].count == 4,
           let m = Int(slash[0]), let d = Int(slash[1]), let y = Int(slash[2]), slash.allSatisfy({ $0.allSatisfy(\.isASCII) }) {
            self.init(year: y, month: m, day: d)
            return
        }
        return nil
    }

    /// The UTC day of `date` (Loop's backups keep a day as the milliseconds of its 00:00 UTC).
    public init(utcDayOf date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        year = parts.year!
        month = parts.month!
        day = parts.day!
    }

    /// 12:00 of this day in `zone`: the time a check-in without a time of day is stored at (noon
    /// stays on the same day whatever the daylight-saving shift, and a few hours' difference
    /// between the zone of the import and the zone of the views).
    public func noon(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 12))!
    }

    /// `yyyy-MM-dd`.
    public var description: String {
        func pad(_ n: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(n).count)) + String(n) }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (a: CalendarDay, b: CalendarDay) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }
}

extension KeyedDecodingContainer {
    /// A `time_zone` setting: an IANA identifier (`Europe/Berlin`); the system's zone when absent.
    public func decodeTimeZone(forKey key: Key) throws -> TimeZone {
        guard let identifier = try decodeIfPresent(String.self, forKey: key) else { return TimeZone.current }
        guard let zone = TimeZone(identifier: identifier) else {
            throw configError(key, "'\(identifier)' is not a time zone (an IANA name such as Europe/Berlin or UTC)")
        }
        return zone
    }
}
