import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Gives back the memory that starting took and idling does not need. Start-up (argument
/// parsing, the configuration, migrations, opening every service) runs code that an idle daemon
/// never runs again, yet its pages stay mapped and count in the resident set: two thirds of it.
/// Once started, the daemon asks the kernel to reclaim the pages of its read-only file mappings
/// (code and constants of the executable and libraries) that no other process maps
/// (`MADV_PAGEOUT`, Linux 5.4 and later); pages still in use come back at their next touch.
/// Writable and anonymous memory is left alone.
public enum MemoryTrim {
    /// `MADV_PAGEOUT` from <linux/mman.h> (not in every libc's headers).
    static let pageOut: Int32 = 21

    /// Reclaims the pages of the read-only file mappings in `maps` (the text of
    /// /proc/self/maps); returns how many mappings the kernel took the advice for.
    @discardableResult
    public static func releaseFileBackedPages(maps: String? = try? ProcFile.read("/proc/self/maps")) -> Int {
        var advised = 0
        for region in readOnlyFileRegions(maps ?? "") {
            guard let start = UnsafeMutableRawPointer(bitPattern: region.lowerBound) else { continue }
            if madvise(start, Int(region.upperBound - region.lowerBound), pageOut) == 0 { advised += 1 }
        }
        return advised
    }

    /// The address ranges of the mappings in /proc/self/maps text that are backed by a file and
    /// neither writable nor shared-writable: `START-END PERMS OFFSET DEV INODE PATH`. Pure.
    public static func readOnlyFileRegions(_ maps: String) -> [Range<UInt>] {
        maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            // The path is what follows the inode, after the spaces that align it.
            guard fields.count == 6, fields[5].drop(while: { $0 == " " }).hasPrefix("/"), fields[1].count == 4,
                  fields[1].hasPrefix("r"), fields[1].dropFirst().first == "-" else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), start < end else {
                return nil
            }
            return start..<end
        }
    }

    /// The resident set size in bytes (VmRSS of /proc/self/status), or nil.
    public static func residentBytes(status: String? = try? ProcFile.read("/proc/self/status")) -> Int? {
        guard let line = status?.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, let kB = Int(fields[1]) else { return nil }
        return kB * 1024
    }
}
