import ArgumentParser
import Foundation
import FITDriver

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Print the decoded messages of a FIT file (like the FIT SDK's CSV tool).",
        discussion: "Definition and data messages with field names, values and units. --count prints message counts only.")

    @Flag(help: "Print the number of messages of each type only.")
    var count = false

    @Argument(help: "The FIT file.")
    var file: String

    func run() throws {
        throw ValidationError("inspect is not available yet")
    }
}
