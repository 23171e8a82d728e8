import Foundation
import FuzzSupport
import WatchLayout

/// A hostile watch's folder listings (what an MTP device answers, or a mounted volume holds): the
/// input builds a table of folders, each listing entries with object ids (which may point back at
/// a parent or at the root), names (from a small alphabet with `.`, `/`, `\\`, NUL and the
/// layout's own names), sizes up to 2^64 and times. The walk must end, list no folder twice, stay
/// within the layout's depth, and return only FIT files of data folders; the planner must never
/// fetch a path that could leave the copies' folder or a file over its size limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let names = ["GARMIN", "garmin", "Primary", "Activity", "Monitor", "Sleep", "HRVStatus", "Weight", "Music", "A1.FIT", "b.fit",
                 "..", ".", "../x.fit", "a/b.fit", "x\\y.fit", "n\u{0}.fit", "", "._A1.FIT", "C.FIT"]
    var folders: [UInt16: [WatchEntry<UInt16>]] = [:]
    while !input.bytes.isEmpty, folders.count < 64 {
        let folder = input.uint16() % 32
        let count = Int(input.byte() % 8)
        var entries: [WatchEntry<UInt16>] = []
        for _ in 0..<count {
            let ref = input.uint16() % 40
            let name = names[Int(input.byte()) % names.count]
            let flags = input.byte()
            let size = flags & 0x80 != 0 ? UInt64.max - UInt64(input.byte()) : UInt64(input.uint16())
            entries.append(WatchEntry(ref: ref, name: name, isFolder: flags & 1 == 1, size: size,
                                      modified: Date(timeIntervalSince1970: Double(input.uint16()) * 40_000)))
        }
        folders[folder, default: []] += entries
    }
    var listed: [UInt16] = []
    guard let found = try? WatchWalk<UInt16>.files(root: 0, list: { ref, _ in
        listed.append(ref)
        return folders[ref] ?? []
    }) else { return 0 }
    guard Set(listed).count == listed.count else { fatalError("a folder was listed twice: \(listed)") }
    let planner = WatchFetchPlanner()
    let now = Date(timeIntervalSince1970: 2_000_000_000)
    for (file, _) in found {
        let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, GarminLayout.garmin.isFitFile(String(parts.last!)) else { fatalError("not a data folder's FIT file: \(file.path)") }
        if case .fetch = planner.decide(file, fetched: WatchFetched(), previous: nil, now: now) {
            if parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) || file.path.hasPrefix("/") || file.path.contains("\\")
                || file.path.contains("\u{0}") || file.size > planner.maximumSize {
                fatalError("the planner would fetch \(file.path) (\(file.size) bytes)")
            }
        }
    }
    return 0
}
