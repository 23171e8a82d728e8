import DriverKit
import DriverRegistry
import Foundation
import HealthGateDaemon
import HealthModel
import HealthPipeline
import HealthStore
import Testing
import TestSupport

/// Loop Habit Tracker, HabitBull and generic CSV files through the built `healthgate` binary into
/// a real database: what is stored, that a re-import stores nothing new, that bad files store
/// nothing and say where they are bad.
@Suite struct HabitImportTests {
    static let loopHabits: Set<Habit> = [
        Habit("Meditate", .yesNo, target: "at_least 1/day"),
        Habit("Water glasses", .numeric, unit: "glasses", target: "at_least 8/day"),
        Habit("Gym", .yesNo, target: "at_least 3/week"),
        Habit("Sugar", .numeric, unit: "g", target: "at_most 30/day"),
    ]

    /// What the user entered in Loop (the backup holds exactly this).
    static let backupEvents: Set<Event> = [
        Event("Meditate", "2024-03-01", 1), Event("Meditate", "2024-03-02", 1, note: "Forgot to do it, really"),
        Event("Meditate", "2024-03-03", nil, label: "skipped"), Event("Meditate", "2024-03-04", nil, label: "unknown"),
        Event("Meditate", "2024-03-05", 1), Event("Meditate", "2024-03-06", 0, label: "not_done", note: "sick, \"flu\""),
        Event("Water glasses", "2024-03-01", 8, unit: "glasses"), Event("Water glasses", "2024-03-02", 2.5, unit: "glasses"),
        Event("Water glasses", "2024-03-03", 12, unit: "glasses"), Event("Water glasses", "2024-03-05", 0, unit: "glasses"),
        Event("Water glasses", "2024-03-06", nil, label: "skipped"),
        Event("Gym", "2024-03-01", 1), Event("Gym", "2024-03-03", 1), Event("Gym", "2024-03-05", 1),
        Event("Sugar", "2024-03-02", 45, unit: "g"), Event("Sugar", "2024-03-04", 20, unit: "g"),
    ]

    /// What a 2.3.1 CSV export keeps of them: an UNKNOWN or a numerical NO without a note fills a
    /// day without entry there, so it is not an event (the 0 glasses of 03-05 are lost to Loop's
    /// own spelling, README "Records").
    static let modernCSVEvents: Set<Event> = backupEvents.subtracting([
        Event("Meditate", "2024-03-04", nil, label: "unknown"), Event("Water glasses", "2024-03-05", 0, unit: "glasses"),
    ])

