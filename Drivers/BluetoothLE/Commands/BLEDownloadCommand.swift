import ArgumentParser
import BLEDriver
import BluetoothCentral
import CommandSupport
import DriverKit
import Foundation
import GATTProfiles
import HealthModel
import HealthPipeline
import HealthStore

struct BLEDownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download a glucose meter's stored records into the database.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF) or a name as advertised. HealthGate asks the \
            meter's Record Access Control Point for its stored records: every record the first \
            time, then those from the last one stored for the meter on (the ble driver's checkpoint for the meter; --all \
            asks for every record again). That record comes again and is compared with the one \
            stored: a meter that sends another record under its number, or holds neither it nor \
            any after it, was reset, and every record it holds is downloaded. Records are stored with the \
            identities live glucose readings get, so a record sent again is not stored twice. \
            Progress lines (records received / the meter's count) go to standard error. A meter \
            that stops sending for --silence (or does not begin to answer within 30 s) ends the download: the whole records that arrived \
            are stored and the command fails saying how many. Meters that need bonding must be \
            paired first (`healthgate ble pair`, BlueZ).
            """)

    @OptionGroup var controller: ControllerOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Ask for every stored record, not only those after the last sequence number stored.")
    var all = false

    @Option(help: ArgumentHelp("End the download when the meter sends nothing for this long; \(DurationArgument.forms).", valueName: "DURATION"))
    var silence = DurationArgument(seconds: 10)

    @Option(help: ArgumentHelp("How long to look for a device given by name; \(DurationArgument.forms).", valueName: "DURATION"))
    var scanFor = DurationArgument(seconds: 10)

    @Argument(help: "The meter's address or advertised name.")
    var device: String

    struct Summary: Encodable {
        var device: String
        /// The first sequence number asked for; nil: every record.
        var from: Int?
        var meterCount: Int?
        var received: Int
        var stored: Int
        var alreadyStored: Int
        var lastSequence: Int?
        /// The meter held neither the last stored record nor any after it: every record was asked for.
        var meterReset = false
        /// How the reset showed, for the text output.
        var resetHow: String?
        var outcome: String
        var error: String?

        enum CodingKeys: String, CodingKey {
            case device, from, received, stored, outcome, error
            case meterCount = "meter_count", alreadyStored = "already_stored", lastSequence = "last_sequence"
            case meterReset = "meter_reset"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(device, forKey: .device)
            try c.encode(from, forKey: .from)
            try c.encode(meterCount, forKey: .meterCount)
            try c.encode(received, forKey: .received)
            try c.encode(stored, forKey: .stored)
            try c.encode(alreadyStored, forKey: .alreadyStored)
            try c.encode(lastSequence, forKey: .lastSequence)
            try c.encode(meterReset, forKey: .meterReset)
            try c.encode(outcome, forKey: .outcome)
            try c.encode(error, forKey: .error)
        }
    }

    func validate() throws {
        try silence.requireLongerThanZero("--silence")
        try scanFor.requireLongerThanZero("--scan-for")
    }

    func run() async throws {
        let store = try await database.open()
        let summary = try await controller.withController { central in try await download(central, store: store) }
        if output.json {
            try CommandOutput.printJSON(summary)
        } else if summary.error == nil {
            if summary.meterReset, let how = summary.resetHow {
                print("\(summary.device): the meter was reset (\(how)): every record asked for")
            }
            print("\(summary.device): \(summary.received) record\(summary.received == 1 ? "" : "s") received"
                  + (summary.from.map { summary.meterReset ? " (all, after the reset; sequence \($0) on before)" : " (sequence \($0) on)" } ?? " (all)")
                  + ", \(summary.stored) new, \(summary.alreadyStored) already stored"
                  + (summary.lastSequence.map { "; last sequence number \($0)" } ?? ""))
        }
        if let error = summary.error { throw CommandFailure("\(summary.device): \(error)") }
    }

    private func download(_ central: any BLECentral, store: HealthStore) async throws -> Summary {
        let wanted = device.uppercased()
        let address: DeviceAddress
        if let given = DeviceAddress(device, kind: .random) {
            address = given
        } else {
            let found = try await scanDevices(central, for: scanFor) { $0.name?.uppercased() == wanted }
            guard let match = found.first(where: { $0.name?.uppercased() == wanted }) else {
                throw CommandFailure("no device named '\(device)' found in \(scanFor) (try `healthgate ble scan`)")
            }
            address = match.address
        }
        let cursor = all ? nil : try await StoreSink(store: store).checkpoint(GlucoseCursor.self, device: address.text)
        let from = GlucoseRecordDownload(after: cursor).firstSequence.map(Int.init)
        let connection: any BLEConnection
        let database: GATTDatabase
        do {
            connection = try await central.connect(address, timeout: .seconds(10))
            database = try await connection.discover(timeout: .seconds(20))
        } catch {
            throw CommandFailure("\(address): \(error)")
        }
        if !output.json {
            let checked = cursor?.record != nil ? " (the last one stored, to check the meter was not reset)" : ""
            CommandOutput.stderr("downloading from \(address): " + (from.map { "records from sequence number \($0)\(checked)" } ?? "every record") + "\n")
        }
        let result: GlucoseDownloader.Result
        do {
            // Progress on stderr, with --json too (standard output holds only the JSON).
            result = try await GlucoseDownloader.download(connection, database: database, after: cursor, silence: silence.duration) {
                received, total in
                CommandOutput.stderr("records: \(received)\(total.map { "/\($0)" } ?? "")\n")
            }
        } catch {
            _ = try? await connection.disconnect(timeout: .seconds(5))
            throw CommandFailure("\(address): \(error)")
        }
        _ = try? await connection.disconnect(timeout: .seconds(5))
        // Store what arrived whole, with where the records now end (the last one, as sent), in
        // one transaction.
        var stored = 0, already = 0
        let last = result.records.max { $0.sequenceNumber < $1.sequenceNumber }
        let lastSequence = last?.sequenceNumber
        if let last {
            var batch = result.batch
            batch.setCheckpoint(GlucoseCursor(sequence: last.sequenceNumber, record: last.value), device: address.text)
            let written = try await Intake(store: store).write(batch).written
            stored = written.inserted
            already = written.unchanged + written.updated
        }
        var summary = Summary(device: address.text, from: from, meterCount: result.expected, received: result.records.count,
                              stored: stored, alreadyStored: already, lastSequence: lastSequence.map(Int.init),
                              meterReset: result.meterWasReset, outcome: "complete")
        if result.meterWasReset, let stored = cursor?.sequence {
            summary.resetHow = result.storedRecordDiffers ? "its record \(stored) is not the one stored"
                : "it holds neither record \(stored) nor any after it"
        }
        switch result.outcome {
        case .complete: break
        case .noRecords: summary.outcome = "no-records"
        case .failed(let reason):
            summary.outcome = "failed"
            summary.error = "\(reason); \(stored) new record\(stored == 1 ? "" : "s") stored"
        }
        return summary
    }
}
