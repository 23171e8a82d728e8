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

/// Whose memory a driver checkpoint is: one driver (its id, `ble`, `ant`) and one device (its
/// address or serial, as in `source_device`). A driver keeps one checkpoint per device: what it
/// must remember across runs about that device (a glucose meter's last record, the files already
/// fetched from a watch). The value is the driver's own (DriverKit's `DriverCheckpoint`), stored
/// as JSON text in the transaction that stores the records it covers (table `driver_checkpoints`).
public struct CheckpointKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var driver: String
    public var device: String

    public init(driver: String, device: String) {
        self.driver = driver
        self.device = device
    }

    public static func < (a: CheckpointKey, b: CheckpointKey) -> Bool { (a.driver, a.device) < (b.driver, b.device) }

    public var description: String { "\(driver) \(device)" }
}

/// What a live driver hands to its sink in one go: finished records (measurements, events) and
/// pieces of workouts in progress.
public struct LiveBatch: Hashable, Sendable {
    public var records: [HealthRecord]
    public var workouts: [WorkoutProgress]
    /// Driver checkpoints (JSON text) that hold once this batch is stored: stored with the
    /// records, in the same transaction (table `driver_checkpoints`), so that what a driver
    /// remembers about a device never runs ahead of, or behind, the records it covers.
    public var checkpoints: [CheckpointKey: String]

    public init(records: [HealthRecord] = [], workouts: [WorkoutProgress] = [], checkpoints: [CheckpointKey: String] = [:]) {
        self.records = records
        self.workouts = workouts
        self.checkpoints = checkpoints
    }

    public var isEmpty: Bool { records.isEmpty && workouts.isEmpty && checkpoints.isEmpty }

    /// `b` after `a`: a device's checkpoint in `b` replaces the one in `a`.
    public static func + (a: LiveBatch, b: LiveBatch) -> LiveBatch {
        LiveBatch(records: a.records + b.records, workouts: a.workouts + b.workouts,
                  checkpoints: a.checkpoints.merging(b.checkpoints) { _, later in later })
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
