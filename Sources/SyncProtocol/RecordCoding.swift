import Foundation
public import HealthModel

// MARK: - Records on the wire
//
// How the model's records are spelled in the protocol's JSON: the protocol owns it, the model
// only holds the values. Keys are snake_case, spelled out here rather than left to an encoder
// strategy (which would also rewrite the keys of `Measurement.extra`); a nil optional is left
// out; a missing optional (or null) decodes as nil, a missing required key is an error naming
// the first one missing in the order below. Enumerations (`sport` is a string; energy source,
// sleep stage, measurement kind) travel as their raw values, the spelling the database keeps.
// Servers store these bytes: `Tests/SyncProtocolTests/GoldenJSONTests.swift` holds them.

extension Source: Codable {
    enum CodingKeys: String, CodingKey { case driver, device, file }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(driver: try c.decode(String.self, forKey: .driver), device: try c.decodeIfPresent(String.self, forKey: .device),
                  file: try c.decodeIfPresent(String.self, forKey: .file))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(driver, forKey: .driver)
        try c.encodeIfPresent(device, forKey: .device)
        try c.encodeIfPresent(file, forKey: .file)
    }
}

extension Sample: Codable {
    enum CodingKeys: String, CodingKey {
        case time, heartRate = "heart_rate", cadence, powerW = "power_w", speedMps = "speed_mps", distanceM = "distance_m"
        case latitude, longitude, altitudeM = "altitude_m", temperatureC = "temperature_c"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(time: try c.decode(Date.self, forKey: .time), heartRate: try c.decodeIfPresent(Int.self, forKey: .heartRate),
                  cadence: try c.decodeIfPresent(Double.self, forKey: .cadence),
                  powerW: try c.decodeIfPresent(Double.self, forKey: .powerW),
                  speedMps: try c.decodeIfPresent(Double.self, forKey: .speedMps),
                  distanceM: try c.decodeIfPresent(Double.self, forKey: .distanceM),
                  latitude: try c.decodeIfPresent(Double.self, forKey: .latitude),
                  longitude: try c.decodeIfPresent(Double.self, forKey: .longitude),
                  altitudeM: try c.decodeIfPresent(Double.self, forKey: .altitudeM),
                  temperatureC: try c.decodeIfPresent(Double.self, forKey: .temperatureC))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(heartRate, forKey: .heartRate)
        try c.encodeIfPresent(cadence, forKey: .cadence)
        try c.encodeIfPresent(powerW, forKey: .powerW)
        try c.encodeIfPresent(speedMps, forKey: .speedMps)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
        try c.encodeIfPresent(latitude, forKey: .latitude)
        try c.encodeIfPresent(longitude, forKey: .longitude)
        try c.encodeIfPresent(altitudeM, forKey: .altitudeM)
        try c.encodeIfPresent(temperatureC, forKey: .temperatureC)
    }
}

extension Lap: Codable {
    enum CodingKeys: String, CodingKey {
        case start, end, elapsedS = "elapsed_s", timerS = "timer_s", distanceM = "distance_m", energyKcal = "energy_kcal"
        case avgHeartRate = "avg_heart_rate", maxHeartRate = "max_heart_rate"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(start: try c.decode(Date.self, forKey: .start), end: try c.decode(Date.self, forKey: .end),
                  elapsedS: try c.decode(Double.self, forKey: .elapsedS), timerS: try c.decodeIfPresent(Double.self, forKey: .timerS),
                  distanceM: try c.decodeIfPresent(Double.self, forKey: .distanceM),
                  energyKcal: try c.decodeIfPresent(Double.self, forKey: .energyKcal),
                  avgHeartRate: try c.decodeIfPresent(Int.self, forKey: .avgHeartRate),
                  maxHeartRate: try c.decodeIfPresent(Int.self, forKey: .maxHeartRate))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(elapsedS, forKey: .elapsedS)
        try c.encodeIfPresent(timerS, forKey: .timerS)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
        try c.encodeIfPresent(energyKcal, forKey: .energyKcal)
        try c.encodeIfPresent(avgHeartRate, forKey: .avgHeartRate)
        try c.encodeIfPresent(maxHeartRate, forKey: .maxHeartRate)
    }
}

