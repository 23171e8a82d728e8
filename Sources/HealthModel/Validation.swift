import Foundation

/// Why a record was refused before it reached the store.
public struct ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var recordID: RecordID
    public var reason: String

    public init(recordID: RecordID, reason: String) {
        self.recordID = recordID
        self.reason = reason
    }

    public var description: String { "record \(recordID): \(reason)" }
}

/// Rules every record must satisfy, whatever its source.
public struct RecordValidator: Sendable {
    /// Records may start at most this far after `now` (clock skew between a device and this box).
    public var futureTolerance: TimeInterval
    /// Records before this date are refused as corrupt clocks (FIT's epoch is 1989-12-31).
    public var earliest: Date

    public init(futureTolerance: TimeInterval = 300,
                earliest: Date = Date(timeIntervalSince1970: 631_065_600)) {
        self.futureTolerance = futureTolerance
        self.earliest = earliest
    }

    /// Throws ``ValidationError`` when `record` is future-dated, ends before it starts, or
    /// carries values no sensor can produce.
    public func validate(_ record: HealthRecord, now: Date = Date()) throws {
        let limit = now.addingTimeInterval(futureTolerance)
        func fail(_ reason: String) -> ValidationError { ValidationError(recordID: record.id, reason: reason) }
        if record.start > limit || record.end > limit {
            throw fail("future-dated (\(ISO8601.string(record.end > limit ? record.end : record.start)) is after now, \(ISO8601.string(now)))")
        }
        if record.start < earliest { throw fail("dated before \(ISO8601.string(earliest)): the device clock was not set") }
        if record.end < record.start { throw fail("ends (\(ISO8601.string(record.end))) before it starts (\(ISO8601.string(record.start)))") }
        if record.version < 1 { throw fail("version \(record.version) is below 1") }
        switch record {
        case .workout(let w):
            if let d = w.distanceM, d < 0 || !d.isFinite { throw fail("distance \(d) m is not a distance") }
            if let e = w.energyKcal, e < 0 || !e.isFinite { throw fail("energy \(e) kcal is not an energy") }
        case .measurement(let m):
            if !m.value.isFinite { throw fail("\(m.kind.rawValue) value is not a number") }
        case .sleep, .habit:
            break
        }
    }
}

/// ISO 8601 UTC formatting shared by the store, the CLI and JSON output (`2019-05-18T19:16:02Z`,
/// fractional seconds only when present).
public enum ISO8601 {
    public static func string(_ date: Date) -> String {
        // Round to the millisecond first, so that 59.9996 s becomes the next second, not 59 s.
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let wholeSeconds = Int64((Double(totalMillis) / 1000).rounded(.down))
        let millis = Int(totalMillis - wholeSeconds * 1000)
        var text = dateTime(unixSeconds: wholeSeconds)
        if millis > 0 {
            text.append(UInt8(ascii: "."))
            appendDigits(millis, width: 3, to: &text)
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS` of a Unix time in whole seconds, as UTF-8 (written digit by digit:
    /// `String(format:)` costs more than the rest of a record's encoding).
    static func dateTime(unixSeconds: Int64) -> [UInt8] {
        var tm = tm()
        var seconds = time_t(unixSeconds)
        gmtime_r(&seconds, &tm)
        var text: [UInt8] = []
        text.reserveCapacity(40)
        appendDigits(Int(tm.tm_year) + 1900, width: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(Int(tm.tm_mon) + 1, width: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(Int(tm.tm_mday), width: 2, to: &text)
        text.append(UInt8(ascii: "T"))
        appendDigits(Int(tm.tm_hour), width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(Int(tm.tm_min), width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(Int(tm.tm_sec), width: 2, to: &text)
        return text
    }

    /// `value` in decimal, zero-padded to `width` digits (more if it needs them; `-` first if negative).
    static func appendDigits(_ value: Int, width: Int, to text: inout [UInt8]) {
        if value < 0 { text.append(UInt8(ascii: "-")) }
        var digits: [UInt8] = []
        var rest = value.magnitude
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        for _ in digits.count..<max(width, digits.count) { text.append(UInt8(ascii: "0")) }
        text.append(contentsOf: digits.reversed())
    }

    /// Like ``string(_:)``, but with every fractional digit needed to give back exactly the same
    /// `Date` through ``parse(_:)`` (`...T07:00:00.1259765625Z`); whole seconds as `...T07:00:00Z`.
    /// For data that must travel unchanged (the sync protocol).
    public static func preciseString(_ date: Date) -> String {
        // From the reference-date interval that `Date` stores, so nothing is rounded on the way.
        let r = date.timeIntervalSinceReferenceDate
        let whole = r.rounded(.down)
        let fraction = r - whole  // exact
        let base = String(decoding: dateTime(unixSeconds: Int64(whole) + Int64(Date.timeIntervalBetween1970AndReferenceDate)),
                          as: UTF8.self)
        guard fraction > 0 else { return base + "Z" }
        var digits = "\(fraction)"  // shortest form that reads back as the same Double
        if digits.contains("e") {
            // Tiny fractions print in exponent form: write 17 significant digits out instead.
            let places = 17 + Int(-log10(fraction).rounded(.down))
            digits = String(format: "%.\(places)f", fraction)
            while digits.hasSuffix("0") { digits.removeLast() }
        }
        return base + "." + digits.dropFirst(2) + "Z"
    }

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or `±HH:MM`; a date or time
    /// without an offset is read as UTC.
    public static func parse(_ text: String) -> Date? {
        let s = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= s.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard s[i] >= 48, s[i] <= 57 else { return nil }
                v = v * 10 + Int(s[i] - 48)
            }
            return v
        }
        guard let year = num(0, 4), s.count >= 10, s[4] == 45, let month = num(5, 2), s[7] == 45,
              let day = num(8, 2), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var hour = 0, minute = 0, second = 0, fraction = 0.0, offset = 0
        var i = 10
        if i < s.count {
            guard s[i] == 84 || s[i] == 32, let h = num(i + 1, 2), s.count > i + 3, s[i + 3] == 58,
                  let m = num(i + 4, 2) else { return nil }
            hour = h; minute = m; i += 6
            if i < s.count, s[i] == 58 {
                guard let sec = num(i + 1, 2) else { return nil }
                second = sec; i += 3
                if i < s.count, s[i] == 46 {
                    var j = i + 1
                    while j < s.count, s[j] >= 48, s[j] <= 57 { j += 1 }
                    guard j > i + 1 else { return nil }
                    // Correctly rounded, so that `preciseString` round-trips exactly.
                    fraction = Double("0." + String(decoding: s[(i + 1)..<j], as: UTF8.self)) ?? 0
                    i = j
                }
            }
            if i < s.count {
                if s[i] == 90 { i += 1 } else if s[i] == 43 || s[i] == 45 {
                    let sign = s[i] == 45 ? -1 : 1
                    guard let oh = num(i + 1, 2) else { return nil }
                    var om = 0
                    if i + 3 < s.count, s[i + 3] == 58 {
                        guard let m = num(i + 4, 2) else { return nil }
                        om = m; i += 6
                    } else if let m = num(i + 3, 2) { om = m; i += 5 } else { i += 3 }
                    offset = sign * (oh * 3600 + om * 60)
                } else { return nil }
            }
            guard i == s.count, hour < 24, minute < 60, second < 61 else { return nil }
        }
        // Days from the civil date (proleptic Gregorian), valid for all years here.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        // Whole seconds and the fraction are added once, so an exact fraction gives an exact time.
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSinceReferenceDate: Double(seconds - Int(Date.timeIntervalBetween1970AndReferenceDate)) + fraction)
    }
}
