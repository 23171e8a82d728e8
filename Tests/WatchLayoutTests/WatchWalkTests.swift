import Foundation
import Testing
import WatchLayout

/// A watch's folders as a table of object ids (as MTP gives them): id -> entries.
private struct FakeWatch {
    var folders: [Int: [WatchEntry<Int>]]
    var listed: [String] = []

    static func folder(_ id: Int, _ name: String) -> WatchEntry<Int> { WatchEntry(ref: id, name: name, isFolder: true) }
    static func file(_ id: Int, _ name: String, size: UInt64 = 100) -> WatchEntry<Int> {
        WatchEntry(ref: id, name: name, isFolder: false, size: size, modified: Date(timeIntervalSince1970: 1_790_000_000))
    }

    mutating func list(_ id: Int, _ path: String) throws -> [WatchEntry<Int>] {
        listed.append(path)
        return folders[id] ?? []
    }
}

@Suite struct WatchWalkTests {
    private typealias W = FakeWatch

    @Test("the FIT files of the data folders, below Primary/ too; music and other folders are never listed")
    func walksTheLayoutOnly() throws {
        var watch = FakeWatch(folders: [
            0: [W.folder(1, "Primary"), W.folder(2, "Music"), W.file(3, "readme.txt")],
            1: [W.folder(10, "GARMIN")],
            2: [W.file(20, "song.mp3")],
            10: [W.folder(11, "Activity"), W.folder(12, "Monitor"), W.folder(13, "Apps"), W.file(14, "GarminDevice.xml")],
            11: [W.file(110, "B1.FIT"), W.file(111, "A1.fit"), W.file(112, "._A1.FIT"), W.folder(113, "Old")],
            12: [W.file(120, "M1.FIT")],
            13: [W.file(130, "app.PRG")],
        ])
        let found = try WatchWalk<Int>.files(root: 0) { try watch.list($0, $1) }
        #expect(found.map(\.file.path) == ["Primary/GARMIN/Activity/A1.fit", "Primary/GARMIN/Activity/B1.FIT", "Primary/GARMIN/Monitor/M1.FIT"])
        #expect(found.map(\.ref) == [111, 110, 120])
        #expect(found.map(\.file.kind) == [.activity, .activity, .monitor])
        #expect(found[0].file.size == 100 && found[0].file.modified == Date(timeIntervalSince1970: 1_790_000_000))
        #expect(Set(watch.listed) == ["", "Primary", "Primary/GARMIN", "Primary/GARMIN/Activity", "Primary/GARMIN/Monitor"])
    }

    @Test("step by step: the folders above the data folders first, then activities before sleep and monitoring")
    func order() throws {
        let watch = FakeWatch(folders: [
            0: [W.folder(1, "GARMIN")],
            1: [W.folder(2, "Monitor"), W.folder(3, "Sleep"), W.folder(4, "Activity")],
            2: [W.file(20, "M1.FIT")], 3: [W.file(30, "S1.FIT")], 4: [W.file(40, "A1.FIT")],
        ])
        var walk = WatchWalk<Int>(root: 0)
        var order: [String] = []
        var found: [[String]] = []
        while let (ref, path) = walk.nextFolder() {
            order.append(path)
            found.append(try walk.listed(watch.folders[ref] ?? []).map(\.file.path))
        }
        #expect(order == ["", "GARMIN", "GARMIN/Activity", "GARMIN/Sleep", "GARMIN/Monitor"])
        #expect(found == [[], [], ["GARMIN/Activity/A1.FIT"], ["GARMIN/Sleep/S1.FIT"], ["GARMIN/Monitor/M1.FIT"]])
    }

    @Test("a device answering a folder with one of its parents is not walked around in circles")
    func folderLoop() throws {
        var watch = FakeWatch(folders: [
            0: [W.folder(1, "GARMIN")],
            1: [W.folder(2, "Activity"), W.folder(1, "Monitor"), W.folder(0, "Sleep")],
            2: [W.file(3, "A1.FIT"), W.folder(1, "GARMIN")],
        ])
        let found = try WatchWalk<Int>.files(root: 0) { try watch.list($0, $1) }
        #expect(found.map(\.file.path) == ["GARMIN/Activity/A1.FIT"])
        #expect(watch.listed.count == 3)
    }

    @Test("a folder listing more entries than any watch has is an error naming it")
    func tooManyEntries() {
        var watch = FakeWatch(folders: [0: [W.folder(1, "GARMIN")], 1: [W.folder(2, "Activity")],
                                        2: (0..<11).map { W.file(100 + $0, "\($0).FIT") }])
        #expect {
            try WatchWalk<Int>.files(root: 0, maximumEntries: 10) { try watch.list($0, $1) }
        } throws: { error in
            "\(error)" == "GARMIN/Activity lists 11 entries; no watch has so many"
        }
    }

    @Test("a listing that fails (the device went away) ends the walk with its error")
    func listingFails() {
        struct Gone: Error {}
        #expect(throws: Gone.self) {
            try WatchWalk<Int>.files(root: 0) { ref, _ in
                if ref == 0 { return [W.folder(1, "GARMIN")] }
                throw Gone()
            }
        }
    }

    @Test("hostile names are found as they are, and the planner refuses them")
    func hostileNames() throws {
        var watch = FakeWatch(folders: [0: [W.folder(1, "GARMIN")], 1: [W.folder(2, "Activity")],
                                        2: [W.file(3, "a/../../x.fit"), W.file(4, "huge.fit", size: 4 << 30)]])
        let found = try WatchWalk<Int>.files(root: 0) { try watch.list($0, $1) }
        #expect(found.count == 2)
        let planner = WatchFetchPlanner()
        let decisions = found.map { planner.decide($0.file, fetched: WatchFetched(), previous: nil, now: Date(timeIntervalSince1970: 1_800_000_000)) }
        #expect(decisions.allSatisfy { if case .refused = $0 { true } else { false } }, "\(decisions)")
    }
}
