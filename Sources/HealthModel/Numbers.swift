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