    @Test func loopBackupIsReadOnlyAndReimportStoresNothing() async throws {
        let scratch = try Scratch()
        let backup = try scratch.copy(loopBackup)
        let before = try sha256(backup)
        let result = try await CLI.json(["import", "--json"] + scratch.db + [backup])
        let totals = try #require(result["totals"] as? [String: Any])
        #expect(totals["imported"] as? Int == 1 && totals["records"] as? Int == 20, "\(result)")
        let (events, habits) = try await stored(try await scratch.store())
        #expect(habits == Self.loopHabits)
        #expect(events == Self.backupEvents, "\(events.symmetricDifference(Self.backupEvents))")
        // Never written to, nothing created beside it.
        #expect(try sha256(backup) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.folder).sorted().filter { $0.hasPrefix("Loop") } == [
            "Loop Habits Backup 2024-03-07 101500.db",
        ])
        // The same file: the ledger knows it. An older backup of schema 21 (other bytes, the same
        // check-ins without notes) and the CSV export: nothing new.
        let again = try await CLI.run(["import"] + scratch.db + [backup])
        #expect(again.status == 0 && again.stdout.contains("1 already imported"), "\(again.stdout)")
        let older = try await CLI.json(["import", "--json"] + scratch.db + [habits21, habitsFolder("loop-csv-2.3.1")])
        #expect((older["totals"] as? [String: Any])?["records"] as? Int == 0, "\(older)")
        #expect(try await stored(try await scratch.store()).events == Self.backupEvents)
    }

    var habits21: String { habits + "/loop-backup-v21.db" }
    func habitsFolder(_ name: String) -> String { habits + "/" + name }

    @Test(arguments: ["loop-csv-2.3.1", "loop-csv-2.3.0", "loop-csv-2.3.1-wide-only"])
    func loopCSVExportFolders(folder: String) async throws {
        let scratch = try Scratch()
        let result = try await CLI.json(["import", "--json"] + scratch.db + [habitsFolder(folder)])
        let totals = try #require(result["totals"] as? [String: Any])
        #expect(totals["failed"] as? Int == 0 && totals["skipped"] as? Int == 0, "\(result)")
        let (events, habits) = try await stored(try await scratch.store())
        switch folder {
        case "loop-csv-2.3.1":
            #expect(events == Self.modernCSVEvents, "\(events.symmetricDifference(Self.modernCSVEvents))")
            #expect(habits == Self.loopHabits)
        case "loop-csv-2.3.0":
            // No notes, no types, units or numerical targets before 2.3.1: the values tell
            // numerical habits (codes other than -1...3) from yes/no ones.
            let expected = Set(Self.modernCSVEvents.map { (event: Event) -> Event in
                var plain = event
                plain.unit = nil
                plain.note = nil
                return plain
            }.filter { (event: Event) in event.label != "not_done" })
            #expect(events == expected, "\(events.symmetricDifference(expected))")
            #expect(habits == [Habit("Meditate", .yesNo, target: "at_least 1/day"), Habit("Water glasses", .numeric),
                               Habit("Gym", .yesNo, target: "at_least 3/week"), Habit("Sugar", .numeric)])
        default:
            // The root table alone: no notes, types and units from Habits.csv.
            let expected = Set(Self.modernCSVEvents.map { (event: Event) -> Event in
                var plain = event
                plain.note = nil
                return plain
            }.filter { (event: Event) in event.label != "not_done" })
            #expect(events == expected, "\(events.symmetricDifference(expected))")
            #expect(habits == Self.loopHabits)
        }
        // Each file again, with other bytes (a blank line added): nothing new.
        let copy = try scratch.copy(habitsFolder(folder), as: "again")
        for file in try ImportPipeline.discover([copy]).map(\.path) {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("\n".utf8))
            try handle.close()
        }
        let again = try await CLI.json(["import", "--json"] + scratch.db + [copy])
        #expect((again["totals"] as? [String: Any])?["records"] as? Int == 0, "\(again)")
        #expect((again["totals"] as? [String: Any])?["failed"] as? Int == 0, "\(again)")
    }

    /// The export as Loop hands it over, "Loop Habits CSV 2024-03-07.zip", read in place: the same
    /// records as its extracted folder, and nothing new after the folder was imported.
    @Test(arguments: ["loop-csv-2.3.1", "loop-csv-2.3.0"])
    func loopCSVExportZip(folder: String) async throws {
        let scratch = try Scratch()
        let zip = scratch.folder + "/Loop Habits CSV 2024-03-07.zip"
        // Habits.csv first, then each habit's folder, then the root tables (the zip module of
        // Python's standard library, deflated).
        let script = """
            import os, sys, zipfile
            root, out = sys.argv[1], sys.argv[2]
            names = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
            names.sort(key=lambda n: (n != "Habits.csv", "/" not in n, n))
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for name in names:
                    z.write(os.path.join(root, name), name)
            """
        let made = try await Tool.run("/usr/bin/env", ["python3", "-c", script, habitsFolder(folder), zip])
        #expect(made.status == 0, "\(made.stderr)")
        let result = try await CLI.json(["import", "--json"] + scratch.db + [zip])
        let totals = try #require(result["totals"] as? [String: Any])
        #expect(totals["imported"] as? Int == 1 && totals["failed"] as? Int == 0, "\(result)")
        let fromZip = try await stored(try await scratch.store())

        let other = try Scratch()
        _ = try await CLI.json(["import", "--json"] + other.db + [habitsFolder(folder)])
        let fromFolder = try await stored(try await other.store())
        #expect(fromZip.events == fromFolder.events, "\(fromZip.events.symmetricDifference(fromFolder.events))")
        #expect(fromZip.habits == fromFolder.habits)
        #expect(!fromZip.events.isEmpty)
        let again = try await CLI.json(["import", "--json"] + other.db + [zip])
        #expect((again["totals"] as? [String: Any])?["records"] as? Int == 0, "\(again)")
    }

    /// A zip that is not Loop's export (no Habits.csv at its top) but starts like one: a clear
    /// error naming the file, nothing stored.
    @Test func aZipWithoutHabitsCSVIsRefused() async throws {
        let scratch = try Scratch()
        let zip = scratch.folder + "/checkmarks.zip"
        let script = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z: z.writestr('Checkmarks.csv', 'Date,Meditate,\\n2024-03-01,YES_MANUAL,\\n')"
        let made = try await Tool.run("/usr/bin/env", ["python3", "-c", script, zip])
        #expect(made.status == 0, "\(made.stderr)")
        let result = try await CLI.run(["import"] + scratch.db + [zip])
        #expect(result.status == 1)
        #expect(result.stdout.contains("no Habits.csv at its top") || result.stderr.contains("no Habits.csv at its top"),
                "\(result.stdout) \(result.stderr)")
        #expect(try await stored(try await scratch.store()).events.isEmpty)
    }

    @Test func habitBullExport() async throws {
        let scratch = try Scratch()
        let file = habits + "/habitbull.csv"
        let result = try await CLI.json(["import", "--json"] + scratch.db + [file])
        #expect((result["totals"] as? [String: Any])?["records"] as? Int == 8, "\(result)")
        let (events, habitSet) = try await stored(try await scratch.store())
        #expect(habitSet == [Habit("Read", .yesNo), Habit("Pushups", .numeric)])
        let expected: Set<Event> = [
            Event("Read", "2024-03-01", 1), Event("Read", "2024-03-02", 0, label: "not_done", note: "too tired, slept\nearly"),
            Event("Read", "2024-03-03", 1, note: "=HYPERLINK(\"http://example.invalid/x\",\"click\")"),
            Event("Pushups", "2024-03-01", 25), Event("Pushups", "2024-03-02", 0), Event("Pushups", "2024-03-03", 40, note: "+1 rep"),
        ]
        #expect(events == expected, "\(events.symmetricDifference(expected))")
        // The formula is stored as text, and the CSV export keeps it text for spreadsheets.
        let export = scratch.folder + "/all.csv"
        let exported = try await CLI.run(["export"] + scratch.db + ["--output", export])
        #expect(exported.status == 0, "\(exported.stderr)")
        let text = try String(contentsOfFile: export, encoding: .utf8)
        #expect(text.contains("\"'=HYPERLINK(\"\"http://example.invalid/x\"\",\"\"click\"\")\""))
        #expect(text.contains(",'+1 rep,"))
        #expect(!text.contains(",=HYPERLINK") && !text.contains(",+1 rep"))
    }

    @Test func genericCSVWithAMapping() async throws {
        let scratch = try Scratch()
        let folder = habits + "/generic"
        let drinks = try await CLI.json(["import", "--json", "--mapping", folder + "/drinks.toml"] + scratch.db + [folder + "/drinks.csv"])
        #expect((drinks["totals"] as? [String: Any])?["records"] as? Int == 3, "\(drinks)")
        let weight = try await CLI.json(["import", "--json", "--mapping", folder + "/weight.toml"] + scratch.db + [folder + "/weight.csv"])
        #expect((weight["totals"] as? [String: Any])?["records"] as? Int == 2, "\(weight)")
        let store = try await scratch.store()
        let events = try await store.habitEvents().map { "\(ISO8601.string($0.time)) \($0.habit) \($0.value.map { NumberText.plain($0) } ?? "-") \($0.unit ?? "-") \($0.note ?? "-")" }
        #expect(events.sorted() == [
            "2024-03-01T07:00:00Z coffee 200 ml -2+3", "2024-03-01T12:30:00Z coffee 150 ml @SUM(A1:A9)",
            "2024-03-02T09:15:00Z tea - - said \"no, thanks\"",
        ])
        let measurements = try await store.measurements().map { "\(ISO8601.string($0.time)) \($0.kind.rawValue) \(NumberText.plain($0.value))" }
        #expect(measurements.sorted() == ["2024-03-01T06:30:00Z weight 72.4", "2024-03-02T06:45:00Z weight 72.1"])
        // The export escapes the formula-looking notes.
        let exported = try await CLI.run(["export"] + scratch.db)
        #expect(exported.stdout.contains(",'-2+3,") && exported.stdout.contains(",'@SUM(A1:A9),"), "\(exported.stdout)")

        // Without a mapping (into another database: this one's ledger knows the files): a CSV
        // named on the command line fails saying how; one in a folder is skipped.
        let other = try Scratch()
        let named = try await CLI.run(["import"] + other.db + [folder + "/drinks.csv"])
        #expect(named.status == 1 && named.stdout.contains("give a mapping"), "\(named.stdout)")
        let walked = try await CLI.json(["import", "--json"] + other.db + [folder])
        #expect((walked["totals"] as? [String: Any])?["skipped"] as? Int == 4, "\(walked)")  // two CSVs, two mappings
        #expect((walked["totals"] as? [String: Any])?["failed"] as? Int == 0, "\(walked)")
        // A mapping the importer refuses: the file and the key.
        let bad = try scratch.file("bad.toml", "record = \"meal\"\ntime_column = \"Date\"\nname = \"x\"\n")
        let refused = try await CLI.run(["import", "--mapping", bad] + other.db + [folder + "/drinks.csv"])
        #expect(refused.status != 0 && refused.stderr.contains("bad.toml") && refused.stderr.contains("record"), "\(refused.stderr)")
        let column = try scratch.file("column.toml", "record = \"habit\"\ntime_column = \"When\"\nname = \"x\"\n")
        let missing = try await CLI.run(["import", "--mapping", column] + other.db + [folder + "/drinks.csv"])
        #expect(missing.status == 1 && missing.stdout.contains("line 1") && missing.stdout.contains("'When' is not a column"), "\(missing.stdout)")
    }

    @Test(arguments: [
        ("hostile/other-app.db", "an SQLite database no driver reads"),
        ("hostile/loop-backup-v26.db", "schema version 26 is newer"),
        ("hostile/loop-backup-v19.db", "schema version 19 is older"),
        ("hostile/habitbull-bad-quote.csv", "line 3, column 29: a quote inside a field"),
        ("hostile/habitbull-columns.csv", "line 3, column 1: 5 columns where the header has 6"),
        ("hostile/habitbull-bad-date.csv", "line 3, column 4: '2024-02-30' is not a date"),
        ("hostile/habitbull-unclosed.csv", "line 2, column 1: a quoted field opened on this line is never closed"),
    ])
    func badFilesStoreNothingAndSayWhere(file: String, message: String) async throws {
        let scratch = try Scratch()
        let path = try scratch.copy(habits + "/" + file)
        let before = try sha256(path)
        let result = try await CLI.run(["import"] + scratch.db + [path])
        #expect(result.status == 1, "\(result.stdout)")
        #expect(result.stdout.contains("FAILED") && result.stdout.contains(path) && result.stdout.contains(message), "\(result.stdout)")
        let counts = try await (try await scratch.store()).tableCounts()
        #expect(counts["habit_events"] == 0 && counts["definitions"] == 0 && counts["outbox"] == 0, "\(counts)")
        #expect(try sha256(path) == before)
    }

    @Test func dryRunShowsTheFirstRecordsAndStoresNothing() async throws {
        let scratch = try Scratch()
        // Against no database: none is created.
        let fresh = try await CLI.json(["import", "--dry-run", "--json"] + scratch.db + [loopBackup])
        #expect(!FileManager.default.fileExists(atPath: scratch.dbPath))
        let files = try #require(fresh["files"] as? [[String: Any]])
        #expect(files.first?["status"] as? String == "would_import" && files.first?["records"] as? Int == 20, "\(fresh)")
        let preview = try #require((fresh["preview"] as? [[String: Any]])?.first?["records"] as? [[String: Any]])
        #expect(preview.count == 5)
        #expect(preview.first?["type"] as? String == "definition", "\(preview)")

        // Against a database: every importer, the ledger and the records untouched.
        _ = try await CLI.run(["import"] + scratch.db + [habits + "/habitbull.csv"])
        let counts = try await (try await scratch.store()).tableCounts()
        let text = try await CLI.run(["import", "--dry-run", "--mapping", habits + "/generic/weight.toml"] + scratch.db + [
            habitsFolder("loop-csv-2.3.1"), habits21, habits + "/generic/weight.csv", habits + "/habitbull.csv",
        ])
        #expect(text.status == 0, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("habit  ") && text.stdout.contains("Meditate") && text.stdout.contains("label skipped"), "\(text.stdout)")
        #expect(text.stdout.contains("definition  habit  Water glasses  numeric (glasses)  goal at least 8 per day"), "\(text.stdout)")
        #expect(text.stdout.contains("measurement  2024-03-01T06:30:00Z  weight  72.4 kg"), "\(text.stdout)")
        #expect(text.stdout.contains("already imported"), "\(text.stdout)")
        #expect(try await (try await scratch.store()).tableCounts() == counts)
    }

    /// The daemon's way: `[importers.csv]` and `[importers.loop]` in its configuration make the
    /// importers its watch folders hand files to.
    @Test func daemonConfigurationConfiguresTheImporters() async throws {
        let scratch = try Scratch()
        let config = try DaemonConfig.parse("""
            [importers.loop]
            time_zone = "Pacific/Auckland"
            [importers.csv]
            record = "measurement"
            name = "weight"
            time_column = "when"
            date_format = "dd.MM.yyyy HH:mm"
            time_zone = "UTC"
            value_column = "kg"
            delimiter = ";"
            """, stateDirectory: scratch.folder, drivers: Registry.catalog)
        let importers = try Registry.catalog.makeFileImporters(settings: config.importers, context: { .standalone($0) })
        let store = try await scratch.store()
        let pipeline = ImportPipeline(store: store, importers: importers)
        let weight = await pipeline.importFile(habits + "/generic/weight.csv")
        #expect(weight.status == .imported && weight.records == 2, "\(weight)")
        #expect(try await store.measurements().map { ISO8601.string($0.time) }.sorted() == ["2024-03-01T07:30:00Z", "2024-03-02T07:45:00Z"])
        let loop = await pipeline.importFile(loopBackup)
        #expect(loop.status == .imported && loop.records == 20, "\(loop)")
        // Noon in Auckland (UTC+13 in March).
        #expect(try await store.habitEvents().allSatisfy { ISO8601.string($0.time).hasSuffix("T23:00:00Z") })
        #expect(throws: ConfigError.self) {
            _ = try DaemonConfig.parse("[importers.loop]\ntime_zone = \"Mars/Olympus\"\n", stateDirectory: scratch.folder, drivers: Registry.catalog)
        }
    }
}
