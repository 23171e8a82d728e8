import DriverKit
import Foundation
import Testing
import WatchLayout

@Suite struct GarminLayoutTests {
    let layout = GarminLayout.garmin

    @Test("GARMIN at the root or below a wrapping level; its data folders in any case; nothing else")
    func folders() {
        #expect(layout.folder([]) == .walk)
        #expect(layout.folder(["GARMIN"]) == .walk && layout.folder(["Garmin"]) == .walk)
        #expect(layout.folder(["GARMIN", "Activity"]) == .data(.activity))
        #expect(layout.folder(["garmin", "MONITOR"]) == .data(.monitor))
        #expect(layout.folder(["GARMIN", "HRVStatus"]) == .data(.hrvStatus) && layout.folder(["GARMIN", "HRV"]) == .data(.hrvStatus))
        #expect(layout.folder(["GARMIN", "Sleep"]) == .data(.sleep) && layout.folder(["GARMIN", "Weight"]) == .data(.weight))
        #expect(layout.folder(["GARMIN", "Metrics"]) == .data(.metrics))
        // The Fenix 6's extra level.
        #expect(layout.folder(["Primary"]) == .walk)
        #expect(layout.folder(["Primary", "GARMIN"]) == .walk)
        #expect(layout.folder(["Primary", "GARMIN", "Activity"]) == .data(.activity))
        // Not for us: music, other folders, data folders elsewhere or deeper, two wrapping levels.
        #expect(layout.folder(["Music"]) == .ignore)
        #expect(layout.folder(["GARMIN", "Apps"]) == .ignore)
        #expect(layout.folder(["Activity"]) == .ignore)
        #expect(layout.folder(["GARMIN", "Activity", "Old"]) == .ignore)
        #expect(layout.folder(["Primary", "Primary", "GARMIN"]) == .ignore)
    }

    @Test("FIT files in any case; hidden files and other kinds are not")
    func files() {
        #expect(layout.isFitFile("A1B2C3D4.FIT") && layout.isFitFile("2026-11-28-07-00-00.fit"))
        #expect(!layout.isFitFile("._A1B2C3D4.FIT") && !layout.isFitFile("notes.txt") && !layout.isFitFile("FIT"))
    }

    @Test("a model's other folder names are data")
    func otherNames() {
        var custom = GarminLayout.garmin
        custom.folders["activities"] = .activity
        custom.wrappers.insert("internal shared storage")
        #expect(custom.folder(["Internal shared storage", "GARMIN", "Activities"]) == .data(.activity))
    }
}

@Suite struct WatchFetchPlannerTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func file(_ path: String = "GARMIN/Activity/A1.FIT", size: UInt64 = 1000, age: TimeInterval = 3600) -> WatchFile {
        WatchFile(path: path, size: size, modified: now.addingTimeInterval(-age), kind: .activity)
    }

    @Test("a file not fetched before is fetched; the same version again is not; a changed one is")
    func newAndKnown() {
        let planner = WatchFetchPlanner()
        let a = file()
        #expect(planner.decide(a, fetched: WatchFetched(), previous: nil, now: now) == .fetch)
        let fetched = WatchFetched().adding(a)
        #expect(planner.decide(a, fetched: fetched, previous: a, now: now) == .alreadyFetched)
        #expect(planner.decide(file(size: 2000), fetched: fetched, previous: nil, now: now) == .fetch)
        // Kept as whole seconds: the same time read again with a fraction is the same version.
        var again = a
        again.modified = a.modified!.addingTimeInterval(0.4)
        #expect(planner.decide(again, fetched: fetched, previous: nil, now: now) == .alreadyFetched)
    }

    @Test("a file that grew since the last look, or was modified just now, waits for the next look")
    func stillWriting() {
        let planner = WatchFetchPlanner()
        let growing = file(size: 4096, age: 30)
        #expect(planner.decide(growing, fetched: WatchFetched(), previous: file(size: 2048, age: 31), now: now) == .stillWriting)
        #expect(planner.decide(file(age: 0.5), fetched: WatchFetched(), previous: nil, now: now) == .stillWriting)
        #expect(planner.decide(growing, fetched: WatchFetched(), previous: growing, now: now) == .fetch)
    }

    @Test("--since: files modified before it are out of range; a file without a time is fetched")
    func since() {
        let planner = WatchFetchPlanner(since: now.addingTimeInterval(-86_400))
        #expect(planner.decide(file(age: 2 * 86_400), fetched: WatchFetched(), previous: nil, now: now) == .outOfRange)
        #expect(planner.decide(file(age: 3600), fetched: WatchFetched(), previous: nil, now: now) == .fetch)
        let undated = WatchFile(path: "GARMIN/Monitor/M1.FIT", size: 10, modified: nil, kind: .monitor)
        #expect(planner.decide(undated, fetched: WatchFetched(), previous: nil, now: now) == .fetch)
    }

    @Test("hostile names and sizes are refused with the reason, whatever was fetched before")
    func hostile() {
        let planner = WatchFetchPlanner()
        for path in ["../etc/passwd", "GARMIN/../../x.fit", "/etc/x.fit", "GARMIN//A.FIT", "GARMIN/./A.FIT", "GARMIN\\A.FIT",
                     "GARMIN/A\0.FIT", ""] {
            guard case .refused(let reason) = planner.decide(file(path), fetched: WatchFetched(), previous: nil, now: now) else {
                Issue.record("\(path.debugDescription) was not refused")
                continue
            }
            #expect(reason.contains("not a plain path"), "\(reason)")
        }
        guard case .refused(let reason) = planner.decide(file(size: 4 << 30), fetched: WatchFetched(), previous: nil, now: now) else {
            Issue.record("a file of 4 GB was not refused")
            return
        }
        #expect(reason == "GARMIN/Activity/A1.FIT: claims 4294967296 bytes, more than the 268435456 a watch's file may have")
    }

    @Test("the checkpoint is stored as sorted JSON, per watch")
    func checkpoint() throws {
        let fetched = WatchFetched().adding(file()).adding(file("GARMIN/Sleep/S1.FIT", size: 7))
        #expect(WatchFetched.device(serial: "3996512345") == "watch:3996512345")
        let text = fetched.encodedText()
        #expect(text.contains("\"GARMIN/Activity/A1.FIT\":{\"modified\":1794996400,\"size\":1000}"), "\(text)")
        #expect(try JSONDecoder().decode(WatchFetched.self, from: Data(text.utf8)) == fetched)
    }
}
