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

    /// Typical metabolic equivalent (MET) of the sport at a moderate effort (Compendium of
    /// Physical Activities averages), used when a device reports no energy.
    public var met: Double {
        switch self {
        case .running: 9.8
        case .cycling: 7.5
        case .swimming: 7.0
        case .walking: 3.5
        case .hiking: 6.0
        case .rowing: 7.0
        case .paddling: 5.0
        case .skiing: 7.0
        case .strength: 5.0
        case .fitnessEquipment: 6.0
        case .transition: 4.0
        case .other: 4.0
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
