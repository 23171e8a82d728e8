import Foundation
import Testing
import TestSupport

/// The Gadgetbridge importer through the built `healthgate` binary.
@Suite(.serialized) struct GadgetbridgeCLITests {
    static let database = PackagePaths.fixtures + "/gadgetbridge/Gadgetbridge"

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
        let message = "an SQLite database no driver reads (Gadgetbridge's has a DEVICE table, a Loop Habit Tracker backup "
            + "Habits and Repetitions; its tables: NOTES)"
        #expect(result.stdout.contains("\(path): " + message), "\(result.stdout)")
    }

    /// The fixture as an older Gadgetbridge wrote it (schema 20, 2019: `DEVICE` has the integer
    /// `TYPE`, no `TYPE_NAME`; no Garmin table), and as the newer one with the same devices.
    func oldAndNew(_ folder: String) async throws -> (old: String, new: String) {
        let script = """
            import shutil, sqlite3, sys
            for path, version in ((sys.argv[2], 20), (sys.argv[3], 92)):
                shutil.copy(sys.argv[1], path)
                db = sqlite3.connect(path)
                db.execute("DELETE FROM BASE_ACTIVITY_SUMMARY WHERE DEVICE_ID = 3")
                db.execute("DELETE FROM DEVICE WHERE _id = 3")
                db.execute("DROP TABLE GARMIN_ACTIVITY_SAMPLE")
                if version < 62:
                    db.execute("ALTER TABLE DEVICE DROP COLUMN TYPE_NAME")
                db.execute(f"PRAGMA user_version = {version}")
                db.commit()
            """
        let paths = (folder + "/old", folder + "/new")
        let made = try await Tool.run("/usr/bin/env", ["python3", "-c", script, Self.database, paths.0, paths.1])
        #expect(made.status == 0, "\(made.stderr)")
        return paths
    }

    /// Each record's type and id in `export --format json`.
    func identities(_ db: String) async throws -> Set<String> {
        let export = try await CLI.run(["export", "--format", "json", "--db", db])
        #expect(export.status == 0, "\(export.stderr)")
        return Set(export.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).map { "\($0["type"] ?? "") \($0["id"] ?? "")" }
        })
    }

    /// A database from an old phone (schema 20, an Amazfit Bip and a Mi Band) is imported whatever
    /// its name (`Gadgetbridge`, `Gadgetbridge.db`, which once went to the Loop Habit Tracker
    /// importer, or `old phone.sqlite`), chosen by its tables, and gives the very records (same
    /// identities) the same devices give from a newer Gadgetbridge's database.
    @Test func anOldPhonesDatabaseIsReadWhateverItsName() async throws {
        let scratch = try Scratch()
        let (old, new) = try await oldAndNew(scratch.folder)
        let newDB = scratch.folder + "/new.sqlite"
        let fromNew = try #require(try await CLI.json(["import", "--json", "--db", newDB, new]) as? [String: Any])
        #expect((fromNew["files"] as? [[String: Any]])?.first?["status"] as? String == "imported", "\(fromNew)")
        let expected = try await identities(newDB)
        #expect(expected.count > 60, "\(expected.count)")
        for (i, name) in ["Gadgetbridge", "Gadgetbridge.db", "old phone.sqlite"].enumerated() {
            let path = scratch.folder + "/" + name
            try FileManager.default.copyItem(atPath: old, toPath: path)
            let db = scratch.folder + "/store\(i).sqlite"
            let imported = try #require(try await CLI.json(["import", "--json", "--db", db, path]) as? [String: Any])
            let file = try #require((imported["files"] as? [[String: Any]])?.first)
            #expect(file["status"] as? String == "imported" && file["driver"] as? String == "gadgetbridge", "\(name): \(file)")
            #expect(try await identities(db) == expected, "\(name)")
        }
        // A DEVICE table with neither TYPE_NAME nor TYPE: refused, naming what it lacks.
        let broken = scratch.folder + "/broken"
        try FileManager.default.copyItem(atPath: old, toPath: broken)
        let drop = try await Tool.run("/usr/bin/env", ["python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('ALTER TABLE DEVICE DROP COLUMN TYPE'); c.commit()", broken])
        #expect(drop.status == 0, "\(drop.stderr)")
        let result = try await CLI.run(["import", "--db", scratch.folder + "/broken.sqlite", broken])
        #expect(result.status == 1 && result.stdout.contains("DEVICE lacks TYPE_NAME (or TYPE)"), "\(result.stdout)")
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
