public import Foundation
public import HealthModel

/// Turns decoded FIT content into HealthGate records. Pure; the rules are listed in README.md.
public enum FITNormalizer {
    /// Seconds from 1970-01-01 to the FIT epoch, 1989-12-31T00:00:00Z.
    public static let fitEpoch: Double = 631_065_600

    /// The date of a FIT timestamp (seconds since the FIT epoch, fractions allowed).
    public static func date(_ fitTime: Double) -> Date { Date(timeIntervalSince1970: fitEpoch + fitTime) }
    public static func date(_ fitTime: UInt32) -> Date { date(Double(fitTime)) }

    /// Every record of every group of `content`, read from `file`.
    public static func records(from content: FITContent, file: String) -> [HealthRecord] {
        content.groups.flatMap { records(from: $0, file: file) }
    }

    /// The device identity `manufacturer/product/serial` (missing parts omitted), or nil.
    public static func deviceIdentity(_ id: FITContent.FileID?) -> String? {
        guard let id else { return nil }
        var parts: [String] = []
        if let m = id.manufacturer { parts.append(FITProfile.valueName(type: "manufacturer", value: m) ?? String(m)) }
        if let product = productName(id) { parts.append(product) }
        if let serial = id.serialNumber { parts.append(String(serial)) }
        return parts.isEmpty ? nil : parts.joined(separator: "/")
    }

