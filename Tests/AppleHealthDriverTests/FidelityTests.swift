import AppleHealthDriver
import DriverKit
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import Synchronization
import Testing
import TestSupport

/// What an export says beyond the values: the UTC offset of its dates, blood pressure written
/// without a Correlation, a night known only as time in bed, meals held twice.
@Suite("Apple Health driver: fidelity")
struct AppleHealthFidelityTests {
    static let head = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n<HealthData locale=\"en_US\">\n"
    static let tail = "</HealthData>\n"

    static func decode(_ body: String) throws -> [HealthRecord] {
        try AppleHealthImporter.decode(Array((head + body + tail).utf8), path: "export.xml").records
    }

    static let watch = #"sourceName="Watch" sourceVersion="10.1""#
    static let cuff = #"sourceName="Withings" sourceVersion="6.2""#
    static let phone = #"sourceName="Phone" sourceVersion="17.1""#

    @Test("each record keeps the UTC offset its dates were written with, in its provenance")
    func utcOffsets() throws {
        let records = try Self.decode("""
             <Record type="HKQuantityTypeIdentifierHeartRate" \(Self.watch) unit="count/min" startDate="2024-03-30 23:10:00 +0100" endDate="2024-03-30 23:10:00 +0100" value="60"/>
             <Record type="HKQuantityTypeIdentifierHeartRate" \(Self.watch) unit="count/min" startDate="2024-03-31 09:10:00 +0200" endDate="2024-03-31 09:10:00 +0200" value="61"/>
             <Record type="HKQuantityTypeIdentifierDietaryWater" \(Self.phone) unit="mL" startDate="2024-06-01 08:00:00 -0930" endDate="2024-06-01 08:00:00 -0930" value="250"/>
             <Record type="HKCategoryTypeIdentifierSleepAnalysis" \(Self.watch) startDate="2024-03-30 23:30:00 +0100" endDate="2024-03-31 07:00:00 +0200" value="HKCategoryValueSleepAnalysisAsleepCore"/>
             <Workout workoutActivityType="HKWorkoutActivityTypeRunning" \(Self.watch) startDate="2016-11-14 07:25:41 -0700" endDate="2016-11-14 07:30:52 -0700"/>
            """)
        let hr = measurements(records, .heartRate)
        #expect(hr.map { $0.source.device } == ["Watch 10.1, UTC+01:00", "Watch 10.1, UTC+02:00"])
        // The instants are unchanged: the offset is applied.
        #expect(hr.first?.time == date("2024-03-30 23:10:00 +0100"))
        #expect(habits(records, BuiltInHabit.hydration).first?.source.device == "Phone 17.1, UTC-09:30")
        #expect(sleeps(records).first?.source.device == "Watch 10.1, UTC+01:00")  // its start's
        #expect(workouts(records).first?.source.device == "Watch 10.1, UTC-07:00")
    }

