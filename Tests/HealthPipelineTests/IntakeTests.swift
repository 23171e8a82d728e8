import DriverKit
import Foundation
import HealthModel
import HealthStore
import TestSupport
import Testing
@testable import HealthPipeline

/// Hands over the records it was made with, whatever the file holds (`.intake` files).
struct FixedRecordsImporter: FileImporter {
    static let id = "intake_test"
    var records: [HealthRecord] = []

    init(settings: NoSettings = NoSettings(), context: DriverContext = .standalone("intake_test")) {}
    init(records: [HealthRecord]) { self.records = records }

    static func canImport(_ probe: FileProbe) -> Bool { probe.fileExtension == "intake" }

    func importFile(_ file: ImportSource, into sink: some RecordSink) async throws {
        try await sink.emit(records)
    }
}

/// Every path records take into the store goes through the one ``Intake``: a live driver's batch,
/// a file's import, an entry, a Bluetooth download (``Intake/write(_:now:)``). A rule holds on
/// each: habit events under their definition's spelling, and a workout's missing energy
/// estimated with the body profile's weight (live batches used 70 kg whatever the profile said).
@Suite struct IntakeTests {
    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)
    static let source = Source(driver: "intake_test", device: "band")

    static func habit(_ id: String, _ name: String) -> HealthRecord {
        .habit(HabitEvent(id: RecordID.derive("intake", id), habit: name, time: t0.addingTimeInterval(60), value: 12, unit: "pages", source: source))
    }

    static func workout(_ id: String) -> HealthRecord {
        .workout(Workout(id: RecordID.derive("intake", id), sport: "running", start: t0, end: t0.addingTimeInterval(1800), source: source))
    }

    /// A store with `Reading` defined and a body profile of 100 kg.
    func prepared(_ scratch: Scratch) async throws -> HealthStore {
        let store = try await scratch.store()
        try await ManualEntries.define(Definition(name: "Reading", time: Self.t0.addingTimeInterval(-86_400),
                                                  body: .habit(HabitDefinition(valueKind: .numeric, unit: "pages")),
                                                  source: Source(driver: "manual")), into: store)
        try await ManualEntries.define(Definition(name: "profile", time: Self.t0.addingTimeInterval(-86_400),
                                                  body: .profile(BodyProfile(weightKg: 100)), source: Source(driver: "manual")), into: store)
        return store
    }

    @Test func everyPathTakesRecordsInTheSameWay() async throws {
        let scratch = try Scratch()
        let store = try await prepared(scratch)
        // Live: a driver's batch.
        try await StoreSink(store: store).emit([Self.habit("live", "reading"), Self.workout("live")])
        // A file.
        let path = try scratch.file("day.intake", Array("x".utf8))
        let report = await ImportPipeline(store: store, importers: [FixedRecordsImporter(records: [Self.habit("file", "READING"), Self.workout("file")])])
            .importFile(path, explicit: true)
        #expect(report.status == .imported, "\(report)")
        // A download (`ble download`) or replay.
        let (written, _, rejected) = try await Intake(store: store).write(LiveBatch(records: [Self.habit("download", "reading "), Self.workout("download")]))
        #expect(written.inserted == 2 && rejected.isEmpty)

        let events = try await store.habitEvents()
        #expect(events.count == 3)
        #expect(events.allSatisfy { $0.habit == "Reading" }, "\(events.map(\.habit))")
        let at100 = EnergyEstimator(bodyWeightKg: 100).fillEnergy(Workout(id: RecordID.derive("x"), sport: "running", start: Self.t0,
                                                                           end: Self.t0.addingTimeInterval(1800), source: Self.source)).energyKcal
        let at70 = EnergyEstimator(bodyWeightKg: 70).fillEnergy(Workout(id: RecordID.derive("x"), sport: "running", start: Self.t0,
                                                                         end: Self.t0.addingTimeInterval(1800), source: Self.source)).energyKcal
        #expect(at100 != nil && at100 != at70)
        for id in ["live", "file", "download"] {
            let stored = try #require(try await store.workout(id: RecordID.derive("intake", id).description))
            #expect(stored.energyKcal == at100 && stored.energySource == .estimated, "\(id): \(String(describing: stored.energyKcal))")
        }
    }

    /// What the intake refuses is refused on every path, and an entry refused stores nothing.
    @Test func refusedOnEveryPath() async throws {
        let scratch = try Scratch()
        let store = try await prepared(scratch)
        var impossible = Workout(id: RecordID.derive("intake", "impossible"), sport: "running", start: Self.t0,
                                 end: Self.t0.addingTimeInterval(1800), source: Self.source)
        impossible.avgHeartRate = 100_000
        let sink = StoreSink(store: store)
        try await sink.emit([.workout(impossible)])
        #expect(sink.rejected.count == 1)
        let (_, _, rejected) = try await Intake(store: store).write(LiveBatch(records: [.workout(impossible)]))
        #expect(rejected.count == 1)
        #expect(try await store.workouts().isEmpty)
    }
}
