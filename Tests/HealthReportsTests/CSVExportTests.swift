import Foundation
import Testing
@testable import HealthReports
import HealthModel
import HealthStore
import TestSupport

/// The CSV export opens in spreadsheets: text that one would run as a formula must stay text.
@Suite struct CSVExportTests {
    @Test(arguments: ["=1+1", "+1+1", "-1+1", "@SUM(A1)", "\t=1+1", "\r=1+1", "\t", "\rx", " =1+1", "\n=1+1",
                      "\u{FF1D}1+1", "=HYPERLINK(\"http://x\")"])
    func formulasBecomeText(_ cell: String) {
        let line = Reports.csvLine(["a", cell])
        let second = line.dropFirst(2)
        // The field (quoted or not) starts with the apostrophe.
        #expect(second.hasPrefix("'") || second.hasPrefix("\"'"), "\(line.debugDescription)")
    }

    @Test(arguments: ["-5", "+3", "-0.25", "1e3", "hello", "", " ", "a=b", "2025-01-01"])
    func numbersAndTextStayAsTheyAre(_ cell: String) {
        let line = Reports.csvLine([cell])
        #expect(!line.hasPrefix("'") && !line.hasPrefix("\"'"), "\(line.debugDescription)")
    }

    /// Through the command: a habit note typed as `\t=cmd|...` comes out as text.
    @Test func exportedNotesCannotRunAsFormulas() async throws {
        let folder = NSTemporaryDirectory() + "hg-csv-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try await HealthStore(path: folder + "/db.sqlite")
        try await store.write([.habit(HabitEvent(id: RecordID.derive("h", "csv"), habit: "vaping", time: Date(timeIntervalSince1970: 1_763_800_000),
                                           note: "\t=cmd|' /C calc'!A0", source: Source(driver: "manual")))])
        let run = try await Tool.run(Tool.path("healthgate"), ["export", "--format", "csv", "--db", folder + "/db.sqlite"])
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("habit,") })
        #expect(line.contains(",'\t=cmd"), "\(line.debugDescription)")
        #expect(!line.contains(",\t=cmd"))
    }
}
