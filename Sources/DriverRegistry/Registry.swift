import ANTDriver
import AppleHealthDriver
import BLEDriver
import BLEReplayDriver
import CSVDriver
public import DriverKit
import ExecDriver
import FITDriver
import GadgetbridgeDriver
import GPXDriver
import HabitBullDriver
import LoopHabitsDriver
import MassStorageDriver
import WatchDriver
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
        WatchDriver.descriptor,
        ExecDriver.descriptor,
        BLERecorder.descriptor,
        BLEReplayDriver.descriptor,
        ANTRecorder.descriptor,
        AppleHealthImporter.descriptor,
        LoopImporter.descriptor,
        HabitBullImporter.descriptor,
        GadgetbridgeImporter.descriptor,
        CSVImporter.descriptor,
    ])

    /// One instance of each file importer with its defaults, or the tables in `settings` (by id:
    /// `healthgate import --mapping FILE` gives `csv` its mapping). A table an importer refuses
    /// is a ``ConfigError``.
    public static func fileImporters(settings: [String: [String: ConfigValue]]) throws(ConfigError) -> [any FileImporter] {
        try catalog.makeFileImporters(settings: settings, context: { DriverContext.standalone($0) })
    }

    /// One instance of each file importer with its defaults (what `healthgate import` uses).
    public static func fileImporters() -> [any FileImporter] {
        // An importer refusing its defaults is a programming error (DriverFolderTests makes each
        // from an empty table): stop loudly rather than import with fewer importers.
        do { return try catalog.makeFileImporters(context: { DriverContext.standalone($0) }) } catch {
            preconditionFailure("a file importer refuses its default settings: \(error)")
        }
    }
}
