import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate import` of a file committed in several parts, killed with SIGKILL at random
/// instants and started again until it finishes: every state a kill leaves is whole parts (each
/// stored workout has all its points and one outbox row), and the end state is the same as one
/// uninterrupted import. Nothing lost, nothing stored twice.
@Suite(.serialized) struct ImportKillTests {
    static let tracks = 300
    static let pointsPerTrack = 400

    /// A GPX with `tracks` runs of `pointsPerTrack` points: about 120,000 records plus samples,
    /// so three parts of `ImportLimits.transactionWeight` (50,000).
    static func largeGPX(_ scratch: Scratch) throws -> String {
        var text = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        text += #"<gpx version="1.1" creator="kill-test" xmlns="http://www.topografix.com/GPX/1/1">"# + "\n"
        let t0 = 1_704_067_200 // 2024-01-01T00:00:00Z
        for track in 0..<tracks {
            text += "<trk><name>run \(track)</name><type>running</type><trkseg>\n"
            for point in 0..<pointsPerTrack {
                let time = ISO8601.string(Date(timeIntervalSince1970: Double(t0 + track * 10_800 + point)))
                let lat = 52 + Double(point) * 0.00001, lon = 13 + Double(track) * 0.001
                text += #"<trkpt lat="\#(lat)" lon="\#(lon)"><ele>\#(30 + point % 7)</ele><time>\#(time)</time></trkpt>"# + "\n"
            }
            text += "</trkseg></trk>\n"
        }
        text += "</gpx>\n"
        return try scratch.file("large.gpx", Array(text.utf8))
    }

    struct State: Equatable {
        var workouts: Int, samples: Int, outbox: Int
        var ledger: [LedgerEntry]
    }

    static func state(_ dbPath: String) async throws -> State {
        let store = try await HealthStore(path: dbPath)
        let counts = try await store.tableCounts()
        return State(workouts: counts["workouts"] ?? -1, samples: counts["samples"] ?? -1, outbox: counts["outbox"] ?? -1,
                     ledger: try await store.ledger())
    }

    /// How a run of `healthgate import` is ended: never (it runs to its end), after a delay, or
    /// as soon as it has committed a part beyond the ledger's progress `handedOver`.
    enum Kill {
        case never
        case after(milliseconds: Int)
        case afterAPart(beyond: Int)
    }

    /// Runs `healthgate import FILE --db DB` and kills it with SIGKILL as `kill` says. The killing
    /// is done by a shell of its own (sleep, or a loop asking `sqlite3` for the ledger's
    /// progress), not by this test process: its task pool, busy with other suites, resumes a
    /// waiting task late, and a kill meant for the first second then lands after the end. True
    /// when the kill landed; false when the import ended first (with status 0, checked).
    static func importFile(_ file: String, into dbPath: String, _ kill: Kill) async throws -> Bool {
        let watch: String
        switch kill {
        case .never: watch = ""
        case .after(let milliseconds):
            watch = "sleep \(Double(milliseconds) / 1000); if kill -KILL \"$pid\" 2>/dev/null; then wait \"$pid\"; echo killed; exit 0; fi"
        case .afterAPart(let handedOver):
            watch = """
                while kill -0 "$pid" 2>/dev/null; do
                  n=$(sqlite3 -readonly -cmd '.timeout 2000' "$3" "SELECT handed_over FROM imports WHERE status = 'in_progress'" 2>/dev/null)
                  if [ -n "$n" ] && [ "$n" -gt \(handedOver) ]; then kill -KILL "$pid"; wait "$pid"; echo killed; exit 0; fi
                  sleep 0.005
                done
                """
        }
        let script = """
            "$1" import "$2" --db "$3" >/dev/null 2>&1 &
            pid=$!
            \(watch)
            wait "$pid"
            echo "exited $?"
            """
        let result = try await Tool.run("/bin/bash", ["-c", script, "import-kill", CLI.executable, file, dbPath])
        #expect(result.status == 0, "\(result.stderr)")
        let said = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(said == "killed" || said == "exited 0", "\(said) \(result.stderr)")
        return said == "killed"
    }

    /// Checks what a kill left: whole parts only, every stored workout with all its points and one
    /// outbox row, the ledger's progress equal to what is stored. True when the import was cut
    /// between two parts (some workouts stored, not all).
    static func checkWholeParts(_ dbPath: String, _ what: String) async throws -> Bool {
        let state = try await state(dbPath)
        #expect(state.samples == state.workouts * pointsPerTrack, "\(what): \(state)")
        #expect(state.outbox == state.workouts, "\(what): \(state)")
        #expect(state.ledger.count <= 1, "\(what): \(state)")
        guard let entry = state.ledger.first, entry.status == .inProgress else { return false }
        #expect(entry.handedOver == state.workouts, "\(what): \(entry)")
        return state.workouts > 0 && state.workouts < tracks
    }

    @Test func killedBetweenPartsAndAtRandomInstantsStoresEachRecordOnce() async throws {
        let scratch = try Scratch()
        let file = try Self.largeGPX(scratch)

        // One uninterrupted import of the same file, to compare with.
        let clean = try Scratch()
        #expect(try await !Self.importFile(file, into: clean.dbPath, .never))
        let expected = Set(try await HealthStore(path: clean.dbPath).workouts().map(\.id))
        #expect(expected.count == Self.tracks)

        /// The end state after `database`'s runs: every record once, the ledger done, the same
        /// workouts as the uninterrupted import.
        func checkEnd(_ database: String, _ what: String) async throws {
            let end = try await Self.state(database)
            #expect(end.workouts == Self.tracks && end.samples == Self.tracks * Self.pointsPerTrack && end.outbox == Self.tracks,
                    "\(what): \(end)")
            #expect(end.ledger.map(\.status) == [.imported] && end.ledger.first?.records == Self.tracks, "\(what): \(end)")
            let ids = try await HealthStore(path: database).workouts().map(\.id)
            #expect(Set(ids) == expected && ids.count == expected.count, "\(what)")
        }

        // Kills at random instants early in a run (opening, hashing, reading and committing the
        // first part), each run resuming what the one before left, then a run to the end.
        let early = try Scratch()
        var random = SeededGenerator(seed: 0x6B11_1ED)
        for attempt in 0..<5 {
            _ = try await Self.importFile(file, into: early.dbPath, .after(milliseconds: Int.random(in: 0...1500, using: &random)))
            _ = try await Self.checkWholeParts(early.dbPath, "early kill \(attempt)")
        }
        _ = try await Self.importFile(file, into: early.dbPath, .never)
        try await checkEnd(early.dbPath, "after the early kills")

        // Kills as soon as a run has committed a part: the next run resumes after it.
        var cutBetweenParts = 0
        var finished = false
        for attempt in 0..<10 where !finished {
            let before = try await Self.state(scratch.dbPath).ledger.first?.handedOver ?? 0
            finished = try await !Self.importFile(file, into: scratch.dbPath, .afterAPart(beyond: before))
            if try await Self.checkWholeParts(scratch.dbPath, "kill after a part, run \(attempt)") { cutBetweenParts += 1 }
        }
        #expect(finished, "ten runs never reached the end")
        // At least one kill left a part committed and the rest to do; otherwise this tested nothing.
        #expect(cutBetweenParts > 0, "no kill landed between two parts")
        try await checkEnd(scratch.dbPath, "after the kills between parts")
    }
}
