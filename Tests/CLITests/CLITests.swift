import Foundation
import Testing
import TestSupport

/// Runs the built `healthgate` executable and captures its output.
struct CLI {
    static var executable: String { Tool.path("healthgate") }

    static func run(_ arguments: [String], stdin: String? = nil) async throws -> Tool.Result {
        try await Tool.run(executable, arguments, stdin: stdin)
    }

    static func json(_ arguments: [String]) async throws -> Any {
        let result = try await run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }
}

@Suite(.serialized) struct CLITests {
    @Test func executableIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: CLI.executable), "\(CLI.executable)")
    }

    @Test func importListShowStatsExport() async throws {
        let scratch = try Scratch()
        let db = ["--db", scratch.dbPath]
        let files = [PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit", PackagePaths.fixtures + "/tcx/garmin-forerunner410-run.tcx",
                     PackagePaths.fixtures + "/gpx/garmin-connect-9266323613-hr.gpx"]

        let imported = try #require(try await CLI.json(["import", "--json"] + db + files) as? [String: Any])
        let totals = try #require(imported["totals"] as? [String: Any])
        #expect(totals["imported"] as? Int == 3)
        #expect(totals["failed"] as? Int == 0)

        let again = try await CLI.run(["import"] + db + files)
        #expect(again.status == 0)
        #expect(again.stdout.contains("already imported"))
        #expect(again.stdout.contains("3 already imported"))

        let workouts = try #require(try await CLI.json(["workouts", "--json"] + db) as? [[String: Any]])
        #expect(workouts.count == 3)
        let keys = ["id", "sport", "start", "end", "elapsed_s", "timer_s", "distance_m", "energy_kcal", "energy_source",
                    "avg_hr", "max_hr", "laps", "samples", "source"]
        for workout in workouts {
            for key in keys { #expect(workout.keys.contains(key), "missing \(key)") }
            let source = try #require(workout["source"] as? [String: Any])
            #expect(["fit", "tcx", "gpx"].contains(source["driver"] as? String ?? ""))
            #expect(files.contains(source["file"] as? String ?? ""))
            #expect((workout["start"] as? String)?.hasSuffix("Z") == true)
        }

        let id = try #require(workouts.first?["id"] as? String)
        let detail = try #require(try await CLI.json(["show", "--json", String(id.prefix(8))] + db) as? [String: Any])
        #expect(detail["id"] as? String == id)
        #expect(detail["laps"] is [Any])
        let text = try await CLI.run(["show", id] + db)
        #expect(text.stdout.contains(id))

        let stats = try #require((try await CLI.json(["stats", "--period", "year", "--json"] + db) as? [String: Any])?["periods"] as? [[String: Any]])
        #expect(stats.map { $0["workouts"] as? Int ?? 0 }.reduce(0, +) == 3)

        let csv = try await CLI.run(["export", "--format", "csv"] + db)
        let lines = csv.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("type,id,version,start,end") == true)
        #expect(lines.filter { $0.hasPrefix("workout,") }.count == 3)
    }

    @Test func failedFileGivesExitStatusOne() async throws {
        let scratch = try Scratch()
        let bad = try scratch.file("bad.fit", Array("garbage".utf8))
        let result = try await CLI.run(["import", "--db", scratch.dbPath, bad])
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAILED"))
        #expect(result.stdout.contains("bad.fit"))
    }

    @Test func dryRunCreatesNoDatabase() async throws {
        let scratch = try Scratch()
        let result = try await CLI.run(["import", "--dry-run", "--db", scratch.dbPath, PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("would import"))
        #expect(!FileManager.default.fileExists(atPath: scratch.dbPath))
    }

    @Test func badArgumentsAreExplained() async throws {
        let result = try await CLI.run(["workouts", "--since", "yesterday"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--since 'yesterday' is not a date"))
        let help = try await CLI.run(["import", "--help"])
        #expect(help.stdout.contains("--dry-run"))
    }
}