extension SwimLength: Codable {
    enum CodingKeys: String, CodingKey {
        case start, elapsedS = "elapsed_s", kind, strokes, stroke
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(start: try c.decode(Date.self, forKey: .start), elapsedS: try c.decode(Double.self, forKey: .elapsedS),
                  kind: try c.decode(String.self, forKey: .kind), strokes: try c.decodeIfPresent(Int.self, forKey: .strokes),
                  stroke: try c.decodeIfPresent(String.self, forKey: .stroke))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(start, forKey: .start)
        try c.encode(elapsedS, forKey: .elapsedS)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(strokes, forKey: .strokes)
        try c.encodeIfPresent(stroke, forKey: .stroke)
    }
}

extension Workout: Codable {
    enum CodingKeys: String, CodingKey {
        case id, version, sport, subSport = "sub_sport", start, end, elapsedS = "elapsed_s", timerS = "timer_s"
        case distanceM = "distance_m", energyKcal = "energy_kcal", energySource = "energy_source"
        case avgHeartRate = "avg_heart_rate", maxHeartRate = "max_heart_rate", ascentM = "ascent_m", descentM = "descent_m"
        case multisportID = "multisport_id", laps, samples, rrIntervals = "rr_intervals", lengths, source
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let id = try c.decode(RecordID.self, forKey: .id)
        let version = try c.decode(Int.self, forKey: .version)
        let sport = try c.decode(String.self, forKey: .sport)
        let subSport = try c.decodeIfPresent(String.self, forKey: .subSport)
        let start = try c.decode(Date.self, forKey: .start)
        let end = try c.decode(Date.self, forKey: .end)
        let elapsedS = try c.decode(Double.self, forKey: .elapsedS)
        let timerS = try c.decodeIfPresent(Double.self, forKey: .timerS)
        let distanceM = try c.decodeIfPresent(Double.self, forKey: .distanceM)
        let energyKcal = try c.decodeIfPresent(Double.self, forKey: .energyKcal)
        let energySource = try c.decodeIfPresent(EnergySource.self, forKey: .energySource)
        let avgHeartRate = try c.decodeIfPresent(Int.self, forKey: .avgHeartRate)
        let maxHeartRate = try c.decodeIfPresent(Int.self, forKey: .maxHeartRate)
        let ascentM = try c.decodeIfPresent(Double.self, forKey: .ascentM)
        let descentM = try c.decodeIfPresent(Double.self, forKey: .descentM)
        let multisportID = try c.decodeIfPresent(RecordID.self, forKey: .multisportID)
        let laps = try c.decode([Lap].self, forKey: .laps)
        let samples = try c.decode([Sample].self, forKey: .samples)
        let rrIntervals = try c.decode([Double].self, forKey: .rrIntervals)
        let lengths = try c.decode([SwimLength].self, forKey: .lengths)
        let source = try c.decode(Source.self, forKey: .source)
        self.init(id: id, version: version, sport: sport, subSport: subSport, start: start, end: end, elapsedS: elapsedS,
                  timerS: timerS, distanceM: distanceM, energyKcal: energyKcal, avgHeartRate: avgHeartRate,
                  maxHeartRate: maxHeartRate, ascentM: ascentM, descentM: descentM, multisportID: multisportID, laps: laps,
                  samples: samples, rrIntervals: rrIntervals, lengths: lengths, source: source)
        // As sent: the initializer would fill in `device` for a figure without a source.
        self.energySource = energySource
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(sport, forKey: .sport)
        try c.encodeIfPresent(subSport, forKey: .subSport)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(elapsedS, forKey: .elapsedS)
        try c.encodeIfPresent(timerS, forKey: .timerS)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
        try c.encodeIfPresent(energyKcal, forKey: .energyKcal)
        try c.encodeIfPresent(energySource, forKey: .energySource)
        try c.encodeIfPresent(avgHeartRate, forKey: .avgHeartRate)
        try c.encodeIfPresent(maxHeartRate, forKey: .maxHeartRate)
        try c.encodeIfPresent(ascentM, forKey: .ascentM)
        try c.encodeIfPresent(descentM, forKey: .descentM)
        try c.encodeIfPresent(multisportID, forKey: .multisportID)
        try c.encode(laps, forKey: .laps)
        try c.encode(samples, forKey: .samples)
        try c.encode(rrIntervals, forKey: .rrIntervals)
        try c.encode(lengths, forKey: .lengths)
        try c.encode(source, forKey: .source)
    }
}

extension SleepStageSpan: Codable {
    enum CodingKeys: String, CodingKey { case start, end, stage }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(start: try c.decode(Date.self, forKey: .start), end: try c.decode(Date.self, forKey: .end),
                  stage: try c.decode(SleepStage.self, forKey: .stage))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(stage, forKey: .stage)
    }
}

