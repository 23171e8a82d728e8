import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

/// Garmin sleep files: the night ends at the sleep event's stop, not when the file was written,
/// and the device's assessment stays on the session. The expected session of each
/// `Fixtures/fit-sleep/*.fit` comes from Garmin's FIT SDK for Python
/// (`Drivers/FIT/tools/sleep_reference.py`).
@Suite struct FITSleepTests {
    struct Expected: Decodable {
        struct Stage: Decodable { var start: String, end: String, stage: String }
        struct Assessment: Decodable { var score: Int?, awakenings: Int? }
        var start: String, end: String
        var stages: [Stage]
        var assessment: Assessment?
    }

    static let folder = Fixtures.root.appendingPathComponent("Fixtures/fit-sleep")

    @Test func nightMatchesGarminsSDK() async throws {
        let name = "synthetic-garmin-sleep"
        let expected = try JSONDecoder().decode(
            Expected.self, from: Data(contentsOf: Self.folder.appendingPathComponent("expected/\(name).json")))
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("\(name).fit"))
        let (records, error) = await Fixtures.importRecords(data, path: "\(name).fit")
        #expect(error == nil)
        let sleep = try #require(Fixtures.sleeps(records).first)
        #expect(Fixtures.sleeps(records).count == 1)
        #expect(ISO8601.string(sleep.start) == expected.start)
        #expect(ISO8601.string(sleep.end) == expected.end)
        #expect(sleep.stages.count == expected.stages.count)
        for (mine, theirs) in zip(sleep.stages, expected.stages) {
            #expect(ISO8601.string(mine.start) == theirs.start)
            #expect(ISO8601.string(mine.end) == theirs.end)
            #expect(mine.stage.rawValue == theirs.stage)
        }
        #expect(sleep.assessment?.score == expected.assessment?.score)
        #expect(sleep.assessment?.awakenings == expected.assessment?.awakenings)
        // The night is 7 h 30 min; the file was written 40 minutes later and adds nothing.
        #expect(sleep.end.timeIntervalSince(sleep.start) == 7.5 * 3600)
        #expect(sleep.stages.last?.end == sleep.end)
        #expect(sleep.assessment == SleepAssessment(score: 81, awakenings: 3))
    }

    /// Levels written after the sleep event stopped are not part of the night; a stop_all (4)
    /// ends it too; an event 74 start or a timer stop does not.
    @Test func levelsAfterTheStopAreDropped() async throws {
        let t0 = FITSyntheticTests.t0
        var e = FITEncoder()
        e.fileID(type: 49)
        e.define(local: 0, global: 275, fields: [F(number: 253, type: .uint32), F(number: 0, type: .enum)])
        e.define(local: 1, global: 21, fields: [F(number: 253, type: .uint32), F(number: 0, type: .enum), F(number: 1, type: .enum)])
        e.data(local: 1, [.int(t0), .int(74), .int(0)]) // sleep start
        for (offset, level) in [(0, 2), (60, 2), (120, 3), (600, 4), (900, 2)] as [(Int64, Int64)] {
            e.data(local: 0, [.int(t0 + offset), .int(level)])
        }
        e.data(local: 1, [.int(t0 + 800), .int(0), .int(1)]) // a timer stop: not the night's end
        e.data(local: 1, [.int(t0 + 900), .int(74), .int(4)]) // sleep stop_all at the last level
        e.data(local: 1, [.int(t0 + 4000), .int(0), .int(0)]) // written later
        let (records, error) = await Fixtures.importRecords(Data(e.file()))
        #expect(error == nil)
        let sleep = try #require(Fixtures.sleeps(records).first)
        #expect(sleep.end == FITNormalizer.date(UInt32(t0 + 900)))
        #expect(sleep.stages.map(\.stage) == [.light, .deep, .rem])
        #expect(sleep.stages.map { $0.end.timeIntervalSince($0.start) } == [120, 480, 300])
        #expect(sleep.assessment == nil)
    }

    /// An assessment outside 0...100 is refused by the validation with the field's name, so a
    /// hostile file cannot store a score of 255.
    @Test func absurdScoreIsRefused() {
        let t = Date(timeIntervalSince1970: 1_700_000_000)
        let s = SleepSession(id: RecordID.derive("x"), start: t, end: t.addingTimeInterval(3600),
                             assessment: SleepAssessment(score: 250), source: Source(driver: "fit"))
        let outcome = Normalizer().normalize([.sleep(s)], now: t.addingTimeInterval(86_400))
        #expect(outcome.accepted.isEmpty)
        #expect(outcome.rejected.first?.reason.contains("assessment.score") == true)
    }
}
