import ArgumentParser
import CommandSupport
import DriverKit
import DriverRegistry
import Foundation

/// `healthgate drivers`: the drivers this build knows, and each one's sample configuration.
struct DriversCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drivers",
        abstract: "List the drivers, or print one driver's sample configuration.",
        discussion: """
            Without an ID, lists every driver: its id, kind and what it does. File importers read \
            the files `healthgate import`, a watch folder or a mass-storage watch hands them; they \
            take an optional [importers.ID] table in the daemon's configuration. Device drivers run \
            in the daemon, one [drivers.NAME] table per instance with type = ID. With an ID, prints \
            that driver's sample table (its keys, defaults and ranges), ready to paste into the \
            configuration file and check with `healthgate daemon --check --config FILE`.
            """)

    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("A driver's id: print its sample configuration.", valueName: "ID"))
    var id: String?

    func run() throws {
        let catalog = Registry.catalog
        if let id {
            guard let descriptor = catalog[id] else {
                throw ValidationError("no driver '\(id)': one of \(catalog.all.map(\.id).joined(separator: ", "))")
            }
            if output.json {
                struct Sample: Encodable { var id: String; var sample_configuration: String }
                try Output.printJSON(Sample(id: descriptor.id, sample_configuration: descriptor.sampleConfiguration))
            } else {
                print(descriptor.sampleConfiguration, terminator: descriptor.sampleConfiguration.hasSuffix("\n") ? "" : "\n")
            }
            return
        }
        if output.json {
            struct Entry: Encodable { var id: String; var kind: DriverDescriptor.Kind; var summary: String }
            try Output.printJSON(catalog.all.map { Entry(id: $0.id, kind: $0.kind, summary: $0.summary) })
            return
        }
        let width = catalog.all.map(\.id.count).max() ?? 0
        for kind in [DriverDescriptor.Kind.fileImporter, .deviceDriver] {
            print(kind == .fileImporter ? "File importers ([importers.ID], optional):" : "Device drivers ([drivers.NAME] with type = ID):")
            for descriptor in catalog.all where descriptor.kind == kind {
                print("  " + descriptor.id.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + descriptor.summary)
            }
        }
        print("`healthgate drivers ID` prints a driver's sample configuration.")
    }
}
