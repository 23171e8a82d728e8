import Foundation

/// A new empty folder under the system's temporary folder (`hg-TAG-XXXXXXXX`); the caller removes it.
public func temporaryFolder(_ tag: String) throws -> String {
    let folder = NSTemporaryDirectory() + "hg-\(tag)-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}
