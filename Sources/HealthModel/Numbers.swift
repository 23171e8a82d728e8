import Foundation
// The one Duration <-> seconds conversion (`inSeconds`, `clamped(seconds:maximum:)`, ...) is
// Timing's; every module that uses the model has it.
@_exported import Timing

/// Conversions of numbers that come from outside (files, devices, servers, configuration) into
/// integers. Swift's `Int(_: Double)` stops the process on NaN, infinity or a value out of
/// range; this never does.

extension FixedWidthInteger {
    /// `value` rounded toward zero and clamped to this type's range; NaN gives 0.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value <= Double(Self.min) {
            self = Self.min
        } else if value >= Double(Self.max) {
            // Double(Self.max) rounds up to 2^bits for 64-bit types: compare with >=, never convert it.
            self = Self.max
        } else {
            self = Self(value.rounded(.towardZero))
        }
    }
}

/// Durations as people type them: `90` (seconds), `1.5`, `10s`, `250ms`, `5m`, `1h30m`, `2d`.
public enum Durations {
    /// A duration as people read it at a glance: `12m`, `3h 05m`, `4d 20h` (whole minutes).
    public static func short(_ seconds: Double) -> String {
        let minutes = Int(max(0, seconds) / 60)
        if minutes >= 24 * 60 { return "\(minutes / 1440)d \(minutes % 1440 / 60)h" }
        return minutes >= 60 ? String(format: "%dh %02dm", minutes / 60, minutes % 60) : "\(minutes)m"
    }

    /// The duration in seconds, or nil when `text` is not one (negative, not finite, unknown unit).
    public static func seconds(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let plain = Double(text) { return plain.isFinite && plain >= 0 ? plain : nil }
        var total = 0.0
        var rest = Substring(text)
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            guard let value = Double(number), value.isFinite else { return nil }
            let scale: Double
            switch unit {
            case "ms": scale = 0.001
            case "s": scale = 1
            case "m": scale = 60
            case "h": scale = 3600
            case "d": scale = 86_400
            default: return nil
            }
            total += value * scale
        }
        return total.isFinite ? total : nil
    }
}

/// Numbers as messages, tables and settings show them: whole numbers without a fraction (`2000`,
/// not `2000.0`), others to at most six decimals (`0.3`, not `0.30000000000000004`), what is not
/// finite as Swift prints it.
public enum NumberText {
    public static func plain(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        let rounded = abs(value) < 1e9 ? (value * 1e6).rounded() / 1e6 : value
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : "\(rounded)"
    }
}

/// Quantities as people type them, in the model's units: a volume in ml (`330ml`, `0.5l`,
/// `33cl`, `12oz`, `12 fl oz`: US fluid ounces), a mass in kg (`71.5kg`, `160lb`), a distance in
/// metres (`5km`, `800m`, `3.1mi`). A bare number is in the unit given. Throws
/// ``QuantityError`` saying which forms are accepted.
public enum Quantities {
    public static func millilitres(_ text: String, bare: Preferences.VolumeUnit = .ml) throws(QuantityError) -> Double {
        let (number, unit) = try split(text, what: "volume", forms: "250ml, 0.5l, 12oz")
        switch unit {
        case "": return bare == .ml ? number : number * Units.millilitresPerFluidOunce
        case "ml": return number
        case "cl": return number * 10
        case "l": return number * 1000
        case "oz", "floz", "fl.oz", "fl_oz": return number * Units.millilitresPerFluidOunce
        default: throw QuantityError("'\(text)': unknown volume unit '\(unit)' (ml, l, oz)")
        }
    }

    public static func kilograms(_ text: String, bare: Preferences.MassUnit = .kg) throws(QuantityError) -> Double {
        let (number, unit) = try split(text, what: "weight", forms: "71.5kg, 160lb")
        switch unit {
        case "": return bare == .kg ? number : number * Units.kilogramsPerPound
        case "kg": return number
        case "lb", "lbs": return number * Units.kilogramsPerPound
        default: throw QuantityError("'\(text)': unknown weight unit '\(unit)' (kg, lb)")
        }
    }

    /// A bare number is in kilometres.
    public static func metres(_ text: String) throws(QuantityError) -> Double {
        let (number, unit) = try split(text, what: "distance", forms: "5km, 3mi, 800m")
        switch unit {
        case "", "km": return number * 1000
        case "m": return number
        case "mi": return number * Units.metresPerMile
        default: throw QuantityError("'\(text)': unknown distance unit '\(unit)' (km, m, mi)")
        }
    }

    /// A volume stored in ml, in `unit` (the number only).
    public static func volume(_ ml: Double, in unit: Preferences.VolumeUnit) -> Double {
        unit == .ml ? ml : ml / Units.millilitresPerFluidOunce
    }

    /// A mass stored in kg, in `unit` (the number only).
    public static func mass(_ kg: Double, in unit: Preferences.MassUnit) -> Double {
        unit == .kg ? kg : kg / Units.kilogramsPerPound
    }

    /// A volume stored in ml as people read it in `unit`: `236.6 ml`, `8 fl oz` (to 0.1).
    public static func text(millilitres ml: Double, in unit: Preferences.VolumeUnit) -> String {
        NumberText.plain((volume(ml, in: unit) * 10).rounded() / 10) + " " + unit.symbol
    }

    /// A mass stored in kg as people read it in `unit`: `71.25 kg` (to 0.01), `157.6 lb` (to 0.1).
    public static func text(kilograms kg: Double, in unit: Preferences.MassUnit) -> String {
        let scale = unit == .kg ? 100.0 : 10.0
        return NumberText.plain((mass(kg, in: unit) * scale).rounded() / scale) + " " + unit.symbol
    }

    /// A stored value with its stored unit as people read it: a volume (`ml`) or a mass (`kg`)
    /// in the preferred unit, anything else as stored (`25 pages`, `430 kcal`, `7`).
    public static func text(_ value: Double, unit: String?, preferences: Preferences) -> String {
        switch unit {
        case "ml": text(millilitres: value, in: preferences.volume)
        case "kg": text(kilograms: value, in: preferences.mass)
        case let unit?: NumberText.plain(value) + " " + unit
        case nil: NumberText.plain(value)
        }
    }

    /// A number and its unit (lower-cased, spaces removed): `12 fl oz` is (12, `floz`). The
    /// number must be more than zero.
    static func split(_ text: String, what: String, forms: String) throws(QuantityError) -> (Double, String) {
        let compact = text.lowercased().filter { !$0.isWhitespace }
        let digits = compact.prefix { $0.isNumber || $0 == "." || $0 == "-" || $0 == "+" }
        guard let number = Double(digits), number.isFinite else { throw QuantityError("'\(text)' is not a \(what) (\(forms))") }
        guard number > 0 else { throw QuantityError("'\(text)': a \(what) must be more than zero") }
        return (number, String(compact.dropFirst(digits.count)))
    }
}

/// A quantity that could not be read, and the forms that can.
public struct QuantityError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
