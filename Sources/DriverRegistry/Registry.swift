import BLEDriver
import BLEReplayDriver
public import DriverKit
import ExecDriver
import FITDriver
import GadgetbridgeDriver
import GPXDriver
import ManualDriver
import MassStorageDriver
import TCXDriver
import WatchFolderDriver

/// Every driver HealthGate knows, one line each. Adding a driver is a folder in `Drivers/` (code,
/// README.md, sample.toml, tests), its target in Package.swift, and one line here.
public enum Registry {
    public static let catalog = DriverCatalog([
        FITImporter.descriptor,
        TCXImporter.descriptor,
        GPXImporter.descriptor,
        WatchFolder.descriptor,
        MassStorage.descriptor,
        ExecDriver.descriptor,
        BLERecorder.descriptor,
        BLEReplayDriver.descriptor,
        ManualDriver.descriptor,
        GadgetbridgeImporter.descriptor,
    ])

    /// One instance of each file importer with its defaults (what `healthgate import` uses).
    public static func fileImporters() -> [any FileImporter] {
        // An importer refusing its defaults is a programming error (DriverFolderTests makes each
        // from an empty table): stop loudly rather than import with fewer importers.
        do { return try catalog.makeFileImporters(context: { DriverContext.standalone($0) }) } catch {
            preconditionFailure("a file importer refuses its default settings: \(error)")
        }
    }
}
