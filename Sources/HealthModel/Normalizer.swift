public import Foundation

/// The pure step between drivers and the store: validation, date-range filtering and energy
/// estimation. No I/O.
public struct Normalizer: Sendable {
    public var validator: RecordValidator
    public var energy: EnergyEstimator
    /// Keep only records that start at or after this date.
    public var since: Date?
    /// Keep only records that start before this date.
    public var until: Date?

    public init(validator: RecordValidator = RecordValidator(), energy: EnergyEstimator = EnergyEstimator(),
                since: Date? = nil, until: Date? = nil) {
        self.validator = validator
        self.energy = energy
        self.since = since
        self.until = until
    }

    /// What became of a batch: the records to store, those outside the date range, and those
    /// refused with the reason.
    public struct Outcome: Sendable {
        public var accepted: [HealthRecord] = []
        public var outOfRange: Int = 0
        public var rejected: [ValidationError] = []
        /// Sample channels and RR intervals dropped as impossible (see ``Normalizer/cleaned(_:)``).
        public var droppedValues: Int = 0
    }

    public func normalize(_ records: [HealthRecord], now: Date = Date()) -> Outcome {
        var outcome = Outcome()
        for record in records {
            if let since, record.start < since { outcome.outOfRange += 1; continue }
            if let until, record.start >= until { outcome.outOfRange += 1; continue }
            var record = record
            if case .workout(let w) = record {
                let (clean, dropped) = Self.cleaned(w)
                record = .workout(clean)
                outcome.droppedValues += dropped
            } else if case .sleep(var s) = record, s.start <= s.end {
                // Stages dated outside their night are dropped the same way.
                let within = s.start.addingTimeInterval(-PhysicalLimits.childToleranceS)...s.end.addingTimeInterval(PhysicalLimits.childToleranceS)
                let before = s.stages.count
                s.stages.removeAll { !within.contains($0.start) || !within.contains($0.end) || $0.end < $0.start }
                outcome.droppedValues += before - s.stages.count
                record = .sleep(s)
            }
            do {
                try validator.validate(record, now: now)
            } catch let error as ValidationError {
                outcome.rejected.append(error)
                continue
            } catch {
                outcome.rejected.append(ValidationError(recordID: record.id, reason: "\(error)"))
                continue
            }
            if case .workout(let w) = record {
                outcome.accepted.append(.workout(energy.fillEnergy(Self.dropPlaceholders(w))))
            } else {
                outcome.accepted.append(record)
            }
        }
        return outcome
    }

    /// Normalizes what a live driver emitted: finished records as in ``normalize(_:now:)``;
    /// workout pieces are validated on their summary, lose placeholder zeros, and the final
    /// piece gets an energy estimate when the device gave none.
    public func normalize(_ batch: LiveBatch, now: Date = Date()) -> (batch: LiveBatch, rejected: [ValidationError]) {
        let records = normalize(batch.records, now: now)
        var out = LiveBatch(records: records.accepted, checkpoints: batch.checkpoints)
        var rejected = records.rejected
        for var piece in batch.workouts {
            piece.workout = Self.cleaned(piece.workout).workout
            do {
                try validator.validate(.workout(piece.workout), now: now)
            } catch let error as ValidationError {
                rejected.append(error)
                continue
            } catch {
                rejected.append(ValidationError(recordID: piece.workout.id, reason: "\(error)"))
                continue
            }
            piece.workout = Self.dropPlaceholders(piece.workout)
            if piece.isFinal { piece.workout = energy.fillEnergy(piece.workout) }
            out.workouts.append(piece)
        }
        return (out, rejected)
    }

    /// A sensor's glitch should not cost the whole workout: sample channels outside
    /// ``PhysicalLimits`` (a heart rate of 100,000, a latitude of 1000), samples, laps and pool
    /// lengths dated outside the workout and RR intervals no heart beats at are dropped, and
    /// counted. What remains is validated as any record is.
    public static func cleaned(_ workout: Workout) -> (workout: Workout, dropped: Int) {
        var w = workout
        var dropped = 0
        guard w.start <= w.end else { return (w, 0) }  // the validator says what is wrong
        let within = w.start.addingTimeInterval(-PhysicalLimits.childToleranceS)...w.end.addingTimeInterval(PhysicalLimits.childToleranceS)
        let laps = w.laps.count
        w.laps.removeAll { !within.contains($0.start) || !within.contains($0.end) }
        let lengths = w.lengths.count
        w.lengths.removeAll { !within.contains($0.start) }
        dropped += laps - w.laps.count + lengths - w.lengths.count
        if w.samples.contains(where: { !within.contains($0.time) || PhysicalLimits.problem(with: $0) != nil }) {
            w.samples = w.samples.compactMap { sample in
                guard within.contains(sample.time) else {
                    dropped += 1
                    return nil
                }
                let (clean, removed) = PhysicalLimits.cleaned(sample)
                dropped += removed
                return clean
            }
        }
        let before = w.rrIntervals.count
        if w.rrIntervals.contains(where: { !PhysicalLimits.rrInterval.contains($0) }) {
            w.rrIntervals = w.rrIntervals.filter { PhysicalLimits.rrInterval.contains($0) }
            dropped += before - w.rrIntervals.count
        }
        return (w, dropped)
    }

    /// Devices write 0 where they measured nothing: a heart rate of 0 bpm, or 0 kcal for a
    /// workout of more than a minute. Those become absent, so the energy gets estimated.
    static func dropPlaceholders(_ workout: Workout) -> Workout {
        var w = workout
        if w.avgHeartRate == 0 { w.avgHeartRate = nil }
        if w.maxHeartRate == 0 { w.maxHeartRate = nil }
        if w.energyKcal == 0, (w.timerS ?? w.elapsedS) > 60 {
            w.energyKcal = nil
            w.energySource = nil
        }
        if w.samples.contains(where: { $0.heartRate == 0 }) {
            for i in w.samples.indices where w.samples[i].heartRate == 0 { w.samples[i].heartRate = nil }
        }
        for i in w.laps.indices {
            if w.laps[i].avgHeartRate == 0 { w.laps[i].avgHeartRate = nil }
            if w.laps[i].maxHeartRate == 0 { w.laps[i].maxHeartRate = nil }
        }
        return w
    }
}