extension SleepSession: Codable {
    enum CodingKeys: String, CodingKey { case id, version, start, end, stages, assessment, source }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(RecordID.self, forKey: .id), version: try c.decode(Int.self, forKey: .version),
                  start: try c.decode(Date.self, forKey: .start), end: try c.decode(Date.self, forKey: .end),
                  stages: try c.decode([SleepStageSpan].self, forKey: .stages),
                  assessment: try c.decodeIfPresent(SleepAssessment.self, forKey: .assessment),
                  source: try c.decode(Source.self, forKey: .source))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(stages, forKey: .stages)
        try c.encodeIfPresent(assessment, forKey: .assessment)
        try c.encode(source, forKey: .source)
    }
}

extension SleepAssessment: Codable {
    enum CodingKeys: String, CodingKey { case score, awakenings }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(score: try c.decodeIfPresent(Int.self, forKey: .score),
                  awakenings: try c.decodeIfPresent(Int.self, forKey: .awakenings))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(score, forKey: .score)
        try c.encodeIfPresent(awakenings, forKey: .awakenings)
    }
}

extension HabitEvent: Codable {
    enum CodingKeys: String, CodingKey { case id, version, habit, time, value, category, unit, label, note, source }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(RecordID.self, forKey: .id), version: try c.decode(Int.self, forKey: .version),
                  habit: try c.decode(String.self, forKey: .habit), time: try c.decode(Date.self, forKey: .time),
                  value: try c.decodeIfPresent(Double.self, forKey: .value),
                  category: try c.decodeIfPresent(String.self, forKey: .category),
                  unit: try c.decodeIfPresent(String.self, forKey: .unit), label: try c.decodeIfPresent(String.self, forKey: .label),
                  note: try c.decodeIfPresent(String.self, forKey: .note), source: try c.decode(Source.self, forKey: .source))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(habit, forKey: .habit)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(value, forKey: .value)
        try c.encodeIfPresent(category, forKey: .category)
        try c.encodeIfPresent(unit, forKey: .unit)
        try c.encodeIfPresent(label, forKey: .label)
        try c.encodeIfPresent(note, forKey: .note)
        try c.encode(source, forKey: .source)
    }
}

extension HealthModel.Measurement: Codable {
    enum CodingKeys: String, CodingKey { case id, version, kind, time, end, value, extra, source }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(RecordID.self, forKey: .id), version: try c.decode(Int.self, forKey: .version),
                  kind: try c.decode(MeasurementKind.self, forKey: .kind), time: try c.decode(Date.self, forKey: .time),
                  end: try c.decodeIfPresent(Date.self, forKey: .end), value: try c.decode(Double.self, forKey: .value),
                  extra: try c.decode([String: Double].self, forKey: .extra), source: try c.decode(Source.self, forKey: .source))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(kind, forKey: .kind)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(end, forKey: .end)
        try c.encode(value, forKey: .value)
        try c.encode(extra, forKey: .extra)
        try c.encode(source, forKey: .source)
    }
}

extension Definition: Codable {
    enum CodingKeys: String, CodingKey { case id, version, name, time, kind, habit, meal, profile, preferences, source }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let body: DefinitionBody
        switch try c.decode(DefinitionKind.self, forKey: .kind) {
        case .habit: body = .habit(try c.decode(HabitDefinition.self, forKey: .habit))
        case .trigger: body = .trigger
        case .meal: body = .meal(try c.decode(SavedMeal.self, forKey: .meal))
        case .profile: body = .profile(try c.decode(BodyProfile.self, forKey: .profile))
        case .preferences: body = .preferences(try c.decode(Preferences.self, forKey: .preferences))
        }
        self.init(id: try c.decode(RecordID.self, forKey: .id), version: try c.decode(Int.self, forKey: .version),
                  name: try c.decode(String.self, forKey: .name), time: try c.decode(Date.self, forKey: .time), body: body,
                  source: try c.decode(Source.self, forKey: .source))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(name, forKey: .name)
        try c.encode(time, forKey: .time)
        try c.encode(kind, forKey: .kind)
        switch body {
        case .habit(let habit): try c.encode(habit, forKey: .habit)
        case .trigger: break
        case .meal(let meal): try c.encode(meal, forKey: .meal)
        case .profile(let profile): try c.encode(profile, forKey: .profile)
        case .preferences(let preferences): try c.encode(preferences, forKey: .preferences)
        }
        try c.encode(source, forKey: .source)
    }
}

