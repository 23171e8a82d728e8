import DriverKit
import Foundation
import HealthModel
import Testing
@testable import FITDriver

/// Every file in Fixtures/fit/corrupt: what is kept (partial) and where decoding stops.
@Suite struct FITCorruptTests {
    struct Case: Sendable, CustomStringConvertible {
        var file: String
        /// Workouts emitted before the damage.
        var workouts: Int
        var offset: Int
        var reason: String
        var description: String { file }
    }

    static let cases: [Case] = [
        Case(file: "activity-bad-filecrc.fit", workouts: 1, offset: 769, reason: "bad file CRC"),
        // The activity message at byte 751 is cut off by the end of the file at byte 768.
        Case(file: "activity-unexpected-eof.fit", workouts: 1, offset: 751, reason: "truncated activity message"),
        // Two copies of one activity: one workout (same identity), emitted once.
        Case(file: "chained-activity-activity-bad-filecrc.fit", workouts: 1, offset: 1540, reason: "bad file CRC"),
        Case(file: "chained-activity-settings-corrupt-header.fit", workouts: 1, offset: 771, reason: "not a FIT file"),
        Case(file: "chained-activity-settings-nodata.fit", workouts: 1, offset: 783, reason: "truncated definition message"),
    ]

    @Test("the corrupt directory holds exactly the cases below")
    func everyFileCovered() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Fixtures.fit.appendingPathComponent("corrupt").path)
        #expect(Set(files.filter { $0.hasSuffix(".fit") }) == Set(Self.cases.map(\.file)))
    }

    @Test("partial import: records before the damage, then the error", arguments: cases)
    func partial(_ c: Case) async throws {
        let path = "corrupt/\(c.file)"
        let (records, error) = await Fixtures.importRecords(try Fixtures.data(path), path: path)
        let e = try #require(error)
        #expect(e.position == .byte(c.offset), "\(e)")
        #expect(e.reason.contains(c.reason), "\(e)")
        #expect(e.file == path)
        let workouts = Fixtures.workoutsOf(records)
        #expect(workouts.count == c.workouts)
        // The kept activity is the FIT SDK example run (fitsdk-Activity.fit).
        let reference = Fixtures.workoutsOf(await Fixtures.importRecords(try Fixtures.data("fitsdk-Activity.fit")).records)
        if let w = workouts.first, let r = reference.first {
            #expect(w.id == r.id)
            #expect(w.samples.count == r.samples.count)
            #expect(w.distanceM == r.distanceM)
        }
    }

    @Test("inspect prints what decoded, then throws at the same offset", arguments: cases)
    func inspect(_ c: Case) throws {
        var lines: [String] = []
        let data = try Fixtures.data("corrupt/\(c.file)")
        #expect(throws: DecodeError.self) { try FITInspector.writeCSV(data, to: { lines.append($0) }) }
        #expect(lines.contains { $0.hasPrefix("Data,") && $0.contains(",session,") })
        let (counts, error) = FITInspector.messageCountsAllowingDamage(data)
        #expect(error?.position == .byte(c.offset))
        #expect(counts.first { $0.name == "record" }?.count ?? 0 >= 14)
    }
}
