import DriverKit
import FITDriver
import GPXDriver
import TCXDriver

/// Every driver HealthGate knows, one line each.
public enum DriverRegistry {
    /// File importers, in the order they are asked whether they read a file.
    public static let fileImporterTypes: [any FileImporter.Type] = [
        FITImporter.self,
        TCXImporter.self,
        GPXImporter.self,
    ]

    /// One instance of each file importer. File importers take no configuration keys, so
    /// creating them cannot fail.
    public static func fileImporters() -> [any FileImporter] {
        fileImporterTypes.map { try! $0.init(config: DriverConfig()) }
    }
}
