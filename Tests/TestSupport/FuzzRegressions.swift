import Foundation

/// The inputs a fuzz target once crashed on (`Fuzz/regressions/<target>/`, see Fuzz/README.md),
/// by file name, in name order; none when the target has no such folder. Each decoder's tests
/// feed them to the decoder again.
public func fuzzRegressionInputs(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
    let folder = URL(fileURLWithPath: PackagePaths.root).appendingPathComponent("Fuzz/regressions/\(target)")
    guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
    return try names.map { ($0, Array(try Data(contentsOf: folder.appendingPathComponent($0)))) }
}
