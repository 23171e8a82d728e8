public import ArgumentParser
import HealthModel

/// `--gap`, `--sport`, `--wheel`: how live readings become workouts (`record`, `ble replay --record`).
public struct WorkoutOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(help: ArgumentHelp("Silence that ends a workout, 1s to 1d; \(DurationArgument.forms).", valueName: "DURATION"))
    public var gap = DurationArgument(seconds: 120)

    @Option(help: ArgumentHelp("Sport of a workout whose device does not tell (a heart-rate strap alone).", valueName: "SPORT"))
    public var sport: String = "other"

    @Option(help: ArgumentHelp("Wheel circumference for speed sensors.", valueName: "METRES"))
    public var wheel: Double = 2.096

    public func validate() throws {
        guard (1...86_400).contains(gap.seconds) else { throw ValidationError("--gap must be from 1s to 1d (\(DurationArgument.forms))") }
        guard (0.5...4).contains(wheel) else { throw ValidationError("--wheel must be between 0.5 and 4 metres") }
        if Sport.normalize(sport) == .other, sport.lowercased() != "other" {
            throw ValidationError("--sport '\(sport)' is not a sport HealthGate knows")
        }
    }
}
