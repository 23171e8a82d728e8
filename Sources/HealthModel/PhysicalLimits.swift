public import Foundation

/// The values a body, a sensor or a clock can produce, per kind: the one set of limits that the
/// daemon's validator (``RecordValidator``), the normalizer's cleaning of sample series and the
/// tracking server all apply. Generous on purpose: they refuse what cannot be (a weight of
/// -70 kg, a heart rate of 100,000 bpm, a latitude of 1000, a 30-year workout), not what is
/// merely unusual.
public enum PhysicalLimits {
    // MARK: Time

    /// Longest workout: two weeks (multi-day ultra events recorded as one activity).
    public static let workoutSpanS: TimeInterval = 14 * 86_400
    /// Longest sleep session: two days.
    public static let sleepSpanS: TimeInterval = 2 * 86_400
    /// Longest interval a measurement totals (steps or energy over a day, a week at most).
    public static let measurementSpanS: TimeInterval = 7 * 86_400
    /// How far a sample, lap, length or stage may lie outside its record's span (clocks of
    /// different sensors drift; files round).
    public static let childToleranceS: TimeInterval = 600

    /// Largest version: integers up to 2^53 - 1 travel exactly through JSON readers that use
    /// doubles, and a record at `Int64.max` could never be updated.
    public static let versions: ClosedRange<Int> = 1...9_007_199_254_740_991

    // MARK: Workouts

    public static let heartRate: ClosedRange<Double> = 0...300
    /// RR (beat-to-beat) interval, seconds: 300 bpm to a 6 s pause.
    public static let rrInterval: ClosedRange<Double> = 0.15...6
    /// Cadence, rpm or steps per minute.
    public static let cadence: ClosedRange<Double> = 0...1_000
    public static let powerW: ClosedRange<Double> = 0...10_000
    /// Speed, m/s (a falling skydiver is about 90 m/s).
    public static let speedMps: ClosedRange<Double> = 0...300
    /// Distance, metres: cumulative in samples, totals in workouts and laps.
    public static let distanceM: ClosedRange<Double> = 0...10_000_000
    public static let latitude: ClosedRange<Double> = -90...90
    public static let longitude: ClosedRange<Double> = -180...180
    /// Altitude, metres: the Dead Sea shore to an aircraft's cruise.
    public static let altitudeM: ClosedRange<Double> = -1_000...20_000
    /// Air or water temperature around a workout, degrees Celsius.
    public static let ambientTemperatureC: ClosedRange<Double> = -90...70
    /// Energy of a workout or lap, kcal.
    public static let workoutEnergyKcal: ClosedRange<Double> = 0...100_000
    /// Ascent and descent, metres.
    public static let climbM: ClosedRange<Double> = 0...100_000
    public static let strokes: ClosedRange<Int> = 0...100_000

    // MARK: Measurements

    /// The range of a measurement's value, in the kind's unit.
    public static func range(of kind: MeasurementKind) -> ClosedRange<Double> {
        switch kind {
        case .heartRate, .restingHeartRate: 1...300
        case .hrv: 0...5_000
        case .distance: 0...1_000_000
        case .basalEnergy: 0...100_000
        case .respiratoryRate: 0...200
        case .rrInterval: rrInterval
        case .weight: 0.2...700
        case .bodyFat, .bodyWater, .spo2, .batteryLevel: 0...100
        case .muscleMass: 0...700
        case .boneMass: 0...100
        case .visceralFat: 0...100
        case .bmi: 1...250
        case .basalMetabolicRate: 0...20_000
        case .bloodPressure: 10...400
        // Body temperature, degrees Celsius (the lowest survived is about 13.7, the highest 46.5).
        case .temperature: 10...50
        case .glucose: 0...200
        case .steps: 0...1_000_000
        case .energy: 0...100_000
        }
    }

    /// Secondary values of one measurement (`diastolic`, `mean_arterial`, body composition ...).
    public static let extraKeys = 32
    public static let extraKeyCharacters = 1...64
    /// Secondary values of a blood pressure reading that are pressures (in mmHg, within the
    /// kind's range); its other values (`pulse_rate`, `user_id`) are plain numbers.
    public static let pressureKeys: Set<String> = ["diastolic", "mean_arterial"]
    /// Any secondary value's magnitude.
    public static let extraValue: ClosedRange<Double> = -1e9...1e9

    // MARK: Habits and text

    /// A habit event's value (a drink's volume, a count, a rating).
    public static let habitValue: ClosedRange<Double> = -1e9...1e9
    /// One drink, in ml: a sip to a 5-litre jug (a 50-litre "drink" is a typo).
    public static let drinkMl: ClosedRange<Double> = 1...5_000
    /// One meal, in kcal.
    public static let mealKcal: ClosedRange<Double> = 0...10_000
    /// Categories of one habit, ingredients of one saved meal.
    public static let definitionItems = 0...100
    public static let habitNameCharacters = 1...100
    /// Category, unit, label, sport names, source fields.
    public static let shortTextCharacters = 0...200
    /// A note or a user's thoughts.
    public static let noteCharacters = 0...10_000
    /// A source's file path.
    public static let pathCharacters = 0...4_096
    /// Samples, RR intervals, laps, lengths or stages in one record (a day at 10 Hz).
    public static let seriesCount = 0...1_000_000
}