    /// Product name: Garmin-family product names when known, else `product_name`, else the number.
    static func productName(_ id: FITContent.FileID) -> String? {
        if let product = id.product {
            // garmin, dynastream_oem, dynastream, tacx use the garmin_product list.
            if let m = id.manufacturer, [1, 13, 15, 89].contains(m),
               let name = FITProfile.valueName(type: "garmin_product", value: product) {
                return name
            }
            if let name = id.productName, !name.isEmpty { return name }
            return String(product)
        }
        return id.productName.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The FIT file type name of a group (`activity`, `monitoring_b` ...).
    static func fileType(_ group: FITContent.Group) -> String? {
        group.fileID?.type.flatMap { FITProfile.valueName(type: "file", value: $0) }
    }

    static func records(from group: FITContent.Group, file: String) -> [HealthRecord] {
        let device = deviceIdentity(group.fileID)
        let source = Source(driver: "fit", device: device, file: file)
        var out: [HealthRecord] = []
        out += workouts(group, source: source).map(HealthRecord.workout)
        out += monitoring(group, source: source).map(HealthRecord.measurement)
        if let sleep = sleep(group, source: source) { out.append(.sleep(sleep)) }
        out += weights(group, source: source).map(HealthRecord.measurement)
        return out
    }

    // MARK: Workouts

    static func sportName(_ sport: Int?) -> String {
        Sport.normalize(sport.flatMap { FITProfile.valueName(type: "sport", value: $0) } ?? "other").rawValue
    }

    static func subSportName(_ subSport: Int?) -> String? {
        guard let subSport, subSport != 0 else { return nil }
        return FITProfile.valueName(type: "sub_sport", value: subSport) ?? String(subSport)
    }

    /// A session's span in FIT seconds, or nil when it has no usable start.
    static func span(_ s: FITContent.Session) -> (start: Double, end: Double)? {
        guard let start = s.start ?? s.timestamp.flatMap({ t in
            s.elapsedS.map { UInt32(min(Double(UInt32.max), max(0, Double(t) - $0))) }
        }) else {
            return nil
        }
        let end: Double
        if let elapsed = s.elapsedS { end = Double(start) + elapsed } else if let t = s.timestamp { end = Double(t) } else { end = Double(start) }
        return (Double(start), max(end, Double(start)))
    }

    static func workouts(_ group: FITContent.Group, source: Source) -> [Workout] {
        let deviceKey = source.device ?? "unknown"
        var sessions = group.sessions.compactMap { s in span(s).map { (s, $0) } }
        var fromRecords = false
        if sessions.isEmpty, let first = group.samples.min(by: { $0.time < $1.time }),
           let last = group.samples.max(by: { $0.time < $1.time }) {
            // No session message: one workout over the records' span, from the earliest record to
            // the latest (records out of time order gave a workout that ended before it started).
            let hrs = group.samples.compactMap(\.values.heartRate)
            let distance = group.samples.filter { $0.values.distance != nil }.max(by: { $0.time < $1.time })?.values.distance
            let session = FITContent.Session(
                start: first.time, timestamp: last.time, sport: group.sport, subSport: group.subSport,
                elapsedS: Double(last.time) - Double(first.time), distanceM: distance,
                avgHeartRate: hrs.isEmpty ? nil : Int((Double(hrs.reduce(0, +)) / Double(hrs.count)).rounded()),
                maxHeartRate: hrs.max())
            sessions = [(session, (Double(first.time), Double(last.time)))]
            fromRecords = true
        }
        guard !sessions.isEmpty else { return [] }
        let multisportID = sessions.count > 1
            ? RecordID.derive("multisport", "fit", deviceKey, String(Int(fitEpoch + sessions[0].1.start))) : nil

        return sessions.enumerated().map { index, pair in
            let (s, span) = pair
            let sport = sportName(s.sport)
            let startDate = date(span.start)
            let endDate = date(span.end)
            let inSpan = { (t: Double) in t >= span.start && t <= span.end }

            var samples: [Sample] = group.samples.filter { inSpan(Double($0.time)) }.map { point in
                let v = point.values
                return Sample(time: date(point.time), heartRate: v.heartRate, cadence: v.cadence, powerW: v.power,
                              speedMps: v.speed, distanceM: v.distance, latitude: v.latitude, longitude: v.longitude,
                              altitudeM: v.altitude, temperatureC: v.temperature)
            }
            let beats = group.heartBeats.filter { inSpan($0.time) }
            if !beats.isEmpty {
                samples += beats.map { Sample(time: date($0.time), heartRate: $0.bpm) }
                samples.sort { $0.time < $1.time }
            }
            let rr = group.hrv.filter { block in block.after.map { inSpan(Double($0)) } ?? (index == 0) }.flatMap(\.intervals)
            let lengths = group.lengths.filter { inSpan(Double($0.start)) }.map { l in
                SwimLength(start: date(l.start), elapsedS: l.elapsedS,
                           kind: l.lengthType.flatMap { FITProfile.valueName(type: "length_type", value: $0) } ?? "active",
                           strokes: l.strokes,
                           stroke: l.stroke.flatMap { FITProfile.valueName(type: "swim_stroke", value: $0) })
            }
            return Workout(
                id: RecordID.derive("workout", "fit", deviceKey, String(Int(fitEpoch + span.start)), sport),
                sport: sport, subSport: subSportName(s.subSport), start: startDate, end: endDate,
                elapsedS: span.end - span.start, timerS: s.timerS, distanceM: s.distanceM, energyKcal: s.energyKcal,
                energySource: s.energyKcal == nil ? nil : .device, avgHeartRate: s.avgHeartRate, maxHeartRate: s.maxHeartRate,
                ascentM: s.ascentM, descentM: s.descentM, multisportID: multisportID,
                laps: fromRecords ? [] : laps(for: s, span: span, in: group), samples: samples, rrIntervals: rr,
                lengths: lengths, source: source)
        }
    }

    static func laps(for s: FITContent.Session, span: (start: Double, end: Double), in group: FITContent.Group) -> [Lap] {
        let chosen: [FITContent.LapInfo]
        if let first = s.firstLapIndex, let count = s.numLaps, first >= 0, count > 0, first < group.laps.count {
            chosen = Array(group.laps[first..<(first + min(count, group.laps.count - first))])
        } else {
            chosen = group.laps.filter { lap in lap.start.map { Double($0) >= span.start && Double($0) <= span.end } ?? false }
        }
        return chosen.compactMap { lap in
            guard let start = lap.start else { return nil }
            let elapsed = lap.elapsedS ?? lap.timestamp.map { max(0, Double($0) - Double(start)) } ?? 0
            return Lap(start: date(start), end: date(Double(start) + elapsed), elapsedS: elapsed, timerS: lap.timerS,
                       distanceM: lap.distanceM, energyKcal: lap.energyKcal, avgHeartRate: lap.avgHeartRate,
                       maxHeartRate: lap.maxHeartRate)
        }
    }

    // MARK: Monitoring

    static func isMonitoring(_ group: FITContent.Group) -> Bool {
        guard let type = group.fileID?.type else { return !group.monitoring.isEmpty }
        return [15, 28, 32].contains(type) // monitoring_a, monitoring_daily, monitoring_b
    }

    /// Heart-rate readings and daily step and active-energy totals of a monitoring file.
    static func monitoring(_ group: FITContent.Group, source: Source) -> [HealthModel.Measurement] {
        guard isMonitoring(group), !group.monitoring.isEmpty else { return [] }
        let deviceKey = source.device ?? "unknown"
        var out: [HealthModel.Measurement] = []
        for reading in group.monitoring {
            guard let hr = reading.heartRate, hr > 0 else { continue }
            let epoch = Int(fitEpoch) + Int(reading.time)
            out.append(HealthModel.Measurement(id: RecordID.derive("measurement", "fit", deviceKey, MeasurementKind.heartRate.rawValue, String(epoch)),
                                   kind: .heartRate, time: date(reading.time), value: Double(hr), source: source))
        }
        let offset = group.utcOffsetS ?? 0
        for total in dailyTotals(group.monitoring, utcOffsetS: offset) {
            let dayStart = date(Double(total.dayStart))
            let end = date(total.last)
            if total.steps > 0 {
                out.append(HealthModel.Measurement(id: RecordID.derive("measurement", "fit", deviceKey, MeasurementKind.steps.rawValue,
                                                           String(Int(fitEpoch) + total.dayStart)),
                                       kind: .steps, time: dayStart, end: end, value: total.steps, source: source))
            }
            if total.energy > 0 {
                out.append(HealthModel.Measurement(id: RecordID.derive("measurement", "fit", deviceKey, MeasurementKind.energy.rawValue,
                                                           String(Int(fitEpoch) + total.dayStart)),
                                       kind: .energy, time: dayStart, end: end, value: total.energy, source: source))
            }
        }
        return out
    }

    struct DailyTotal: Equatable {
        /// Local midnight, in FIT seconds (UTC).
        var dayStart: Int
        var last: UInt32
        var steps: Double
        var energy: Double
    }

    /// Totals per local day. `cycles` and calories are cumulative per activity type and reset at
    /// local midnight: per (day, activity type) the running value is summed over its resets (a
    /// drop starts a new run) and the day's total is the sum over activity types. A reading
    /// stamped exactly at local midnight (the daily summary) closes the day before. Steps count
    /// only walking and running cycles (1 cycle = 1 step there; the profile's cycles scale is 2).
    static func dailyTotals(_ readings: [FITContent.MonitoringReading], utcOffsetS: Int) -> [DailyTotal] {
        struct Running { var completed = 0.0; var current = 0.0 }
        var days: [Int: (last: UInt32, steps: [Int: Running], energy: [Int: Running])] = [:]
        func add(_ running: inout Running, _ value: Double) {
            if value < running.current { running.completed += running.current }
            running.current = value
        }
        for r in readings {
            let local = Int(r.time) + utcOffsetS - 1 // a reading at local midnight closes the day before
            let day = Int((Double(local) / 86400).rounded(.down)) * 86400 - utcOffsetS
            var entry = days[day] ?? (r.time, [:], [:])
            entry.last = max(entry.last, r.time)
            let type = r.activityType ?? 255
            if let cycles = r.cycles, type == 1 || type == 6 { // running, walking
                add(&entry.steps[type, default: Running()], cycles * 2)
            }
            if let energy = r.activeCalories ?? r.calories {
                add(&entry.energy[type, default: Running()], energy)
            }
            days[day] = entry
        }
        return days.keys.sorted().map { day in
            let entry = days[day]!
            return DailyTotal(dayStart: day, last: entry.last,
                              steps: entry.steps.values.reduce(0) { $0 + $1.completed + $1.current },
                              energy: entry.energy.values.reduce(0) { $0 + $1.completed + $1.current })
        }
    }

    // MARK: Sleep

    static func sleepStage(_ level: Int) -> SleepStage {
        switch level {
        case 1: .awake
        case 2: .light
        case 3: .deep
        case 4: .rem
        default: .unknown
        }
    }

    /// One session from `sleep_level` messages: each level lasts until the next one, the last
    /// until the sleep event's stop (event 74). A file without that stop ends the night at its
    /// last timestamp (Garmin writes the file later than the night ends, so that is a fallback);
    /// levels after the stop are dropped; consecutive levels of one stage are one stage. The
    /// device's `sleep_assessment` stays on the session.
    static func sleep(_ group: FITContent.Group, source: Source) -> SleepSession? {
        var levels = group.sleepLevels.sorted { $0.time < $1.time }
        if let stop = group.sleepStop { levels.removeAll { $0.time >= stop } }
        guard let first = levels.first, let lastLevel = levels.last else { return nil }
        let end = max(group.sleepStop ?? group.lastTimestamp ?? lastLevel.time, lastLevel.time)
        var stages: [SleepStageSpan] = []
        for (i, level) in levels.enumerated() {
            let stageEnd = i + 1 < levels.count ? levels[i + 1].time : end
            guard stageEnd > level.time else { continue }
            let stage = sleepStage(level.level)
            if let last = stages.last, last.stage == stage, last.end == date(level.time) {
                stages[stages.count - 1].end = date(stageEnd) // Garmin writes a level each minute: one stage
            } else {
                stages.append(SleepStageSpan(start: date(level.time), end: date(stageEnd), stage: stage))
            }
        }
        let epoch = Int(fitEpoch) + Int(first.time)
        return SleepSession(id: RecordID.derive("sleep", "fit", source.device ?? "unknown", String(epoch)),
                            start: date(first.time), end: date(end), stages: stages, assessment: group.sleepAssessment,
                            source: source)
    }

    // MARK: Weight scale

    static func weights(_ group: FITContent.Group, source: Source) -> [HealthModel.Measurement] {
        let deviceKey = source.device ?? "unknown"
        var out: [HealthModel.Measurement] = []
        for w in group.weights {
            let epoch = String(Int(fitEpoch) + Int(w.time))
            let pairs: [(MeasurementKind, Double?)] = [
                (.weight, w.weightKg), (.bodyFat, w.percentFat), (.bodyWater, w.percentHydration),
                (.boneMass, w.boneMassKg), (.muscleMass, w.muscleMassKg), (.basalMetabolicRate, w.basalMetKcal),
                (.visceralFat, w.visceralFatRating), (.bmi, w.bmi),
            ]
            for case (let kind, let value?) in pairs {
                var key = ["measurement", "fit", deviceKey, kind.rawValue, epoch]
                if let user = w.userProfileIndex { key.append(String(user)) }
                out.append(HealthModel.Measurement(id: RecordID.derive(key), kind: kind, time: date(w.time), value: value,
                                       extra: w.userProfileIndex.map { ["user_profile_index": Double($0)] } ?? [:],
                                       source: source))
            }
        }
        return out
    }
}
