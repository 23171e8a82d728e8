public import HealthModel

/// One run of a derived sleep session: `start` and `end` in Unix seconds.
public struct StageRun: Sendable, Equatable {
    public var start: Int64
    public var end: Int64
    public var stage: SleepStage

    public init(start: Int64, end: Int64, stage: SleepStage) {
        self.start = start
        self.end = end
        self.stage = stage
    }
}

/// A sleep session derived from minute samples: Unix seconds, stages covering it end to end.
public struct DerivedSleep: Sendable, Equatable {
    public var start: Int64
    public var end: Int64
    public var stages: [StageRun]

    public init(start: Int64, end: Int64, stages: [StageRun]) {
        self.start = start
        self.end = end
        self.stages = stages
    }

    /// Seconds of light and deep sleep.
    public var asleepS: Int64 { stages.filter { $0.stage != .awake }.reduce(0) { $0 + $1.end - $1.start } }
}

/// Derives sleep sessions from one device's minute samples, in time order. Pure.
///
/// The rule (Drivers/Gadgetbridge/README.md, "Records"): a sleep minute (light or deep) covers
/// the 60 seconds from its timestamp; sleep minutes belong to one session while the time from the
/// end of one to the start of the next is at most ``maxAwakeGapS`` (2 hours); that time, awake
/// samples or no samples at all, is an `awake` stage inside the session; a session runs from its
/// first sleep minute to the end of its last; adjacent minutes of one stage are one stage; a
/// session with less than ``minimumSleepS`` (5 minutes) of sleep is dropped.
public struct SleepSessionizer: Sendable {
    /// A longer time awake between two sleep minutes ends the session.
    public static let maxAwakeGapS: Int64 = 2 * 3600
    /// Sessions with less sleep than this are dropped.
    public static let minimumSleepS: Int64 = 5 * 60
    /// What one sample covers.
    public static let minuteS: Int64 = 60

    private var current: DerivedSleep?

    public init() {}

    /// Adds the next sample (`time` not before the previous one's); returns the session it
    /// closes, if any (one that lasted long enough).
    public mutating func add(time: Int64, kind: MinuteKind) -> DerivedSleep? {
        var closed: DerivedSleep?
        if let session = current, time - session.end > Self.maxAwakeGapS {
            closed = Self.kept(session)
            current = nil
        }
        guard kind.isSleep else { return closed }
        let end = time + Self.minuteS
        guard var session = current else {
            current = DerivedSleep(start: time, end: end, stages: [StageRun(start: time, end: end, stage: kind.stage)])
            return closed
        }
        let start = max(time, session.end)
        guard end > start else { return closed }
        if start > session.end { session.stages.append(StageRun(start: session.end, end: start, stage: .awake)) }
        if let last = session.stages.last, last.stage == kind.stage, last.end == start {
            session.stages[session.stages.count - 1].end = end
        } else {
            session.stages.append(StageRun(start: start, end: end, stage: kind.stage))
        }
        session.end = end
        current = session
        return closed
    }

    /// The session still open at the end of the samples, if it lasted long enough.
    public mutating func finish() -> DerivedSleep? {
        defer { current = nil }
        return current.flatMap(Self.kept)
    }

    private static func kept(_ session: DerivedSleep) -> DerivedSleep? {
        session.asleepS >= minimumSleepS ? session : nil
    }

    /// Every session of `minutes` (time order). Pure.
    public static func sessions(_ minutes: [(time: Int64, kind: MinuteKind)]) -> [DerivedSleep] {
        var sessionizer = SleepSessionizer()
        var out = minutes.compactMap { sessionizer.add(time: $0.time, kind: $0.kind) }
        if let last = sessionizer.finish() { out.append(last) }
        return out
    }
}
