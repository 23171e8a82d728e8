import Glibc

/// glibc's malloc tuning calls, which Swift's Glibc module does not declare (malloc.h), looked
/// up once; without them (another C library) nothing is tuned.
enum GlibcMalloc {
    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    private typealias MallocTrim = @convention(c) (Int) -> Int32
    private static let mallopt: Mallopt? = dlsym(nil, "mallopt").map { unsafeBitCast($0, to: Mallopt.self) }
    private static let mallocTrim: MallocTrim? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: MallocTrim.self) }

    /// The server's threshold: allocations of this size or more are mapped on their own and
    /// unmapped when freed (glibc's default raises the threshold up to 32 MiB as large blocks are
    /// freed, after which the buffers of large uploads come from the heaps and stay there).
    static let serverMmapThreshold: Int32 = 1 << 20

    /// `mallopt(M_MMAP_THRESHOLD, bytes)` (malloc.h: M_MMAP_THRESHOLD is -3); true when set.
    @discardableResult
    static func setMmapThreshold(_ bytes: Int32) -> Bool { mallopt?(-3, bytes) == 1 }

    /// `malloc_trim(0)`: free pages of every arena back to the system.
    static func trim() { _ = mallocTrim?(0) }
}
