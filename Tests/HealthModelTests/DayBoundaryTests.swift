import Foundation
@testable import HealthModel
import Testing
import TestSupport

/// The one definition of a local day (``DayBoundary``): a day start such as 04:00 in a zone,
/// across DST changes, in zones whose clocks change at midnight or by half an hour.
@Suite struct DayBoundaryTests {
    static let zones = ["Europe/Berlin", "America/New_York", "America/Havana", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham"]

    func boundary(_ zone: String, _ start: Int) -> DayBoundary { DayBoundary(timeZone: TimeZone(identifier: zone)!, startMinutes: start) }
    func instant(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test func anEntryBeforeTheDayStartBelongsToTheDayBefore() {
        let days = boundary("Europe/Berlin", 240)
        // 01:30 and 03:59 local on 14 March: 13 March; 04:00: 14 March.
        #expect(days.day(of: instant("2026-03-14T00:30:00Z")) == LocalDay(year: 2026, month: 3, day: 13))
        #expect(days.day(of: instant("2026-03-14T02:59:00Z")) == LocalDay(year: 2026, month: 3, day: 13))
        #expect(days.day(of: instant("2026-03-14T03:00:00Z")) == LocalDay(year: 2026, month: 3, day: 14))
        #expect(days.start(of: LocalDay(year: 2026, month: 3, day: 14)) == instant("2026-03-14T03:00:00Z"))
        // A night from 23:10 to 06:40 belongs to the day it ends; one ending at 03:00, to the one before.
        #expect(days.day(ofNightEnding: instant("2026-03-14T05:40:00Z")) == LocalDay(year: 2026, month: 3, day: 14))
        #expect(days.day(ofNightEnding: instant("2026-03-14T02:00:00Z")) == LocalDay(year: 2026, month: 3, day: 13))
    }

    @Test func daysAcrossTheClockChangesAre23And25HoursLong() {
        let days = boundary("Europe/Berlin", 240)
        // Clocks forward on 29 March 2026 (02:00 -> 03:00), back on 25 October (03:00 -> 02:00):
        // with a 04:00 day start, the days holding the changes are 28 March and 24 October.
        let march28 = LocalDay(year: 2026, month: 3, day: 28), october24 = LocalDay(year: 2026, month: 10, day: 24)
        #expect(days.start(of: march28.adding(1)).timeIntervalSince(days.start(of: march28)) == 23 * 3600)
        #expect(days.start(of: march28.adding(2)).timeIntervalSince(days.start(of: march28.adding(1))) == 24 * 3600)
        #expect(days.start(of: october24.adding(1)).timeIntervalSince(days.start(of: october24)) == 25 * 3600)
        #expect(days.start(of: march28) == instant("2026-03-28T03:00:00Z"))
        #expect(days.start(of: march28.adding(1)) == instant("2026-03-29T02:00:00Z"))
        // With midnight starts, the days of the changes themselves.
        let midnight = DayBoundary.midnight(in: TimeZone(identifier: "Europe/Berlin")!)
        #expect(midnight.start(of: march28.adding(2)).timeIntervalSince(midnight.start(of: march28.adding(1))) == 23 * 3600)
        #expect(midnight.start(of: october24.adding(2)).timeIntervalSince(midnight.start(of: october24.adding(1))) == 25 * 3600)
    }

    /// A 02:30 day start on 25 October happens twice: the day starts at the first, and the
    /// repeated hour after it (02:00 to 02:30 again) is already 25 October.
    @Test func theRepeatedHourAfterTheDayStartBelongsToTheNewDay() {
        let days = boundary("Europe/Berlin", 150)
        #expect(days.day(of: instant("2026-10-25T00:29:00Z")) == LocalDay(year: 2026, month: 10, day: 24))
        #expect(days.day(of: instant("2026-10-25T00:30:00Z")) == LocalDay(year: 2026, month: 10, day: 25))
        #expect(days.day(of: instant("2026-10-25T01:10:00Z")) == LocalDay(year: 2026, month: 10, day: 25))
    }

    @Test func aDayStartTheClocksSkipStartsTheDayAfterTheJump() {
        // Havana: clocks forward at midnight on 8 March 2026 (00:00 -> 01:00).
        let havana = boundary("America/Havana", 0)
        #expect(havana.start(of: LocalDay(year: 2026, month: 3, day: 8)) == instant("2026-03-08T05:00:00Z"))
        // Berlin with a 02:30 day start on 29 March: 02:30 does not exist, the day starts at 03:00.
        let berlin = boundary("Europe/Berlin", 150)
        #expect(berlin.start(of: LocalDay(year: 2026, month: 3, day: 29)) == instant("2026-03-29T01:00:00Z"))
        // ... and at the first 02:30 of 25 October, which happens twice.
        #expect(berlin.start(of: LocalDay(year: 2026, month: 10, day: 25)) == instant("2026-10-25T00:30:00Z"))
    }

    /// Every instant lies in the day `day(of:)` names: from its start up to the next day's.
    @Test(arguments: zones) func everyInstantLiesInItsDay(zone: String) {
        for start in [0, 150, 240] {
            let days = boundary(zone, start)
            var t = instant("2026-01-01T00:00:00Z")
            while t < instant("2027-01-01T00:00:00Z") {
                let day = days.day(of: t)
                let bounds = days.start(of: day)..<days.start(of: day.adding(1))
                #expect(bounds.contains(t), "\(zone) \(start) \(t): \(day) \(bounds)")
                if !bounds.contains(t) { return }
                t += 137 * 60  // every minute of the hour comes up over the year
            }
        }
    }

    /// The fast day start (four offset lookups) is the calendar's in every zone the system
    /// knows, on every third day of 2025-2027 and every day around each clock change, for day
    /// starts at midnight, 02:30 (where clocks change), 04:00 and 11:45; and Samoa's lost day.
    @Test func theFastDayStartIsTheCalendars() {
        var differences: [String] = []
        for zone in TimeZone.knownTimeZoneIdentifiers {
            let tz = TimeZone(identifier: zone)!
            var days = Set<Int>(stride(from: LocalDay("2025-01-01")!.dayNumber, to: LocalDay("2028-01-01")!.dayNumber, by: 3))
            var t = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01
            while let next = tz.nextDaylightSavingTimeTransition(after: t), next.timeIntervalSince1970 < 1_830_297_600 {
                let day = Int((next.timeIntervalSince1970 / 86_400).rounded(.down))
                for d in day - 2...day + 2 { days.insert(d) }
                t = next
            }
            for start in [0, 150, 240, 705] {
                let boundary = DayBoundary(timeZone: tz, startMinutes: start)
                for n in days {
                    let day = LocalDay(dayNumber: n)
                    if boundary.start(of: day) != boundary.calendarStart(of: day) {
                        differences.append("\(zone) \(start) \(day): \(boundary.start(of: day)) vs \(boundary.calendarStart(of: day))")
                    }
                }
            }
        }
        // Samoa moved by a whole day (the 30th of December 2011 never happened in Apia).
        let apia = TimeZone(identifier: "Pacific/Apia")!
        for start in [0, 240] {
            let boundary = DayBoundary(timeZone: apia, startMinutes: start)
            for n in LocalDay("2011-12-25")!.dayNumber...LocalDay("2012-01-05")!.dayNumber {
                let day = LocalDay(dayNumber: n)
                if boundary.start(of: day) != boundary.calendarStart(of: day) { differences.append("Pacific/Apia \(start) \(day)") }
            }
        }
        #expect(differences.isEmpty, "\(differences.count): \(differences.prefix(10))")
    }

    /// Dates are read by the proleptic Gregorian calendar's rules: February 29th in leap years
    /// only, months of 30 and 31 days, nothing before year 1.
    @Test func datesAreReadByTheCalendarsRules() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for year in [1, 1900, 2000, 2024, 2025, 2100, 9999] {
            for month in 0...13 {
                for day in 0...32 {
                    let text = String(format: "%04d-%02d-%02d", year, month, day)
                    let real = calendar.date(from: DateComponents(year: year, month: month, day: day)).map {
                        calendar.dateComponents([.year, .month, .day], from: $0)
                    }.map { $0.year == year && $0.month == month && $0.day == day } ?? false
                    #expect((LocalDay(text) != nil) == real, "\(text)")
                }
            }
        }
        #expect(LocalDay("0000-01-01") == nil && LocalDay("2026-2-01") == nil && LocalDay("2026-02-29") == nil)
    }

    /// The day starts of 2026 in each zone, against Python's zoneinfo (an independent reading of
    /// the same time zone rules): a day start that exists once is the instant Python gives it.
    @Test func dayStartsAgreeWithPythonsZoneinfo() async throws {
        let script = """
        import sys
        from datetime import date, datetime, timedelta
        from zoneinfo import ZoneInfo
        for zone in sys.argv[1].split(","):
            z = ZoneInfo(zone)
            for minutes in (0, 240):
                d = date(2026, 1, 1)
                while d.year == 2026:
                    t = datetime(d.year, d.month, d.day, minutes // 60, minutes % 60, tzinfo=z)
                    print(zone, minutes, d.isoformat(), int(t.timestamp()))
                    d += timedelta(days=1)
        """
        let result = try await Tool.run("/usr/bin/env", ["python3", "-c", script, Self.zones.joined(separator: ",")])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == Self.zones.count * 2 * 365)
        var differences: [String] = []
        for line in lines {
            let f = line.split(separator: " ").map(String.init)
            let days = boundary(f[0], Int(f[1])!)
            let start = days.start(of: LocalDay(f[2])!)
            if Int(start.timeIntervalSince1970) != Int(f[3])! { differences.append("\(line): \(Int(start.timeIntervalSince1970))") }
        }
        #expect(differences.isEmpty, "\(differences.prefix(10))")
    }

