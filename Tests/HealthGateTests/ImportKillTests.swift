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

    /// Starts `healthgate import` and kills it when `killWhen` says so (polled every few
    /// milliseconds) unless it ended first; its exit status and whether the kill landed.
    static func importKilled(file: String, dbPath: String, killWhen: @escaping () async throws -> Bool) async throws
        -> (status: Int32, killed: Bool)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.executable)
        process.arguments = ["import", file, "--db", dbPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var killed = false
        while process.isRunning {
            if try await killWhen() {
                killed = kill(process.processIdentifier, SIGKILL) == 0
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        for _ in 0..<6000 where process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!process.isRunning, "the import did not end")
        return (process.terminationStatus, killed && process.terminationReason == .uncaughtSignal)
    }

    /// Starts `healthgate import` and kills it as soon as it has committed a part beyond
    /// `handedOver`. The watcher is a shell loop asking `sqlite3`, a process of its own: a test
    /// process whose task pool is busy with other suites would look too late and see the end.
    /// True when the kill landed.
    static func importKilledAfterAPart(file: String, dbPath: String, beyond handedOver: Int) async throws -> Bool {
        let script = """
            "$1" import "$2" --db "$3" >/dev/null 2>&1 &
            pid=$!
            while kill -0 "$pid" 2>/dev/null; do
              n=$(sqlite3 -readonly -cmd '.timeout 2000' "$3" "SELECT handed_over FROM imports WHERE status = 'in_progress'" 2>/dev/null)
              if [ -n "$n" ] && [ "$n" -gt "$4" ]; then kill -KILL "$pid"; wait "$pid"; echo killed; exit 0; fi
              sleep 0.005
            done
            wait "$pid"
            echo "exited $?"
            """
        let result = try await Tool.run("/bin/bash", ["-c", script, "watch", CLI.executable, file, dbPath, String(handedOver)])
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
        let never: () async throws -> Bool = { false }

        // One uninterrupted import of the same file, to compare with.
        let clean = try Scratch()
        #expect(try await Self.importKilled(file: file, dbPath: clean.dbPath, killWhen: never).status == 0)

        // Kills at random instants early in a run: opening, hashing, reading the first part.
        var random = SeededGenerator(seed: 0x6B11_1ED)
        for attempt in 0..<5 {
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 0...400, using: &random))
            _ = try await Self.importKilled(file: file, dbPath: scratch.dbPath) { ContinuousClock.now >= deadline }
            _ = try await Self.checkWholeParts(scratch.dbPath, "early kill \(attempt)")
        }

        // Kills as soon as a run has committed a part: the next run resumes after it.
        var cutBetweenParts = 0
        var finished = false
        for attempt in 0..<10 where !finished {
            let before = try await Self.state(scratch.dbPath).ledger.first?.handedOver ?? 0
            finished = try await !Self.importKilledAfterAPart(file: file, dbPath: scratch.dbPath, beyond: before)
            if try await Self.checkWholeParts(scratch.dbPath, "kill after a part, run \(attempt)") { cutBetweenParts += 1 }
        }
        #expect(finished, "ten runs never reached the end")
        // At least one kill left a part committed and the rest to do; otherwise this tested nothing.
        #expect(cutBetweenParts > 0, "no kill landed between two parts")

        let end = try await Self.state(scratch.dbPath)
        #expect(end.workouts == Self.tracks && end.samples == Self.tracks * Self.pointsPerTrack && end.outbox == Self.tracks)
        #expect(end.ledger.map(\.status) == [.imported] && end.ledger.first?.records == Self.tracks)
        let a = try await HealthStore(path: scratch.dbPath).workouts().map(\.id)
        let b = try await HealthStore(path: clean.dbPath).workouts().map(\.id)
        #expect(Set(a) == Set(b) && a.count == b.count)
    }
}
