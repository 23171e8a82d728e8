import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate edit`, `delete` and `history` through the built binary, and two installs (two
/// databases logged in to one account) with a real server: entries, edits and deletions made on
/// either converge, a deletion racing an edit included, in both orders.
@Suite struct EditSyncTests {
    let t0 = Date(timeIntervalSince1970: 1_763_800_000)
    let environment = ["TZ": "Europe/Berlin"]

    func run(_ arguments: [String], _ install: Scratch) async throws -> Tool.Result {
        try await Tool.run(CLI.executable, arguments + ["--db", install.dbPath], environment: environment)
    }

    @discardableResult
    func succeed(_ arguments: [String], _ install: Scratch) async throws -> String {
        let result = try await run(arguments, install)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result.stdout
    }

    func sync(_ install: Scratch) async throws { try await succeed(["sync"], install) }

    /// Registers an account and logs `count` new databases in to it.
    func installs(_ count: Int, on server: ServerProcess, email: String) async throws -> [Scratch] {
        let url = server.url.absoluteString
        let registered = try await CLI.run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: "a long passphrase")
        #expect(registered.status == 0, "\(registered.stderr)")
        var installs: [Scratch] = []
        for i in 0..<count {
            let scratch = try Scratch()
            let login = try await CLI.run(["login", "--server", url, "--email", email, "--password-stdin", "--db", scratch.dbPath,
                                           "--device-name", "install-\(i)"], stdin: "a long passphrase")
            #expect(login.status == 0, "\(login.stderr)")
            installs.append(scratch)
        }
        return installs
    }

    /// Writes a drink into an install's database, as an entry made there.
    func logDrink(_ ml: Double, on install: Scratch, at time: Date) async throws -> String {
        let event = HabitEvent(id: RecordID(UUID()), habit: "hydration", time: time, value: ml, unit: "ml", source: Source(driver: "manual"))
        try await HealthStore(path: install.dbPath).write([.habit(event)])
        return event.id.description
    }

    /// The install's habit events by id (deleted ones left out).
    func events(_ install: Scratch) async throws -> [String: HabitEvent] {
        let all = try await HealthStore(path: install.dbPath).habitEvents()
        return Dictionary(uniqueKeysWithValues: all.map { ($0.id.description, $0) })
    }

    /// The versions (`version`, `deleted`) `history --json` prints for `id`.
    func versions(_ id: String, _ install: Scratch) async throws -> [String] {
        let text = try await succeed(["history", id, "--json"], install)
        let list = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
        return list.map { "\($0["version"] as? Int ?? 0)\(($0["deleted"] as? Bool) == true ? "-deleted" : "")" }
    }

    @Test func entriesEditsAndDeletionsReachTheOtherInstall() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(3, on: server, email: "ann@example.org")
        let (a, b, c) = (db[0], db[1], db[2])

        // A drink logged on A appears on B.
        let id = try await logDrink(250, on: a, at: t0)
        try await sync(a)
        try await sync(b)
        #expect(try await events(b)[id]?.value == 250)

        // An edit on A reaches B, with its version.
        let edited = try await succeed(["edit", id, "--value", "500", "--note", "big glass"], a)
        #expect(edited.contains("version 2") && edited.contains("changed note, value"), "\(edited)")
        try await sync(a)
        try await sync(b)
        let onB = try #require(try await events(b)[id])
        #expect(onB.value == 500 && onB.note == "big glass" && onB.version == 2 && onB.time == t0)
        #expect(try await versions(id, b) == ["2", "1"])

        // A delete on B reaches A.
        let deleted = try await succeed(["delete", String(id.prefix(8)), "--json"], b)
        let deletion = try JSONSerialization.jsonObject(with: Data(deleted.utf8)) as? [String: Any]
        #expect(deletion?["version"] as? Int == 3 && deletion?["deleted"] as? Bool == true && deletion?["type"] as? String == "habit")
        try await sync(b)
        try await sync(a)
        #expect(try await events(a)[id] == nil)
        #expect(try await versions(id, a) == ["3-deleted", "2", "1"])
        // A third install that only pulls now sees the server's state: a tombstone, nothing to store.
        try await sync(c)
        #expect(try await events(c).isEmpty)
        #expect(try await run(["history", id], c).stderr.contains("no record \(id)"))
    }

    /// A deletion on one install races an edit of the same version on the other, both offline;
    /// then both sync, in `deleterFirst` order or the other. Both end deleted, as the server does.
    func race(deleterFirst: Bool, email: String) async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(3, on: server, email: email)
        let (a, b, c) = (db[0], db[1], db[2])
        let id = try await logDrink(330, on: a, at: t0)
        try await sync(a)
        try await sync(b)
        #expect(try await events(b)[id]?.version == 1)

        // Offline: A deletes (tombstone version 2), B edits (data version 2).
        try await succeed(["delete", id], a)
        try await succeed(["edit", id, "--value", "750"], b)
        if deleterFirst {
            try await sync(a)
            try await sync(b)
            try await sync(a)
        } else {
            try await sync(b)
            try await sync(a)
            try await sync(b)
        }
        try await sync(c)  // the server's state, as a fresh install pulls it
        for install in [a, b] {
            #expect(try await events(install)[id] == nil, "the deletion wins at equal versions")
            #expect(try await versions(id, install).first == "2-deleted")
        }
        #expect(try await events(c).isEmpty, "the server holds the tombstone")
        #expect(try await HealthStore(path: b.dbPath).deadLetterCount() == 0)
        #expect(try await HealthStore(path: a.dbPath).outboxDepth() == 0)
        #expect(try await HealthStore(path: b.dbPath).outboxDepth() == 0)
    }

    @Test func aDeletionRacingAnEditWinsWhenItSyncsFirst() async throws {
        try await race(deleterFirst: true, email: "race1@example.org")
    }

    @Test func aDeletionRacingAnEditWinsWhenItSyncsLast() async throws {
        try await race(deleterFirst: false, email: "race2@example.org")
    }

    /// Two installs edit the same version offline: whichever syncs first is the version the
    /// server keeps, and the other install takes it when it pulls.
    @Test func twoEditsOfOneVersionConvergeOnTheFirstStored() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "edits@example.org")
        let (a, b) = (db[0], db[1])
        let id = try await logDrink(330, on: a, at: t0)
        try await sync(a)
        try await sync(b)
        try await succeed(["edit", id, "--value", "500", "--note", "from A"], a)
        try await succeed(["edit", id, "--value", "750"], b)
        try await sync(b)
        try await sync(a)
        try await sync(b)
        for install in [a, b] {
            let event = try #require(try await events(install)[id])
            #expect(event.version == 2 && event.value == 750 && event.note == nil, "B's edit was stored first")
        }
        #expect(try await HealthStore(path: a.dbPath).outboxDepth() == 0)
    }

    @Test func anEditedAndADeletedImportedWorkoutSyncAndStaySo() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "run@example.org")
        let (a, b) = (db[0], db[1])
        let files = ["Fixtures/tcx/garmin-forerunner410-run.tcx", "Fixtures/gpx/apple-health-workout-route.gpx"].map(Self.fixture)
        try await succeed(["import"] + files, a)
        let imported = try await HealthStore(path: a.dbPath).workouts()
        try #require(imported.count == 2)
        let (kept, gone) = (imported[0].id, imported[1].id)
        try await sync(a)
        try await sync(b)
        #expect(try await HealthStore(path: b.dbPath).workouts().count == 2)

        try await succeed(["edit", kept, "--kcal", "432", "--distance", "5km", "--sport", "trail_running"], a)
        try await succeed(["delete", gone], a)
        // The same files again: the ledger skips them (a resumed import's rewrite is in EditStoreTests).
        try await succeed(["import"] + files, a)
        try await sync(a)
        try await sync(b)
        for install in [a, b] {
            let workouts = try await HealthStore(path: install.dbPath).workouts()
            #expect(workouts.map(\.id) == [kept])
            #expect(workouts.first?.energyKcal == 432 && workouts.first?.distanceM == 5000 && workouts.first?.sport == "trail_running")
            #expect(workouts.first?.version == 2 && (workouts.first?.samples ?? 0) > 0, "the series stay")
            #expect(try await versions(gone, install) == ["2-deleted", "1"])
            let shown = try await run(["show", gone], install)
            #expect(shown.status == 1 && shown.stderr.contains("no workout with id \(gone)"), "a deleted workout is not shown")
        }
    }

    /// Definitions travel like entries: a habit and a water goal defined on A are there on B,
    /// where the habit can be logged and the goal counts; B's new goal (version 2) reaches A.
    @Test func definitionsReachTheOtherInstall() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "dee@example.org")
        let (a, b) = (db[0], db[1])
        try await succeed(["define", "habit", "Reading", "--kind", "numeric", "--unit", "pages", "--target", "20", "--per", "day"], a)
        try await succeed(["define", "goal", "water", "2l"], a)
        try await sync(a)
        try await sync(b)
        let logged = try await succeed(["log", "habit", "reading", "25", "--json"], b)
        #expect(logged.contains("\"pages\""), "\(logged)")
        let onB = try await HealthStore(path: b.dbPath).definitions(.habit)
        #expect(onB.map(\.name).sorted() == ["Reading", "hydration"])

        try await succeed(["define", "goal", "water", "2.5l"], b)
        try await sync(b)
        try await sync(a)
        let goal = try #require(try await HealthStore(path: a.dbPath).definition(.habit, name: "hydration"))
        #expect(goal.version == 2)
        if case .habit(let habit) = goal.body { #expect(habit.target?.amount == 2500) } else { Issue.record("not a habit: \(goal)") }
        let today = try await succeed(["today", "--json"], a)
        #expect(today.contains("2500"), "\(today)")
    }

    /// A goal changed on one install (`define habit` again: a new version of the definition) and a
    /// workout's duration edited on the other reach both, each once, with their histories.
    @Test func anEditedGoalAndAnEditedWorkoutDurationConverge() async throws {
        let server = try await ServerProcess.start()
        defer { server.stop() }
        let db = try await installs(2, on: server, email: "goals@example.org")
        let (a, b) = (db[0], db[1])
        try await succeed(["define", "habit", "Reading", "--kind", "numeric", "--unit", "pages", "--target", "20"], a)
        let logged = try await succeed(["log", "workout", "running", "--duration", "45m", "--at", "2025-11-20T07:00", "--json"], a)
        let run = try #require((try JSONSerialization.jsonObject(with: Data(logged.utf8)) as? [String: Any])?["id"] as? String)
        try await sync(a)
        try await sync(b)

        let goal = try await succeed(["define", "habit", "reading", "--target", "3", "--per", "week", "--at-most"], b)
        #expect(goal.contains("defined habit Reading (version 2)"), "\(goal)")
        try await succeed(["edit", run, "--duration", "1h"], a)
        try await sync(b)
        try await sync(a)
        try await sync(b)
        let definition = Definition.id(.habit, name: "Reading").description
        for install in [a, b] {
            let store = try await HealthStore(path: install.dbPath)
            let habits = try await store.definitions(.habit)
            #expect(habits.count == 1 && habits.first?.version == 2 && habits.first?.name == "Reading")
            if case .habit(let h)? = habits.first?.body {
                #expect(h == HabitDefinition(valueKind: .numeric, unit: "pages", target: HabitTarget(amount: 3, period: .week, direction: .atMost)))
            } else {
                Issue.record("not a habit: \(habits)")
            }
            #expect(try await versions(definition, install) == ["2", "1"])
            let workouts = try await store.workouts()
            #expect(workouts.count == 1 && workouts.first?.version == 2 && workouts.first?.elapsedS == 3600)
            #expect(workouts.first?.start == "2025-11-20T06:00:00Z" && workouts.first?.end == "2025-11-20T07:00:00Z")
            #expect(try await versions(run, install) == ["2", "1"])
            #expect(try await store.outboxDepth() == 0)
        }
    }

    @Test func clearErrorsAndHelp() async throws {
        let a = try Scratch()
        let id = try await logDrink(250, on: a, at: t0)
        let date = try await run(["edit", id, "--at", "2025-11-20T08:00"], a)
        #expect(date.status == 1 && date.stderr.contains("the date of a record cannot change: delete it and log a new one"), "\(date.stderr)")
        let field = try await run(["edit", id, "--kcal", "100"], a)
        #expect(field.status == 1 && field.stderr.contains("a habit event has no --kcal"), "\(field.stderr)")
        let unknown = try await run(["edit", "abcdef12", "--value", "1"], a)
        #expect(unknown.status == 1 && unknown.stderr.contains("no record abcdef12"), "\(unknown.stderr)")
        let notAnID = try await run(["delete", "not-an-id"], a)
        #expect(notAnID.status == 1 && notAnID.stderr.contains("is not a record id"), "\(notAnID.stderr)")
        let distance = try await run(["edit", id, "--distance", "5 parsecs"], a)
        #expect(distance.status == 64 && distance.stderr.contains("is not a distance"), "\(distance.stderr)")
        let history = try await run(["history", "abcdef12"], a)
        #expect(history.status == 1 && history.stderr.contains("no record abcdef12"), "\(history.stderr)")
        #expect(try await events(a)[id]?.version == 1, "nothing was written")
        let table = try await succeed(["history", id], a)
        #expect(table.contains("VERSION") && table.contains("habit \(id)"), "\(table)")
        for (command, words) in [("edit", ["--value", "--note", "--kcal", "--distance", "--db", "--state-dir", "--json", "cannot change"]),
                                 ("delete", ["tombstone", "--db", "--json"]), ("history", ["versions", "--db", "--json"])] {
            let help = try await CLI.run([command, "--help"])
            #expect(help.status == 0)
            for word in words { #expect(help.stdout.contains(word), "\(command) --help lacks \(word)") }
        }
    }

    static func fixture(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(relative).path
    }
}