    @Test("blood pressure written as two Records without a Correlation is one reading; with a Correlation too, still one")
    func bloodPressureWithoutCorrelation() async throws {
        let q = "HKQuantityTypeIdentifier"
        func half(_ type: String, _ source: String, _ time: String, _ value: Int) -> String {
            #" <Record type="\#(q)\#(type)" \#(source) unit="mmHg" startDate="\#(time)" endDate="\#(time)" value="\#(value)"/>"# + "\n"
        }
        let correlation = """
             <Correlation type="HKCorrelationTypeIdentifierBloodPressure" \(Self.cuff) startDate="2024-01-02 08:00:00 +0100" endDate="2024-01-02 08:00:00 +0100">
            \(half("BloodPressureSystolic", Self.cuff, "2024-01-02 08:00:00 +0100", 131))\(half("BloodPressureDiastolic", Self.cuff, "2024-01-02 08:00:00 +0100", 84)) </Correlation>

            """
        // Real exports list Records by type: every systolic, then every diastolic, then the Correlations.
        let body = half("BloodPressureSystolic", Self.cuff, "2024-01-01 08:00:00 +0100", 121)
            + half("BloodPressureSystolic", Self.cuff, "2024-01-02 08:00:00 +0100", 131)
            + half("BloodPressureSystolic", Self.phone, "2024-01-01 08:00:00 +0100", 140)  // another source at the same time
            + half("BloodPressureSystolic", Self.cuff, "2024-01-03 08:00:00 +0100", 118)  // its diastolic missing
            + half("BloodPressureDiastolic", Self.phone, "2024-01-01 08:00:00 +0100", 90)
            + half("BloodPressureDiastolic", Self.cuff, "2024-01-01 08:00:00 +0100", 79)
            + half("BloodPressureDiastolic", Self.cuff, "2024-01-02 08:00:00 +0100", 84)
            + half("BloodPressureDiastolic", Self.cuff, "2024-01-04 08:00:00 +0100", 70)  // its systolic missing: skipped
            + correlation
        let (records, parser) = try AppleHealthImporter.decode(Array((Self.head + body + Self.tail).utf8))
        let readings = measurements(records, .bloodPressure)
        let pairs = readings.map { "\($0.source.device ?? "") \(Int($0.value))/\($0.extra["diastolic"].map { String(Int($0)) } ?? "-")" }.sorted()
        #expect(pairs == ["Phone 17.1, UTC+01:00 140/90", "Withings 6.2, UTC+01:00 118/-", "Withings 6.2, UTC+01:00 121/79",
                          "Withings 6.2, UTC+01:00 131/84"])
        #expect(parser.skipped["unpaired HKQuantityTypeIdentifierBloodPressureDiastolic"] == 1)

        // The Correlation first, then its Records: one reading, with the Correlation's id.
        let reversed = try Self.decode(correlation + half("BloodPressureSystolic", Self.cuff, "2024-01-02 08:00:00 +0100", 131)
            + half("BloodPressureDiastolic", Self.cuff, "2024-01-02 08:00:00 +0100", 84))
        #expect(measurements(reversed, .bloodPressure).map(\.id) == [readings.first { $0.value == 131 }?.id])

        // Into a store: the four readings, counted once each.
        let folder = try temporaryFolder("apple-pressure")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data((Self.head + body + Self.tail).utf8).write(to: URL(fileURLWithPath: folder + "/export.xml"))
        let store = try await HealthStore(path: folder + "/db.sqlite")
        let report = await ImportPipeline(store: store, importers: [AppleHealthImporter()]).importFile(folder + "/export.xml")
        #expect(report.status == .imported && report.records == 4, "\(report)")
        #expect(try await store.measurements(kind: .bloodPressure).count == 4)
    }

    @Test("a night known only as InBed (the iPhone's bedtime) is a session with an unknown stage over each stretch in bed")
    func inBedOnlyNight() throws {
        let c = "HKCategoryTypeIdentifierSleepAnalysis"
        let records = try Self.decode("""
             <Record type="\(c)" \(Self.phone) startDate="2024-01-01 23:05:00 +0100" endDate="2024-01-02 02:00:00 +0100" value="HKCategoryValueSleepAnalysisInBed"/>
             <Record type="\(c)" \(Self.phone) startDate="2024-01-02 02:30:00 +0100" endDate="2024-01-02 06:40:00 +0100" value="HKCategoryValueSleepAnalysisInBed"/>
             <Record type="\(c)" \(Self.watch) startDate="2024-01-01 23:30:00 +0100" endDate="2024-01-02 01:00:00 +0100" value="HKCategoryValueSleepAnalysisAsleepDeep"/>
             <Record type="\(c)" \(Self.watch) startDate="2024-01-01 23:20:00 +0100" endDate="2024-01-02 06:30:00 +0100" value="HKCategoryValueSleepAnalysisInBed"/>
            """)
        let sessions = sleeps(records)
        #expect(sessions.count == 2)
        let bed = try #require(sessions.first { $0.source.device?.hasPrefix("Phone") == true })
        #expect(bed.start == date("2024-01-01 23:05:00 +0100") && bed.end == date("2024-01-02 06:40:00 +0100"))
        #expect(bed.stages == [SleepStageSpan(start: bed.start, end: date("2024-01-02 02:00:00 +0100"), stage: .unknown),
                               SleepStageSpan(start: date("2024-01-02 02:30:00 +0100"), end: bed.end, stage: .unknown)])
        #expect(bed.version == 2)
        // A night with stages keeps them: InBed only widens its span.
        let staged = try #require(sessions.first { $0.source.device?.hasPrefix("Watch") == true })
        #expect(staged.stages.map(\.stage) == [.deep] && staged.version == 1)
        #expect(staged.start == date("2024-01-01 23:20:00 +0100") && staged.end == date("2024-01-02 06:30:00 +0100"))
    }

    @Test("a meal held by both a food Correlation and its top-level DietaryEnergyConsumed Record counts once")
    func foodCorrelationCountedOnce() async throws {
        let q = "HKQuantityTypeIdentifier"
        func energy(_ time: String, _ kcal: Int) -> String {
            #" <Record type="\#(q)DietaryEnergyConsumed" \#(Self.phone) unit="kcal" startDate="\#(time)" endDate="\#(time)" value="\#(kcal)"/>"# + "\n"
        }
        func food(_ time: String, _ kcal: Int, _ name: String) -> String {
            """
             <Correlation type="HKCorrelationTypeIdentifierFood" \(Self.phone) startDate="\(time)" endDate="\(time)">
              <MetadataEntry key="HKFoodType" value="\(name)"/>
              <MetadataEntry key="meal" value="Lunch"/>
            \(energy(time, kcal)) </Correlation>

            """
        }
        // As exports are laid out: the Records (the copies of the Correlations' children among
        // them), then the Correlations; one meal logged without a Correlation; one Correlation
        // before its copy.
        let body = energy("2024-01-01 12:30:00 +0100", 600) + energy("2024-01-01 16:00:00 +0100", 150)
            + energy("2024-01-02 12:30:00 +0100", 700)
            + food("2024-01-01 12:30:00 +0100", 600, "Pasta") + food("2024-01-02 12:30:00 +0100", 700, "Rice")
            + food("2024-01-03 12:30:00 +0100", 500, "Soup") + energy("2024-01-03 12:30:00 +0100", 500)
        let meals = habits(try Self.decode(body), BuiltInHabit.meal)
        #expect(meals.count == 4)
        #expect(meals.map { "\($0.label ?? "-") \(Int($0.value ?? 0))" }.sorted() == ["- 150", "Pasta 600", "Rice 700", "Soup 500"])
        #expect(meals.filter { $0.label != nil }.allSatisfy { $0.version == 2 && $0.category == "lunch" })

        // Into a store: four meals, 1950 kcal over the three days, each stored (and sent) once.
        let folder = try temporaryFolder("apple-meals")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data((Self.head + body + Self.tail).utf8).write(to: URL(fileURLWithPath: folder + "/export.xml"))
        let store = try await HealthStore(path: folder + "/db.sqlite")
        let report = await ImportPipeline(store: store, importers: [AppleHealthImporter()]).importFile(folder + "/export.xml")
        #expect(report.status == .imported && report.records == 4, "\(report)")
        #expect(try await store.tableCounts()["outbox"] == 4)
        let totals = try await store.habitTotals(BuiltInHabit.meal, bounds: [date("2024-01-01 00:00:00 +0000"), date("2024-01-04 00:00:00 +0000")])
        #expect(totals.map(\.count) == [4] && totals.map(\.sum) == [1950])
    }

    @Test("a large file's progress: bytes read and records handed over, after each batch, up to the whole file")
    func progressWithinOneFile() async throws {
        let folder = try temporaryFolder("apple-progress")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = try await makeExport(folder + "/export.xml", ["--days", "40"])
        let size = try #require(try FileManager.default.attributesOfItem(atPath: folder + "/export.xml")[.size] as? Int)
        let store = try await HealthStore(path: folder + "/db.sqlite")
        let seen = Mutex<[(bytes: Int, records: Int)]>([])
        let report = await ImportPipeline(store: store, importers: [AppleHealthImporter()]).importFile(folder + "/export.xml", explicit: true) {
            bytes, records in seen.withLock { $0.append((bytes, records)) }
        }
        #expect(report.status == .imported, "\(report)")
        let steps = seen.withLock { $0 }
        // About 16,000 records in batches of AppleHealthImporter.batchSize: several steps.
        #expect(steps.count >= 3, "\(steps)")
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.bytes <= $1.bytes && $0.records < $1.records }, "\(steps)")
        #expect(steps.first.map { $0.bytes > 0 && $0.bytes < size && $0.records > 0 } == true, "\(steps)")
        #expect(steps.last?.bytes == size, "\(steps)")
        #expect(steps.last?.records == report.records, "\(steps)")
    }
}
