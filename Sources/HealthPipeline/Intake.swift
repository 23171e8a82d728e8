public import DriverKit
public import Foundation
public import HealthModel
public import HealthStore
import Entries

/// The one way records from this install's sources enter the store: a live driver's batch, a
/// file's records, a typed entry or definition, a Bluetooth download or replay. Every path takes
/// the same steps, so a rule added here holds everywhere:
///
/// 1. normalized by one ``Normalizer`` (impossible sample values and stages dropped, validated,
///    kept to the date range, missing energy estimated with the body weight of ``bodyWeight()``);
/// 2. habit events under their definition's spelling of the habit's name
///    (``HealthStore/canonicalHabitNames(_:)``);
/// 3. written with their outbox rows in one transaction, or handed back for a file's ledger
///    commit (``prepare(_:with:now:)``).
///
/// Records pulled from the server are another install's, already taken in by its intake: the
/// forwarder validates them and stores them as they are (HealthSync), never normalized again.
public struct Intake: Sendable {
    /// Nil only for a dry run against no database: records are normalized, names kept.
    public let store: HealthStore?
    /// Only records starting within this range are kept.
    public var range: DateRange
    /// Body weight for estimated energy: nil for the body profile's (or 70 kg), see ``BodyWeight``.
    public var bodyWeightKg: Double?

    public init(store: HealthStore?, range: DateRange = DateRange(), bodyWeightKg: Double? = nil) {
        self.store = store
        self.range = range
        self.bodyWeightKg = bodyWeightKg
    }

    /// The body weight for energy estimates now: the option, the profile stored now, or 70 kg.
    /// Read again for each file and batch, so that a daemon follows a profile changed while it runs.
    public func bodyWeight() async throws -> BodyWeight {
        guard bodyWeightKg == nil, let store else { return .choose(option: bodyWeightKg, profile: nil) }
        let profile = try await store.definitions(.profile).lazy.compactMap { definition -> BodyProfile? in
            if case .profile(let profile) = definition.body { return profile }
            return nil
        }.first
        return .choose(option: nil, profile: profile)
    }

    /// The normalizer of what is taken in now (the body weight read now).
    public func normalizer() async throws -> Normalizer {
        normalizer(weightKg: try await bodyWeight().kg)
    }

    private func normalizer(weightKg: Double) -> Normalizer {
        Normalizer(energy: EnergyEstimator(bodyWeightKg: weightKg), since: range.since, until: range.until)
    }

    /// `records` normalized by `normalizer` and with canonical habit names; nothing written.
    public func prepare(_ records: [HealthRecord], with normalizer: Normalizer, now: Date = Date()) async throws -> Normalizer.Outcome {
        var outcome = normalizer.normalize(records, now: now)
        if let store { outcome.accepted = try await store.canonicalHabitNames(outcome.accepted) }
        return outcome
    }

    /// Normalizes a live batch (workout pieces validated on their summary, the final piece's
    /// energy estimated; checkpoints kept; the body weight read only when a workout may need
    /// it), names its habit events, and writes what it accepts in one transaction.
    public func write(_ batch: LiveBatch, now: Date = Date()) async throws
        -> (written: WriteResult, accepted: LiveBatch, rejected: [ValidationError]) {
        let workouts = !batch.workouts.isEmpty || batch.records.contains { if case .workout = $0 { true } else { false } }
        let normalizer = workouts ? try await normalizer() : normalizer(weightKg: BodyWeight.defaultKg)
        let normalized = normalizer.normalize(batch, now: now)
        var accepted = normalized.batch
        guard let store, !accepted.isEmpty else { return (WriteResult(), accepted, normalized.rejected) }
        accepted.records = try await store.canonicalHabitNames(accepted.records)
        return (try await store.write(accepted), accepted, normalized.rejected)
    }
}

/// The body weight energy estimates of workouts without energy use, and where it came from: the
/// explicit option, else the body profile in the store (`healthgate define profile --weight`),
/// else 70 kg.
public struct BodyWeight: Sendable, Equatable, Encodable {
    public enum Origin: String, Sendable, Encodable {
        case option, profile
        case `default`
    }
    public var kg: Double
    public var from: Origin

    /// The weight by precedence: `option`, `profile`, ``defaultKg``.
    public static func choose(option: Double?, profile: BodyProfile?) -> BodyWeight {
        if let option { return BodyWeight(kg: option, from: .option) }
        if let profile { return BodyWeight(kg: profile.weightKg, from: .profile) }
        return BodyWeight(kg: defaultKg, from: .default)
    }

    /// Without an option or a profile (the weight manual workouts assume too).
    public static let defaultKg = EntryBuilder.defaultWeightKg

    /// `72.5 kg (body profile)`.
    public var text: String {
        "\(NumberText.plain(kg)) kg (\(from == .option ? "--body-weight" : from == .profile ? "body profile" : "default, no body profile"))"
    }
}
