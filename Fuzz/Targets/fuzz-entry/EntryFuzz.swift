import Foundation
import FuzzSupport
import HealthModel
import Entries

/// What a person types (`healthgate log`, the dashboard's forms, the socket's `log`) and the one
/// day rule it is read by. The first byte picks the entry's kind, the second the time zone, the
/// next two the day start; the rest is cut at NUL bytes into the request's texts (value, name,
/// duration, distance, from, to, at). Besides "never crash", it traps where the day rule breaks
/// its own promises: the day holding a day's start is that day, days follow each other, a
/// `HH:MM` read back is the same text, a date read back is the same date.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let kind = EntryRequest.Kind.allCases[Int(input.byte()) % EntryRequest.Kind.allCases.count]
    let zones = TimeZone.knownTimeZoneIdentifiers
    let zone = TimeZone(identifier: zones[Int(input.byte()) % zones.count]) ?? TimeZone(identifier: "UTC")!
    let startMinutes = Int(input.uint16()) % DayBoundary.allowedStart.count
    let texts = input.rest.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    func text(_ i: Int) -> String? { i < texts.count ? texts[i] : nil }

    let boundary = DayBoundary(timeZone: zone, startMinutes: startMinutes)
    for t in texts {
        if let minutes = DayBoundary.minutes(t) {
            precondition(DayBoundary.minutes(DayBoundary.text(minutes: minutes)) == minutes, "HH:MM does not read back")
        }
        if let day = LocalDay(t) {
            precondition(LocalDay(day.description) == day, "a date does not read back")
            // Within the years a person logs: the day rule's promises.
            if (1900...2200).contains(day.year) {
                let start = boundary.start(of: day)
                precondition(boundary.day(of: start) == day, "the day holding \(day)'s start is not \(day) in \(zone.identifier)")
                precondition(boundary.start(of: day.adding(1)) > start, "\(day) does not end after it starts in \(zone.identifier)")
            }
        }
        _ = ISO8601.parse(t)
        _ = Durations.seconds(t)
    }
    let now = Date(timeIntervalSince1970: 1_775_000_000)
    let builder = EntryBuilder(definitions: DefinitionsSnapshot([]), now: now, timeZone: zone)
    let request = EntryRequest(kind: kind, name: text(1), value: text(0), done: texts.count % 2 == 0, trigger: text(1), thoughts: text(2),
                               duration: text(2), distance: text(3), from: text(4), to: text(5), at: text(6))
    if let entry = try? builder.build(request) {
        // What the builder builds is what the validator accepts.
        for record in entry.records { precondition((try? RecordValidator().validate(record, now: now)) != nil, "built an invalid record") }
    }
    return 0
}
