import DriverKit
import DriverRegistry
import Foundation
import HealthGateDaemon
import Testing
import TestSupport

/// Every driver is one folder in `Drivers/` with its README and sample, and one registry line:
/// what the daemon, `daemon --check`, `import` and `healthgate drivers` read.
@Suite struct DriverFolderTests {
    static let driversFolder = PackagePaths.root + "/Drivers"

    /// The driver folders: those with a sample.toml (BluetoothLE's sub-targets have none).
    static func folders() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: driversFolder).sorted()
            .filter { FileManager.default.fileExists(atPath: driversFolder + "/" + $0 + "/sample.toml") }
    }

    /// The ids a sample configures: `[importers.ID]` tables and the `type` of `[drivers.NAME]`.
    static func ids(configuredBy config: DaemonConfig) -> Set<String> {
        Set(config.importers.keys).union(config.disabledImporters).union(config.drivers.values.map(\.type))
    }

    @Test func everyFolderIsOneRegisteredDriverAndEveryDriverHasAFolder() throws {
        let folders = try Self.folders()
        #expect(folders.count == Registry.catalog.all.count, "\(folders)")
        var claimed: [String: String] = [:]
        for folder in folders {
            let text = try String(contentsOfFile: Self.driversFolder + "/\(folder)/sample.toml", encoding: .utf8)
            let ids = Self.ids(configuredBy: try DaemonConfig.parse(text, stateDirectory: "/s", drivers: Registry.catalog))
            #expect(ids.count == 1, "\(folder)/sample.toml configures \(ids.sorted())")
            for id in ids {
                #expect(claimed[id] == nil, "\(id) claimed by \(claimed[id] ?? "") and \(folder)")
                claimed[id] = folder
            }
            #expect(FileManager.default.fileExists(atPath: Self.driversFolder + "/\(folder)/README.md"), "\(folder) has no README.md")
        }
        #expect(Set(claimed.keys) == Set(Registry.catalog.all.map(\.id)))
    }

    /// The embedded sample is the folder's `sample.toml`, the daemon accepts it (each driver
    /// checks its own table), and it configures that driver.
    @Test(arguments: Registry.catalog.all.map(\.id))
    func sampleIsValidAndEmbedded(id: String) throws {
        let descriptor = try #require(Registry.catalog[id])
        let config = try DaemonConfig.parse(descriptor.sampleConfiguration, stateDirectory: "/s", drivers: Registry.catalog)
        #expect(Self.ids(configuredBy: config) == [id])
        #expect(try Self.folders().contains { folder in
            (try? String(contentsOfFile: Self.driversFolder + "/\(folder)/sample.toml", encoding: .utf8)) == descriptor.sampleConfiguration
        }, "no Drivers/*/sample.toml is \(id)'s embedded sample")
        #expect(!descriptor.summary.isEmpty && !descriptor.summary.contains("\n"))
        // Device drivers are made from the sample's table; file importers from an empty one.
        let context = DriverContext.standalone(id)
        switch descriptor.kind {
        case .deviceDriver:
            let instance = try #require(config.drivers.values.first)
            _ = try descriptor.makeDeviceDriver(instance.settings, context: context)
            #expect(throws: ConfigError.self) { try descriptor.makeFileImporter([:], context: context) }
        case .fileImporter:
            _ = try descriptor.makeFileImporter([:], context: context)
            #expect(throws: ConfigError.self) { try descriptor.makeDeviceDriver([:], context: context) }
        }
    }

    static let sections = ["What it reads", "Configuration", "Records", "Errors and limits", "Tests"]

    /// One section order for every README: the title names the driver's id, then the sections
    /// every reader looks for, in order (others may sit between them).
    @Test func readmesFollowOneSectionOrder() throws {
        for folder in try Self.folders() {
            let path = Self.driversFolder + "/\(folder)/README.md"
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            let sample = try String(contentsOfFile: Self.driversFolder + "/\(folder)/sample.toml", encoding: .utf8)
            let id = try #require(Self.ids(configuredBy: try DaemonConfig.parse(sample, stateDirectory: "/s", drivers: Registry.catalog)).first)
            let title = try #require(lines.first)
            #expect(title.hasPrefix("# ") && title.hasSuffix(" driver (`\(id)`)"), "\(path): title '\(title)'")
            let headings = lines.filter { $0.hasPrefix("## ") }.map { String($0.dropFirst(3)) }
            let required = headings.filter(Self.sections.contains)
            #expect(required == Self.sections, "\(path): sections \(headings)")
            #expect(headings.first == Self.sections.first, "\(path): '\(headings.first ?? "")' before 'What it reads'")
        }
    }

    /// `healthgate drivers` lists every driver; `healthgate drivers ID` prints its sample.
    @Test func theCommandListsEveryDriver() async throws {
        let healthgate = Tool.path("healthgate")
        let list = try await Tool.run(healthgate, ["drivers", "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: String]])
        #expect(entries.map { $0["id"] } == Registry.catalog.all.map(\.id))
        #expect(entries.allSatisfy { ["file importer", "device driver"].contains($0["kind"] ?? "") })
        let text = try await Tool.run(healthgate, ["drivers"])
        for descriptor in Registry.catalog.all { #expect(text.stdout.contains(descriptor.id + " "), "\(descriptor.id)") }
        for descriptor in Registry.catalog.all {
            let sample = try await Tool.run(healthgate, ["drivers", descriptor.id])
            #expect(sample.status == 0 && sample.stdout == descriptor.sampleConfiguration, "\(descriptor.id)")
        }
        let unknown = try await Tool.run(healthgate, ["drivers", "ftp"])
        #expect(unknown.status != 0 && unknown.stderr.contains("no driver 'ftp'"))
    }
}
