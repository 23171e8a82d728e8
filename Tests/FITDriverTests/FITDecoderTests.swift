import Foundation
import Testing
@testable import FITDriver

@Test func scratch() throws {
    let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/fit")
    for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where name.hasSuffix(".fit") {
        let data = try Data(contentsOf: dir.appendingPathComponent(name))
        do {
            let s = try FITDecoder.decodeAll(data)
            print(name, s)
        } catch { print(name, "ERROR", error) }
    }
}