extension HabitDefinition: Codable {
    /// `derived` only for a derived habit: a habit people log encodes as before.
    enum CodingKeys: String, CodingKey { case valueKind = "value_kind", unit, categories, target, derived }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(valueKind: try c.decode(ValueKind.self, forKey: .valueKind), unit: try c.decodeIfPresent(String.self, forKey: .unit),
                  categories: try c.decodeIfPresent([String].self, forKey: .categories) ?? [],
                  target: try c.decodeIfPresent(HabitTarget.self, forKey: .target),
                  derivation: try c.decodeIfPresent(HabitDerivation.self, forKey: .derived))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(valueKind, forKey: .valueKind)
        try c.encodeIfPresent(unit, forKey: .unit)
        if !categories.isEmpty { try c.encode(categories, forKey: .categories) }
        try c.encodeIfPresent(target, forKey: .target)
        try c.encodeIfPresent(derivation, forKey: .derived)
    }
}

extension HabitDerivation: Codable {
    /// `{"from": "heart_rate_above", "bpm": 120}`: the source and only the conditions given.
    enum CodingKeys: String, CodingKey { case from, sport, minMinutes = "min_minutes", bpm, stage, kind }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(source: try c.decode(Source.self, forKey: .from), sport: try c.decodeIfPresent(String.self, forKey: .sport),
                  minMinutes: try c.decodeIfPresent(Double.self, forKey: .minMinutes), bpm: try c.decodeIfPresent(Int.self, forKey: .bpm),
                  stage: try c.decodeIfPresent(SleepStage.self, forKey: .stage), kind: try c.decodeIfPresent(MeasurementKind.self, forKey: .kind))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source, forKey: .from)
        try c.encodeIfPresent(sport, forKey: .sport)
        try c.encodeIfPresent(minMinutes, forKey: .minMinutes)
        try c.encodeIfPresent(bpm, forKey: .bpm)
        try c.encodeIfPresent(stage, forKey: .stage)
        try c.encodeIfPresent(kind, forKey: .kind)
    }
}

extension HabitTarget: Codable {
    enum CodingKeys: String, CodingKey { case amount, period, direction }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(amount: try c.decode(Double.self, forKey: .amount), period: try c.decode(Period.self, forKey: .period),
                  direction: try c.decode(Direction.self, forKey: .direction))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(amount, forKey: .amount)
        try c.encode(period, forKey: .period)
        try c.encode(direction, forKey: .direction)
    }
}

extension SavedMeal: Codable {
    enum CodingKeys: String, CodingKey { case kcal, ingredients }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(kcal: try c.decode(Double.self, forKey: .kcal),
                  ingredients: try c.decodeIfPresent([Ingredient].self, forKey: .ingredients) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kcal, forKey: .kcal)
        if !ingredients.isEmpty { try c.encode(ingredients, forKey: .ingredients) }
    }
}

extension SavedMeal.Ingredient: Codable {
    enum CodingKeys: String, CodingKey { case name, kcal }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), kcal: try c.decode(Double.self, forKey: .kcal))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(kcal, forKey: .kcal)
    }
}

extension BodyProfile: Codable {
    /// `goal_weight_kg` only when a goal is set: a profile without one encodes as before.
    enum CodingKeys: String, CodingKey { case weightKg = "weight_kg", goalWeightKg = "goal_weight_kg" }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(weightKg: try c.decode(Double.self, forKey: .weightKg), goalWeightKg: try c.decodeIfPresent(Double.self, forKey: .goalWeightKg))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(weightKg, forKey: .weightKg)
        try c.encodeIfPresent(goalWeightKg, forKey: .goalWeightKg)
    }
}

extension Preferences: Codable {
    /// `day_start` (`04:00`) only when the day does not start at midnight: the preferences of
    /// earlier versions read and write as they did.
    enum CodingKeys: String, CodingKey { case volume, mass, dayStart = "day_start" }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var minutes = 0
        if let text = try c.decodeIfPresent(String.self, forKey: .dayStart) {
            guard let parsed = DayBoundary.minutes(text) else {
                throw DecodingError.dataCorruptedError(forKey: .dayStart, in: c, debugDescription: "a day start is HH:MM from 00:00 to 11:59")
            }
            minutes = parsed
        }
        self.init(volume: try c.decode(VolumeUnit.self, forKey: .volume), mass: try c.decode(MassUnit.self, forKey: .mass),
                  dayStartMinutes: minutes)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(volume, forKey: .volume)
        try c.encode(mass, forKey: .mass)
        if dayStartMinutes != 0 { try c.encode(DayBoundary.text(minutes: dayStartMinutes), forKey: .dayStart) }
    }
}
