import Foundation

/// Normalized sport names. Drivers map their own vocabularies (FIT `sport`, TCX `Sport`, GPX
/// `type`) onto these; anything unknown becomes ``other``.
public enum Sport: String, Codable, Sendable, CaseIterable {
    case running, cycling, swimming, walking, hiking, rowing, paddling, skiing, strength
    case fitnessEquipment = "fitness_equipment"
    case transition, other

    /// Maps a free-form sport name (`Running`, `biking`, `SUP`, `stand_up_paddleboarding` ...).
    public static func normalize(_ name: String) -> Sport {
        let key = name.lowercased().replacingOccurrences(of: " ", with: "_").replacingOccurrences(of: "-", with: "_")
        if let exact = Sport(rawValue: key) { return exact }
        switch key {
        case "run", "jogging", "trail_running", "treadmill", "track_running", "street_running": return .running
        case "biking", "bike", "ride", "cycle", "road_biking", "mountain_biking", "indoor_cycling",
             "virtual_ride", "e_biking", "cyclocross": return .cycling
        case "swim", "lap_swimming", "open_water", "pool_swim", "open_water_swimming": return .swimming
        case "walk", "casual_walking", "speed_walking": return .walking
        case "hike", "mountaineering": return .hiking
        case "rower", "indoor_rowing": return .rowing
        case "sup", "stand_up_paddleboarding", "kayaking", "canoeing", "paddle": return .paddling
        case "alpine_skiing", "cross_country_skiing", "snowboarding", "backcountry_skiing": return .skiing
        case "training", "strength_training", "weights": return .strength
        case "fitness", "elliptical", "cross_trainer", "stair_climbing", "cardio", "cardio_training": return .fitnessEquipment
        default: return .other
        }
    }

    /// The sport's metabolic equivalent (MET) at a moderate effort, from ``METTable``: energy
    /// estimates of workouts without a device figure (imported or typed) use it.
    public var met: Double { METTable.row(for: self).met }
}

/// The one MET table: a sport's typical metabolic equivalent, each row a line of the 2011
/// Compendium of Physical Activities (Ainsworth BE et al., "2011 Compendium of Physical
/// Activities: a second update of codes and MET values", Med Sci Sports Exerc 43(8):1575-1581)
/// named by its activity code. `transition` and `other` have no Compendium line: they use 4.0, a
/// moderate effort (the Compendium's moderate band is 3.0 to 5.9 MET).
public enum METTable {
    public struct Row: Sendable, Equatable {
        /// The Compendium's five-digit activity code; nil for HealthGate's own default.
        public var code: String?
        /// The Compendium's activity, as it reads there.
        public var activity: String
        public var met: Double
    }

    /// The edition every row comes from.
    public static let edition = "2011 Compendium of Physical Activities"

    public static func row(for sport: Sport) -> Row {
        switch sport {
        case .running: Row(code: "12050", activity: "running, 6 mph (10 min/mile)", met: 9.8)
        case .cycling: Row(code: "01015", activity: "bicycling, general", met: 7.5)
        case .swimming: Row(code: "18310", activity: "swimming, leisurely, not lap swimming, general", met: 6.0)
        case .walking: Row(code: "17190", activity: "walking, 2.8 to 3.2 mph, level, moderate pace, firm surface", met: 3.5)
        case .hiking: Row(code: "17080", activity: "hiking, cross country", met: 6.0)
        case .rowing: Row(code: "02072", activity: "rowing, stationary, 100 watts, moderate effort", met: 7.0)
        case .paddling: Row(code: "18100", activity: "kayaking, moderate effort", met: 5.0)
        case .skiing: Row(code: "19075", activity: "skiing, general", met: 7.0)
        case .strength: Row(code: "02054", activity: "resistance (weight) training, multiple exercises, 8-15 repetitions at varied resistance", met: 3.5)
        case .fitnessEquipment: Row(code: "02048", activity: "elliptical trainer, moderate effort", met: 5.0)
        case .transition: Row(code: nil, activity: "triathlon transition (no Compendium line: moderate effort)", met: 4.0)
        case .other: Row(code: nil, activity: "any other sport (no Compendium line: moderate effort)", met: 4.0)
        }
    }
}

/// Estimates energy for workouts whose device gave none (Zot: "the database suggests a calorie
/// amount that can be changed by the user").
public struct EnergyEstimator: Sendable {
    /// Body weight used in the estimate.
    public var bodyWeightKg: Double

    public init(bodyWeightKg: Double = 70) { self.bodyWeightKg = bodyWeightKg }

    /// kcal = MET x weight (kg) x active hours.
    public func estimate(sport: String, activeSeconds: Double) -> Double {
        Sport.normalize(sport).met * bodyWeightKg * max(0, activeSeconds) / 3600
    }

    /// Fills in an estimated energy when the workout has none.
    public func fillEnergy(_ workout: Workout) -> Workout {
        guard workout.energyKcal == nil else { return workout }
        let active = workout.timerS ?? workout.elapsedS
        guard active > 0 else { return workout }
        var w = workout
        w.energyKcal = (estimate(sport: w.sport, activeSeconds: active) * 10).rounded() / 10
        w.energySource = .estimated
        return w
    }
}