    @Test func dayStartsAreWrittenAsHoursAndMinutesBeforeNoon() {
        #expect(DayBoundary.minutes("04:00") == 240)
        #expect(DayBoundary.minutes("4:30") == 270)
        #expect(DayBoundary.minutes("00:00") == 0)
        #expect(DayBoundary.minutes("11:59") == 719)
        for bad in ["12:00", "23:00", "4", "04:60", "-1:00", "04:0", "", "aa:bb", "04:00:00"] { #expect(DayBoundary.minutes(bad) == nil, "\(bad)") }
        #expect(DayBoundary.text(minutes: 270) == "04:30")
        #expect(LocalDay("2026-02-29") == nil && LocalDay("2026-13-01") == nil && LocalDay("2028-02-29") != nil)
        #expect(LocalDay(year: 2026, month: 3, day: 30).isoWeekday == 1 && LocalDay(year: 2026, month: 3, day: 29).isoWeekday == 7)
    }
}

/// ``LocalDay``'s integer day arithmetic against the Gregorian calendar.
@Suite struct LocalDayTests {
    @Test func dayNumbersAgreeWithTheCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let epoch = calendar.date(from: DateComponents(year: 1970, month: 1, day: 1, hour: 12))!
        // From 1614 (Foundation's Gregorian calendar is Julian before 1582) to 4160.
        for n in stride(from: -130_000, through: 800_000, by: 997) {
            let c = calendar.dateComponents([.year, .month, .day, .weekday], from: calendar.date(byAdding: .day, value: n, to: epoch)!)
            let day = LocalDay(dayNumber: n)
            #expect(day == LocalDay(year: c.year!, month: c.month!, day: c.day!) && day.dayNumber == n, "\(n)")
            #expect(day.isoWeekday == (c.weekday! + 5) % 7 + 1, "\(n)")
        }
        #expect(LocalDay(year: 2026, month: 2, day: 28).adding(1) == LocalDay(year: 2026, month: 3, day: 1))
        #expect(LocalDay(year: 2028, month: 2, day: 28).adding(1) == LocalDay(year: 2028, month: 2, day: 29))
        #expect(LocalDay(year: 2026, month: 1, day: 31).adding(1, .month) == LocalDay(year: 2026, month: 2, day: 28))
    }
}
