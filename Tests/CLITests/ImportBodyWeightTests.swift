import Foundation
import Testing
import TestSupport

/// `healthgate import` estimates the energy of workouts a file gives without it with the body
/// weight `--body-weight` names, else the body profile's, else 70 kg, and says which.
@Suite(.serialized) struct ImportBodyWeightTests {
    /// A GPX run: no energy in the file.
    static let file = PackagePaths.fixtures + "/gpx/garmin-connect-9266323613-hr.gpx"

    /// Imports the file into a fresh database after `setup`; the workout's estimated energy and
    /// the reported weight.
    func importRun(_ scratch: Scratch, _ tag: String, setup: [[String]] = [], options: [String] = [])
        async throws -> (kcal: Double, weight: [String: Any], line: String) {
        let db = scratch.folder + "/\(tag).sqlite"
        for command in setup {
            let result = try await CLI.run(command + ["--db", db])
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        let imported = try #require(try await CLI.json(["import", "--json", "--db", db] + options + [Self.file]) as? [String: Any])
        let weight = try #require(imported["body_weight"] as? [String: Any], "\(imported)")
        let workouts = try #require(try await CLI.json(["workouts", "--json", "--db", db]) as? [[String: Any]])
        #expect(workouts.count == 1)
        #expect(workouts.first?["energy_source"] as? String == "estimated", "\(workouts)")
        let kcal = try #require(workouts.first?["energy_kcal"] as? Double)
        let again = try await CLI.run(["import", "--db", db] + options + [Self.file])
        #expect(again.status == 0, "\(again.stderr)")
        return (kcal, weight, again.stdout)
    }

    @Test func optionThenProfileThenDefault() async throws {
        let scratch = try Scratch()
        let byDefault = try await importRun(scratch, "default")
        #expect(byDefault.weight["kg"] as? Double == 70 && byDefault.weight["from"] as? String == "default")
        #expect(byDefault.line.contains("energy estimates (workouts without energy) use 70 kg (default, no body profile)"), "\(byDefault.line)")

        let profile = [["define", "profile", "--weight", "84kg"]]
        let byProfile = try await importRun(scratch, "profile", setup: profile)
        #expect(byProfile.weight["kg"] as? Double == 84 && byProfile.weight["from"] as? String == "profile")
        #expect(byProfile.line.contains("use 84 kg (body profile)"), "\(byProfile.line)")
        // MET x weight x hours: the energy scales with the weight (stored to 0.1 kcal).
        #expect(byDefault.kcal > 10)
        #expect(abs(byProfile.kcal - byDefault.kcal * 84 / 70) <= 0.2, "\(byProfile.kcal) vs \(byDefault.kcal)")

        let byOption = try await importRun(scratch, "option", setup: profile, options: ["--body-weight", "56"])
        #expect(byOption.weight["kg"] as? Double == 56 && byOption.weight["from"] as? String == "option")
        #expect(byOption.line.contains("use 56 kg (--body-weight)"), "\(byOption.line)")
        #expect(abs(byOption.kcal - byDefault.kcal * 56 / 70) <= 0.2, "\(byOption.kcal) vs \(byDefault.kcal)")

        let bad = try await CLI.run(["import", "--body-weight", "0", "--db", scratch.folder + "/bad.sqlite", Self.file])
        #expect(bad.status == 64 && bad.stderr.contains("--body-weight must be in kg, 1-500"), "\(bad.stderr)")
    }

    /// The daemon's watch folder imports with the profile's weight too.
    @Test func theDaemonsImportsUseTheProfile() async throws {
        let scratch = try Scratch()
        let byDefault = try await importRun(scratch, "default")
        let folder = try temporaryFolder("daemon-weight")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let defined = try await CLI.run(["define", "profile", "--weight", "84kg", "--state-dir", folder])
        #expect(defined.status == 0, "\(defined.stderr)")
        let daemon = try DaemonProcess(folder: folder, arguments: [])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        try FileManager.default.copyItem(atPath: Self.file, toPath: folder + "/inbox/run.gpx")
        try await eventually("the daemon imports run.gpx", detail: daemon.log) {
            FileManager.default.fileExists(atPath: folder + "/inbox/imported/run.gpx")
        }
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        let workouts = try #require(try await CLI.json(["workouts", "--json", "--state-dir", folder]) as? [[String: Any]])
        #expect(workouts.count == 1, "\(daemon.log)")
        let kcal = try #require(workouts.first?["energy_kcal"] as? Double)
        #expect(workouts.first?["energy_source"] as? String == "estimated")
        #expect(abs(kcal - byDefault.kcal * 84 / 70) <= 0.2, "\(kcal) vs \(byDefault.kcal)")
    }
}
