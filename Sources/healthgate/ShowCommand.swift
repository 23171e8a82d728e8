import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthStore

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one workout with its laps and a summary of its samples.",
        discussion: "ID may be the first characters of the id, as printed by `healthgate workouts`.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "The workout's id or a unique prefix of it.")
    var id: String

    func run() async throws {
        guard let workout = try await database.open().workout(id: id) else {
            throw RuntimeFailure("no workout with id \(id) (or the prefix is not unique)")
        }
        let detail = WorkoutDetail(workout)
        if output.json { return try Output.printJSON(detail) }
        let w = workout
        print("Workout \(w.id)  (version \(w.version))")
        print("  sport      \(w.sport)\(w.subSport.map { " / \($0)" } ?? "")")
        print("  time       \(ISO8601.string(w.start)) to \(ISO8601.string(w.end))")
        print("  duration   \(Output.duration(w.elapsedS)) elapsed, \(Output.duration(w.timerS)) active")
        print("  distance   \(Output.number(w.distanceM, decimals: 2, scale: 0.001)) km")
        print("  energy     \(Output.number(w.energyKcal, decimals: 0)) kcal\(w.energySource.map { " (\($0.rawValue))" } ?? "")")
        print("  heart rate \(Output.int(w.avgHeartRate)) avg, \(Output.int(w.maxHeartRate)) max")
        print("  ascent     \(Output.number(w.ascentM, decimals: 0)) m up, \(Output.number(w.descentM, decimals: 0)) m down")
        print("  source     \([w.source.driver, w.source.device, w.source.file].compactMap { $0 }.joined(separator: "  "))")
        if let group = w.multisportID { print("  multisport \(group)") }
        let s = detail.samples
        print("  samples    \(s.count)\(s.count > 0 ? " from \(s.first ?? "") to \(s.last ?? "")" : "")")
        for (name, channel) in s.channels.sorted(by: { $0.key < $1.key }) {
            print("    \(name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(channel.count) values, min \(Output.number(channel.min, decimals: 2)), avg \(Output.number(channel.avg, decimals: 2)), max \(Output.number(channel.max, decimals: 2))")
        }
        if !w.rrIntervals.isEmpty { print("  RR         \(w.rrIntervals.count) intervals") }
        if !w.lengths.isEmpty { print("  lengths    \(w.lengths.count) (\(w.lengths.filter { $0.kind == "active" }.count) active)") }
        guard !w.laps.isEmpty else { return }
        print("")
        Output.printTable(["LAP", "START (UTC)", "ACTIVE", "DIST km", "kcal", "HR avg/max"], w.laps.enumerated().map { i, lap in
            [String(i + 1), Output.shortTime(ISO8601.string(lap.start)), Output.duration(lap.timerS ?? lap.elapsedS),
             Output.number(lap.distanceM, decimals: 2, scale: 0.001), Output.number(lap.energyKcal, decimals: 0),
             "\(Output.int(lap.avgHeartRate))/\(Output.int(lap.maxHeartRate))"]
        })
    }
}

/// `show --json`: the workout, its laps and per-channel sample statistics.
struct WorkoutDetail: Encodable {
    struct Channel: Encodable { var count: Int; var min: Double; var max: Double; var avg: Double }
    struct Samples: Encodable {
        var count: Int
        var first: String?
        var last: String?
        var channels: [String: Channel]
    }
    struct LapJSON: Encodable {
        var start: String, end: String, elapsed_s: Double, timer_s: Double?, distance_m: Double?
        var energy_kcal: Double?, avg_hr: Int?, max_hr: Int?
    }

    var id: String, version: Int, sport: String, sub_sport: String?, start: String, end: String
    var elapsed_s: Double, timer_s: Double?, distance_m: Double?, energy_kcal: Double?, energy_source: String?
    var avg_hr: Int?, max_hr: Int?, ascent_m: Double?, descent_m: Double?, multisport_id: String?
    var laps: [LapJSON]
    var samples: Samples
    var rr_intervals: Int
    var lengths: Int
    var source: [String: String?]

    init(_ w: Workout) {
        id = w.id.description; version = w.version; sport = w.sport; sub_sport = w.subSport
        start = ISO8601.string(w.start); end = ISO8601.string(w.end); elapsed_s = w.elapsedS; timer_s = w.timerS
        distance_m = w.distanceM; energy_kcal = w.energyKcal; energy_source = w.energySource?.rawValue
        avg_hr = w.avgHeartRate; max_hr = w.maxHeartRate; ascent_m = w.ascentM; descent_m = w.descentM
        multisport_id = w.multisportID?.description
        laps = w.laps.map { LapJSON(start: ISO8601.string($0.start), end: ISO8601.string($0.end), elapsed_s: $0.elapsedS,
                                    timer_s: $0.timerS, distance_m: $0.distanceM, energy_kcal: $0.energyKcal,
                                    avg_hr: $0.avgHeartRate, max_hr: $0.maxHeartRate) }
        let extractors: [(String, (Sample) -> Double?)] = [
            ("heart_rate", { $0.heartRate.map(Double.init) }), ("cadence", { $0.cadence }), ("power_w", { $0.powerW }),
            ("speed_mps", { $0.speedMps }), ("distance_m", { $0.distanceM }), ("latitude", { $0.latitude }),
            ("longitude", { $0.longitude }), ("altitude_m", { $0.altitudeM }), ("temperature_c", { $0.temperatureC }),
        ]
        var channels: [String: Channel] = [:]
        for (name, extract) in extractors {
            let values = w.samples.compactMap(extract)
            guard !values.isEmpty else { continue }
            channels[name] = Channel(count: values.count, min: values.min()!, max: values.max()!,
                                     avg: values.reduce(0, +) / Double(values.count))
        }
        samples = Samples(count: w.samples.count, first: w.samples.first.map { ISO8601.string($0.time) },
                          last: w.samples.last.map { ISO8601.string($0.time) }, channels: channels)
        rr_intervals = w.rrIntervals.count
        lengths = w.lengths.count
        source = ["driver": w.source.driver, "device": w.source.device, "file": w.source.file]
    }
}
