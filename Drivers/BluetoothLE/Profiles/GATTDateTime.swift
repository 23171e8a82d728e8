/// The Date Time characteristic format (0x2A08), as sent: year 1582...9999 (0 = unknown),
/// month 1...12 (0 = unknown), day 1...31 (0 = unknown), hours 0...23, minutes and seconds 0...59.
///
/// Kept as plain fields with no time zone: the devices send local wall-clock time and the driver,
/// which knows the time zone and the receive time, decides what the instant is.
public struct GATTDateTime: Hashable, Sendable, CustomStringConvertible {
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hours: UInt8
    public var minutes: UInt8
    public var seconds: UInt8

    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// True when every field is known and within its range (the day is checked against the month,
    /// leap years included). Devices without a set clock send zeros; treat those as "no timestamp".
    public var isValid: Bool {
        guard (1582...9999).contains(year), (1...12).contains(month), day >= 1,
              hours <= 23, minutes <= 59, seconds <= 59 else { return false }
        return day <= GATTDateTime.daysInMonth(Int(month), year: Int(year))
    }

    static func daysInMonth(_ month: Int, year: Int) -> UInt8 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    public var description: String {
        func two(_ v: UInt8) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(hours)):\(two(minutes)):\(two(seconds))"
    }
}
