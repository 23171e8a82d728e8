import Foundation
import Testing
import TestSupport

/// The Gadgetbridge importer through the built `healthgate` binary.
@Suite(.serialized) struct GadgetbridgeCLITests {
    static let database = fixtures + "/gadgetbridge/Gadgetbridge"

    @Test func importSleepWorkoutsThenAgain() async throws {
        let scratch = try Scratch()
        let db = ["--db", scratch.dbPath]
        let imported = try #require(try await CLI.json(["import", "--json"] + db + [Self.database]) as? [String: Any])
        let file = try #require((imported["files"] as? [[String: Any]])?.first)
        #expect(file["status"] as? String == "imported" && file["driver"] as? String == "gadgetbridge")
        #expect(file["records"] as? Int == 71)

        let nights = try #require(try await CLI.json(["sleep", "--json"] + db) as? [[String: Any]])
        #expect(nights.map { $0["start"] as? String } == ["2026-03-01T22:00:00Z", "2026-03-02T23:00:00Z"])
        #expect(nights.map { $0["total_sleep_s"] as? Double } == [160 * 60, 195 * 60])
        let workouts = try #require(try await CLI.json(["workouts", "--json"] + db) as? [[String: Any]])
        #expect(workouts.count == 4)

        let again = try await CLI.run(["import"] + db + [Self.database])
        #expect(again.status == 0)
        #expect(again.stdout.contains("1 already imported"))
    }

    @Test func anotherAppsDatabaseFails() async throws {
        let scratch = try Scratch()
        // Another app's SQLite file, named as Gadgetbridge names its export, written by Python's sqlite3.
        let path = scratch.folder + "/Gadgetbridge"
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE notes (t TEXT)'); c.commit()"
        let made = try await Tool.run("/usr/bin/env", ["python3", "-c", script, path])
        #expect(made.status == 0, "\(made.stderr)")
        let result = try await CLI.run(["import", "--db", scratch.dbPath, path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAILED"))
        let message = "not a Gadgetbridge database: no DEVICE table (its tables: NOTES)"
        #expect(result.stdout.contains("\(path): start of file: " + message), "\(result.stdout)")
    }

    /// The daemon on its default configuration: the database dropped into its inbox is imported
    /// by the watch folder, and moved to `imported/`.
    @Test func theDaemonImportsItFromTheInbox() async throws {
        let folder = try temporaryFolder("daemon-gadgetbridge")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try DaemonProcess(folder: folder, arguments: [])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        try FileManager.default.copyItem(atPath: Self.database, toPath: folder + "/inbox/Gadgetbridge")
        #expect(await cameTrue(every: .milliseconds(100)) {
            FileManager.default.fileExists(atPath: folder + "/inbox/imported/Gadgetbridge")
        }, "not imported: \(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        let nights = try #require(try await CLI.json(["sleep", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(nights.count == 2)
        let workouts = try #require(try await CLI.json(["workouts", "--state-dir", folder, "--json"]) as? [[String: Any]])
        #expect(workouts.count == 4)
    }
}
