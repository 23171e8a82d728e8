/// An IEEE 11073-20601 SFLOAT (16-bit: 4-bit exponent, 12-bit mantissa) or FLOAT (32-bit: 8-bit
/// exponent, 24-bit mantissa), both two's complement, value = mantissa x 10^exponent.
///
/// The special values stay distinct from numbers: a NaN or NRes reading has no `doubleValue`.
/// The standard defines the special values with exponent 0 (SFLOAT 0x07FF NaN, 0x0800 NRes,
/// 0x07FE +INF, 0x0802 -INF, 0x0801 reserved; FLOAT 0x007FFFFF, 0x00800000, 0x007FFFFE,
/// 0x00800002, 0x00800001). Their mantissas are reserved for those meanings, so a value that
/// carries one of them with another exponent is classified by the mantissa alone: it is never
/// turned into a number.
public enum MedicalFloat: Hashable, Sendable, CustomStringConvertible {
    case value(mantissa: Int32, exponent: Int8)
    /// Not a Number.
    case nan
    /// Not at this Resolution: the value cannot be represented with the available digits.
    case nres
    case positiveInfinity
    case negativeInfinity
    /// Reserved for future use (mantissa -2047 / -(2^23 - 1)).
    case reserved

    public init(sfloat raw: UInt16) {
        let mantissaBits = Int32(raw & 0x0FFF)
        let exponentBits = Int8(truncatingIfNeeded: raw >> 12)
        switch mantissaBits {
        case 0x07FF: self = .nan
        case 0x0800: self = .nres
        case 0x07FE: self = .positiveInfinity
        case 0x0802: self = .negativeInfinity
        case 0x0801: self = .reserved
        default:
            let mantissa = mantissaBits >= 0x0800 ? mantissaBits - 0x1000 : mantissaBits
            let exponent = exponentBits >= 8 ? exponentBits - 16 : exponentBits
            self = .value(mantissa: mantissa, exponent: exponent)
        }
    }

    public init(float raw: UInt32) {
        let mantissaBits = Int32(raw & 0x00FF_FFFF)
        let exponent = Int8(bitPattern: UInt8(raw >> 24))
        switch mantissaBits {
        case 0x007F_FFFF: self = .nan
        case 0x0080_0000: self = .nres
        case 0x007F_FFFE: self = .positiveInfinity
        case 0x0080_0002: self = .negativeInfinity
        case 0x0080_0001: self = .reserved
        default:
            let mantissa = mantissaBits >= 0x0080_0000 ? mantissaBits - 0x0100_0000 : mantissaBits
            self = .value(mantissa: mantissa, exponent: exponent)
        }
    }

    /// The number, or nil for NaN, NRes, the infinities and the reserved value.
    public var doubleValue: Double? {
        guard case .value(let mantissa, let exponent) = self else { return nil }
        var scale = 1.0
        for _ in 0..<Int(exponent.magnitude) { scale *= 10 }
        return exponent >= 0 ? Double(mantissa) * scale : Double(mantissa) / scale
    }

    public var isNumber: Bool { doubleValue != nil }

    public var description: String {
        switch self {
        case .value(let m, let e): return e == 0 ? "\(m)" : "\(m)e\(e)"
        case .nan: return "NaN"
        case .nres: return "NRes"
        case .positiveInfinity: return "+INF"
        case .negativeInfinity: return "-INF"
        case .reserved: return "reserved"
        }
    }
}
