import ArgumentParser
import DriverKit
import FITDriver
import Foundation
import HealthModel

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Print the decoded messages of a FIT file (like the FIT SDK's CSV tool).",
        discussion: """
            One CSV line per definition and data message: Type, Local Number, Message, then name, \
            value and units of each field (developer fields included). --count prints the number \
            of messages of each type. A damaged file prints what was decoded before the damage, \
            then the error, and exits with status 1.
            """)

    @Flag(help: "Print the number of messages of each type only.")
    var count = false

    @Flag(help: "With --count: print a JSON object of message counts.")
    var json = false

    @Argument(help: "The FIT file.")
    var file: String

    func run() throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file), options: .alwaysMapped)
        } catch {
            throw RuntimeFailure("cannot read \(file): \(error.localizedDescription)")
        }
        var failure: DecodeError?
        if count {
            let (counts, error) = FITInspector.messageCountsAllowingDamage(data)
            failure = error
            if json {
                var object: [String: Int] = [:]
                for entry in counts { object[entry.name] = entry.count }
                try Output.printJSON(object)
            } else {
                Output.printTable(["MESSAGE", "COUNT"], counts.map { [$0.name, String($0.count)] })
            }
        } else {
            do {
                // String fields of a file (names, developer fields) are outside text.
                try FITInspector.writeCSV(data) { print(DisplayText.safe($0, limit: .max)) }
            } catch let error as DecodeError {
                failure = error
            }
        }
        if let failure {
            Output.stderr("healthgate: \(failure.inFile(file))\n")
            throw ExitCode(1)
        }
    }
}
