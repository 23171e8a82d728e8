import Foundation
import LinuxAdapters
import Testing

@Suite struct DescriptorWatchTests {
    /// A descriptor's readiness reaches the callback on the watch's thread; closing ends it.
    @Test func descriptorWatchReportsReadinessAndEnds() async throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[1]) }
        let (seen, saw) = AsyncStream<UInt8>.makeStream()
        let watch = try DescriptorWatch(fd: ends[0], events: Int16(POLLIN), name: "test", onReady: { fd in
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return false }
            saw.yield(byte)
            return true
        }, onEnd: { saw.finish() })
        var iterator = seen.makeAsyncIterator()
        for value: UInt8 in [7, 9] {
            var byte = value
            #expect(write(ends[1], &byte, 1) == 1)
            #expect(await iterator.next() == value)
        }
        watch.close()
        #expect(await iterator.next() == nil, "closing ends the watch")
        #expect(watch.withDescriptor { $0 } == nil)
    }
}
