/// Turns the sleep tables of the families that keep sleep apart from their activity samples
/// (Colmi rings, Xiaomi bands) into minutes of one kind each, the form ``SleepSessionizer``
/// reads, so that every family's nights follow the same session rule. Pure.
///
/// Gadgetbridge itself lays these tables over the activity minutes when it draws sleep
/// (ColmiActivitySampleProvider, XiaomiSampleProvider); here the minutes are made from the
/// sleep tables alone, so a night shows even where the activity table has no minutes.
public enum StageMinutes {
    /// The longest stretch one row may describe (a Colmi stage's `DURATION`, a Xiaomi night from
    /// `TIMESTAMP` to `WAKEUP_TIME`): 24 hours. A longer one is not a night; it is skipped and
    /// counted, so that a hostile value cannot make billions of minutes.
    public static let maxMinutes = 24 * 60

    /// One minute: its start (Unix seconds, a whole minute) and kind.
    public typealias Minute = (time: Int64, kind: MinuteKind)

    /// The minutes of one `COLMI_SLEEP_STAGE_SAMPLE` row: `DURATION` minutes of the stage's kind
    /// (``FamilySleepCodes/colmi(_:)``) from the minute holding `TIMESTAMP` (ms). Nil when the
    /// duration is not within 1...``maxMinutes`` or the time is negative.
    public static func colmi(timestampMs: Int64, durationMinutes: Int, stage: Int) -> [Minute]? {
        guard timestampMs >= 0, (1...maxMinutes).contains(durationMinutes) else { return nil }
        let first = timestampMs / 60_000 * 60
        let kind = FamilySleepCodes.colmi(stage)
        return (0..<Int64(durationMinutes)).map { (first + 60 * $0, kind) }
    }

    /// The minutes of one `XIAOMI_SLEEP_TIME_SAMPLE` night, from the minute holding `TIMESTAMP`
    /// (ms) to the last minute that starts before `WAKEUP_TIME`; each minute takes the kind
    /// (``FamilySleepCodes/xiaomi(_:)``) of the last `XIAOMI_SLEEP_STAGE_SAMPLE` at or before
    /// its start, and light sleep before the first (as Gadgetbridge marks a night without
    /// stages). `stages` in time order. Nil when the wake-up is not after the start, the night is
    /// longer than ``maxMinutes``, or the start is negative.
    public static func xiaomi(startMs: Int64, wakeupMs: Int64, stages: [(timeMs: Int64, stage: Int)]) -> [Minute]? {
        guard startMs >= 0, wakeupMs > startMs, wakeupMs - startMs <= Int64(maxMinutes) * 60_000 else { return nil }
        var out: [Minute] = []
        var next = stages.startIndex
        var kind = MinuteKind.light
        var minute = startMs / 60_000 * 60
        while minute * 1000 < wakeupMs {
            while next < stages.endIndex, stages[next].timeMs <= minute * 1000 {
                kind = FamilySleepCodes.xiaomi(stages[next].stage)
                next += 1
            }
            out.append((minute, kind))
            minute += 60
        }
        return out
    }
}
