import Foundation
import Testing
import TestSupport

/// Text that comes from outside (a file's name, what a damaged file made the decoder say) is
/// printed with its control characters shown, not obeyed by the terminal.
@Suite struct OutsideTextTests {
    @Test func aFileNamedWithEscapeSequencesIsShownAsText() async throws {
        let folder = try temporaryFolder("outside-text")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let name = folder + "/run\u{1B}]0;owned\u{07}\u{1B}[2J.fit"
        try FileManager.default.copyItem(atPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit", toPath: name)
        let damaged = folder + "/bad\u{1B}[31m.fit"
        try Data(try Data(contentsOf: URL(fileURLWithPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit")).prefix(300))
            .write(to: URL(fileURLWithPath: damaged))
        let run = try await CLI.run(["import", "--db", folder + "/db.sqlite", name, damaged])
        #expect(run.status == 1)
        for output in [run.stdout, run.stderr] {
            #expect(!output.utf8.contains(0x1B) && !output.utf8.contains(0x07), "\(output.debugDescription)")
        }
        #expect(run.stdout.contains("run\\u{1b}]0;owned\\u{7}\\u{1b}[2J.fit"), "\(run.stdout)")
        #expect(run.stdout.contains("bad\\u{1b}[31m.fit"), "\(run.stdout)")
        let listed = try await CLI.run(["workouts", "--db", folder + "/db.sqlite"])
        #expect(!listed.stdout.utf8.contains(0x1B), "\(listed.stdout.debugDescription)")
    }
}
