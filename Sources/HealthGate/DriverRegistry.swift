import DriverKit
import FITDriver
import GPXDriver
import TCXDriver

/// Every driver HealthGate knows, one line each.
public enum DriverRegistry {
    /// File importers, in the order they are asked whether they read a file.
    public static func fileImporters() -> [any FileImporter] {
        []
    }
}
