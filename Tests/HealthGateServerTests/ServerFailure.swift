import Foundation

/// A temporary folder, removed at the end of the test.
final class Scratch: Sendable {
    let folder: String
    var dbPath: String { folder + "/server.sqlite" }

    init() throws {
        folder = NSTemporaryDirectory() + "healthgate-server-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}

/// A reply the tests did not expect.
struct ServerFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
