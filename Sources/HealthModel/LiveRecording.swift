import Foundation

/// A piece of a workout that a live driver is still recording: the workout's summary as it
/// stands now, and the samples and RR intervals that arrived since the previous piece.
///
/// Live workouts reach the store piece by piece, so a reading is on disk a fraction of a second
/// after it arrived, without rewriting the whole workout each time. The last piece
/// (`isFinal`) completes the workout; only then is it queued for forwarding.
public struct WorkoutProgress: Hashable, Sendable {
    /// The summary so far (end, durations, distance, energy, heart rate); its `samples` and
    /// `rrIntervals` hold only what is new in this piece.
    public var workout: Workout
    /// Position (`seq`) in the whole workout of this piece's first sample.
    public var sampleOffset: Int
    /// Position in the whole workout of this piece's first RR interval.
    public var rrOffset: Int
    /// True for the piece that completes the workout.
    public var isFinal: Bool

    public init(workout: Workout, sampleOffset: Int, rrOffset: Int, isFinal: Bool) {
        self.workout = workout
        self.sampleOffset = sampleOffset
        self.rrOffset = rrOffset
        self.isFinal = isFinal
    }
}

/// Where the stored records of a glucose meter end: the last sequence number stored, and that
/// record as the meter sent it (its Glucose Measurement value). The meter sends the same bytes
/// for the same record every time; a meter reset since has another record under that number
/// (another time or value), which is how a reset meter that has since stored more records than
/// the last number is told from the same meter.
public struct GlucoseCursor: Hashable, Sendable {
    public let sequence: UInt16
    /// nil: not known (a cursor stored before HealthGate kept the record, or a value longer
    /// than a GATT attribute's 512 bytes, which no meter sends).
    public let record: [UInt8]?

    public init(sequence: UInt16, record: [UInt8]?) {
        self.sequence = sequence
        self.record = record.flatMap { (1...512).contains($0.count) ? $0 : nil }
    }

    /// Whether `value`, received as record `sequence`, is the stored record (true) or another
    /// one under its number (false: the meter was reset); nil when it is not the stored record's
    /// number, or the stored record is not known.
    public func isStoredRecord(sequence: UInt16, value: [UInt8]) -> Bool? {
        guard sequence == self.sequence, let record else { return nil }
        return record == value
    }
}

/// What a live driver hands to its sink in one go: finished records (measurements, events) and
/// pieces of workouts in progress.
public struct LiveBatch: Hashable, Sendable {
    public var records: [HealthRecord]
    public var workouts: [WorkoutProgress]
    /// Per glucose meter (its address), where its stored records end once this batch is
    /// stored: stored with the records, in the same transaction (table `glucose_sync`), so the
    /// next download asks the meter for the records from it on.
    public var glucoseCursors: [String: GlucoseCursor]

    public init(records: [HealthRecord] = [], workouts: [WorkoutProgress] = [], glucoseCursors: [String: GlucoseCursor] = [:]) {
        self.records = records
        self.workouts = workouts
        self.glucoseCursors = glucoseCursors
    }

    public var isEmpty: Bool { records.isEmpty && workouts.isEmpty && glucoseCursors.isEmpty }

    /// `b` after `a`: a meter's cursor in `b` replaces the one in `a`.
    public static func + (a: LiveBatch, b: LiveBatch) -> LiveBatch {
        LiveBatch(records: a.records + b.records, workouts: a.workouts + b.workouts,
                  glucoseCursors: a.glucoseCursors.merging(b.glucoseCursors) { _, later in later })
    }

    public static func += (a: inout LiveBatch, b: LiveBatch) { a = a + b }
}

/// Puts workout pieces back together into whole workouts (for sinks that keep records in memory,
/// and for tests). Pieces of one workout must arrive in order.
public struct WorkoutAssembler: Sendable {
    private var open: [RecordID: Workout] = [:]

    public init() {}

    /// Workouts with pieces received but no final piece yet.
    public var inProgress: [Workout] { open.values.sorted { $0.start < $1.start } }

    /// Adds a piece; returns the whole workout when the piece is the final one.
    public mutating func add(_ piece: WorkoutProgress) -> Workout? {
        var whole = piece.workout
        if let previous = open[piece.workout.id] {
            whole.samples = previous.samples + piece.workout.samples
            whole.rrIntervals = previous.rrIntervals + piece.workout.rrIntervals
        }
        guard piece.isFinal else {
            open[piece.workout.id] = whole
            return nil
        }
        open[piece.workout.id] = nil
        return whole
    }

    /// Adds every piece of a batch; returns the batch's records followed by the workouts it
    /// completed.
    public mutating func add(_ batch: LiveBatch) -> [HealthRecord] {
        batch.records + batch.workouts.compactMap { add($0) }.map { .workout($0) }
    }
}
