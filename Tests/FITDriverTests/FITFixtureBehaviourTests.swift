import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

/// Normalizer and inspector behaviour on real fixtures, beyond the reference counts.
@Suite struct FITFixtureBehaviourTests {
    func records(_ name: String) async throws -> [HealthRecord] {
        let (records, error) = await Fixtures.importRecords(try Fixtures.data(name), path: name)
        #expect(error == nil)
        return records
    }

    @Test func multisportLegsShareOneID() async throws {
        let workouts = Fixtures.workoutsOf(try await records("garmin-fenix2-multisport.fit"))
        #expect(workouts.count == 7)
        let ids = Set(workouts.compactMap(\.multisportID))
        #expect(ids.count == 1)
        #expect(ids.first == RecordID.derive("multisport", "fit", "garmin/fenix2/3882015183",
                                              String(Int(workouts[0].start.timeIntervalSince1970))))
        #expect(Set(workouts.map(\.id)).count == 7)
        #expect(Set(workouts.map(\.sport)) == ["other", "cycling", "running", "transition"])
        #expect(workouts.allSatisfy { $0.energySource == .device })
        // Chained files without their own file_id continue the triathlon.
        let tri = Fixtures.workoutsOf(try await records("garmin-fr920xt-triathlon-chained-headers.fit"))
        #expect(tri.count == 5)
        #expect(Set(tri.compactMap(\.multisportID)).count == 1)
    }

    @Test func poolSwimLengthsAndStoredHeartRate() async throws {
        let w = try #require(Fixtures.workoutsOf(try await records("fitsdk-activity-poolswim-with-hr.fit")).first)
        #expect(w.sport == "swimming")
        #expect(w.subSport == "lap_swimming")
        #expect(Set(w.lengths.map(\.kind)) == ["active", "idle"])
        #expect(w.lengths.contains { $0.stroke == "freestyle" && ($0.strokes ?? 0) > 0 })
        let heart = w.samples.compactMap(\.heartRate)
        #expect(heart.count > 3000)
        #expect(heart.allSatisfy { (40...220).contains($0) })
        #expect(zip(w.samples, w.samples.dropFirst()).allSatisfy { $0.time <= $1.time })
        #expect(w.samples.allSatisfy { $0.time >= w.start && $0.time <= w.end })
        #expect(w.laps.count == 38)
    }

    @Test func rrIntervalsFromHRV() async throws {
        let w = try #require(Fixtures.workoutsOf(try await records("garmin-edge530-cycling-hrv-power.fit")).first)
        #expect(w.rrIntervals.count > 8000)
        #expect(w.rrIntervals.allSatisfy { $0 > 0.2 && $0 < 2.5 })
        #expect(w.samples.contains { $0.powerW != nil })
    }

    @Test func positionsInDegrees() async throws {
        let w = try #require(Fixtures.workoutsOf(try await records("garmin-fenix5-run.fit")).first)
        let first = try #require(w.samples.first { $0.latitude != nil })
        #expect(abs(first.latitude! - 456_099_128 * 180 / 2_147_483_648) < 1e-9)
        #expect((38...39).contains(first.latitude!) && (-123 ... -122).contains(first.longitude!))
        #expect(w.source.device?.hasPrefix("garmin/fenix5/") == true)
    }

    @Test func filesWithoutWorkouts() async throws {
        #expect(try await records("fitsdk-Settings.fit").isEmpty)
        // Records without timestamps cannot be placed in time: no workout.
        #expect(try await records("fitsdk-DeveloperData.fit").isEmpty)
    }

    @Test func inspectPrintsDefinitionsDataAndDeveloperFields() throws {
        var lines: [String] = []
        try FITInspector.writeCSV(Fixtures.data("fitsdk-DeveloperData.fit"), to: { lines.append($0) })
        #expect(lines[0] == "Type,Local Number,Message,Field 1,Value 1,Units 1")
        #expect(lines.contains("Definition,0,record,heart_rate,1,,cadence,1,,distance,1,,speed,1,,developer_0_0,1,"))
        #expect(lines.contains("Data,0,file_id,manufacturer,dynastream,,type,activity,,product,9001,,serial_number,1701,"))
        #expect(lines.contains { $0.hasPrefix("Data,0,record,heart_rate,140,bpm,") && $0.hasSuffix("doughnuts_earned,1,doughnuts") })
        #expect(lines.contains { $0.contains("application_id,1|1|2|3|5|8|13") })
        let counts = try FITInspector.messageCounts(Fixtures.data("fitsdk-Activity.fit"))
        #expect(counts.first! == (name: "record", count: 14))
        #expect(counts.map(\.count).reduce(0, +) == 22)
    }

    @Test func decodeAllCountsEveryMessage() throws {
        let summary = try FITDecoder.decodeAll(Fixtures.data("garmin-fenix2-multisport.fit"))
        #expect(summary.files == 1)
        #expect(summary.dataMessages == 24266)
        #expect(summary.values >= summary.fields)
        let chained = try FITDecoder.decodeAll(Fixtures.data("garmin-fr735xt-poolswim-hr-chained.fit"))
        #expect(chained.files == 5)
    }

    @Test func importerContract() throws {
        #expect(FITImporter.id == "fit")
        #expect(FITImporter.canImport(FileProbe(fileExtension: "fit", head: [])))
        #expect(FITImporter.canImport(FileProbe(path: "x.bin", data: try Fixtures.data("fitsdk-Activity.fit"))))
        #expect(!FITImporter.canImport(FileProbe(fileExtension: "gpx", head: Array("<gpx>".utf8))))
        // It takes no keys: any key in its table is reported by name.
        #expect(throws: ConfigError(keyPath: "unused", reason: "unknown key")) {
            try FITImporter.descriptor.makeFileImporter(["unused": .integer(1)], context: .standalone("fit"))
        }
        #expect(FITImporter.descriptor.kind == .fileImporter && FITImporter.descriptor.sampleConfiguration.contains("[importers.fit]"))
    }
}
