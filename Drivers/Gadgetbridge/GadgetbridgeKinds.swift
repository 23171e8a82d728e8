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
    case light, deep, rem
    /// Anything that is not sleep: activity, not worn, charging, unknown.
    case awake

    public var isSleep: Bool { self != .awake }

    /// The stage a sleep session records for this minute.
    public var stage: SleepStage {
        switch self {
        case .light: .light
        case .deep: .deep
        case .rem: .rem
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

/// The sleep codes of the device families whose samples carry their own sleep columns or whose
/// sleep lives in tables of its own (Gadgetbridge's sample providers of each family). Pure.
public enum FamilySleepCodes {
    /// `HUAMI_EXTENDED_ACTIVITY_SAMPLE` (Zepp OS bands, HuamiExtendedSampleProvider): `RAW_KIND`
    /// 120 is sleep of any depth; the minute is REM when `REM_SLEEP & 127` is above 55, else deep
    /// when `DEEP_SLEEP & 127` is above 42, else light. Every other kind (64 running, 115 not
    /// worn, 118 charging, ...) is awake.
    public static func huamiExtended(rawKind: Int, deepSleep: Int?, remSleep: Int?) -> MinuteKind {
        guard rawKind == 120 else { return .awake }
        if (remSleep ?? 0) & 127 > 55 { return .rem }
        if (deepSleep ?? 0) & 127 > 42 { return .deep }
        return .light
    }

    /// `COLMI_SLEEP_STAGE_SAMPLE.STAGE` (ColmiR0xConstants): 2 light, 3 deep, 4 REM, 5 awake;
    /// any other code awake.
    public static func colmi(_ stage: Int) -> MinuteKind {
        switch stage {
        case 2: .light
        case 3: .deep
        case 4: .rem
        default: .awake
        }
    }

    /// `XIAOMI_SLEEP_STAGE_SAMPLE.STAGE` (XiaomiSampleProvider, after the band's sleep details):
    /// 2 deep, 3 light, 4 REM; any other code (awake, unknown) awake.
    public static func xiaomi(_ stage: Int) -> MinuteKind {
        switch stage {
        case 2: .deep
        case 3: .light
        case 4: .rem
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
