import FuzzSupport
import GadgetbridgeDriver

/// Gadgetbridge's sleep rules on hostile values: the bytes are rows of a Colmi stage table
/// (time, duration, stage) or a Xiaomi night (start, wake-up, stages), and minute samples of the
/// Mi Band and Zepp OS tables (raw kind, deep and REM columns), each row's numbers taken from the
/// input whatever their size. Every minute list must stay within its row's bounds and time order;
/// every session the sessionizer closes must be covered end to end by its stages, in order, with
/// at least five minutes of sleep.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    var sessions = SleepSessionizer()
    var kinds = RawKindDecoder(family: input.byte() & 1 == 0 ? .miBand1 : .huami)
    var clock: Int64 = 0
    func check(_ night: DerivedSleep?) {
        guard let night else { return }
        var at = night.start
        for stage in night.stages {
            guard stage.start == at, stage.end > stage.start else { fatalError("stages leave a gap or go back: \(night)") }
            at = stage.end
        }
        guard at == night.end, night.asleepS >= SleepSessionizer.minimumSleepS else { fatalError("session not covered or too short: \(night)") }
    }
    while !input.bytes.isEmpty {
        let choice = input.byte() % 4
        let a = Int64(Int32(truncatingIfNeeded: UInt32(input.uint16()) << 16 | UInt32(input.uint16())))
        let b = Int(Int32(truncatingIfNeeded: UInt32(input.uint16()) << 16 | UInt32(input.uint16())))
        let c = Int(Int8(truncatingIfNeeded: input.byte()))
        var minutes: [StageMinutes.Minute] = []
        switch choice {
        case 0:
            let start = clock + a * 1000
            if let got = StageMinutes.colmi(timestampMs: start, durationMinutes: b, stage: c) {
                guard got.count == b, got.count <= StageMinutes.maxMinutes else { fatalError("colmi minutes: \(b) asked, \(got.count) made") }
                minutes = got
            }
        case 1:
            let start = clock * 1000 + a
            let stages = (0..<Int(input.byte() % 8)).map { i in (timeMs: start + Int64(i) * Int64(abs(b % 3_600_000)), stage: c + i) }
            if let got = StageMinutes.xiaomi(startMs: start, wakeupMs: start + Int64(b), stages: stages) {
                guard !got.isEmpty, got.count <= StageMinutes.maxMinutes + 1 else { fatalError("xiaomi minutes: \(got.count)") }
                minutes = got
            }
        case 2:
            minutes = [(clock + abs(a % 7200), kinds.decode(b))]
        default:
            minutes = [(clock + abs(a % 7200), FamilySleepCodes.huamiExtended(rawKind: b & 0xFF, deepSleep: c, remSleep: Int(a & 0xFF)))]
        }
        var last = Int64.min
        for minute in minutes {
            guard minute.time > last, minute.time % 60 == 0 || choice >= 2 else { fatalError("minutes out of order: \(minutes.prefix(4))") }
            last = minute.time
            check(sessions.add(time: max(clock, minute.time), kind: minute.kind))
            clock = max(clock, minute.time)
        }
    }
    check(sessions.finish())
    return 0
}
