public import HealthModel

/// How a device family encodes `RAW_KIND` in `MI_BAND_ACTIVITY_SAMPLE`: Gadgetbridge keeps the
/// device's own code, so the same number means different things on different bands.
public enum GadgetbridgeFamily: String, Sendable, Equatable {
    /// The original Mi Band (`TYPE_NAME` `MIBAND`): 4 deep sleep, 5 light sleep, 3 not worn,
    /// 6 charging; anything else is activity.
    case miBand1
    /// Mi Band 2 and later, Amazfit and the other Huami bands: the low four bits are the kind
    /// (higher bits appear on some firmware), 0 "no change" and 10 "ignore" repeat the previous
    /// kind, 9 light sleep, 11 deep sleep; everything else (activity, running, not worn, bike,
    /// charging, wake-up) is awake.
    case huami

    /// The family of a `DEVICE.TYPE_NAME`: `MIBAND` is the Mi Band 1; every other device that
    /// writes `MI_BAND_ACTIVITY_SAMPLE` is a Huami band (only Gadgetbridge's Mi Band and Huami
    /// code writes that table).
    public static func of(typeName: String) -> GadgetbridgeFamily {
        typeName == "MIBAND" ? .miBand1 : .huami
    }
}

/// What one minute sample says about sleep.
public enum MinuteKind: Sendable, Equatable {
    case light, deep
    /// Anything that is not sleep: activity, not worn, charging, unknown.
    case awake

    public var isSleep: Bool { self != .awake }

    /// The stage a sleep session records for this minute.
    public var stage: SleepStage {
        switch self {
        case .light: .light
        case .deep: .deep
        case .awake: .awake
        }
    }
}

/// Turns one device's raw kinds, in time order, into ``MinuteKind``s. Pure; a Huami band's
/// "no change" and "ignore" codes need the previous kind, so one decoder reads one device's
/// samples in order.
public struct RawKindDecoder: Sendable {
    public let family: GadgetbridgeFamily
    /// The last Huami kind that was not "no change" (0) or "ignore" (10), already masked.
    private var previous: Int?

    public init(family: GadgetbridgeFamily) { self.family = family }

    /// The kind of the next sample of this device.
    public mutating func decode(_ raw: Int) -> MinuteKind {
        switch family {
        case .miBand1:
            return Self.miBand1(raw)
        case .huami:
            var kind = raw & 0xF
            if kind == 0 || kind == 10 {
                guard let previous else { return .awake }
                kind = previous
            } else {
                previous = kind
            }
            return Self.huami(kind)
        }
    }

    /// Mi Band 1 codes (MiBandSampleProvider): 4 deep, 5 light; 3 not worn, 6 charging and
    /// -1 activity are awake.
    static func miBand1(_ raw: Int) -> MinuteKind {
        switch raw {
        case 4: .deep
        case 5: .light
        default: .awake
        }
    }

    /// Huami codes after masking (HuamiConst): 9 light, 11 deep; 1 activity, 2 running, 3 not
    /// worn, 4 bike, 6 charging, 12 wake-up and the rest are awake.
    static func huami(_ kind: Int) -> MinuteKind {
        switch kind {
        case 9: .light
        case 11: .deep
        default: .awake
        }
    }
}

/// Gadgetbridge's `ActivityKind` codes of `BASE_ACTIVITY_SUMMARY.ACTIVITY_KIND` as HealthGate
/// sports.
public enum GadgetbridgeActivityKind {
    /// The sport (``Sport/normalize(_:)`` of Gadgetbridge's name) and the finer name when it says
    /// more; unknown codes are `other` with the code kept as `gadgetbridge_<code>`.
    public static func sport(_ code: Int) -> (sport: String, subSport: String?) {
        let name: String? = switch code {
        case 0x10: "running"
        case 0x20: "walking"
        case 0x40: "swimming"
        case 0x80: "cycling"
        case 0x100: "treadmill"
        case 0x200: "exercise"
        case 0x400: "open_water_swimming"
        case 0x800: "indoor_cycling"
        case 0x1000: "elliptical"
        case 0x2000: "jump_roping"
        case 0x4000: "yoga"
        default: nil
        }
        guard let name else { return (Sport.other.rawValue, "gadgetbridge_\(code)") }
        let sport = Sport.normalize(name)
        return (sport.rawValue, sport.rawValue == name ? nil : name)
    }
}
