import ArgumentParser
import CommandSupport
import Foundation
import HealthModel
import HealthStore

struct WorkoutsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workouts", abstract: "List workouts (sport, time, duration, distance, energy, heart rate).",
        discussion: "Energy marked ~ is estimated from sport, duration and body weight (MET values).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let workouts = try await database.open().workouts(in: try range.range())
        if output.json { return try Output.printJSON(workouts) }
        guard !workouts.isEmpty else { return print("No workouts.") }
        Output.printTable(["ID", "START (UTC)", "SPORT", "ACTIVE", "DIST km", "kcal", "HR avg/max", "LAPS", "SAMPLES", "SOURCE"],
                          workouts.map { w in
            [String(w.id.prefix(8)), Output.shortTime(w.start), w.sport + (w.inProgress ? " (recording)" : ""),
             Output.duration(w.timerS ?? w.elapsedS),
             Output.number(w.distanceM, decimals: 2, scale: 0.001),
             w.energyKcal.map { (w.energySource == "estimated" ? "~" : "") + String(Int(saturating: $0.rounded())) } ?? "-",
             "\(Output.int(w.avgHR))/\(Output.int(w.maxHR))", String(w.laps), String(w.samples),
             [w.source.driver, w.source.device].compactMap { $0 }.joined(separator: " ")]
        })
    }
}

struct SleepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sleep", abstract: "List sleep sessions with time asleep and time in each stage.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    struct SleepJSON: Encodable {
        var id: String, version: Int, start: String, end: String, total_sleep_s: Double
        /// The device's overall sleep score (0 to 100) and awakenings; absent when it gave none.
        var score: Int?, awakenings: Int?
        var stages: [String: Double]
        var spans: [Span]
        var source: [String: String?]
        struct Span: Encodable { var start: String, end: String, stage: String }
    }

    func run() async throws {
        let sessions = try await database.open().sleepSessions(in: try range.range())
        func perStage(_ s: SleepSession) -> [String: Double] {
            var totals: [String: Double] = [:]
            for span in s.stages { totals[span.stage.rawValue, default: 0] += span.end.timeIntervalSince(span.start) }
            return totals
        }
        if output.json {
            return try Output.printJSON(sessions.map { s in
                SleepJSON(id: s.id.description, version: s.version, start: ISO8601.string(s.start), end: ISO8601.string(s.end),
                          total_sleep_s: s.totalSleepS, score: s.assessment?.score, awakenings: s.assessment?.awakenings,
                          stages: perStage(s),
                          spans: s.stages.map { .init(start: ISO8601.string($0.start), end: ISO8601.string($0.end), stage: $0.stage.rawValue) },
                          source: ["driver": s.source.driver, "device": s.source.device, "file": s.source.file])
            })
        }
        guard !sessions.isEmpty else { return print("No sleep sessions.") }
        Output.printTable(["ID", "START (UTC)", "END (UTC)", "ASLEEP", "DEEP", "LIGHT", "REM", "AWAKE", "SCORE"], sessions.map { s in
            let t = perStage(s)
            return [String(s.id.description.prefix(8)), Output.shortTime(ISO8601.string(s.start)), Output.shortTime(ISO8601.string(s.end)),
                    Output.duration(s.totalSleepS), Output.duration(t["deep"] ?? 0), Output.duration(t["light"] ?? 0),
                    Output.duration(t["rem"] ?? 0), Output.duration(t["awake"] ?? 0), s.assessment?.score.map(String.init) ?? "-"]
        })
    }
}

struct MeasurementsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "measurements", abstract: "List measurements (weight, heart rate, steps, blood pressure ...).",
        discussion: "Kinds: \(MeasurementKind.allCases.map(\.rawValue).joined(separator: ", ")).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var range: RangeOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("Only this kind.", valueName: "KIND"))
    var kind: String?

    func validate() throws {
        if let kind, MeasurementKind(rawValue: kind) == nil {
            throw ValidationError("unknown kind '\(kind)'; kinds: \(MeasurementKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    struct MeasurementJSON: Encodable {
        var id: String, version: Int, kind: String, time: String, end: String?, value: Double, unit: String
        var extra: [String: Double]
        var source: [String: String?]
    }

    func run() async throws {
        let store = try await database.open()
        let list = try await store.measurements(kind: kind.flatMap(MeasurementKind.init(rawValue:)), in: try range.range())
        if output.json {
            return try Output.printJSON(list.map { m in
                MeasurementJSON(id: m.id.description, version: m.version, kind: m.kind.rawValue, time: ISO8601.string(m.time),
                                end: m.end.map(ISO8601.string), value: m.value, unit: m.unit, extra: m.extra,
                                source: ["driver": m.source.driver, "device": m.source.device, "file": m.source.file])
            })
        }
        guard !list.isEmpty else { return print("No measurements.") }
        let mass = try await Output.preferences(store).mass
        Output.printTable(["TIME (UTC)", "KIND", "VALUE", "UNIT", "EXTRA", "SOURCE"], list.map { m in
            // Masses (weight, muscle, bone) in the preferred unit.
            let (value, unit) = m.unit == "kg" ? (Quantities.mass(m.value, in: mass), mass.symbol) : (m.value, m.unit)
            return [Output.shortTime(ISO8601.string(m.time)), m.kind.rawValue, Output.number(value, decimals: value == value.rounded() ? 0 : 2),
             unit, m.extra.sorted { $0.key < $1.key }.map { "\($0.key)=\(Output.number($0.value))" }.joined(separator: " "),
             [m.source.driver, m.source.device].compactMap { $0 }.joined(separator: " ")]
        })
    }
}
