/// What the runtime knows of a driver without naming its type: its id, kind, a one-line summary,
/// its sample configuration, and how to make it from a configuration table. One registry file
/// lists every descriptor; the daemon, `daemon --check`, `import`, `healthgate drivers` and the
/// docs read it.
public struct DriverDescriptor: Sendable {
    public enum Kind: String, Sendable, Encodable {
        /// Reads files handed to it (`healthgate import`, a watch folder, mass storage).
        case fileImporter = "file importer"
        /// Runs in the daemon: devices, programs, or folders it watches.
        case deviceDriver = "device driver"
    }

    /// Stored with every record: never renamed. A device driver's `type` in `[drivers.NAME]`;
    /// a file importer's `[importers.ID]`.
    public let id: String
    public let kind: Kind
    /// One line, for `healthgate drivers`.
    public let summary: String
    /// The driver's own `sample.toml`, embedded; a test checks that the daemon accepts it.
    public let sampleConfiguration: String
    /// A device driver that reports ``DriverEvent/ready`` once set up (``DeviceDriver/announcesReady``).
    public var announcesReady = false
    private let makeDevice: (@Sendable ([String: ConfigValue], DriverContext) throws(ConfigError) -> any DeviceDriver)?
    private let makeImporter: (@Sendable ([String: ConfigValue], DriverContext) throws(ConfigError) -> any FileImporter)?
    private let probe: (@Sendable (FileProbe) -> Bool)?

    /// A device driver's descriptor. `sample` is the bytes of its `sample.toml`.
    public static func device<D: DeviceDriver>(_ type: D.Type, summary: String, sample: [UInt8]) -> DriverDescriptor {
        DriverDescriptor(id: D.id, kind: .deviceDriver, summary: summary, sampleConfiguration: String(decoding: sample, as: UTF8.self),
                         makeDevice: { table, context throws(ConfigError) in
                             try D(settings: ConfigDecoder.decode(D.Settings.self, from: table), context: context)
                         }, makeImporter: nil, probe: nil).announcing(D.announcesReady)
    }

    private func announcing(_ ready: Bool) -> DriverDescriptor {
        var copy = self
        copy.announcesReady = ready
        return copy
    }

    /// A file importer's descriptor. `sample` is the bytes of its `sample.toml`.
    public static func importer<I: FileImporter>(_ type: I.Type, summary: String, sample: [UInt8]) -> DriverDescriptor {
        DriverDescriptor(id: I.id, kind: .fileImporter, summary: summary, sampleConfiguration: String(decoding: sample, as: UTF8.self),
                         makeDevice: nil, makeImporter: { table, context throws(ConfigError) in
                             try I(settings: ConfigDecoder.decode(I.Settings.self, from: table), context: context)
                         }, probe: { I.canImport($0) })
    }

    /// Decodes a `[drivers.NAME]` table (without its `type`) and makes the device driver.
    /// Errors name key paths within the table.
    public func makeDeviceDriver(_ table: [String: ConfigValue], context: DriverContext) throws(ConfigError) -> any DeviceDriver {
        guard let makeDevice else { throw ConfigError(keyPath: "type", reason: "'\(id)' is a file importer, not a device driver") }
        return try makeDevice(table, context)
    }

    /// Decodes an `[importers.ID]` table and makes the file importer.
    public func makeFileImporter(_ table: [String: ConfigValue] = [:], context: DriverContext) throws(ConfigError) -> any FileImporter {
        guard let makeImporter else { throw ConfigError(keyPath: "", reason: "'\(id)' is a device driver, not a file importer") }
        return try makeImporter(table, context)
    }

    /// Whether this file importer reads the probed file (false for device drivers).
    public func canImport(_ probe: FileProbe) -> Bool { self.probe?(probe) ?? false }
}
