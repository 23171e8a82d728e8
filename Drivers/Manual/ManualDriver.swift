public import DriverKit
import Foundation

/// The `manual` driver: the entries people and scripts type (`healthgate log ...`, the daemon's
/// `log` request on its status socket) rather than a device measures. Its work is the pure
/// ``EntryBuilder``; the records it builds carry this driver's id. Configured in the daemon, it
/// has nothing to open or poll: it stays idle until stopped (a `[drivers.NAME]` table of type
/// `manual` documents that entries are expected; the status socket accepts them either way).
public struct ManualDriver: DeviceDriver {
    public static let id = EntryBuilder.driverID
    public static let descriptor = DriverDescriptor.device(
        ManualDriver.self, summary: "Entries typed by people and scripts: drinks, vaping, habits, meals, workouts, sleep, weight",
        sample: PackageResources.sample_toml)

    public init(settings: NoSettings, context: DriverContext) {}

    public func run(into sink: some RecordSink) async throws {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
}
