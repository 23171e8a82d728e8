/// The drivers a program knows, in the registry's order: file importers are asked in this order
/// whether they read a file.
public struct DriverCatalog: Sendable {
    public let all: [DriverDescriptor]

    public init(_ descriptors: [DriverDescriptor]) {
        var seen: Set<String> = []
        for descriptor in descriptors {
            precondition(seen.insert(descriptor.id).inserted, "two drivers with the id \(descriptor.id)")
        }
        all = descriptors
    }

    /// The driver with this id, or nil.
    public subscript(id: String) -> DriverDescriptor? { all.first { $0.id == id } }

    public var fileImporters: [DriverDescriptor] { all.filter { $0.kind == .fileImporter } }
    public var deviceDrivers: [DriverDescriptor] { all.filter { $0.kind == .deviceDriver } }

    /// One instance of each file importer not in `disabled`, with their settings (by id; an
    /// importer without a table gets its defaults).
    public func makeFileImporters(settings: [String: [String: ConfigValue]] = [:], disabled: Set<String> = [],
                                  context: (String) -> DriverContext) throws(ConfigError) -> [any FileImporter] {
        var importers: [any FileImporter] = []
        for descriptor in fileImporters where !disabled.contains(descriptor.id) {
            do {
                importers.append(try descriptor.makeFileImporter(settings[descriptor.id] ?? [:], context: context(descriptor.id)))
            } catch {
                throw error.under("importers.\(descriptor.id)")
            }
        }
        return importers
    }
}
