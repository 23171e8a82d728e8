import DriverKit
import Foundation
import Testing
import TestSupport

/// What a file importer reads: a file's chunks, in order and bounded in size, its head for the
/// probe, and clear errors naming the path.
@Suite struct ImportSourceTests {
    @Test func chunksHoldTheWholeFileInOrder() async throws {
        let folder = try temporaryFolder("import-source")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let path = folder + "/data.gpx"
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let source = try await ImportSource.open(path)
        #expect(source.size == bytes.count && source.probe.fileExtension == "gpx" && source.probe.head == Array(bytes.prefix(512)))
        for size in [1_000, 4_096, 100_003, 1 << 20] {
            var joined: [UInt8] = []
            var sizes: [Int] = []
            for try await chunk in source.chunks(of: size) {
                joined += chunk
                sizes.append(chunk.count)
            }
            #expect(joined == bytes)
            #expect(sizes.dropLast().allSatisfy { $0 == size } && sizes.last! <= size && sizes.last! > 0)
        }
        // The same through memory, and the mapping.
        let memory = ImportSource(path: path, data: Data(bytes))
        var joined: [UInt8] = []
        for try await chunk in memory.chunks(of: 777) { joined += chunk }
        #expect(joined == bytes && memory.probe.head == source.probe.head)
        #expect(try await source.mapped() == Data(bytes))
    }

    @Test func anEmptyFileHasNoChunks() async throws {
        let folder = try temporaryFolder("import-source")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #require(FileManager.default.createFile(atPath: folder + "/empty.fit", contents: Data()))
        let source = try await ImportSource.open(folder + "/empty.fit")
        #expect(source.size == 0 && source.probe.head.isEmpty)
        var count = 0
        for try await _ in source.chunks() { count += 1 }
        #expect(count == 0)
    }

    @Test func whatCannotBeReadIsNamed() async throws {
        let folder = try temporaryFolder("import-source")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        await #expect(throws: FileReadError(path: folder + "/missing.fit", reason: "No such file or directory")) {
            try await ImportSource.open(folder + "/missing.fit")
        }
        await #expect(throws: FileReadError(path: folder, reason: "not a regular file")) {
            try await ImportSource.open(folder)
        }
        // A file removed after it was opened: reading its chunks fails with its path.
        let path = folder + "/gone.tcx"
        try #require(FileManager.default.createFile(atPath: path, contents: Data("<x/>".utf8)))
        let source = try await ImportSource.open(path)
        try FileManager.default.removeItem(atPath: path)
        do {
            for try await _ in source.chunks() {}
            Issue.record("read a removed file")
        } catch let error as FileReadError {
            #expect(error.description == path + ": cannot read: No such file or directory")
        }
    }
}
